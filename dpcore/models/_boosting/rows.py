"""What boosting reads from its rows: jobs summed over row batches on any backend (spec §9).

A fit reads its records only through these jobs (:meth:`dpcore.backends.Rows.aggregate`): the
preliminaries' row count and quantile histograms, then, each round, the candidate first levels'
clipped residual sums (when a first level is picked) and the leaves' counts and clipped residual
sums. A job holds public values only — the drawn structures, the *released*
leaf steps of earlier rounds, the clip — so it pickles to a Spark executor as it is, and it
returns exact integers, so the sums do not depend on how the rows are split into batches.

A record's score before round ``r`` is recomputed inside the round's job from the released
steps of rounds ``0 … r−1``, added one round at a time in round order: the same floats the
driver's running ``scores += step`` gave when the rows were in its memory. In memory
(:class:`~dpcore.backends.LocalRows`) a :class:`RunningScores` keeps each batch's scores
between rounds instead, which gives the same floats with one round's work per round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, softmax

from dpcore.backends import RowBatch, Rows, exact_bincount, fixed, unfixed
from dpcore.backends.rows import FIXED_SCALE
from dpcore.mechanisms import Exponential
from dpcore.mechanisms.quantiles import grid_histogram
from dpcore.models._boosting.structures import BINARY, REGRESSION, Structures, leaves_by_round


def residuals(task: str, y: NDArray[Any], scores: NDArray[np.float64], n_classes: int) -> NDArray[np.float64]:
    """Each record's unclipped residual vector ``(m, K)`` for its target ``y`` (unit value or class code)."""
    if task == REGRESSION:
        return np.asarray(y, dtype=float)[:, None] - scores
    if task == BINARY:
        # The last declared class is the positive one (with a single declared class, every record is).
        return (np.asarray(y) == n_classes - 1).astype(float)[:, None] - expit(scores)
    return np.eye(n_classes)[np.asarray(y, dtype=np.intp)] - softmax(scores, axis=1)


@dataclass(frozen=True, eq=False)
class Preliminaries:
    """Job: the row count, and the grid histograms of the ``numeric`` feature columns and (``target``) of ``y``."""

    numeric: NDArray[np.intp]
    target: bool
    grid: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        parts = [np.array([len(batch)], dtype=np.int64)]
        if self.numeric.size:
            parts.append(grid_histogram(batch.X[:, self.numeric], self.grid).ravel())
        if self.target:
            parts.append(grid_histogram(np.asarray(batch.y, dtype=float)[:, None], self.grid).ravel())
        return np.concatenate(parts)

    @property
    def size(self) -> int:
        return 1 + (self.numeric.size + self.target) * self.grid

    def split(self, totals: NDArray[np.int64]) -> tuple[int, NDArray[np.int64], NDArray[np.int64]]:
        """The summed job back as (row count, feature histograms, target histogram)."""
        features_end = 1 + self.numeric.size * self.grid
        return (
            int(totals[0]),
            totals[1:features_end].reshape(self.numeric.size, self.grid),
            totals[features_end:].reshape(-1, self.grid),
        )


@dataclass(frozen=True, eq=False)
class TargetColumn:
    """The unit-scale regression target of prepared rows, which a fit reads only through :class:`Preliminaries`.

    ``numpy.asarray`` of it gathers the values (on the fixed-point grid) — for audits that
    deliberately break the model by reading the target exactly; a fit never does.
    """

    rows: Rows

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray[Any]:
        cells = self.rows.aggregate(_TargetCells())
        return np.repeat(np.arange(cells.size) / FIXED_SCALE, cells).astype(dtype or float)


@dataclass(frozen=True)
class _TargetCells:
    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        return exact_bincount(fixed(np.clip(batch.y, 0.0, 1.0)).astype(np.intp), None, int(FIXED_SCALE) + 1)


