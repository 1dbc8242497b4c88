"""The level-wise DP tree builder shared by every tree model, and trees as plain arrays.

One builder grows any number of trees at once, one level at a time: the roots of a
partitioned forest are just several roots whose records are disjoint. It reads the rows only
through :meth:`dpcore.backends.Rows.aggregate`: per level one pass sums the histograms every
splitting node's candidates are scored from (the jobs are in ``_tree_rows``, the utilities in
``_splitting``; median leaves first count the roots' rows per target level, and each child
gets its own from its parent's histograms), the driver picks each node's split with one
vectorised exponential-mechanism call and releases all children counts, read from the same
histograms at the chosen splits, with one noisy-count call; a last pass sums the leaves.
Split choice and noise stay on the driver, so the trees are the same whether the rows are
numpy arrays or a Spark table. The Python loops run over levels, never over records, nodes
or thresholds.

Which root a record grows under is a keyed draw from its stable row key
(:mod:`dpcore.mechanisms.keyed`): it never depends on other records, on batches or on the order
rows are read in. Sums are exact integers: regression targets enter as ``q = fixed(y)`` on the
public 2^-14 grid (and ``q²``), a per-record rounding fixed before the data are seen, so the
sensitivities argued for targets in [0, 1] hold exactly for the rounded targets.

Median leaves work on the target rounded to a public grid of ``split.TARGET_LEVELS`` levels
(:func:`~dpcore.models._splitting.target_levels`): a per-record map fixed before the data is
seen, so the summed-absolute-error utility and the leaf median keep their sensitivities and
both come from per-node histograms of the levels instead of sorted targets.

Privacy bookkeeping: every query charges ``budget_per_query`` (β) to each record it
touches. Along any root-to-leaf path a record meets at most

    [root count] + max_depth × (split choice + [children counts]) + leaf value

queries (brackets: when enabled), and the nodes of one level hold disjoint records, so each
level's queries compose in parallel. :func:`queries_per_path` gives the count the models
divide their budget by.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from numpy.typing import NDArray

import dpcore.models._splitting as split
from dpcore.backends import Job, Rows, unfixed
from dpcore.backends.rows import FIXED_SCALE
from dpcore.mechanisms import Exponential, Geometric, GridMedian, Laplace, count_mechanism
from dpcore.models._tree_rows import (
    REGRESSION_STATS,
    CandidateHistogram,
    GridHistogram,
    LeafHistogram,
    LevelOccupancy,
    Membership,
    PairHistogram,
    RootCounts,
    TreeRowMap,
    TreeSoFar,
)


@dataclass
class TreeArrays:
    """A grown tree (or several, one per root) as flat arrays.

    ``feature[i] = -1`` marks a leaf. ``threshold`` is in the unit scale of the model's
    input; a record goes left when ``x[feature] <= threshold``. ``value`` is the leaf value
    (regression, unit scale) or the noisy class counts (classification, ``(nodes, K)``).
    ``noisy_count`` is NaN where no count was released.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    depth: np.ndarray
    noisy_count: np.ndarray
    value: np.ndarray
    roots: np.ndarray

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.feature < 0))

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if len(self.depth) else 0

    def apply(self, X_unit: np.ndarray) -> np.ndarray:
        """Leaf index of every record in every root's tree: ``(n, n_roots)``."""
        node = np.broadcast_to(self.roots, (X_unit.shape[0], len(self.roots))).copy()
        for _ in range(self.max_depth):
            feat = self.feature[node]
            internal = feat >= 0
            if not internal.any():
                break
            x = np.take_along_axis(X_unit, np.where(internal, feat, 0), axis=1)
            child = np.where(x <= self.threshold[node], self.left[node], self.right[node])
            node = np.where(internal, child, node)
        return node


def queries_per_path(max_depth: int, root_count: bool, child_counts: bool) -> int:
    """Most queries one record meets on its root-to-leaf path (see the module docstring)."""
    return int(root_count) + max_depth * (1 + int(child_counts)) + 1


@dataclass
class GrowthSettings:
    """How a tree is grown; each model fills this in from its own hyper-parameters."""

    max_depth: int
    budget_per_query: float
    utility: str  # "sse", "sae" or "gini"
    leaf: str  # "mean", "median" or "class_counts"
    n_classes: int = 0
    candidates: str = "grid"  # "grid": features × threshold grid; "random": K random (feature, threshold)
    n_thresholds: int = 40
    features_per_node: int | None = None  # grid mode: random subset of features per node
    n_random_candidates: int = 10  # random mode
    root_count: bool = False
    child_counts: bool = True
    min_samples_split: float = 0.0
    min_samples_leaf: float = 0.0
    count_noise: str = "laplace"
    selection: str = "gumbel"
    rng_structure: np.random.Generator = field(default_factory=np.random.default_rng)
    rng_noise: np.random.Generator = field(default_factory=np.random.default_rng)

    @property
    def sensitivity(self) -> float:
        return 2.0 if self.utility == "gini" else 1.0


