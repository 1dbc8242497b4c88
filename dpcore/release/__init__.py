r"""Randomized-response release of a table, and the buyer's estimator.

A data owner sells a copy of a table in which every sensitive value was randomised on its
own (local differential privacy). A :class:`ReleasePlan` says what happens to each column:

=========  ====================================================================  ===============
mechanism  what the buyer gets                                                   ε per value
=========  ====================================================================  ===============
drop       nothing (the default for identifiers and ignored columns)             0
keep       the value unchanged — only for columns the schema declares public     0 (unprotected)
coin       two-coin randomized response on a two-category column                 ln 3
k-ary      k-ary randomized response over the *declared* categories             chosen
bins       the number put into declared bins, then k-ary randomized response     chosen
laplace    the number clipped to the declared bounds, plus Laplace noise         chosen
=========  ====================================================================  ===============

Privacy argument
----------------
*Per value (local DP).* k-ary randomized response keeps the true code with probability
``p = e^ε/(e^ε+k−1)`` and otherwise writes one of the other ``k−1`` codes uniformly, so for any
true values ``a, b`` and output ``o``, ``P(o|a)/P(o|b) ≤ p/q = e^ε``
(:class:`~dpcore.mechanisms.KaryRandomizedResponse`); the coin is ``k = 2``, ``ε = ln 3``
(:class:`~dpcore.mechanisms.CoinRandomizedResponse`). A value outside the declared domain
(undeclared category, missing value) is replaced by a uniformly random code — never passed
through — whose output probabilities ``1/k`` lie between ``q`` and ``p``, so the bound holds.
Bins are declared (equal-width over the declared bounds, or explicit public edges), so
bucketing reads nothing from the data. A Laplace column is clipped to the declared
``[lower, upper]`` (missing → the declared fill), so one value moves by at most
``upper − lower``, and noise of scale ``(upper − lower)/ε``
(:class:`~dpcore.mechanisms.Laplace`) makes it ε-DP; rounding the output is post-processing.

*Across the columns of a record: sequential composition.* Each column is randomised with
independent draws, so a record's released row is ``Σ ε_column``-DP; this sum, each part
rounded up, is the plan's :attr:`~ReleasePlan.per_record_epsilon`, checked against the
budget and charged to the ledger. *Across records: parallel composition.* Every record gets
its own draws, so the whole copy is ``per_record_epsilon``-DP for every record **under
replace-one neighbours** (one person's values change; the number of rows is public).

*Add/remove neighbours: a padded copy.* With one row per person the row count tells whether a
person is in the table, so under the add/remove unit the copy is padded to ``T = n + G`` rows,
``G`` two-sided geometric noise of ε = ``count_epsilon`` (:func:`~dpcore.release.padding.noisy_row_count`): when
``T > n``, ``T − n`` filler rows are added, each the column mechanisms applied to an input drawn
uniformly from the declared domain; when ``T < n``, ``n − T`` uniformly random rows are left
out: the ``T`` rows with the smallest keyed *cut words* are kept, a stream apart from the order
words (:func:`~dpcore.release.padding.smallest`). The kept rows are a uniformly random
``T``-subset drawn apart from the order, so their order — on Spark also the parts they fall in
and the parts' sizes — is a uniform shuffle of ``T`` rows, which tells nothing of ``n``. Let ``D′ = D + x``. The totals' laws
differ by a factor ``e^count_epsilon``. Given the total ``t``: if ``t > n``, the copies of ``D``
and ``D′`` differ only in one row, a filler's ``R(u)`` against ``R(x)``; if ``t ≤ n``, a random
``t``-subset of ``D′`` either misses ``x`` (distributed as ``D``'s copy) or holds ``R(x)`` in
place of ``R(y)`` for a uniformly random ``y`` of ``D``. Randomized response and Laplace are
``per_record_epsilon``-LDP for *any* two inputs, so each case is within ``e^per_record_epsilon``,
and the copy is ``(per_record_epsilon + count_epsilon)``-DP under add/remove, both ways round.
A column kept unchanged would tell fillers from real rows, so padded copies refuse it.

*People with several rows: group privacy.* When the schema names a privacy-unit column (the
identifier telling whose row each row is) and ``k = rows_per_person``, the copy protects the
person, not the row (:mod:`~dpcore.release.contributions`). First, at most ``k`` rows of each
person are kept, a uniformly random subset drawn from the unit column alone and the copy's own
randomness (:func:`~dpcore.budget.persons.bound_contributions`); everything above then runs on the
kept rows, so the per-row mechanism ``M`` (randomized response per value, and the noisy row
count when padded) is ``ε_row``-DP for one row, ``ε_row`` being ``per_record_epsilon`` under
replace-one and ``per_record_epsilon + count_epsilon`` under add/remove. Let ``D′`` add, remove
or change one person ``P``. The other people's kept subsets are drawn independently of ``P``'s
rows, with the same law in ``D`` and ``D′``, so, coupling them, the kept tables differ only in
``P``'s kept rows: at most ``k`` rows added or removed (add/remove), or at most ``k`` rows whose
values change (replace-one, where a person's number of rows is as public as the table's).
Walking from one kept table to the other one row at a time, each step is a neighbour of ``M``,
so by group privacy (Dwork & Roth 2014, Theorem 2.2) every copy's probability changes by at
most ``e^(k·ε_row)``; averaging over the coupled subsets keeps the bound. The copy is therefore
``k·ε_row``-DP per person — the sum over that person's rows, each randomised with ``ε_row`` —
which is what is checked against the budget, charged to the ledger and stated in the report
(``privacy_unit``, never the column's name or values). Rows whose unit value is missing are one
person, and the unit column itself is never kept or randomised. The buyer's estimates stay
per row: they are shares and means of the kept rows, at most ``k`` per person.

*Repeated exports.* Two independent copies of a record let a buyer average the noise away.
With a :class:`~dpcore.budget.accountant.BudgetLedger`, each released copy is stored (a Parquet file
named by its content hash, beside the ledger: :mod:`dpcore.release.stored`) under a key derived
from the released columns' content (a version fingerprint, see :mod:`dpcore.budget.identity`), the
resolved plan and the unit of protection (with a privacy unit: also the unit column's content,
the column and ``k``); the same table and plan get the **same** copy back
at no cost, and a fresh copy, made only on request, is charged again. The charge and the
stored row are one ledger transaction.

*Randomness.* Every per-row draw — each column's randomized response or Laplace noise, the
uniform code of a missing value, the row's place in the secret order and in a cut, and each filler row's
input, values and place — is an AES-keyed pseudo-random function of a secret 16-byte key and the
row's stable key (its position, or its file and row within the file; a filler's index) in a
stream of its own (:mod:`~dpcore.release.randomness`, :mod:`dpcore.mechanisms.keyed`). Without the
key these draws are indistinguishable from independent uniform draws across rows, columns and
streams, which is all the per-value, parallel-composition and padding arguments above assume;
and a row gets the same draws however a file is cut into chunks, on one machine or in any Spark
task, however often that task is retried (:mod:`dpcore.release.spark`), so one
release can never yield two different copies. The key, the noisy row count and the choice of
each person's rows come from the copy's entropy, drawn from the operating system; a seed is
for tests only, and the report of a seeded copy says it must not be sold.

Modules
-------
:mod:`~dpcore.release.plan`
    The plan and its checks against the schema; :func:`default_plan`.
:mod:`~dpcore.release.columns`
    The per-column mechanisms (treatments); :func:`describe_plan`.
:mod:`~dpcore.release.randomness`, :mod:`~dpcore.release.padding`
    Where the noise comes from and the row order; the unit of protection, padding and cost.
:mod:`~dpcore.release.contributions`
    People with several rows: at most ``k`` rows of each kept, and ``k`` × the per-row cost.
:mod:`~dpcore.release.table`, :mod:`~dpcore.release.streaming`
    The local release paths: an in-memory table, a CSV file of any size, a table kept in
    Parquet or CSV files (the same release on Spark is :mod:`dpcore.release.spark`).
:mod:`~dpcore.release.stored`
    Stored copies: Parquet files named by content hash, charged and stored in one transaction.
:mod:`~dpcore.release.report`, :mod:`~dpcore.release.result`
    The privacy report a buyer gets, and what a release returns to the owner.
:mod:`~dpcore.release.estimator`, :mod:`~dpcore.release.usefulness`
    The buyer's estimators, and the owner's verdict on them before release.
:mod:`~dpcore.release.writing`
    Spreadsheet-safe text and the CSV writer.

Examples
--------
>>> import pandas as pd
>>> from dpcore.tables.schema import ColumnSpec, Schema
>>> schema = Schema([ColumnSpec("id", role="identifier", kind="categorical"),
...                  ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False)])
>>> plan = default_plan(schema)
>>> [(c.column, c.mechanism) for c in plan.columns]
[('id', 'drop'), ('smoker', 'coin')]
>>> frame = pd.DataFrame({"id": ["a1", "a2", "a3"], "smoker": ["no", "yes", "no"]})
>>> release_frame(frame, schema, plan, random_state=0).columns.tolist()
['smoker']
"""

