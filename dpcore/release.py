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
``G`` two-sided geometric noise of ε = ``count_epsilon`` (:func:`noisy_row_count`): when
``T > n``, ``T − n`` filler rows are added, each the column mechanisms applied to an input drawn
uniformly from the declared domain; when ``T < n``, ``n − T`` uniformly random rows are left
out (the rows are shuffled and the first ``T`` kept). Let ``D′ = D + x``. The totals' laws
differ by a factor ``e^count_epsilon``. Given the total ``t``: if ``t > n``, the copies of ``D``
and ``D′`` differ only in one row, a filler's ``R(u)`` against ``R(x)``; if ``t ≤ n``, a random
``t``-subset of ``D′`` either misses ``x`` (distributed as ``D``'s copy) or holds ``R(x)`` in
place of ``R(y)`` for a uniformly random ``y`` of ``D``. Randomized response and Laplace are
``per_record_epsilon``-LDP for *any* two inputs, so each case is within ``e^per_record_epsilon``,
and the copy is ``(per_record_epsilon + count_epsilon)``-DP under add/remove, both ways round.
A column kept unchanged would tell fillers from real rows, so padded copies refuse it.

*Repeated exports.* Two independent copies of a record let a buyer average the noise away.
With a :class:`~dpcore.accountant.BudgetLedger`, each released copy is stored (compressed)
under a key derived from the released columns' content (a version fingerprint, see
:mod:`dpcore.identity`), the resolved plan and the unit of protection; the same
table and plan get the **same** copy back at no cost, and a fresh copy, made only on request,
is charged again.

*Randomness.* Each (column, block of :data:`BLOCK_ROWS` rows) pair draws from its own
generator, ``SeedSequence(entropy, spawn_key=(column, block))``, so the copy does not depend on
how a file is cut into chunks. The entropy comes from the operating system; a seed is for tests
only, and the report of a seeded copy says it must not be sold.

