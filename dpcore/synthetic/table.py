"""Making a synthetic copy of an in-memory table: check the budget, measure, fit, draw, charge, report."""

from __future__ import annotations

import io
import itertools
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpcore.budget.accountant import ADD_REMOVE, BudgetLedger, Charge
from dpcore.budget.persons import check_unit_column
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.progress import Clock, CostMemory, Progress, Stage, TimeLeft, remember_stages, with_remembered_priors
from dpcore.release.contributions import bounded, person_bound
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import entropy as make_entropy
from dpcore.release.randomness import generator
from dpcore.synthetic import aim
from dpcore.synthetic.budget import DEFAULT_DELTA, Calibration
from dpcore.synthetic.domain import SyntheticColumn, decode, encode, synthetic_columns
from dpcore.synthetic.measure import Measurement, marginal_count, measure, pair_count
from dpcore.synthetic.model import fit_and_sample, fit_stages, noisy_total, private_pgm
from dpcore.synthetic.report import build_report, report_markdown
from dpcore.tables.schema import MISSING_CATEGORY, Schema
from dpcore.validation import RandomStateLike

#: The copy's own randomness stream (``spawn_key``), apart from the randomized copy's streams.
SYNTHETIC_STREAM = 2**31 + 16


@dataclass
class SyntheticResult:
    """A synthetic copy: its report (for the buyer), the CSV, and what was charged (for the owner)."""

    report: dict[str, Any]
    markdown: str
    csv: bytes
    epsilon_charged: float = 0.0
    delta_charged: float = 0.0
    seeded: bool = False
    notes: list[str] = field(default_factory=list)
    dataset_id: str | None = None

    @property
    def table(self) -> pd.DataFrame:
        """The copy as the buyer reads it (categories in declared order)."""
        return read_synthetic(self.csv, self.report)

    def first_rows(self, count: int) -> pd.DataFrame:
        """The copy's first ``count`` rows as :attr:`table` reads them, without reading the rest."""
        return read_synthetic(self.csv, self.report, rows=count)


def read_synthetic(source: bytes | str, report: dict[str, Any], rows: int | None = None) -> pd.DataFrame:
    """A synthetic copy (its first ``rows``, default all) read back with every column's declared cells as its
    categories (the buyer's reader)."""
    data = io.BytesIO(source) if isinstance(source, bytes) else source
    frame = pd.read_csv(data, dtype=str, keep_default_na=False, nrows=rows)
    for entry in report["columns"]:
        frame[entry["header"]] = pd.Categorical(frame[entry["header"]], categories=entry["cells"])
    return frame


def copy_for_models(copy: pd.DataFrame, report: dict[str, Any]) -> pd.DataFrame:
    """A synthetic copy as a model reads it: each number bin at its midpoint, "(missing)" cells missing, columns by name.

    Only the copy and its report's public bin edges are read, so whatever is computed from the
    result (a comparison of models trained and tested on it) is post-processing of the copy's
    release and costs no further ε.
    """
    data: dict[str, Any] = {}
    for entry in report["columns"]:
        cells = copy[entry["header"]].astype(str).to_numpy()
        if entry["kind"] == "bins":
            edges = np.asarray(entry["edges"], dtype=float)
            midpoints = dict(zip(entry["cells"], (edges[:-1] + edges[1:]) / 2, strict=False))
            data[entry["column"]] = pd.Series(cells).map(midpoints).astype(float).to_numpy()
        else:
            data[entry["column"]] = np.where(cells == MISSING_CATEGORY, None, cells)
    return pd.DataFrame(data, index=copy.index)


def copy_to_learn_from(copy: pd.DataFrame, report: dict[str, Any], schema: Schema) -> tuple[pd.DataFrame, Schema]:
    """A synthetic copy as models read it (:func:`copy_for_models`) and the declarations of the columns it holds.

    The copy holds the released columns only (no identifier, no ignored column), so its schema is
    the owner's restricted to them. Post-processing of the copy's release: nothing more is charged.

    Raises
    ------
    DataError
        The copy and its report do not match (a copy kept from another version, or edited).
    """
    try:
        frame = copy_for_models(copy, report)
    except (KeyError, TypeError, ValueError):
        raise DataError(_("This synthetic copy and its report do not match: make the copy again.")) from None
    return frame, Schema([column for column in schema.columns if column.name in frame.columns])


