"""What a DP tree fit reads from its rows: one row map, and the histogram jobs of each level.

A tree is grown level by level on the driver (:mod:`dpcore.models._tree`); each level sends
one job to the rows through :meth:`dpcore.backends.Rows.aggregate`.
A job finds every row's node by routing it from its root (a keyed membership,
:mod:`dpcore.models._forest`) through the tree grown so far, and returns the histograms the
level's split choice needs as exact ``int64`` sums. Jobs are frozen dataclasses of plain
arrays: deterministic, without driver state, picklable by ``pickle`` and ``cloudpickle``, so a
Spark executor runs the very code a local fit runs and sums to the very same integers.

Rows reach the jobs through :class:`TreeRowMap`, one row-wise map applied with
:meth:`~dpcore.backends.Rows.prepared`: features into [0, 1] (declared bounds, then the DP
data range when one was bought), then to their bin on the threshold grid (grid candidates);
the target to an integer code: ``q = fixed(y)`` on the public 2^-14 grid (mean leaves), its
level on the public 256-level grid (median leaves), or its declared class (rows whose label
is not declared are dropped). Each is a per-record map fixed before the data are seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

import dpcore.models._splitting as split
from dpcore.backends import RowBatch, exact_bincount, fixed
from dpcore.models._base import unit_features

#: Which root each row grows under (``-1``: none), from the rows' stable keys.
Membership = Callable[[NDArray[np.uint64]], NDArray[np.int64]]

#: Statistics per regression row: ``[1, q, q²]`` with ``q = fixed(y)``.
REGRESSION_STATS = 3
RANGE_FLOOR = 1e-9


def rescale_to_range(unit: NDArray[np.float64], data_range: NDArray[np.float64]) -> NDArray[np.float64]:
    """Unit features rescaled so each column's ``(low, high)`` data range becomes [0, 1] (outside: clipped)."""
    width = np.maximum(data_range[:, 1] - data_range[:, 0], RANGE_FLOOR)
    scaled = unit - data_range[:, 0]
    scaled /= width
    return np.clip(scaled, 0.0, 1.0, out=scaled)


@dataclass(frozen=True, eq=False)
class TreeRowMap:
    """Rows as the tree jobs read them (see the module docstring).

    ``target`` is ``"fixed"`` (mean leaves), ``"levels"`` (median leaves) or ``"classes"``.
    """

    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    target: str
    target_bounds: tuple[float, float] = (0.0, 1.0)
    classes: NDArray[Any] | None = None
    data_range: NDArray[np.float64] | None = None
    n_thresholds: int | None = None

    def _kept(self, batch: RowBatch) -> tuple[RowBatch, NDArray[np.int64]]:
        """The rows this map keeps, and their target codes."""
        if self.target == "classes":
            assert self.classes is not None, "a classifier's rows are coded by its declared classes"
            codes = pd.Index(self.classes).get_indexer(pd.Index(np.asarray(batch.y))).astype(np.int64)
            known = codes >= 0
            if known.all():
                return batch, codes
            return batch.take(known), codes[known]
        low, high = self.target_bounds
        y = np.asarray(batch.y, dtype=float)
        y_unit = np.clip((np.where(np.isnan(y), (low + high) / 2, y) - low) / (high - low), 0.0, 1.0)
        if self.target == "levels":
            return batch, split.target_levels(y_unit)
        return batch, fixed(y_unit).astype(np.int64)

    def features(self, batch: RowBatch) -> NDArray[np.float64]:
        """Unit features (declared bounds only) of the rows the map keeps: what the data range is read from."""
        kept, _ = self._kept(batch)
        return unit_features(kept.X, self.lower, self.upper)

    def __call__(self, batch: RowBatch) -> RowBatch:
        kept, codes = self._kept(batch)
        X = unit_features(kept.X, self.lower, self.upper)
        if self.data_range is not None:
            X = rescale_to_range(X, self.data_range)
        if self.n_thresholds is not None:
            X = split.bin_features(X, split.threshold_grid(self.n_thresholds)).astype(float)
        return RowBatch(X, codes, kept.key)


@dataclass(frozen=True, eq=False)
class TreeSoFar:
    """The trees grown so far, enough to route a row: a node goes left when ``x[feature] <= cut``.

    ``cut`` is the threshold itself (random candidates) or its bin on the grid (grid candidates,
    whose rows carry bins); ``feature = -1`` marks a node that is not split (yet). Children are
    made in pairs: a node's right child is ``left + 1``.
    """

    membership: Membership
    feature: NDArray[np.int64]
    cut: NDArray[np.float64]
    left: NDArray[np.int64]

    def nodes(self, batch: RowBatch) -> NDArray[np.int64]:
        """Every row's node (``-1``: in no tree)."""
        node = np.array(self.membership(batch.key), dtype=np.int64)
        values = np.ascontiguousarray(batch.X).ravel()
        live = np.flatnonzero(node >= 0)
        at = node[live]
        feature = self.feature[at]
        while len(live):  # one step per level, over the rows not yet at their node
            inner = feature >= 0
            if not inner.all():
                live, at, feature = live[inner], at[inner], feature[inner]
            at = self.left[at] + ~(values[live * batch.X.shape[1] + feature] <= self.cut[at])
            node[live] = at
            feature = self.feature[at]
        return node