Examples
--------
>>> import pandas as pd
>>> from dpcore.schema import ColumnSpec, Schema
>>> schema = Schema([ColumnSpec("id", role="identifier", kind="categorical"),
...                  ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False)])
>>> plan = default_plan(schema)
>>> [(c.column, c.mechanism) for c in plan.columns]
[('id', 'drop'), ('smoker', 'coin')]
>>> frame = pd.DataFrame({"id": ["a1", "a2", "a3"], "smoker": ["no", "yes", "no"]})
>>> release_frame(frame, schema, plan, random_state=0).columns.tolist()
['smoker']
"""

from __future__ import annotations

import codecs
import collections
import hashlib
import io
import json
import math
import os
import sqlite3
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from dpcore import _release_io as fileio
from dpcore import _release_report as fmt
from dpcore._release_report import report_markdown
from dpcore.accountant import ADD_REMOVE, REPLACE_ONE, UNITS, BudgetLedger, check_unit, convert
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.identity import VersionFingerprint
from dpcore.loading import sniff_delimiter
from dpcore.mechanisms import COIN_EPSILON, CoinRandomizedResponse, Geometric, KaryRandomizedResponse, Laplace
from dpcore.schema import MISSING_CATEGORY, Schema
from dpcore.validation import epsilon_decimal

__all__ = [
    "BLOCK_ROWS",
    "DEFAULT_BINS",
    "DEFAULT_CHUNKSIZE",
    "DEFAULT_EPSILON",
    "MECHANISMS",
    "MISSING_POLICIES",
    "COUNT_EPSILON",
    "ColumnPlan",
    "ReleasePlan",
    "ReleaseResult",
    "copy_epsilon",
    "count_epsilon_for",
    "default_plan",
    "describe_plan",
    "estimate_column",
    "estimate_counts",
    "estimate_joint",
    "estimate_joint_counts",
    "estimate_release",
    "estimate_vs_truth",
    "preview_release",
    "read_release",
    "release_csv",
    "release_frame",
    "release_table",
    "report_entry",
    "report_markdown",
    "usefulness",
    "usefulness_summary",
]

MECHANISMS = ("drop", "keep", "coin", "k-ary", "bins", "laplace")
RANDOMISED = ("coin", "k-ary", "bins", "laplace")
MISSING_POLICIES = ("random", "category")
DEFAULT_EPSILON = 1.0
DEFAULT_BINS = 8
MAX_BINS = 10_000
BLOCK_ROWS = 1 << 16
SHUFFLE_BUCKET_BYTES = 64 << 20
DEFAULT_CHUNKSIZE = 4 * BLOCK_ROWS
PLAN_FORMAT = "dpcore-release-plan/1"
#: ε of the noisy row count that pads a copy for the add/remove unit. Chosen for tables in
#: general: about ±14 filler or dropped rows (the geometric noise's standard deviation), which
#: moves a share by under 0.1 % from 20,000 rows up, at a tenth of a typical ε = 1 budget.
COUNT_EPSILON = 0.1


# --- the plan ---------------------------------------------------------------------------------


@dataclass
class ColumnPlan:
    """What happens to one column.

    Parameters
    ----------
    column : str
        The column's name in the schema.
    mechanism : str
        One of :data:`MECHANISMS`.
    epsilon : float, optional
        ε of one value, for ``k-ary``, ``bins`` and ``laplace`` (the coin's is always ln 3).
    bins : int, optional
        Number of equal-width bins over the declared bounds (``bins`` only).
    edges : list of float, optional
        Public bin edges instead of ``bins`` (increasing; values outside go to the end bins).
    missing : {"random", "category"}
        For randomized-response columns: a missing value is replaced by a uniformly random
        category like an undeclared one (``"random"``), or randomised as a ``"(missing)"``
        category of its own (``"category"``).
    """

    column: str
    mechanism: str = "drop"
    epsilon: float | None = None
    bins: int | None = None
    edges: list[float] | None = None
    missing: str = "random"

    @property
    def cost(self) -> float:
        """ε this column adds to every record (0 for ``drop`` and ``keep``)."""
        if self.mechanism == "coin":
            return COIN_EPSILON
        if self.mechanism in RANDOMISED and self.epsilon is not None:
            return float(self.epsilon)
        return 0.0


@dataclass
class ReleasePlan:
    """One :class:`ColumnPlan` per column, in the order of the released file.

    Schema columns the plan does not name are dropped.
    """

    columns: list[ColumnPlan] = field(default_factory=list)

    def __getitem__(self, name: str) -> ColumnPlan:
        for entry in self.columns:
            if entry.column == name:
                return entry
        raise KeyError(name)

    @property
    def released_columns(self) -> list[str]:
        return [c.column for c in self.columns if c.mechanism != "drop"]

    @property
    def randomised_columns(self) -> list[str]:
        """The columns whose values are randomized (the buyer can debias these)."""
        return [c.column for c in self.columns if c.mechanism in RANDOMISED]

    def epsilon_by_column(self) -> dict[str, float]:
        """ε per released column (0 for kept public columns)."""
        return {c.column: c.cost for c in self.columns if c.mechanism != "drop"}

    @property
    def per_record_epsilon(self) -> float:
        """Σ ε over the randomised columns (sequential composition), each part rounded up."""
        parts = (epsilon_decimal(c.cost) for c in self.columns if c.mechanism in RANDOMISED and c.cost > 0)
        return float(sum(parts, Decimal(0)))

    def problems(self, schema: Schema) -> list[str]:
        """Every problem with the plan for ``schema``, as sentences (empty when fine)."""
        names = [c.column for c in self.columns]
        repeats = sorted({n for n in names if names.count(n) > 1})
        return [p for entry in self.columns for p in _column_problems(entry, schema)] + [
            f"Column '{n}' appears more than once in the plan." for n in repeats
        ]

    def check(self, schema: Schema) -> None:
        """Raise :class:`DataError` with every problem if there is one."""
        problems = self.problems(schema)
        if problems:
            raise DataError(" ".join(problems))

    def check_budget(self, budget: float | None) -> float:
        """Return the per-record ε, or raise :class:`BudgetExceededError` if it is more than ``budget`` (None: no limit).

        A dataset's ledger is checked by the release itself, in the dataset's unit of protection.
        """
        epsilon = self.per_record_epsilon
        if budget is not None and epsilon > float(budget):
            raise BudgetExceededError(_over_budget(epsilon, float(budget)))
        return epsilon

    def to_dict(self) -> dict:
        return {"format": PLAN_FORMAT, "columns": [asdict(c) for c in self.columns]}

    @classmethod
    def from_dict(cls, data) -> ReleasePlan:
        if not isinstance(data, dict) or not isinstance(data.get("columns"), list):
            raise DataError("The plan is not in the expected form (a 'columns' list with one entry per column).")
        columns = []
        for item in data["columns"]:
            if not isinstance(item, dict) or not isinstance(item.get("column"), str):
                raise DataError("Every entry of the plan needs a 'column' name and a 'mechanism'.")
            name = item["column"]
            edges = item.get("edges")
            if edges is not None and not isinstance(edges, list):
                raise DataError(f"The bin edges of '{name}' must be a list of numbers.")
            columns.append(
                ColumnPlan(
                    name,
                    str(item.get("mechanism") or "drop"),
                    epsilon=_number(item.get("epsilon"), f"the ε of '{name}'"),
                    bins=_whole(item.get("bins"), f"the number of bins of '{name}'"),
                    edges=None if edges is None else [_number(e, f"a bin edge of '{name}'") for e in edges],
                    missing=str(item.get("missing") or "random"),
                )
            )
        return cls(columns)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text) -> ReleasePlan:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise DataError("The plan file is not valid JSON.") from None
        return cls.from_dict(data)

    def to_frame(self) -> pd.DataFrame:
        """An editable table, one row per column (``edges`` joined by ' | ')."""
        rows = [
            {
                "column": c.column,
                "mechanism": c.mechanism,
                "epsilon": c.cost if c.mechanism == "coin" else c.epsilon,
                "bins": c.bins,
                "edges": " | ".join(f"{e:g}" for e in c.edges) if c.edges else "",
                "missing": c.missing,
            }
            for c in self.columns
        ]
        return pd.DataFrame(rows, columns=["column", "mechanism", "epsilon", "bins", "edges", "missing"])

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> ReleasePlan:
        """Rebuild a plan from the edited table (the coin's ε is fixed whatever its cell says)."""
        columns = []
        for row in frame.to_dict("records"):
            name = str(row.get("column"))
            mechanism = str(row.get("mechanism") or "drop")
            text = row.get("edges")
            edges = (
                [_number(e, f"a bin edge of '{name}'") for e in text.split("|")]
                if isinstance(text, str) and text.strip()
                else None
            )
            epsilon = None if mechanism == "coin" else _number(row.get("epsilon"), f"the ε of '{name}'")
            bins = _whole(row.get("bins"), f"the number of bins of '{name}'")
            columns.append(ColumnPlan(name, mechanism, epsilon, bins, edges, str(row.get("missing") or "random")))
        return cls(columns)


def _number(value, what: str) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise DataError(f"{what[0].upper()}{what[1:]} must be a number.") from None


def _whole(value, what: str) -> int | None:
    number = _number(value, what)
    if number is None:
        return None
    if not math.isfinite(number) or number != int(number):
        raise DataError(f"{what[0].upper()}{what[1:]} must be a whole number.")
    return int(number)


def _over_budget(epsilon: float, available: float) -> str:
    return (
        f"This release costs ε = {epsilon:g} per record, more than the {max(available, 0.0):g} left in the "
        "dataset's privacy budget. Drop or coarsen columns, lower their ε, or raise the budget."
    )


def _column_problems(entry: ColumnPlan, schema: Schema) -> list[str]:
    name, mechanism = entry.column, entry.mechanism
    if mechanism not in MECHANISMS:
        return [f"Column '{name}': the mechanism must be one of {', '.join(MECHANISMS)}."]
    if name not in schema.names:
        return [f"Column '{name}' is in the plan but not in the schema."]
    spec = schema[name]
    if mechanism == "drop":
        return []
    if spec.role == "identifier":
        return [f"Column '{name}' is an identifier: identifiers are always dropped (change its role if it is not one)."]
    if mechanism == "keep":
        return [] if spec.public else [f"Column '{name}' can only be kept unchanged if the schema declares it public."]
    if spec.bounds_from_data:
        what = "bounds" if spec.kind == "numeric" else "categories"
        return [
            f"Column '{name}': its {what} were read from your data, so releasing them would publish values of real people. "
            "Replace them with a public declaration and untick 'read from data' on the Data page, or drop the column."
        ]
    out = []
    if entry.missing not in MISSING_POLICIES:
        out.append(f"Column '{name}': missing must be one of {', '.join(MISSING_POLICIES)}.")
    if mechanism != "coin" and (entry.epsilon is None or not math.isfinite(entry.epsilon) or entry.epsilon <= 0):
        out.append(f"Column '{name}': give a finite ε greater than 0.")
    if mechanism in ("coin", "k-ary"):
        if spec.kind != "categorical":
            return out + [f"Column '{name}' is numeric: use bins or laplace for it."]
        if len(spec.categories) < 2 or len(set(spec.categories)) != len(spec.categories):
            return out + [f"Column '{name}': declare at least two distinct categories."]
        if mechanism == "coin" and (len(spec.categories) != 2 or entry.missing != "random"):
            out.append(f"Column '{name}': the coin needs exactly two categories and missing = random; use k-ary.")
        return out
    if spec.kind != "numeric":
        return out + [f"Column '{name}' is categorical: use coin or k-ary for it."]
    if spec.lower is None or spec.upper is None or not np.isfinite([spec.lower, spec.upper]).all() or spec.lower >= spec.upper:
        return out + [f"Column '{name}': declare finite bounds with the lower below the upper."]
    if mechanism == "bins" and entry.edges is not None:
        edges = np.asarray(entry.edges, dtype=float)
        if not 3 <= edges.size <= MAX_BINS + 1 or not np.isfinite(edges).all() or np.any(np.diff(edges) <= 0):
            out.append(f"Column '{name}': bin edges must be at least three increasing finite numbers.")
    elif mechanism == "bins" and (entry.bins is None or not 2 <= entry.bins <= MAX_BINS):
        out.append(f"Column '{name}': the number of bins must be between 2 and {MAX_BINS}.")
    return out


def default_plan(
    schema: Schema, epsilon: float = DEFAULT_EPSILON, n_bins: int = DEFAULT_BINS, budget: float | None = None
) -> ReleasePlan:
    """The plan a careful owner would start from.

    Identifiers and ignored columns are dropped, and so is every column whose categories or
    bounds were read from the data (releasing them would publish real values); columns declared
    public are kept (with a warning in the report); two-category columns that cannot be missing
    get the coin (ε = ln 3); other categorical columns k-ary randomized response at ``epsilon``;
    numeric columns ``n_bins`` equal-width bins over their declared bounds, then k-ary randomized
    response at ``epsilon``. A column that may be missing (the schema's ``may_be_missing``,
    true unless declared otherwise) randomises "missing" as a category of its own, so the
    buyer's estimates are unbiased for the real table rather than for an imputed mixture. A
    column whose declaration is incomplete (no bounds, fewer than two categories) is dropped.

    With a ``budget`` (what is left for the table), the budget is shared equally between the
    randomized columns instead, rounded down so the plan fits; two-category columns then get
    k-ary randomized response at that share unless it affords the coin.
    """
    usable = [
        spec for spec in schema.columns
        if spec.role not in ("identifier", "ignore") and not spec.public and not spec.problems() and not spec.bounds_from_data
    ]
    if budget is not None and usable:
        share = float(budget) / len(usable)
        epsilon = math.floor(share * 1000) / 1000 or share
    columns = []
    for spec in schema.columns:
        entry = ColumnPlan(spec.name)
        missing = "category" if spec.may_be_missing else "random"
        if spec.role in ("identifier", "ignore") or (spec.bounds_from_data and not spec.public):
            pass
        elif spec.public:
            entry.mechanism = "keep"
        elif spec.kind == "categorical":
            coin = len(spec.categories) == 2 and missing == "random" and (budget is None or COIN_EPSILON <= epsilon)
            entry.mechanism, entry.epsilon = ("coin", None) if coin else ("k-ary", float(epsilon))
            entry.missing = "random" if coin else missing
        else:
            entry.mechanism, entry.epsilon, entry.bins, entry.missing = "bins", float(epsilon), int(n_bins), missing
        columns.append(entry if not _column_problems(entry, schema) else ColumnPlan(spec.name))
    return ReleasePlan(columns)


def describe_plan(plan: ReleasePlan, schema: Schema) -> pd.DataFrame:
    """One row per schema column: what the buyer gets, in plain words, its ε, and any problem."""
    rows = []
    planned = {c.column for c in plan.columns}
    entries = list(plan.columns) + [ColumnPlan(n) for n in schema.names if n not in planned]
    for index, entry in enumerate(entries):
        problems = _column_problems(entry, schema)
        spec = schema[entry.column] if entry.column in schema.names else None
        if problems or spec is None:
            sentence = "Cannot be released as planned."
        elif entry.mechanism == "drop":
            reason = {"identifier": " It identifies people.", "ignore": " It is marked 'ignore' in the schema."}
            leak = " Its domain was read from your data: declare a public one to release it." if spec.bounds_from_data else ""
            sentence = "Left out of the copy." + reason.get(spec.role, leak)
        else:
            sentence = fmt.describe_entry(_treatment(index, entry, spec).entry())
        rows.append(
            {
                "column": entry.column,
                "mechanism": entry.mechanism,
                "ε": entry.cost,
                "what the buyer gets": sentence,
                "problem": " ".join(problems),
            }
        )
    return pd.DataFrame(rows, columns=["column", "mechanism", "ε", "what the buyer gets", "problem"])


# --- treatments: what each released column does to its values ------------------------------------


@dataclass
class _Treatment:
    index: int
    name: str
    mechanism: str
    epsilon: float = 0.0
    labels: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    edges: list[float] | None = None
    lower: float | None = None
    upper: float | None = None
    fill: float | None = None
    missing: str = "random"

    @property
    def header(self) -> str:
        return fileio.escape_label(self.name)

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def missing_code(self) -> int:
        return self.k - 1 if self.missing == "category" else -1

    @property
    def scale(self) -> float:
        return (self.upper - self.lower) / self.epsilon

    def mechanism_for(self, rng):
        if self.mechanism == "coin":
            return CoinRandomizedResponse(random_state=rng)
        if self.mechanism == "laplace":
            return Laplace(self.epsilon, self.upper - self.lower, random_state=rng)
        return KaryRandomizedResponse(self.epsilon, self.k, random_state=rng)

    def inputs(self, frame: pd.DataFrame, cache: dict | None = None) -> tuple[np.ndarray, int]:
        """What the mechanism randomises (codes or clipped numbers), and how many values were outside the domain."""
        if self.mechanism in ("coin", "k-ary"):
            codes = _category_codes(frame, self.name, self.categories, self.missing_code, cache)
            return codes, int(np.count_nonzero((codes < 0) | (codes == len(self.categories))))
        numbers = _numbers(frame[self.name])
        missing = np.isnan(numbers)
        if self.mechanism == "laplace":
            outside = missing | (numbers < self.lower) | (numbers > self.upper)
            return np.clip(np.where(missing, self.fill, numbers), self.lower, self.upper), int(np.count_nonzero(outside))
        edges = np.asarray(self.edges)
        codes = np.searchsorted(edges[1:-1], numbers, side="right").astype(np.int64)
        codes[missing] = self.missing_code
        return codes, int(np.count_nonzero(missing | (numbers < edges[0]) | (numbers > edges[-1])))

    def randomise(self, inputs: np.ndarray, start: int, entropy: int) -> np.ndarray:
        """Randomise rows ``start, start+1, …`` with one generator per block of :data:`BLOCK_ROWS` rows.

        A block the rows cover only in part is padded to its full size before drawing, so each
        row gets the same draws however the table was cut into chunks.
        """
        n, block_rows = len(inputs), BLOCK_ROWS
        out = np.empty(n, dtype=np.float64 if self.mechanism == "laplace" else np.int64)
        for block in range(start // block_rows, (start + n - 1) // block_rows + 1 if n else start // block_rows):
            first = block * block_rows
            lo, hi = max(first, start), min(first + block_rows, start + n)
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(self.index, block))))
            mechanism = self.mechanism_for(rng)
            if hi - lo == block_rows:
                out[lo - start : hi - start] = mechanism.randomise(inputs[lo - start : hi - start])
            else:
                padded = np.full(block_rows, -1 if out.dtype == np.int64 else 0.0, dtype=out.dtype)
                padded[lo - first : hi - first] = inputs[lo - start : hi - start]
                out[lo - start : hi - start] = mechanism.randomise(padded)[lo - first : hi - first]
        return np.round(out, fmt.laplace_decimals(self.scale)) if self.mechanism == "laplace" else out

    def column(self, frame: pd.DataFrame, start: int, entropy: int, cache: dict | None = None):
        """The released column for these rows (an arrow array), and the owner-only count of values outside the domain."""
        if self.mechanism == "keep":
            return fileio.keep_array(frame[self.name]), 0
        inputs, outside = self.inputs(frame, cache)
        return self.as_array(self.randomise(inputs, start, entropy)), outside

    def as_array(self, released: np.ndarray):
        """Released numbers, or released codes as a dictionary array of the labels."""
        if self.mechanism == "laplace":
            return pa.array(released)
        labels = pa.array([fileio.escape_label(label) for label in self.labels], type=pa.string())
        codes = released.astype(np.int8 if self.k <= 127 else np.int32)
        return pa.DictionaryArray.from_arrays(pa.array(codes), labels)

    def entry(self) -> dict:
        """This column's part of the report: declarations and mechanism parameters only."""
        entry = {"column": self.name, "header": self.header, "mechanism": self.mechanism, "epsilon": self.epsilon}
        if self.mechanism in ("coin", "k-ary", "bins"):
            rr = KaryRandomizedResponse(self.epsilon, self.k)
            entry.update(
                domain=[fileio.escape_label(x) for x in self.labels],
                n_categories=self.k,
                keep_probability=rr.keep_probability,
                other_probability=rr.other_probability,
                missing=self.missing,
            )
        if self.mechanism == "bins":
            entry.update(edges=list(self.edges), n_bins=len(self.edges) - 1, lower=self.edges[0], upper=self.edges[-1])
        if self.mechanism == "laplace":
            entry.update(
                lower=self.lower,
                upper=self.upper,
                fill_value=self.fill,
                scale=self.scale,
                decimals=fmt.laplace_decimals(self.scale),
            )
        return entry