def synthetic_shares(copy: pd.DataFrame, report: dict[str, Any], column: str, confidence: float = 0.95) -> pd.DataFrame:
    """The buyer's shares of one column in a synthetic copy, with the measurement noise's interval.

    The copy's one-way shares follow the noisy one-way marginal: its noise (standard deviation
    ``σ`` rows, from the report) over the copy's rows is the shares' standard error; the model's
    own error comes on top, so read the interval as a lower bound.
    """
    from scipy.stats import norm

    entry = next(e for e in report["columns"] if e["column"] == column)
    one_way = next(m for m in report["measured"] if m["columns"] == [column])
    counts = copy[entry["header"]].value_counts(sort=False).reindex(entry["cells"], fill_value=0).to_numpy(dtype=float)
    rows = max(counts.sum(), 1.0)
    error = one_way["noise_std"] / rows
    z = float(norm.ppf(0.5 + confidence / 2))
    shares = counts / rows
    return pd.DataFrame(
        {
            "category": entry["cells"],
            "estimate": shares,
            "std_error": error,
            "ci_lower": np.clip(shares - z * error, 0, 1),
            "ci_upper": np.clip(shares + z * error, 0, 1),
        }
    )


def synthesize_table(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str = "gaussian",
    ledger: BudgetLedger | None = None,
    unit: str | None = None,
    public_rows: int | None = None,
    random_state: RandomStateLike = None,
    label: str = "synthetic copy",
    progress: Progress | None = None,
    costs: CostMemory | None = None,
    clock: Clock = time.monotonic,
    work: TimeLeft | None = None,
    method: str = "mst",
    workload: Sequence[Sequence[str]] | None = None,
) -> SyntheticResult:
    """A synthetic copy of ``frame``: (ε, δ)-DP per person in the dataset's unit, charged to the ledger.

    Parameters
    ----------
    frame : pandas.DataFrame
        The private table.
    schema : Schema
        The owner's declarations: categories, bounds and the privacy unit come only from here.
    plan : ReleasePlan
        Which columns the copy holds (those the plan does not drop) and their bins.
    epsilon, delta : float
        What the copy costs per person; δ defaults to :data:`~dpcore.synthetic.budget.DEFAULT_DELTA`
        with Gaussian noise and must be 0 (or None) with Laplace noise.
    noise : {"gaussian", "laplace"}
    ledger : BudgetLedger, optional
        The dataset's budget: checked before anything is measured, charged before the copy is
        returned (:meth:`~dpcore.budget.accountant.BudgetLedger.in_memory` for a trial). Without one,
        nothing is charged: for tests only.
    unit : {"add/remove", "replace-one"}, optional
        Default: the ledger's, else add/remove.
    public_rows : int, optional
        The copy's row count when the owner declares the table's size public; default: the
        noisy count the marginals agree on (never the exact count).
    random_state : None, int or numpy.random.Generator
        ``None`` for every real copy; a seed for tests only (the report then says not for sale).
    progress : callable, optional
        ``progress(share_done, seconds_left, sentence)`` as the work goes on; ``seconds_left`` is
        measured (:func:`copy_stages`), None while a stage left has not been measured.
    costs : CostMemory, optional
        Timings of earlier copies on this machine, for the one stage that cannot be measured
        before it ends (the model's set-up); updated with this copy's.
    clock : callable
        Seconds from any fixed origin (tests pass a fake clock).
    work : TimeLeft, optional
        A larger job's estimator with a stage named :data:`COPY` (the utility preview), which becomes
        :func:`copy_stages`; else one of its own.
    method : {"mst", "aim"}
        MST (a fixed plan: every column, a tree of pairs and the target's pairs; fast) or AIM
        (:mod:`dpcore.synthetic.aim`: rounds measuring what the model gets most wrong among all pairs and the
        target's triples; better on three-way relations, slower; Gaussian noise only).
    workload : list of lists of column names, optional
        AIM only: the pairs and triples of the copy's columns the buyer will study, declared by the owner
        (public, chosen before the data are read); AIM then adapts to them instead of every pair and the
        target's triples (:func:`declared_workload`).

    Raises
    ------
    DataError
        The plan or the declarations do not fit the table, or Private-PGM is not installed.
    BudgetExceededError
        The copy does not fit in the budget; nothing was measured or charged.
    """
    columns = synthetic_columns(schema, plan)
    private_pgm()  # a missing library is said before anything is measured
    bound = person_bound(schema)
    if bound is not None:
        check_unit_column(frame, bound.column)
    if unit is None:
        unit = ledger.unit if ledger is not None else ADD_REMOVE
    if delta is None:
        delta = DEFAULT_DELTA if noise == "gaussian" else 0.0
    k = 1 if bound is None else bound.rows_per_person
    names = [c.name for c in columns]
    anchor = names.index(schema.target.name) if schema.target is not None and schema.target.name in names else None
    calibration = Calibration(float(epsilon), float(delta), noise, unit, k, len(columns), anchored=anchor is not None)
    if method not in METHODS:
        raise DataError(_("The synthetic copy's method must be MST or AIM."))
    if method == "aim":
        aim.check_aim(calibration)
    declared = declared_workload(names, workload, method)
    if public_rows is not None and (isinstance(public_rows, bool) or int(public_rows) != public_rows or public_rows < 1):
        raise DataError(_("The declared number of rows must be a whole number of at least 1."))
    entropy, seeded = make_entropy(random_state)
    charge = Charge(
        label,
        calibration.epsilon,
        calibration.delta,
        relation=unit,
        privacy_unit=None if bound is None else bound.column,
        rows_per_person=k,
        seeded=seeded,
        mechanism=f"{noise} noise on marginals + exponential mechanism ({method.upper()}), Private-PGM model",
        released=f"synthetic copy: {len(columns)} columns",
        action=N_("Making a synthetic copy"),
        undone=N_("measured"),
    )
    with nullcontext(None) if ledger is None else ledger.charging(charge) as paid:
        rng = generator(entropy, SYNTHETIC_STREAM)
        notes: list[str] = []
        if bound is not None:
            frame, left_out = bounded(frame, [c.name for c in columns], bound, entropy)
            if left_out:
                notes.append(
                    _(
                        "{count} rows were left out: at most {k} rows of each person count. (Owner only: a count of "
                        "the private table.)"
                    ).format(count=f"{left_out:,}", k=k)
                )
        stages = copy_stages(len(columns), calibration, costs, method)
        if work is None:
            work = TimeLeft(stages, progress, clock)
        else:
            work.expand(COPY, stages)
        shape = tuple(c.size for c in columns)
        model = None
        if method == "aim":
            measurements, model = aim.measure_and_fit(
                encode(frame, columns, rng), shape, calibration, rng, work, anchor, clock, declared=declared
            )
            work.resize("set-up", len(measurements))
            work.resize("drawing", len(measurements))
        else:
            encoded = encode(frame, columns, rng)  # before the pairs' clock starts: it is not a pair's cost
            work.begin("pairs", _("Counting pairs of columns…"))
            measurements = measure(encoded, shape, calibration, rng, work, anchor=anchor)
        rows = copy_rows(measurements, public_rows)
        cells = fit_and_sample(measurements, shape, rows, rng, work, warm_start=model)
        work.begin("writing", _("Writing the copy and its report…"))
        result = finish(
            columns,
            schema,
            calibration,
            measurements,
            cells,
            rng,
            public_rows is not None,
            seeded,
            bound is not None,
            method,
            declared,
        )
        work.tick(_("The copy is written."), len(columns))
        remember_stages(work, costs, COPY_COSTS, REMEMBERED)  # for the next copy's first estimate
        result.notes = notes
        if paid is not None:
            paid.released += f", {len(cells):,} rows"
    if ledger is not None:
        result.epsilon_charged, result.delta_charged, result.dataset_id = charge.epsilon, charge.delta, ledger.dataset_id
    return result