class RunningScores:
    """Each in-memory batch's scores after the rounds so far, and its leaf in the latest round.

    Keyed by the batch's row keys (and where its rows lie in memory); a batch it does not
    hold, or holds from another round, is recomputed from the start. It never travels: a
    pickled copy (a Spark task) starts empty.
    """

    def __init__(self) -> None:
        self._batches: dict[tuple[int, bytes], tuple[int, NDArray[np.float64], NDArray[np.int64] | None]] = {}

    def __reduce__(self) -> tuple[type[RunningScores], tuple[()]]:
        return RunningScores, ()

    @staticmethod
    def _name(batch: RowBatch) -> tuple[int, bytes]:
        return batch.X.__array_interface__["data"][0], batch.key.tobytes()

    def get(self, batch: RowBatch) -> tuple[int, NDArray[np.float64], NDArray[np.int64] | None] | None:
        return self._batches.get(self._name(batch))

    def put(self, batch: RowBatch, round_: int, scores: NDArray[np.float64], leaf: NDArray[np.int64] | None) -> None:
        self._batches[self._name(batch)] = (round_, scores, leaf)


@dataclass(frozen=True, eq=False)
class RoundSums:
    """Job of round ``r`` (= ``len(leaf_values)``): per leaf, the record count and the clipped residual sums.

    ``features``, ``thresholds``, ``subsets`` and ``branches`` hold the structures of rounds ``0 … r``,
    ``leaf_values`` the released steps of rounds ``0 … r−1``. Residuals are clipped to
    ``[−clip, clip]``, counted in units of ``unit`` (the declared clip, so they lie in [−1, 1])
    and rounded toward zero to the fixed-point grid (so no component grows and every
    sensitivity bound on the clipped residual holds for it).
    """

    task: str
    n_classes: int
    clip: float
    unit: float
    n_leaves: int
    initial: NDArray[np.float64]
    features: NDArray[np.int64]
    thresholds: NDArray[np.float64]
    subsets: NDArray[np.bool_]
    levels: NDArray[np.int64]
    branches: NDArray[np.int64]
    leaf_values: NDArray[np.float64]
    running: RunningScores | None = field(default=None)

    @property
    def round(self) -> int:
        return len(self.leaf_values)

    def _leaves(self, X_unit: NDArray[np.float64], first: int) -> NDArray[np.int64]:
        """Leaf of every record in rounds ``first … r``: ``(r + 1 − first, m)``."""
        return np.asarray(
            leaves_by_round(
                X_unit, self.features[first:], self.thresholds[first:], self.subsets[first:], self.levels, self.branches[first:]
            )
        )

    def _scores_and_leaf(self, batch: RowBatch, with_leaf: bool = True) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        """Scores before round ``r`` and (``with_leaf``) the leaf in round ``r`` of each record of ``batch``."""
        r = self.round
        held = self.running.get(batch) if self.running is not None else None
        if held is not None and held[0] == r and (held[2] is not None or not with_leaf):
            return held[1], held[2]
        if held is not None and held[0] == r:
            scores, leaf = held[1], self._leaves(batch.X, r)[0]
        elif held is not None and held[0] == r - 1 and held[2] is not None:
            scores = held[1] + self.leaf_values[r - 1][held[2]]
            leaf = self._leaves(batch.X, r)[0] if with_leaf else None
        else:
            leaves = self._leaves(batch.X, 0)
            scores = np.tile(self.initial, (len(batch), 1))
            for s in range(r):
                scores += self.leaf_values[s][leaves[s]]
            leaf = leaves[r] if with_leaf else None
        if self.running is not None:
            self.running.put(batch, r, scores, leaf)
        return scores, leaf

    def _steps(self, batch: RowBatch, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each record's clipped residual in units of ``unit``, rounded toward zero to the fixed-point grid."""
        clipped = np.clip(residuals(self.task, batch.y, scores, self.n_classes), -self.clip, self.clip)
        return np.trunc(clipped / self.unit * FIXED_SCALE)  # toward zero: |rounded| ≤ |residual| / unit

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        scores, leaf = self._scores_and_leaf(batch)
        assert leaf is not None
        steps = self._steps(batch, scores)
        k = scores.shape[1]
        return np.concatenate(
            [exact_bincount(leaf, None, self.n_leaves)] + [exact_bincount(leaf, steps[:, j], self.n_leaves) for j in range(k)]
        )

    def split(self, totals: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The summed job back as (leaf counts ``(L,)``, clipped residual sums ``(L, K)`` in residual units)."""
        counts, sums = totals[: self.n_leaves], totals[self.n_leaves :]
        return counts, unfixed(sums.reshape(-1, self.n_leaves).T) * self.unit


@dataclass(frozen=True, eq=False, kw_only=True)
class CandidateSums(RoundSums):
    """Job before round ``r`` is drawn: every candidate first level's clipped residual sums, per branch.

    ``features`` … ``branches`` hold rounds ``0 … r−1`` (for the scores); the candidates are one
    drawn split per feature (``candidate_*``, ``(d,)`` and ``(d, W)``). A record adds its clipped
    residual to one branch of every candidate. One column at a time, so a wide table never holds
    a copy of itself.
    """

    candidate_thresholds: NDArray[np.float64]
    candidate_subsets: NDArray[np.bool_]
    candidate_branches: NDArray[np.int64]

    @property
    def width(self) -> int:
        return int(self.candidate_branches.max(initial=2))

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        scores, _ = self._scores_and_leaf(batch, with_leaf=False)
        steps = self._steps(batch, scores)
        sums = np.zeros((steps.shape[1], len(self.candidate_branches), self.width), dtype=np.int64)
        for f in range(len(self.candidate_branches)):
            digit = leaves_by_round(
                batch.X,
                np.array([[f]]),
                self.candidate_thresholds[f : f + 1, None],
                self.candidate_subsets[f : f + 1, None],
                self.levels,
                self.candidate_branches[f : f + 1, None],
            )[0]
            for j in range(steps.shape[1]):
                sums[j, f] = exact_bincount(digit, steps[:, j], self.width)
        return sums.ravel()

    def branch_sums(self, totals: NDArray[np.int64]) -> NDArray[np.int64]:
        """The summed job back as exact residual sums ``(d, width, K)`` on the fixed-point grid (``FIXED_SCALE / unit`` per unit)."""
        return totals.reshape(-1, len(self.candidate_branches), self.width).transpose(1, 2, 0)


def choose_first(
    rows: Rows,
    structures: Structures,
    r: int,
    chooser: Exponential,
    fields: dict[str, Any],
) -> tuple[int, float, NDArray[np.bool_]]:
    """Round ``r``'s first level (feature, threshold, subset): the ``chooser``'s pick among one drawn split per feature.

    A candidate's utility is the L1 norm of its branches' clipped residual sums, ``Σ_b ‖S_b‖₁``:
    how far the split's branches pull apart. It is taken in exact integers on the fixed-point
    grid, where one record adds its rounded residual to one branch of each candidate, so every
    utility moves by at most ``FIXED_SCALE ×`` the residual's L1 bound ``/ unit`` —
    :func:`pick_sensitivity`, the ``chooser``'s. ``fields`` are the round's :class:`RoundSums` fields.
    """
    thresholds, subsets, branches = structures.candidates()
    job = CandidateSums(
        **fields, **structures.up_to(r), candidate_thresholds=thresholds, candidate_subsets=subsets, candidate_branches=branches
    )
    f = int(chooser.select(np.abs(job.branch_sums(rows.aggregate(job))).sum(axis=(1, 2)).astype(float)))
    return f, float(thresholds[f]), subsets[f]


def pick_sensitivity(residual_l1: float, unit: float) -> int:
    """How far one record moves a first-level utility on the fixed-point grid: ``⌈FIXED_SCALE · residual_l1 / unit⌉``.

    Rounded toward zero, a record's residual vector is at most ``FIXED_SCALE · residual_l1 / unit``
    in L1 on the grid, and, being whole, at most the floor of that; the ceiling of its float never
    falls below the floor (a whole number is exact in floats), so no rounding can shrink the bound.
    """
    return int(np.ceil(FIXED_SCALE * residual_l1 / unit))