from dpcore.release.columns import describe_plan
from dpcore.release.contributions import counted_rows_per_person, kept_rows
from dpcore.release.estimator import (
    estimate_column,
    estimate_counts,
    estimate_joint,
    estimate_joint_counts,
    estimate_release,
    estimate_vs_truth,
    read_release,
    report_entry,
)
from dpcore.release.padding import COUNT_EPSILON, columns_budget, copy_costs, copy_epsilon, count_epsilon_for, noisy_row_count
from dpcore.release.plan import (
    DEFAULT_BINS,
    DEFAULT_EPSILON,
    MAX_BINS,
    MECHANISMS,
    MISSING_POLICIES,
    PLAN_FORMAT,
    RANDOMISED,
    ColumnPlan,
    ReleasePlan,
    default_plan,
)
from dpcore.release.report import report_markdown
from dpcore.release.result import REUSED_NOTE, ReleaseResult
from dpcore.release.streaming import SHUFFLE_BUCKET_BYTES, release_batches, release_csv, release_files
from dpcore.release.table import preview_release, release_frame, release_table
from dpcore.release.usefulness import (
    NOISE_CONFIRMATION,
    USEFULNESS_COLUMNS,
    mostly_noise,
    noise_advice,
    noise_confirmed,
    usefulness,
    usefulness_summary,
)
from dpcore.tables.csv_reading import DEFAULT_CHUNKSIZE, file_chunks