#: The copy's methods: MST (fast) and AIM (best; :mod:`dpcore.synthetic.aim`).
METHODS = ("mst", "aim")
#: The widest marginal a declared workload may hold: AIM's candidates are its cliques and their subsets, each
#: counted exactly before the rounds, and a triple of 8-bin numbers is 512 cells (wider ones outgrow the model's cap).
WIDEST_DECLARED = 3


def studied_together(columns: Sequence[str], target: str | None = None) -> list[list[str]]:
    """The workload of columns a buyer will study together: every pair of them and, with a ``target`` of the copy,
    every pair of the others with the target (the triples a model of the target reads)."""
    others = [c for c in columns if c != target]
    pairs = [list(pair) for pair in itertools.combinations(columns, 2)]
    return pairs + ([[a, b, target] for a, b in itertools.combinations(others, 2)] if target is not None else [])


def declared_workload(names: list[str], workload: Sequence[Sequence[str]] | None, method: str) -> list[tuple[int, ...]] | None:
    """The owner's AIM workload as cliques of column positions, or None for AIM's default.

    Each entry names two or three different columns of the copy. Column names are declarations,
    not cell values, so a refusal may name them.
    """
    if not workload:
        return None
    if method != "aim":
        raise DataError(_("A declared workload is AIM's: choose AIM, or leave the workload out."))
    position = {name: i for i, name in enumerate(names)}
    cliques = []
    for entry in workload:
        unknown = [name for name in entry if name not in position]
        if unknown:
            raise DataError(
                _("The workload names a column the copy does not hold: {column}. Name columns the plan keeps.").format(
                    column=unknown[0]
                )
            )
        if not 2 <= len(set(entry)) == len(entry) <= WIDEST_DECLARED:
            raise DataError(_("Each entry of the workload names two or three different columns, such as 'age, income'."))
        cliques.append(tuple(sorted(position[name] for name in entry)))
    return cliques