def _treatment(index: int, entry: ColumnPlan, spec) -> _Treatment:
    # A Laplace column always fills a missing number with the declared fill value.
    missing = "random" if entry.mechanism == "laplace" else entry.missing
    t = _Treatment(index, entry.column, entry.mechanism, epsilon=entry.cost, missing=missing)
    extra = [MISSING_CATEGORY] if entry.missing == "category" else []
    if entry.mechanism in ("coin", "k-ary"):
        t.categories = list(spec.categories)
        t.labels = list(spec.categories) + extra
    elif entry.mechanism == "bins":
        edges = entry.edges if entry.edges is not None else np.linspace(spec.lower, spec.upper, entry.bins + 1).tolist()
        t.edges = [float(e) for e in edges]
        t.labels = [f"[{a:.10g} to {b:.10g})" for a, b in zip(t.edges[:-1], t.edges[1:], strict=True)]
        t.labels[-1] = t.labels[-1][:-1] + "]"
        t.labels += extra
    elif entry.mechanism == "laplace":
        t.lower, t.upper, t.fill = float(spec.lower), float(spec.upper), float(spec.fill)
    return t


def _resolve(plan: ReleasePlan, schema: Schema) -> tuple[list[_Treatment], list[str], list[str]]:
    """Check the plan; return its treatments, the dropped columns and the report's warnings."""
    plan.check(schema)
    treatments, warnings = [], []
    planned = {c.column for c in plan.columns}
    dropped = [c.column for c in plan.columns if c.mechanism == "drop"] + [n for n in schema.names if n not in planned]
    for index, entry in enumerate(plan.columns):
        if entry.mechanism == "drop":
            continue
        spec = schema[entry.column]
        if entry.mechanism == "keep":
            warnings.append(
                f"Column '{entry.column}' is copied unchanged because the owner declared it public: it has no privacy protection."
            )
        else:
            warnings.extend(Schema([spec]).leak_notes())
        t = _treatment(index, entry, spec)
        if len({fileio.escape_label(x) for x in t.labels}) != len(t.labels):
            raise DataError(f"Column '{entry.column}': two of its values would be written the same way in the file.")
        treatments.append(t)
    headers = [t.header for t in treatments]
    if len(set(headers)) != len(headers):
        raise DataError("Two released columns would get the same header in the file; rename one of them.")
    if not treatments:
        raise DataError("The plan releases no column: choose a mechanism other than drop for at least one.")
    return treatments, dropped, warnings


