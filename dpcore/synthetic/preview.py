"""The owner's utility preview: what a randomized copy and a synthetic copy at the same ε would give a buyer.

**Owner's eyes only, free of charge, never released.** It runs both copies on a simulation:
the table's rows are split at random into a part the copies are made from (80 %) and held-out
rows (20 %); it compares the copies' marginals with the true ones of the part they were made
from, and trains a classifier on each copy to predict the target, scored on the held-out real
rows. Its numbers are counts of the private table, so they stay on the owner's screen.

Its time left (:class:`~dpcore.progress.TimeLeft`) adds the synthetic copy's measured stages
(:func:`~dpcore.synthetic.table.copy_stages`) to the comparison of every pair of columns, whose
cost per pair is measured first on the first column's pairs, and to the training of the three
models, whose cost per row is measured first on one fit of :data:`PILOT_ROWS` real rows.

Both copies hold the same columns over the same declared cells. The randomized copy shares the
chosen ε equally between its columns (per record, one person's values may change: the row
count is kept), and its marginals are the buyer's debiased estimates (the k-ary randomized
response matrix inverted on each axis, negative shares cut to 0). The synthetic copy is made
at the same total ε in the chosen unit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from dpcore.budget.accountant import ADD_REMOVE
from dpcore.i18n import _
from dpcore.mechanisms import KaryRandomizedResponse
from dpcore.progress import Clock, CostMemory, Progress, Stage, TimeLeft
from dpcore.release.plan import ColumnPlan, ReleasePlan
from dpcore.release.table import release_frame
from dpcore.synthetic.domain import SyntheticColumn, copy_cells, encode, synthetic_columns
from dpcore.synthetic.measure import marginal, pair_counts
from dpcore.synthetic.table import COPY, synthesize_table
from dpcore.tables.schema import Schema
from dpcore.validation import check_random_state

HOLDOUT = 0.2
#: Real rows of the fit that measures the training's cost per row before anything else runs. Chosen so that its cost
#: per row is within a third of a whole fit's (its fixed cost spread over enough rows): 28 µs against 32 for 26,000 rows
#: of a 76-column analog of Adult, 7.5 against 5.8 on Adult; at 1,000 rows, 55 and 23 (2-core machine).
PILOT_ROWS = 4_000
RANDOMIZED, SYNTHETIC, REAL = "randomized copy", "synthetic copy", "real rows (reference)"
MAJORITY = "most common class"


def randomized_plan(columns: list[SyntheticColumn], epsilon: float) -> ReleasePlan:
    """A randomized-response plan over the same columns and cells, ε shared equally between them."""
    share = epsilon / len(columns)
    entries = []
    for c in columns:
        t = c.treatment
        if t.mechanism == "bins":
            entries.append(ColumnPlan(c.name, "bins", epsilon=share, edges=list(t.bin_edges()), missing=t.missing))
        else:
            entries.append(ColumnPlan(c.name, "k-ary", epsilon=share, missing=t.missing))
    return ReleasePlan(entries)


def shares(cells: np.ndarray, shape: tuple[int, ...], clique: tuple[int, ...]) -> np.ndarray:
    counts = marginal(cells, shape, clique).reshape([shape[i] for i in clique])
    return counts / max(counts.sum(), 1.0)


@lru_cache(maxsize=64)
def response_inverse(epsilon: float, k: int) -> np.ndarray:
    """The inverse of the k-ary randomized response matrix at ``epsilon``: what a buyer applies to debias an axis."""
    rr = KaryRandomizedResponse(epsilon, k)
    inverse = np.linalg.inv(np.full((k, k), rr.other_probability) + np.eye(k) * (rr.keep_probability - rr.other_probability))
    inverse.setflags(write=False)  # shared by every caller
    return inverse


def debiased(observed: np.ndarray, inverses: list[np.ndarray]) -> np.ndarray:
    """The buyer's estimate of the true shares from a randomized copy's shares (each axis inverted), as shares."""
    estimate = observed
    for axis, inverse in enumerate(inverses):
        estimate = np.moveaxis(np.tensordot(inverse, np.moveaxis(estimate, axis, 0), axes=1), 0, axis)
    estimate = np.clip(estimate, 0, None)
    return estimate / estimate.sum() if estimate.sum() > 0 else np.full(observed.shape, 1.0 / observed.size)


def tv(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance between two share tables."""
    return 0.5 * float(np.abs(p - q).sum())