__all__ = [
    "COUNT_EPSILON",
    "DEFAULT_BINS",
    "DEFAULT_CHUNKSIZE",
    "DEFAULT_EPSILON",
    "MAX_BINS",
    "MECHANISMS",
    "MISSING_POLICIES",
    "NOISE_CONFIRMATION",
    "PLAN_FORMAT",
    "RANDOMISED",
    "REUSED_NOTE",
    "SHUFFLE_BUCKET_BYTES",
    "USEFULNESS_COLUMNS",
    "ColumnPlan",
    "ReleasePlan",
    "ReleaseResult",
    "columns_budget",
    "copy_costs",
    "copy_epsilon",
    "count_epsilon_for",
    "counted_rows_per_person",
    "default_plan",
    "describe_plan",
    "estimate_column",
    "estimate_counts",
    "estimate_joint",
    "estimate_joint_counts",
    "estimate_release",
    "estimate_vs_truth",
    "file_chunks",
    "kept_rows",
    "mostly_noise",
    "noise_advice",
    "noise_confirmed",
    "noisy_row_count",
    "preview_release",
    "read_release",
    "release_batches",
    "release_csv",
    "release_files",
    "release_frame",
    "release_table",
    "report_entry",
    "report_markdown",
    "usefulness",
    "usefulness_summary",
]