def _numbers(values: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _category_codes(frame: pd.DataFrame, name: str, categories: list[str], missing_code: int, cache=None) -> np.ndarray:
    """Codes over the declared categories: -1 for an undeclared value, ``missing_code`` for a missing one.

    Text matches a declared category exactly; a number matches a declared category that spells
    the same number (39 and "39"), however pandas parsed the column.
    """
    codes, uniques = fileio.factorize(frame, name, cache)
    lookup = np.full(len(uniques) + 1, missing_code, dtype=np.int64)
    if len(uniques):
        text = pd.Index(uniques).astype(str).astype(object)
        matched = pd.Index(categories, dtype=object).get_indexer(text)
        unmatched = matched < 0
        declared = pd.to_numeric(pd.Series(categories, dtype=object), errors="coerce")
        if unmatched.any() and declared.notna().any():
            numbers = pd.to_numeric(pd.Series(text[unmatched], dtype=object), errors="coerce").to_numpy(dtype=float)
            found = pd.Index(declared.fillna(np.inf).to_numpy(dtype=float)).get_indexer(numbers)
            matched[unmatched] = np.where(np.isnan(numbers), -1, found)
        lookup[:-1] = matched
    return lookup[codes]


def _quoting(treatments) -> str:
    """``"none"`` when no cell or header can need quotes (all labels declared), else ``"needed"``."""
    texts = [t.header for t in treatments] + [fileio.escape_label(x) for t in treatments for x in t.labels]
    safe = not any(t.mechanism == "keep" for t in treatments) and not any(fileio.needs_quotes(x) for x in texts)
    return "none" if safe else "needed"


# --- releasing ------------------------------------------------------------------------------


@dataclass
class ReleaseResult:
    """The outcome of a release.

    Attributes
    ----------
    report : dict
        The machine-readable privacy report; give it to the buyer with the copy.
    markdown : str
        The same report for people.
    per_record_epsilon : float
        ε of every record in this copy.
    epsilon_charged : float
        ε charged to the ledger by this call (0 when a stored copy was handed out again).
    reused : bool
        True when the stored copy of an earlier release was returned instead of a new one.
    seeded : bool
        True when a fixed seed made the noise reproducible: never sell such a copy.
    notes : list of str
        Remarks for the owner only (they may count values of the private data).
    csv : bytes or None
        The released file, for in-memory releases.
    path : Path or None
        Where the released file was written, for file releases.
    dataset_id : str or None
        The ledger's id of the dataset (owner-only; never put it in a report).
    """

    report: dict
    markdown: str
    per_record_epsilon: float
    epsilon_charged: float = 0.0
    reused: bool = False
    seeded: bool = False
    notes: list[str] = field(default_factory=list)
    csv: bytes | None = None
    path: Path | None = None
    dataset_id: str | None = None

    @property
    def table(self) -> pd.DataFrame:
        """The released table as the buyer reads it (read whole into memory: mind large files)."""
        return read_release(self.csv if self.csv is not None else self.path, self.report)


def _entropy(random_state) -> tuple[int, bool]:
    if random_state is None:
        return int(np.random.SeedSequence().entropy), False
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63)), True
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state), True
    raise TypeError(f"random_state must be None, a non-negative int or a numpy Generator, got {type(random_state).__name__}")


def _release_chunk(frame: pd.DataFrame, start: int, treatments, entropy: int, outside: dict, cache=None) -> pa.Table:
    arrays = []
    for t in treatments:
        array, count = t.column(frame, start, entropy, cache)
        outside[t.name] = outside.get(t.name, 0) + count
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments])


#: ``spawn_key`` of the row-order stream; column streams use small column indices.
ROW_ORDER_STREAM = 2**31


def _row_keys(start: int, n: int, entropy: int) -> np.ndarray:
    """Random 63-bit sort keys of rows ``start … start+n−1``, one generator per block of rows.

    Sorting a copy by these keys puts its rows in a uniformly random order. Row order must
    not survive into a copy: a file sorted by a sensitive column would give every row's true
    value away, whatever noise each cell gets.
    """
    keys = np.empty(n, dtype=np.int64)
    first, last = start // BLOCK_ROWS, (start + n - 1) // BLOCK_ROWS if n else start // BLOCK_ROWS - 1
    for block in range(first, last + 1):
        block_start = block * BLOCK_ROWS
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(ROW_ORDER_STREAM, block))))
        block_keys = rng.integers(0, 2**63 - 1, size=BLOCK_ROWS, dtype=np.int64)
        lo, hi = max(start, block_start), min(start + n, block_start + BLOCK_ROWS)
        keys[lo - start : hi - start] = block_keys[lo - block_start : hi - block_start]
    return keys


def _shuffled(table: pa.Table, start: int, entropy: int) -> pa.Table:
    """The released rows in the random order of :func:`_row_keys` (same as the streaming buckets give)."""
    order = np.argsort(_row_keys(start, len(table), entropy), kind="stable")
    return table.take(pa.array(order))


def _check_columns(columns, treatments) -> None:
    columns = [str(c) for c in columns]
    if len(set(columns)) != len(columns):
        raise DataError("Two columns have the same name. Give every column a distinct header.")
    absent = [t.name for t in treatments if t.name not in columns]
    if absent:
        raise DataError("The plan releases columns that are not in the table: " + ", ".join(f"'{n}'" for n in absent) + ".")


def _report(treatments, dropped, warnings, seeded, protection: _Protection) -> dict:
    per_record = float(sum((epsilon_decimal(t.epsilon) for t in treatments if t.epsilon > 0), Decimal(0)))
    if seeded:
        warnings = [*warnings, "Reproducible seed: this copy is for tests only and must not be sold or shared."]
    total = float(epsilon_decimal(per_record) + epsilon_decimal(protection.count_epsilon)) if protection.padded else per_record
    return fmt.build_report(
        [t.entry() for t in treatments],
        dropped=dropped,
        per_record_epsilon=per_record,
        warnings=warnings,
        seeded=seeded,
        release_id=uuid.uuid4().hex,
        created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        protection={"unit": protection.unit, "unit_sentence": UNITS[protection.unit], "epsilon": total,
                    "row_count_epsilon": protection.count_epsilon, "padded": protection.padded},
    )