def stat_sums(keys: NDArray[np.intp], y: NDArray[np.int64], size: int, n_classes: int) -> NDArray[np.int64]:
    """``(size, S)`` sums per key: class counts (``n_classes > 0``) or ``[count, Σq, Σq²]``."""
    if n_classes:
        return np.bincount(keys * n_classes + y, minlength=size * n_classes).astype(np.int64).reshape(size, n_classes)
    q = y.astype(float)
    return np.stack(
        [np.bincount(keys, minlength=size).astype(np.int64), exact_bincount(keys, q, size), exact_bincount(keys, q * q, size)],
        axis=1,
    )


@dataclass(frozen=True, eq=False)
class RootCounts:
    """Rows per root: ``(n_roots,)``."""

    membership: Membership
    n_roots: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        roots = np.asarray(self.membership(batch.key))
        return np.bincount(roots[roots >= 0], minlength=self.n_roots).astype(np.int64)


@dataclass(frozen=True, eq=False)
class _LevelJob:
    """A job over the rows of one level's splitting nodes (``local``: node → its position there, or -1)."""

    tree: TreeSoFar
    local: NDArray[np.int64]

    def _rows(self, batch: RowBatch) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.int64]]:
        node = self.tree.nodes(batch)
        at = np.where(node >= 0, self.local[np.maximum(node, 0)], -1)
        if (at >= 0).all():  # near the roots every row splits: no copy
            return at, batch.X, np.asarray(batch.y)
        rows = np.flatnonzero(at >= 0)
        return at[rows], batch.X[rows], np.asarray(batch.y)[rows]


@dataclass(frozen=True, eq=False)
class GridHistogram(_LevelJob):
    """``(nodes, d, bins, S)`` statistic sums per (node, feature, bin): rows carry their bins."""

    n_nodes: int
    n_bins: int
    n_classes: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        at, X, y = self._rows(batch)
        d = X.shape[1]
        out = np.empty((self.n_nodes, d, self.n_bins, self.n_classes or REGRESSION_STATS), dtype=np.int64)
        offset = at * self.n_bins
        for f in range(d):  # one key array per feature: no rows × d key matrix
            keys = offset + X[:, f].astype(np.intp)
            out[:, f] = stat_sums(keys, y, self.n_nodes * self.n_bins, self.n_classes).reshape(self.n_nodes, self.n_bins, -1)
        return out


@dataclass(frozen=True, eq=False)
class CandidateHistogram(_LevelJob):
    """``(nodes, K + 1, S)``: left-side sums per (node, candidate), then each node's totals as row ``K``.

    Candidate ``k`` of node ``ℓ`` sends a row left when ``x[features[ℓ, k]] <= thresholds[ℓ, k]``.
    """

    features: NDArray[np.int64]
    thresholds: NDArray[np.float64]
    n_classes: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        at, X, y = self._rows(batch)
        n_nodes, k = self.features.shape
        values, first = np.ascontiguousarray(X).ravel(), np.arange(len(at)) * X.shape[1]
        features, thresholds = self.features.T.copy(), self.thresholds.T.copy()  # one contiguous row per candidate
        out = np.empty((n_nodes, k + 1, self.n_classes or REGRESSION_STATS), dtype=np.int64)
        for c in range(k):  # per candidate: m-long gathers, no rows × K index matrix
            goes_left = values[first + features[c][at]] <= thresholds[c][at]
            out[:, c] = stat_sums(at[goes_left], y[goes_left], n_nodes, self.n_classes)
        out[:, k] = stat_sums(at, y, n_nodes, self.n_classes)
        return out


@dataclass(frozen=True, eq=False)
class LevelOccupancy(_LevelJob):
    """``(nodes, n_levels)`` rows per (node, target level): which pairs are occupied."""

    n_nodes: int
    n_levels: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        at, _, levels = self._rows(batch)
        size = self.n_nodes * self.n_levels
        return np.bincount(at * self.n_levels + levels, minlength=size).astype(np.int64).reshape(self.n_nodes, self.n_levels)


@dataclass(frozen=True, eq=False)
class PairHistogram(_LevelJob):
    """``(d, pairs, bins)`` rows per feature, occupied (node, level) pair and bin (``pair_of``: pair key → pair)."""

    pair_of: NDArray[np.int64]
    n_pairs: int
    n_levels: int
    n_bins: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        at, X, levels = self._rows(batch)
        pair = self.pair_of[at * self.n_levels + levels] * self.n_bins
        d = X.shape[1]
        out = np.empty((d, self.n_pairs, self.n_bins), dtype=np.int64)
        for f in range(d):
            out[f] = np.bincount(pair + X[:, f].astype(np.intp), minlength=self.n_pairs * self.n_bins).reshape(
                self.n_pairs, self.n_bins
            )
        return out


@dataclass(frozen=True, eq=False)
class LeafHistogram:
    """Per leaf (``leaf_pos``: node → leaf, or -1): ``Σq`` (``width = 0``) or counts per target code ``(leaves, width)``."""

    tree: TreeSoFar
    leaf_pos: NDArray[np.int64]
    n_leaves: int
    width: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        node = self.tree.nodes(batch)
        inside = node >= 0
        leaf, y = self.leaf_pos[node[inside]], np.asarray(batch.y)[inside]
        if not self.width:
            return exact_bincount(leaf, y.astype(float), self.n_leaves)
        return np.bincount(leaf * self.width + y, minlength=self.n_leaves * self.width).astype(np.int64)