def marginal_errors(
    truth: np.ndarray,
    copies: list[tuple[np.ndarray, list[float] | None]],
    shape: tuple[int, ...],
    tick: Callable[[int], None] | None = None,
) -> list[tuple[float, float]]:
    """Each copy's mean TV distance of the one-way and of the two-way marginals (a randomized copy's debiased first).

    ``copies``: (cells, the randomized copy's ε per column, or None for a copy read as it is); ``tick`` as for
    :func:`two_way_errors`.
    """
    d = len(shape)
    one = [
        [
            tv(shares(truth, shape, (i,)), table)
            for table in _observed(copies, shape, (i,), [marginal(c, shape, (i,)) for c, _e in copies])
        ]
        for i in range(d)
    ]
    two = two_way_errors(truth, copies, shape, tick=tick)
    return [(float(a), float(b)) for a, b in zip(np.mean(one, axis=0), two, strict=True)]


def two_way_errors(
    truth: np.ndarray,
    copies: list[tuple[np.ndarray, list[float] | None]],
    shape: tuple[int, ...],
    firsts: Sequence[int] | None = None,
    tick: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Each copy's mean TV distance over the pairs of columns, counted a first column at a time with every later one
    at once (:func:`pair_counts`); ``firsts``: which first columns (default: all, so every pair); ``tick(n)`` after
    each, with its ``n`` pairs."""
    d = len(shape)
    sums, pairs = np.zeros(len(copies)), 0
    for first in range(d - 1) if firsts is None else firsts:
        true_tables = pair_counts(truth, shape, first)
        copy_tables = [pair_counts(cells, shape, first) for cells, _eps in copies]
        for n, table in enumerate(true_tables):
            pair = (first, first + 1 + n)
            observed = _observed(copies, shape, pair, [tables[n] for tables in copy_tables])
            sums += [tv(table / max(len(truth), 1), found) for found in observed]
        pairs += len(true_tables)
        if tick is not None:
            tick(len(true_tables))
    return sums / pairs if pairs else np.full(len(copies), np.nan)


def _observed(
    copies: list[tuple[np.ndarray, list[float] | None]], shape: tuple[int, ...], clique: tuple[int, ...], counts: list[np.ndarray]
) -> list[np.ndarray]:
    """Each copy's shares of ``clique`` from its ``counts``, as a buyer reads them (a randomized copy debiased)."""
    found = []
    for (cells, epsilons), table in zip(copies, counts, strict=True):
        observed = table.reshape([shape[i] for i in clique]) / max(len(cells), 1)
        if epsilons is not None:
            observed = debiased(observed, [response_inverse(epsilons[i], shape[i]) for i in clique])
        found.append(observed)
    return found


def downstream_accuracy(train: np.ndarray, test: np.ndarray, shape: tuple[int, ...], target: int) -> float:
    """Accuracy on ``test`` of a logistic regression trained on ``train`` (one-hot cells) to predict column ``target``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    features = [i for i in range(len(shape)) if i != target]
    labels = train[:, target]
    if len(np.unique(labels)) < 2:
        return float(np.mean(test[:, target] == labels[0])) if len(labels) else float("nan")
    encoder = OneHotEncoder(categories=[np.arange(shape[i]) for i in features], handle_unknown="ignore")
    model = LogisticRegression(max_iter=500)
    model.fit(encoder.fit_transform(train[:, features]), labels)
    return float(np.mean(model.predict(encoder.transform(test[:, features])) == test[:, target]))


def utility_preview(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    epsilon: float,
    *,
    target: str | None = None,
    delta: float | None = None,
    noise: str = "gaussian",
    unit: str = ADD_REMOVE,
    method: str = "mst",
    workload: list[list[str]] | None = None,
    random_state: int | np.random.Generator | None = None,
    progress: Progress | None = None,
    costs: CostMemory | None = None,
    clock: Clock = time.monotonic,
) -> pd.DataFrame:
    """Both copies at ``epsilon`` on a simulation, for the owner only: one row per (copy, measure).

    Measures: ``one-way TV`` and ``two-way TV`` (mean total-variation distance of the copy's
    marginals from the truth; 0 is perfect, 1 is useless), and, when ``target`` (default: the
    schema's target) is a column of the copy, ``accuracy`` of a model trained on the copy and
    tested on held-out real rows, beside the same model trained on the real rows and the share
    of the most common class (what guessing gets). The synthetic copy is made with ``method``
    (``"mst"`` or ``"aim"``, on the owner's ``workload`` if declared), as the real one would be. ``progress(share_done, seconds_left, sentence)``
    and ``costs`` as for :func:`~dpcore.synthetic.table.synthesize_table`.
    """
    rng = check_random_state(random_state)
    columns = synthetic_columns(schema, plan)
    shape = tuple(c.size for c in columns)
    order = rng.permutation(len(frame))
    cut = int(round(len(frame) * (1 - HOLDOUT)))
    train_rows = frame.iloc[order[:cut]].reset_index(drop=True)
    truth, held_out = encode(train_rows, columns, rng), encode(frame.iloc[order[cut:]].reset_index(drop=True), columns, rng)
    names = [c.name for c in columns]
    target = target or (schema.target.name if schema.target is not None else None)
    target_index = names.index(target) if target in names else None

    training = 3 * len(truth) if target_index is not None and len(held_out) else 0
    pairs = len(shape) * (len(shape) - 1) // 2
    # The copy's own stages replace its placeholder when it is planned; until then the time left is unknown.
    stages = [Stage("randomized copy", 1), Stage(COPY, 1), Stage("comparing", pairs), Stage("training", training)]
    work = TimeLeft(stages, progress, clock)
    work.say(_("Simulating the randomized copy…"))
    rr_plan = randomized_plan(columns, epsilon)
    rr = copy_cells(release_frame(train_rows, schema, rr_plan, random_state=rng), columns)
    rr_epsilons = [entry.cost for entry in rr_plan.columns]
    # Both copies' errors on the first column's pairs, the randomized copy standing in for the synthetic one: the
    # cost of a pair.
    before = clock()
    two_way_errors(truth, [(rr, rr_epsilons), (rr, None)], shape, firsts=[0])
    work.stage("comparing").prior = (clock() - before) / max(len(shape) - 1, 1)
    if training:
        pilot = truth[rng.choice(len(truth), size=min(PILOT_ROWS, len(truth)), replace=False)]
        before = clock()
        downstream_accuracy(pilot, held_out[:1], shape, int(target_index or 0))
        work.stage("training").prior = (clock() - before) / len(pilot)
    work.tick(_("Simulated the randomized copy."))
    synthetic = synthesize_table(
        train_rows,
        schema,
        plan,
        epsilon=epsilon,
        delta=delta,
        noise=noise,
        unit=unit,
        method=method,
        workload=workload,
        random_state=rng,
        costs=costs,
        clock=clock,
        work=work,
    )
    syn = copy_cells(synthetic.table, columns)
    work.begin("comparing", _("Comparing the copies' marginals with the real ones…"))
    found = marginal_errors(
        truth, [(rr, rr_epsilons), (syn, None)], shape, tick=lambda done: work.tick(_("Comparing pairs of columns…"), done)
    )
    rows = []
    for copy, (one, two) in zip((RANDOMIZED, SYNTHETIC), found, strict=True):
        rows += [{"copy": copy, "measure": "one-way TV", "value": one}, {"copy": copy, "measure": "two-way TV", "value": two}]
    if target_index is not None and len(held_out):
        work.begin("training", _("Training on each copy…"))
        for copy, cells in ((RANDOMIZED, rr), (SYNTHETIC, syn), (REAL, truth)):
            rows.append({"copy": copy, "measure": "accuracy", "value": downstream_accuracy(cells, held_out, shape, target_index)})
            work.tick(_("Trained on the {copy}.").format(copy=_(copy)), len(truth))
        majority = np.bincount(truth[:, target_index], minlength=shape[target_index]).argmax()
        rows.append({"copy": MAJORITY, "measure": "accuracy", "value": float(np.mean(held_out[:, target_index] == majority))})
    return pd.DataFrame(rows, columns=["copy", "measure", "value"])


__all__ = ["HOLDOUT", "RANDOMIZED", "REAL", "SYNTHETIC", "utility_preview"]