def _owner_notes(outside: dict, treatments) -> list[str]:
    notes = []
    for t in treatments:
        count = outside.get(t.name, 0)
        if count and t.mechanism in ("coin", "k-ary") and t.missing == "random":
            notes.append(
                f"{count:,} values of '{t.name}' were missing or not among the declared categories; each was replaced at random."
            )
        elif count and t.mechanism in ("coin", "k-ary"):
            notes.append(f"{count:,} values of '{t.name}' were missing or not among the declared categories.")
        elif count:
            notes.append(f"{count:,} values of '{t.name}' were missing, not numbers, or outside the declared bounds.")
    return notes


#: ``spawn_key`` of the noisy row count and of the filler rows' inputs.
PAD_STREAM = 2**31 + 1


@dataclass(frozen=True)
class _Protection:
    """How a copy meets its dataset's unit: the unit, and the noisy row count's ε when padded."""

    unit: str
    count_epsilon: float = 0.0

    @property
    def padded(self) -> bool:
        return self.count_epsilon > 0


def _protection(ledger, unit: str | None, count_epsilon: float) -> _Protection:
    if unit is None:
        unit = ledger.unit if isinstance(ledger, BudgetLedger) else REPLACE_ONE
    check_unit(unit)
    if unit == ADD_REMOVE:
        if not (isinstance(count_epsilon, (int, float)) and math.isfinite(count_epsilon) and count_epsilon > 0):
            raise ValueError(f"count_epsilon must be a finite number > 0, got {count_epsilon!r}")
        return _Protection(unit, float(count_epsilon))
    return _Protection(unit)


def _copy_epsilon(plan: ReleasePlan, protection: _Protection) -> float:
    """What a copy costs per person in the unit: Σ column ε, plus the noisy row count when padded."""
    parts = [epsilon_decimal(plan.per_record_epsilon)] + ([epsilon_decimal(protection.count_epsilon)] if protection.padded else [])
    return float(sum(parts, Decimal(0)))


def copy_epsilon(plan: ReleasePlan, unit: str, count_epsilon: float = COUNT_EPSILON) -> float:
    """What a copy by ``plan`` costs per person in a dataset of ``unit`` (the row count's ε included when padded)."""
    return _copy_epsilon(plan, _protection(None, unit, count_epsilon))


def count_epsilon_for(unit: str, count_epsilon: float = COUNT_EPSILON) -> float:
    """The ε a copy spends on its noisy row count in a dataset of ``unit`` (0 where the count is public)."""
    return _protection(None, unit, count_epsilon).count_epsilon


def _check_fits(plan: ReleasePlan, protection: _Protection, budget, book) -> float:
    """The copy's ε in the unit, or :class:`BudgetExceededError` when it does not fit."""
    epsilon = _copy_epsilon(plan, protection)
    if book is not None:
        convert(epsilon_decimal(epsilon), Decimal(0), protection.unit, book.unit)  # raises for a copy the unit cannot take
        if not book.can_spend(epsilon, relation=protection.unit):
            raise BudgetExceededError(_over_budget(epsilon, book.remaining))
    elif budget is not None and epsilon > float(budget):
        raise BudgetExceededError(_over_budget(epsilon, float(budget)))
    return epsilon


def _check_padding(treatments, protection: _Protection) -> None:
    if protection.padded and any(t.mechanism == "keep" for t in treatments):
        raise DataError(
            "A column copied unchanged would tell the filler rows of an add/remove copy from the real ones. "
            "Drop the kept columns, or declare the dataset's unit 'one person's values may change'."
        )


def noisy_row_count(n: int, protection: _Protection, entropy: int) -> int:
    """``n`` plus two-sided geometric noise of ε = ``count_epsilon`` (sensitivity 1), at least 0."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(PAD_STREAM,))))
    return max(int(Geometric(protection.count_epsilon, 1, random_state=rng).randomise(np.array([n]))[0]), 0)


def _filler_rows(treatments, count: int, start: int, entropy: int) -> pa.Table:
    """``count`` filler rows: each column's mechanism applied to an input drawn uniformly from its domain.

    An out-of-domain code makes randomized response draw a uniform category; a Laplace
    column gets a uniform number within its declared bounds.
    """
    arrays = []
    for t in treatments:
        if t.mechanism == "laplace":
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(PAD_STREAM, t.index))))
            inputs = rng.uniform(t.lower, t.upper, size=count)
        else:
            inputs = np.full(count, -1, dtype=np.int64)
        arrays.append(t.as_array(t.randomise(inputs, start, entropy)))
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments])


def _release_key(fingerprint: str, treatments, seeded: bool, entropy: int, protection: _Protection) -> str:
    """The stored copy's key: the released columns' content (a version fingerprint), the plan and the unit."""
    plan = [t.entry() for t in treatments]
    text = json.dumps({"data": fingerprint, "plan": plan, "seed": entropy if seeded else None,
                       "unit": protection.unit, "count_epsilon": protection.count_epsilon}, sort_keys=True)
    return "rr-release/2:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_ledger_arguments(ledger, budget) -> None:
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError("ledger must be a BudgetLedger (open it with dpcore.datasets.Catalog), or None")
    if ledger is not None and budget is not None:
        raise ValueError("budget cannot be combined with a BudgetLedger: set the total on the ledger itself")


def _charge_and_store(book: BudgetLedger, label: str, epsilon: float, key: str, copy, report: dict, protection) -> None:
    """Charge the release and store its copy in one ledger transaction (both or neither)."""
    mechanism = "randomized response per value" + (" + noisy row count" if protection.padded else "")
    released = f"randomized copy: {len(report['columns'])} columns" + (", padded rows" if protection.padded else "")
    try:
        book.spend_and_store_release(label, epsilon, key, copy.payload(), json.dumps(report), relation=protection.unit,
                                     mechanism=mechanism, released=released)
    except sqlite3.DataError:  # SQLite stores at most about 1 GB in one value
        raise DataError(
            "This copy is too large to store in the budget ledger (over 1 GB compressed); nothing was charged. "
            "Split the table into parts of different people and release each part."
        ) from None


REUSED_NOTE = "This table was released with this plan before: the same copy is handed out again, at no cost."


def release_frame(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, random_state=None) -> pd.DataFrame:
    """Randomise an in-memory table by the plan and return the released table — nothing else.

    The bare mechanism, for previews and tests: rows stay in input order, it neither checks nor
    charges a budget and it stores nothing, so never hand its output to a buyer (use
    :func:`release_table`, which also puts the rows in a random order).
    """
    treatments, _, _ = _resolve(plan, schema)
    _check_columns(frame.columns, treatments)
    table = _release_chunk(frame, 0, treatments, _entropy(random_state)[0], {})
    sink = io.BytesIO()
    fileio.write_csv(table, sink, header=True, quoting=_quoting(treatments))
    return read_release(sink.getvalue(), {"columns": [t.entry() for t in treatments]})


def preview_release(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, n_rows: int = 10) -> pd.DataFrame:
    """What the first ``n_rows`` released rows could look like: fresh noise, for the owner's eyes only."""
    return release_frame(frame.head(n_rows), schema, plan)