class _Nodes:
    """Growable node storage."""

    def __init__(self) -> None:
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.cut: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.depth: list[int] = []
        self.count: list[float] = []

    def add(self, depth: int, counts: np.ndarray) -> np.ndarray:
        start = len(self.feature)
        k = len(counts)
        self.feature.extend([-1] * k)
        self.threshold.extend([0.0] * k)
        self.cut.extend([0.0] * k)
        self.left.extend([-1] * k)
        self.right.extend([-1] * k)
        self.depth.extend([depth] * k)
        self.count.extend(np.asarray(counts, dtype=float).tolist())
        return np.arange(start, start + k)

    def so_far(self, membership: Membership) -> TreeSoFar:
        return TreeSoFar(
            membership,
            np.asarray(self.feature, dtype=np.int64),
            np.asarray(self.cut, dtype=float),
            np.asarray(self.left, dtype=np.int64),
        )


def growth_map(
    s: GrowthSettings,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    target_bounds: tuple[float, float] = (0.0, 1.0),
    classes: np.ndarray | None = None,
    data_range: np.ndarray | None = None,
) -> TreeRowMap:
    """The row map :func:`grow` expects its rows through, for settings ``s``."""
    target = {"mean": "fixed", "median": "levels", "class_counts": "classes"}[s.leaf]
    n_thresholds = s.n_thresholds if s.candidates == "grid" else None
    return TreeRowMap(lower, upper, target, target_bounds, classes, data_range, n_thresholds)


def grow(rows: Rows, membership: Membership, n_roots: int, s: GrowthSettings) -> TreeArrays:
    """Grow ``n_roots`` DP trees, each on the rows ``membership`` sends to it (``-1``: none).

    ``rows`` come through the map :func:`growth_map` gives for ``s``: features in [0, 1] (or
    their grid bins), targets as integer codes.
    """
    classification = s.leaf == "class_counts"
    n_classes = s.n_classes if classification else 0
    counts_mech = count_mechanism(s.count_noise, s.budget_per_query, s.rng_noise)
    d = rows.n_features

    nodes = _Nodes()
    root_counts = np.full(n_roots, np.nan)
    if s.root_count or (s.max_depth == 0 and not classification):
        root_counts = counts_mech.randomise(rows.aggregate(RootCounts(membership, n_roots))).astype(float)
    frontier = nodes.add(0, root_counts)
    # Median leaves: each frontier node's rows per target level, once a parent's histograms gave them (exact).
    frontier_levels: np.ndarray | None = None

    for depth in range(s.max_depth + 1):
        if len(frontier) == 0:
            break
        count = np.asarray(nodes.count)[frontier]
        can_split = np.full(len(frontier), depth < s.max_depth)
        can_split &= np.isnan(count) | (count >= s.min_samples_split)
        splitting = frontier[can_split]
        if len(splitting) == 0:
            break
        occupancy = None if frontier_levels is None else frontier_levels[can_split]
        feature, threshold, cut, true_children, children_levels = _choose_splits(
            _Level(rows, nodes.so_far(membership), splitting),
            s,
            d,
            n_classes,
            occupancy,
        )

        if s.child_counts:
            child_counts = counts_mech.randomise(true_children.ravel()).astype(float).reshape(-1, 2)
        else:
            child_counts = np.full((len(splitting), 2), np.nan)
        keep = np.ones(len(splitting), dtype=bool)
        if s.child_counts and s.min_samples_leaf > 0:
            keep = child_counts.min(axis=1) >= s.min_samples_leaf
        # A root that released no count of its own learns one from its children's (free).
        parents = splitting
        parent_counts = np.asarray(nodes.count)
        missing = np.isnan(parent_counts[parents]) & s.child_counts
        for p_idx in np.flatnonzero(missing):
            nodes.count[parents[p_idx]] = float(child_counts[p_idx].sum())

        kept = parents[keep]
        children = nodes.add(depth + 1, child_counts[keep].ravel()).reshape(-1, 2)
        for node_id, f, t, c, (lc, rc) in zip(kept, feature[keep], threshold[keep], cut[keep], children):  # rc = lc + 1
            nodes.feature[node_id], nodes.threshold[node_id], nodes.cut[node_id] = int(f), float(t), float(c)
            nodes.left[node_id], nodes.right[node_id] = int(lc), int(rc)
        frontier = children.ravel()
        frontier_levels = None if children_levels is None else children_levels[keep].reshape(-1, split.TARGET_LEVELS)

    feature = np.asarray(nodes.feature)
    leaves = np.flatnonzero(feature < 0)
    value = _leaf_values(rows, nodes.so_far(membership), leaves, np.asarray(nodes.count), s, counts_mech)
    return TreeArrays(
        feature=feature,
        threshold=np.asarray(nodes.threshold),
        left=np.asarray(nodes.left),
        right=np.asarray(nodes.right),
        depth=np.asarray(nodes.depth),
        noisy_count=np.asarray(nodes.count),
        value=value,
        roots=np.arange(n_roots),
    )