#: The name of the placeholder stage a larger job's estimator holds for a copy (its cost unknown until planned).
COPY = "synthetic copy"
#: The copy's stages whose cost per unit is remembered for the next copy (the pairs are measured first, always).
REMEMBERED = ("set-up", "iterations", "drawing", "writing")


#: Seconds to write a column of the copy on a machine's first copy: 0.021 for Adult's 32,561 rows, 0.0015 for 2,700 rows
#: (2-core machine); a small share of any copy.
FIRST_WRITING = 0.01


#: Under this kind a :class:`~dpcore.progress.CostMemory` keeps a copy's :data:`REMEMBERED` stages.
COPY_COSTS = "synthetic copy"


def copy_stages(n_columns: int, calibration: Calibration, costs: CostMemory | None = None, method: str = "mst") -> list[Stage]:
    """A copy's work for :class:`~dpcore.progress.TimeLeft`: the pairs of columns counted, then the model's stages.

    Counting a pair costs about the same for every pair of a table (one pass over the rows), so
    the first batch measures them all; the model's stages are :func:`~dpcore.synthetic.model.fit_stages`; then
    writing the file (decoding every cell, a CSV of every row), per column. Every stage but the pairs reports
    nothing until it ends, so its cost is predicted: from ``costs``, the last copies' seconds per unit on this
    machine (:func:`~dpcore.progress.remember_stages`), else from the figures measured on a 2-core machine
    (:data:`~dpcore.synthetic.model.FIRST_SET_UP`, :data:`FIRST_WRITING`).
    AIM's rounds (:func:`~dpcore.synthetic.aim.aim_stages`) replace the pairs, each round timed as it ends.
    """
    first = aim.aim_stages(n_columns) if method == "aim" else [Stage("pairs", pair_count(n_columns, calibration))]
    marginals = n_columns + first[0].units if method == "aim" else marginal_count(n_columns, calibration)
    stages = [
        *first,
        *fit_stages(int(marginals)),
        Stage("writing", n_columns, prior=FIRST_WRITING),
    ]
    return with_remembered_priors(stages, costs, COPY_COSTS, REMEMBERED)


def copy_rows(measurements: list[Measurement], public_rows: int | None) -> int:
    """How many rows the copy has: the owner's declared public size, else the noisy count (never the exact one)."""
    return int(public_rows) if public_rows is not None else int(round(noisy_total(measurements)))


def finish(
    columns: list[SyntheticColumn],
    schema: Schema,
    calibration: Calibration,
    measurements: list[Measurement],
    cells: np.ndarray,
    rng: np.random.Generator,
    public_rows: bool,
    seeded: bool,
    persons: bool,
    method: str = "mst",
    declared: list[tuple[int, ...]] | None = None,
) -> SyntheticResult:
    """The copy's file and report from the drawn cells (post-processing only)."""
    cells = cells[rng.permutation(len(cells))]
    copy = decode(cells, columns)
    kept = {c.name for c in columns}
    dropped = [n for n in schema.names if n not in kept and n != schema.privacy_unit]
    report = build_report(columns, dropped, calibration, measurements, len(cells), public_rows, seeded, persons, method, declared)
    sink = io.StringIO()
    copy.to_csv(sink, index=False)
    return SyntheticResult(report, report_markdown(report), sink.getvalue().encode("utf-8"), seeded=seeded)


def synthetic_frame(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str = "gaussian",
    unit: str = ADD_REMOVE,
    random_state: RandomStateLike = None,
    progress: Progress | None = None,
    method: str = "mst",
    workload: Sequence[Sequence[str]] | None = None,
) -> pd.DataFrame:
    """The bare mechanism: a synthetic table, checked against nothing and charged to nothing (previews, tests)."""
    return synthesize_table(
        frame,
        schema,
        plan,
        epsilon=epsilon,
        delta=delta,
        noise=noise,
        unit=unit,
        random_state=random_state,
        progress=progress,
        method=method,
        workload=workload,
    ).table