def release_table(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    *,
    budget: float | None = None,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state=None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
) -> ReleaseResult:
    """Release an in-memory table: randomise it by the plan, within the budget, with its report.

    Parameters
    ----------
    frame : pandas.DataFrame
        The private table (as read by :func:`dpcore.loading.read_csv_bytes`).
    schema : Schema
        The owner's declarations; categories, bounds and bins come only from here.
    plan : ReleasePlan
        What happens to each column (see :func:`default_plan`).
    budget : float, optional
        Without a ledger: the copy's ε must fit in it.
    ledger : BudgetLedger, optional
        The dataset's budget, where the copy is charged and stored (open it with
        :class:`dpcore.datasets.Catalog`). Without a ledger nothing stops a second,
        independent copy: always use one for copies that leave your hands.
    fresh : bool
        Make and charge a new copy even if this table was released with this plan before.
    random_state : None, int or numpy.random.Generator
        ``None`` (operating-system entropy) for every real release; a seed for tests only.
    label : str
        The ledger entry's description.
    unit : {"add/remove", "replace-one"}, optional
        The unit of protection (default: the ledger's; without a ledger, replace-one). Under
        add/remove the copy is padded to a noisy row count (see :func:`noisy_row_count`).
    count_epsilon : float
        ε of that noisy row count (:data:`COUNT_EPSILON`).

    Returns
    -------
    ReleaseResult

    Raises
    ------
    DataError
        The plan does not fit the schema or the table.
    BudgetExceededError
        The release does not fit in the budget; nothing was charged or stored.
    """
    treatments, dropped, warnings = _resolve(plan, schema)
    _check_columns(frame.columns, treatments)
    _check_ledger_arguments(ledger, budget)
    protection = _protection(ledger, unit, count_epsilon)
    _check_padding(treatments, protection)
    epsilon = _copy_epsilon(plan, protection)
    entropy, seeded = _entropy(random_state)
    cache: dict = {}
    key = None
    if ledger is None:
        _check_fits(plan, protection, budget, None)
    else:
        fingerprint = VersionFingerprint()
        fingerprint.add(frame, [t.name for t in treatments])
        key = _release_key(fingerprint.hexdigest(), treatments, seeded, entropy, protection)
        stored = None if fresh else ledger.stored_release(key)
        if stored is not None:
            report = json.loads(stored[1])
            return ReleaseResult(
                report, report_markdown(report), report["per_record_epsilon"], reused=True, seeded=report["seeded"],
                notes=[REUSED_NOTE], csv=b"".join(fileio.iter_stored(stored[0])), dataset_id=ledger.dataset_id,
            )
        _check_fits(plan, protection, None, ledger)
    outside: dict = {}
    table = _release_chunk(frame, 0, treatments, entropy, outside, cache)
    n = len(table)
    if protection.padded:
        rows = noisy_row_count(n, protection, entropy)
        if rows > n:
            table = pa.concat_tables([table, _filler_rows(treatments, rows - n, n, entropy)])
        table = _shuffled(table, 0, entropy).slice(0, rows)
    else:
        table = _shuffled(table, 0, entropy)
    sink = io.BytesIO()
    fileio.write_csv(table, sink, header=True, quoting=_quoting(treatments))
    report = _report(treatments, dropped, warnings, seeded, protection)
    if ledger is not None:
        copy = fileio.StoredCopy(_quoting(treatments))
        copy.append(table)
        _charge_and_store(ledger, label, epsilon, key, copy, report, protection)
    return ReleaseResult(
        report, report_markdown(report), report["per_record_epsilon"], epsilon_charged=epsilon if ledger is not None else 0.0,
        seeded=seeded, notes=_owner_notes(outside, treatments), csv=sink.getvalue(),
        dataset_id=None if ledger is None else ledger.dataset_id,
    )


def _sniff(path: Path) -> tuple[str, str]:
    """``(encoding, delimiter)`` of a CSV file from its first megabyte (UTF-8 if it decodes, else Latin-1)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        raise DataError(f"The file '{path.name}' could not be opened.") from None
    if not head.strip():
        raise DataError("The file is empty. Choose a CSV file with a header row and at least one data row.")
    if b"\x00" in head[:8192]:
        raise DataError("This looks like a binary file (a spreadsheet or archive?), not a CSV. Save it as CSV and try again.")
    try:
        text, encoding = codecs.getincrementaldecoder("utf-8")().decode(head, final=False), "utf-8"
    except UnicodeDecodeError:
        text, encoding = head.decode("latin-1"), "latin-1"
    return encoding, sniff_delimiter(text.lstrip("\ufeff")[:65536])


def file_chunks(path, chunksize: int = DEFAULT_CHUNKSIZE):
    """A callable that reads a CSV file as DataFrame chunks (for :meth:`dpcore.datasets.Catalog.open_table`)."""
    path = Path(path)
    encoding, delimiter = _sniff(path)

    def chunks():
        try:
            for frame, _ in fileio.read_chunks(path, encoding, delimiter, chunksize):
                yield frame
        except UnicodeDecodeError:
            raise DataError("The file's text could not be decoded. Save it as UTF-8 and try again.") from None

    return chunks


def _stream(source: Path, sink, encoding: str, delimiter: str, treatments, entropy: int, chunksize: int, copy, progress,
            protection: _Protection):
    """Release the file chunk by chunk into ``sink``; return its fingerprint (with a ledger) and the outside counts.

    Three stages overlap: a thread reads and parses the next chunk, this thread randomises the
    current one, and a writer thread formats and stores the previous one. A padded copy gets
    its filler rows after the last chunk and is cut to the noisy row count as it is written:
    the rows come out in random order, so the cut drops uniformly random rows, exactly as the
    in-memory release does.
    """
    total = max(source.stat().st_size, 1)
    fingerprint, outside, rows = None, {}, 0
    categorical = {t.name for t in treatments if t.mechanism in ("coin", "k-ary")}
    # Pass one randomises every chunk into buckets of a random row order; pass two writes the
    # buckets out in order, so memory stays bounded by a bucket (about 64 MB of input each).
    buckets = fileio.ShuffleBuckets(math.ceil(total / SHUFFLE_BUCKET_BYTES))
    chunks = fileio.prefetch(fileio.read_chunks(source, encoding, delimiter, chunksize, categorical))
    try:
        for frame, done in chunks:
            if rows == 0:
                _check_columns(frame.columns, treatments)
                fingerprint = VersionFingerprint() if copy is not None else None
            cache: dict = {}
            buckets.add(_release_chunk(frame, rows, treatments, entropy, outside, cache), _row_keys(rows, len(frame), entropy))
            if fingerprint is not None:
                fingerprint.add(frame, [t.name for t in treatments])
            rows += len(frame)
            if progress is not None:
                progress(min(done, total), total)
        if rows == 0:
            raise DataError("The file has a header but no data rows.")
        limit = rows
        if protection.padded:
            limit = noisy_row_count(rows, protection, entropy)
            if limit > rows:
                buckets.add(_filler_rows(treatments, limit - rows, rows, entropy), _row_keys(rows, limit - rows, entropy))
        writer = fileio.BackgroundWriter(sink, copy, _quoting(treatments))
        failed, written = True, 0
        try:
            for index, table in enumerate(buckets.tables()):
                table = table.slice(0, max(limit - written, 0))
                if index == 0 or table.num_rows:
                    writer.put(table, header=index == 0)
                written += table.num_rows
            failed = False
        finally:
            writer.close(raise_errors=not failed)
    finally:
        chunks.close()
        buckets.close()
    return None if fingerprint is None else fingerprint.hexdigest(), outside


def release_csv(
    source,
    destination,
    schema: Schema,
    plan: ReleasePlan,
    *,
    budget: float | None = None,
    ledger=None,
    fresh: bool = False,
    random_state=None,
    chunksize: int = DEFAULT_CHUNKSIZE,
    progress: Callable[[int, int], None] | None = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
) -> ReleaseResult:
    """Release a CSV file of any size into ``destination``, chunk by chunk.

    Memory stays bounded by ``chunksize`` rows (plus, with a ledger, the compressed copy kept
    for it). For a given seed the file equals :func:`release_table` on the whole table, whatever
    ``chunksize``. Other parameters as in :func:`release_table`; ``progress`` is called with
    ``(bytes_read, total_bytes)`` after every chunk.

    The copy is written to a temporary file beside ``destination`` and renamed only once it
    has been charged (or the stored copy found); after any error no file is left behind.
    """
    source, destination = Path(source), Path(destination)
    if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
        raise ValueError(f"chunksize must be a whole number >= 1, got {chunksize!r}")
    treatments, dropped, warnings = _resolve(plan, schema)
    _check_ledger_arguments(ledger, budget)
    protection = _protection(ledger, unit, count_epsilon)
    _check_padding(treatments, protection)
    epsilon = _copy_epsilon(plan, protection)
    if ledger is None or fresh:  # a stored copy is handed out free, so only a new one is checked up front
        _check_fits(plan, protection, budget, ledger)
    entropy, seeded = _entropy(random_state)
    encoding, delimiter = _sniff(source)
    notes: list[str] = []
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent)
    try:
        with os.fdopen(handle, "wb") as sink:
            for attempt in dict.fromkeys([encoding, "latin-1"]):
                sink.seek(0)
                sink.truncate()
                copy = fileio.StoredCopy(_quoting(treatments)) if ledger is not None else None
                try:
                    fingerprint, outside = _stream(
                        source, sink, attempt, delimiter, treatments, entropy, chunksize, copy, progress, protection
                    )
                    break
                except UnicodeDecodeError:
                    if attempt == "latin-1":
                        raise DataError("The file's text could not be decoded. Save it as UTF-8 and try again.") from None
        result = ReleaseResult(
            _report(treatments, dropped, warnings, seeded, protection), "", plan.per_record_epsilon, seeded=seeded,
            notes=notes, path=destination,
        )
        if ledger is not None:
            result.dataset_id = ledger.dataset_id
            key = _release_key(fingerprint, treatments, seeded, entropy, protection)
            stored = None if fresh else ledger.stored_release(key)
            if stored is not None:
                with open(temporary, "wb") as out:
                    for part in fileio.iter_stored(stored[0]):
                        out.write(part)
                result.report, result.reused = json.loads(stored[1]), True
                result.seeded, result.per_record_epsilon = result.report["seeded"], result.report["per_record_epsilon"]
                notes.append(REUSED_NOTE)
            else:
                _charge_and_store(ledger, label, epsilon, key, copy, result.report, protection)
                result.epsilon_charged = epsilon
        if not result.reused:
            notes.extend(_owner_notes(outside, treatments))
        result.markdown = report_markdown(result.report)
        os.replace(temporary, destination)
        return result
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


# --- the buyer's side ----------------------------------------------------------------------------


def read_release(source, report: dict | None = None) -> pd.DataFrame:
    """Read a released file as written: text stays text (nothing becomes NaN); Laplace columns become numbers."""
    numbers = [e["header"] for e in (report or {}).get("columns", []) if e["mechanism"] == "laplace"]
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    dtypes = collections.defaultdict(lambda: str, dict.fromkeys(numbers, float))
    try:
        return pd.read_csv(source, dtype=dtypes, keep_default_na=False, na_filter=False)
    except ValueError:  # a damaged number column: read as text, then convert what can be converted
        if hasattr(source, "seek"):
            source.seek(0)
        frame = pd.read_csv(source, dtype=str, keep_default_na=False, na_filter=False)
        for header in (h for h in numbers if h in frame.columns):
            frame[header] = pd.to_numeric(frame[header], errors="coerce")
        return frame


def report_entry(report: dict, column: str) -> dict:
    """The report's entry for a column (by its name or its header in the file)."""
    for entry in report.get("columns", []):
        if column in (entry["header"], entry["column"]):
            return entry
    raise KeyError(column)