def _in_units(sums: np.ndarray, n_classes: int) -> np.ndarray:
    """Integer statistic sums in the utilities' units: class counts, or ``[count, Σy, Σy²]`` (exact scalings)."""
    if n_classes:
        return sums.astype(float)
    return sums / np.array([1.0, FIXED_SCALE, FIXED_SCALE * FIXED_SCALE])


def _count(sums: np.ndarray, n_classes: int) -> np.ndarray:
    return sums.sum(axis=-1) if n_classes else sums[..., 0]


#: Cells of one pass's histograms (32 MB of int64): a level with more splitting nodes sums them in several passes,
#: so what a task returns and the driver adds stays bounded on the largest tables.
MAX_CELLS = 1 << 22


@dataclass
class _Level:
    """One level's splitting nodes, and the passes that sum their histograms."""

    rows: Rows
    tree: TreeSoFar
    splitting: np.ndarray

    def sums(self, cells_per_node: int | np.ndarray, job: Callable[[np.ndarray, int, int], Job], axis: int = 0) -> np.ndarray:
        """``job(local, start, stop)`` summed over the rows for consecutive chunks of nodes, joined along ``axis``.

        ``local`` maps a node to its position in the chunk ``splitting[start:stop]`` (−1 elsewhere).
        """
        per_node = np.broadcast_to(np.asarray(cells_per_node), self.splitting.shape)
        chunk = (np.cumsum(per_node) - per_node) // MAX_CELLS
        starts = np.flatnonzero(np.r_[True, np.diff(chunk) > 0])
        parts = []
        for start, stop in zip(starts, np.r_[starts[1:], len(self.splitting)]):
            local = np.full(len(self.tree.feature), -1, dtype=np.int64)
            local[self.splitting[start:stop]] = np.arange(stop - start)
            parts.append(self.rows.aggregate(job(local, int(start), int(stop))))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)


def _choose_splits(
    level: _Level,
    s: GrowthSettings,
    d: int,
    n_classes: int,
    occupancy: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One exponential-mechanism draw per splitting node.

    Returns the chosen (feature, threshold, routing cut) per node, the true counts of its two
    children ``(n_nodes, 2)`` read from the level's histograms, and for the summed absolute
    error the children's rows per target level ``(n_nodes, 2, n_levels)``, which spare the
    next level its occupancy pass (``occupancy``: the splitting nodes' rows per level, if known).
    """
    selector = Exponential(s.budget_per_query, s.sensitivity, s.selection, s.rng_noise)
    n_stats = n_classes or REGRESSION_STATS
    tree, n_nodes = level.tree, len(level.splitting)
    node_rows = np.arange(n_nodes)
    if s.candidates == "random":
        k = s.n_random_candidates
        features = s.rng_structure.integers(0, d, size=(n_nodes, k))
        thresholds = s.rng_structure.random((n_nodes, k))
        sums = level.sums(
            (k + 1) * n_stats, lambda local, a, b: CandidateHistogram(tree, local, features[a:b], thresholds[a:b], n_classes)
        )
        left, totals = sums[:, :k], sums[:, k]
        utility = _utility(s.utility, _in_units(left, n_classes), _in_units(totals, n_classes)[:, None, :])
        chosen = selector.select(utility)
        f, t = features[node_rows, chosen], thresholds[node_rows, chosen]
        left_count = _count(left[node_rows, chosen], n_classes)
        return f, t, t, np.column_stack([left_count, _count(totals, n_classes) - left_count]), None

    grid = split.threshold_grid(s.n_thresholds)
    n_bins = s.n_thresholds + 1
    if s.utility == "sae":
        n_levels = split.TARGET_LEVELS
        if occupancy is None:
            occupancy = level.sums(n_levels, lambda local, a, b: LevelOccupancy(tree, local, b - a, n_levels))
        pair_key = split.occupied_pairs(occupancy)
        first_pair = np.searchsorted(pair_key, np.arange(n_nodes + 1) * n_levels)  # node ℓ's pairs: first_pair[ℓ:ℓ + 2]

        def pair_job(local: np.ndarray, a: int, b: int) -> PairHistogram:
            pair_of = np.full((b - a) * n_levels, -1, dtype=np.int64)
            pair_of[pair_key[first_pair[a] : first_pair[b]] - a * n_levels] = np.arange(first_pair[b] - first_pair[a])
            return PairHistogram(tree, local, pair_of, int(first_pair[b] - first_pair[a]), n_levels, n_bins)

        hist = level.sums(np.diff(first_pair) * d * n_bins, pair_job, axis=1)
        utility = split.sae_utility_pairs(hist, pair_key, n_nodes, s.n_thresholds, n_levels)
    else:
        hist = np.cumsum(
            level.sums(d * n_bins * n_stats, lambda local, a, b: GridHistogram(tree, local, b - a, n_bins, n_classes)), axis=2
        )
        totals = _in_units(hist[:, 0, s.n_thresholds, :], n_classes)
        utility = _utility(s.utility, _in_units(hist[:, :, : s.n_thresholds, :], n_classes), totals[:, None, None, :])
    if s.features_per_node is not None and s.features_per_node < d:
        allowed = np.argsort(s.rng_structure.random((n_nodes, d)), axis=1) < s.features_per_node
        utility = np.where(allowed[:, :, None], utility, -np.inf)
    chosen = cast(NDArray[np.intp], selector.select(utility.reshape(n_nodes, -1)))  # 2-D: one choice per node
    f, j = chosen // s.n_thresholds, chosen % s.n_thresholds
    if s.utility == "sae":
        pair_node, pair_level, pairs = pair_key // n_levels, pair_key % n_levels, np.arange(len(pair_key))
        at_split = hist[f[pair_node], pairs, :]  # each pair's bins along its node's chosen feature
        children_levels = np.zeros((n_nodes, 2, n_levels), dtype=np.int64)
        children_levels[pair_node, 0, pair_level] = at_split[:, : s.n_thresholds].cumsum(axis=1)[pairs, j[pair_node]]
        children_levels[pair_node, 1, pair_level] = at_split.sum(axis=1) - children_levels[pair_node, 0, pair_level]
        return f, grid[j], j.astype(float), children_levels.sum(axis=2), children_levels
    left_count = _count(hist[node_rows, f, j], n_classes)
    total_count = _count(hist[:, 0, s.n_thresholds], n_classes)
    return f, grid[j], j.astype(float), np.column_stack([left_count, total_count - left_count]), None


def _utility(kind: str, left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    if kind == "sse":
        return split.sse_utility(left, totals)
    if kind == "gini":
        return split.gini_utility(left, totals)
    raise ValueError(f"unknown utility {kind!r}")


def _leaf_values(
    rows: Rows,
    tree: TreeSoFar,
    leaves: np.ndarray,
    counts: np.ndarray,
    s: GrowthSettings,
    counts_mech: Laplace | Geometric,
) -> np.ndarray:
    """Noisy leaf values for every leaf with one pass over the rows and one mechanism call."""
    n_nodes = len(tree.feature)
    leaf_pos = np.full(n_nodes, -1, dtype=np.int64)
    leaf_pos[leaves] = np.arange(len(leaves))
    if s.leaf == "class_counts":
        true = rows.aggregate(LeafHistogram(tree, leaf_pos, len(leaves), s.n_classes)).reshape(-1, s.n_classes)
        value: np.ndarray = np.zeros((n_nodes, s.n_classes))
        value[leaves] = counts_mech.randomise(true).astype(float)
        return value
    value = np.full(n_nodes, np.nan)
    if s.leaf == "mean":
        sums = unfixed(rows.aggregate(LeafHistogram(tree, leaf_pos, len(leaves), 0)))
        noisy = Laplace(s.budget_per_query, 1.0, s.rng_noise).randomise(sums)
        value[leaves] = np.clip(noisy / np.maximum(counts[leaves], 1.0), 0.0, 1.0)
        return value
    n_levels = split.TARGET_LEVELS
    histograms = rows.aggregate(LeafHistogram(tree, leaf_pos, len(leaves), n_levels)).reshape(-1, n_levels)
    value[leaves] = GridMedian(s.budget_per_query, (0.0, 1.0), s.rng_noise).randomise(histograms)
    return value