def estimate_column(released: pd.Series, entry: dict, confidence: float = 0.95) -> pd.DataFrame:
    """The buyer's unbiased estimates for one released column, from its report entry.

    Randomized-response columns: the true share of every category,
    ``π̂_j = (λ̂_j − q)/(p − q)``, with the standard error of that estimate of this table's share,
    ``√((π p(1−p) + (1−π) q(1−q))/n)/(p−q)`` (``π`` clipped to [0, 1]), and a normal interval.
    Laplace columns: the mean of the clipped values (the plain mean of the released values),
    standard error ``b√2/√n``. Columns of the result: ``category, estimate, std_error, ci_lower,
    ci_upper, consistent`` (``category`` is ``"mean"`` for a Laplace column).

    ``consistent`` holds estimates that are a proper distribution: the maximum-likelihood shares
    under the randomisation, constrained to sum to 1 and stay in [0, 1]
    (:func:`dpcore._release_report.consistent_shares`, computed exactly rather than by EM). They
    equal ``estimate`` whenever every unbiased share already lies in [0, 1]; otherwise they are
    slightly biased (a share near 0 comes out a little too high on average), so the standard
    error and the interval belong to ``estimate``. The MLE is preferred to a Euclidean projection
    of ``estimate`` onto the simplex because it weighs categories by the multinomial likelihood
    of the counts rather than shifting them all alike. For a Laplace column ``consistent`` is the
    mean kept within the declared bounds.

    Examples
    --------
    >>> entry = {"header": "smoker", "mechanism": "coin", "epsilon": 1.0986, "n_categories": 2, "domain": ["no", "yes"]}
    >>> estimate_column(pd.Series(["no", "yes", "yes", "no"]), entry)["estimate"].tolist()
    [0.5, 0.5]
    >>> estimate_column(pd.Series(["no", "no", "no", "yes"]), entry)[["estimate", "consistent"]].values.tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    >>> estimate_column(pd.Series(["no", "no", "no", "no"]), entry)[["estimate", "consistent"]].values.tolist()
    [[1.5, 1.0], [-0.5, 0.0]]
    """
    if entry["mechanism"] == "laplace":
        values = pd.to_numeric(released, errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        return fmt.mean_from_sum(values.size, float(values.sum()), entry, confidence)
    return estimate_counts(np.bincount(fmt.released_codes(released, entry), minlength=_categories(entry)), entry, confidence)


def _categories(entry: dict) -> int:
    if entry["mechanism"] not in ("coin", "k-ary", "bins"):
        raise ValueError(f"column {entry['header']!r} is not randomised by randomized response ({entry['mechanism']})")
    return int(entry["n_categories"])


def estimate_counts(counts, entry: dict, confidence: float = 0.95) -> pd.DataFrame:
    """:func:`estimate_column` from the released counts of each category (in the order of ``entry["domain"]``).

    For buyers who count in a database rather than reading the file.
    """
    _categories(entry)
    return fmt.frequencies_from_counts(counts, entry, confidence)


def estimate_joint(
    released_a: pd.Series, entry_a: dict, released_b: pd.Series, entry_b: dict, confidence: float = 0.95
) -> pd.DataFrame:
    """Debiased joint shares of two randomized-response columns, with standard errors.

    The columns were randomised independently, so the observed joint shares are
    ``Λ = M_A Π M_Bᵀ`` and ``Π̂ = M_A⁻¹ Λ̂ (M_B⁻¹)ᵀ`` — the inverse Kronecker product
    ``(M_A ⊗ M_B)⁻¹`` applied to the flattened table. A cell's variance is
    ``((K^∘2 Λ̂)_c − π̂_c)/n`` with ``K = M_A⁻¹ ⊗ M_B⁻¹`` squared element-wise (from the
    multinomial covariance of ``Λ̂``), computed as ``(M_A⁻¹)^∘2 Λ̂ ((M_B⁻¹)^∘2)ᵀ`` without forming
    ``K``. One row per pair of categories.
    """
    codes_a, codes_b = fmt.released_codes(released_a, entry_a), fmt.released_codes(released_b, entry_b)
    if codes_a.size != codes_b.size:
        raise ValueError("the two columns must have the same length")
    ka, kb = _categories(entry_a), _categories(entry_b)
    counts = np.bincount(codes_a * kb + codes_b, minlength=ka * kb).reshape(ka, kb)
    return fmt.joint_from_counts(counts, entry_a, entry_b, confidence)


def estimate_joint_counts(counts, entry_a: dict, entry_b: dict, confidence: float = 0.95) -> pd.DataFrame:
    """:func:`estimate_joint` from the released joint counts (a ``k_A × k_B`` table in domain order)."""
    _categories(entry_a), _categories(entry_b)
    return fmt.joint_from_counts(counts, entry_a, entry_b, confidence)


def estimate_release(
    source, report: dict, columns=None, confidence: float = 0.95, chunksize: int = DEFAULT_CHUNKSIZE
) -> dict[str, pd.DataFrame]:
    """:func:`estimate_column` for the randomised columns of a released file, read in chunks.

    ``source`` is a path, bytes or a file object; ``columns`` (names or headers) defaults to
    every randomised column of the report. Returns one table per column, by header.
    """
    entries = [e for e in report.get("columns", []) if e["mechanism"] in RANDOMISED]
    if columns is not None:
        entries = [report_entry(report, c) for c in columns]
    counts = {e["header"]: np.zeros(e.get("n_categories", 0), dtype=np.int64) for e in entries}
    sums = {e["header"]: [0, 0.0] for e in entries}
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    try:
        for chunk in pd.read_csv(
            source, dtype=str, keep_default_na=False, na_filter=False, usecols=[e["header"] for e in entries], chunksize=chunksize
        ):
            for e in entries:
                if e["mechanism"] == "laplace":
                    values = pd.to_numeric(chunk[e["header"]], errors="coerce").to_numpy(dtype=float)
                    values = values[np.isfinite(values)]
                    sums[e["header"]][0] += values.size
                    sums[e["header"]][1] += float(values.sum())
                else:
                    counts[e["header"]] += np.bincount(fmt.released_codes(chunk[e["header"]], e), minlength=_categories(e))
    except DataError:
        raise
    except (ValueError, pd.errors.ParserError):
        raise DataError(
            "The released file does not have the columns its report describes: does the report belong to this file?"
        ) from None
    return {
        e["header"]: fmt.mean_from_sum(*sums[e["header"]], e, confidence)
        if e["mechanism"] == "laplace"
        else estimate_counts(counts[e["header"]], e, confidence)
        for e in entries
    }


def estimate_vs_truth(
    frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, released: pd.DataFrame, column: str, confidence: float = 0.95
) -> pd.DataFrame:
    """The buyer's estimate beside the truth it estimates — for the owner's eyes only.

    The truth is what the estimator is unbiased for: each declared category's share (a missing
    or undeclared value counted as ``1/k`` of every category, unless missing values are their
    own category), or the mean of the clipped values. Never give this table to a buyer: it
    holds statistics of the private data.
    """
    treatments, _, _ = _resolve(plan, schema)
    matches = [t for t in treatments if column in (t.name, t.header) and t.mechanism in RANDOMISED]
    if not matches:
        raise ValueError(f"column {column!r} is not randomised by this plan")
    t = matches[0]
    estimate = estimate_column(released[t.header], t.entry(), confidence).drop(columns="consistent")
    inputs, _ = t.inputs(frame)
    if t.mechanism == "laplace":
        truth = np.array([inputs.mean()])
    else:
        valid = inputs >= 0
        truth = np.bincount(inputs[valid], minlength=t.k) / max(inputs.size, 1) + (~valid).mean() / t.k
    estimate.insert(1, "truth", truth)
    estimate["covered"] = (estimate["ci_lower"] <= estimate["truth"]) & (estimate["truth"] <= estimate["ci_upper"])
    return estimate


# --- how useful a copy will be (the owner's side, before release) ---------------------------------


USEFULNESS_COLUMNS = ["column", "epsilon", "typical_error", "verdict", "rating"]


def usefulness(plan: ReleasePlan, schema: Schema, n_rows: int) -> pd.DataFrame:
    """A plain verdict, before release, on how useful the copy will be to a buyer, per randomised column.

    ``typical_error`` is the standard error of the buyer's estimate with ``n_rows`` rows, from
    the report's own variance formula: for a randomized-response column, one share at ``π = 1/k``,
    ``√((π p(1−p) + (1−π) q(1−q))/n)/(p−q)``; for a Laplace column, the mean, ``b√2/√n``.
    ``verdict`` says it in a sentence (the ± it quotes is that standard error) and ``rating`` is
    ``"noise"``, ``"rough"`` or ``"useful"``, from the 95 % margin ``1.96 × typical_error``
    against the quantity's natural size (see :data:`dpcore._release_report.NOISE_RATIO`):

    * against the average share ``1/k``: from 1 up the interval around a typical share reaches 0,
      so the buyer cannot tell a common category from an absent one — mostly noise; under 0.2 a
      typical share is known to within ±20 % of itself — useful; rough in between;
    * for a Laplace column, against half the declared range (the same cut-offs: from 1 up the
      mean cannot be placed in either half of its range; under 0.2 it is known to ±10 % of it).

    ``n_rows`` is the owner's row count: the table is for the owner only. Columns the plan
    drops or keeps, and columns with a problem in the plan (see :meth:`ReleasePlan.problems`),
    get no row.

    Examples
    --------
    >>> from dpcore.schema import ColumnSpec, Schema
    >>> schema = Schema([ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False)])
    >>> plan = ReleasePlan([ColumnPlan("smoker", "k-ary", epsilon=0.025)])
    >>> usefulness(plan, schema, 1000)["rating"].tolist()
    ['noise']
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
        raise ValueError(f"n_rows must be a whole number >= 1, got {n_rows!r}")
    rows = []
    for index, entry in enumerate(plan.columns):
        if entry.mechanism not in RANDOMISED or _column_problems(entry, schema):
            continue
        t = _treatment(index, entry, schema[entry.column])
        if t.mechanism == "laplace":
            error = math.sqrt(2.0) * t.scale / math.sqrt(n_rows)
            level, sentence = fmt.verdict(t.name, error, lower=t.lower, upper=t.upper)
        else:
            rr = KaryRandomizedResponse(t.epsilon, t.k)
            error = fmt.share_error(rr.keep_probability, rr.other_probability, 1.0 / t.k, int(n_rows))
            level, sentence = fmt.verdict(t.name, error, k=t.k)
        rows.append(dict(zip(USEFULNESS_COLUMNS, [t.name, t.epsilon, error, sentence, level], strict=True)))
    return pd.DataFrame(rows, columns=USEFULNESS_COLUMNS)


def usefulness_summary(table: pd.DataFrame) -> str:
    """One sentence about the whole copy, from :func:`usefulness`'s table."""
    if table.empty:
        return "The plan randomises no column, so there is nothing for a buyer to estimate."
    ratings = dict(zip(table["column"], table["rating"], strict=True))
    if all(r == "useful" for r in ratings.values()):
        which = "the only randomised column" if len(ratings) == 1 else f"all {len(ratings)} randomised columns"
        return f"Useful: the buyer's error will be small in {which}."

    def names(level: str) -> str:
        found = [f"'{c}'" for c, r in ratings.items() if r == level]
        if len(found) > 5:
            found = found[:4] + [f"{len(found) - 4} more"]
        return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]

    counts = collections.Counter(ratings.values())
    parts = []
    if counts["noise"]:
        advice = "raise its ε, coarsen it or drop it" if counts["noise"] == 1 else "raise their ε, coarsen them or drop them"
        parts.append(f"mostly noise for {names('noise')} ({advice})")
    if counts["rough"]:
        parts.append(f"rough for {names('rough')} (a rough picture only)")
    if counts["useful"]:
        parts.append("useful for the other column" if counts["useful"] == 1 else f"useful for the other {counts['useful']}")
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"At these ε the copy is {text}."
