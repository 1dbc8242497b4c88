"""The level-wise DP tree builder shared by every tree model, and trees as plain arrays.

One builder grows any number of trees at once, one level at a time: the roots of a
partitioned forest are just several roots whose records are disjoint. Per level it scores
every splitting node's candidates from shared histograms (``_splitting``), picks each
node's split with one vectorised exponential-mechanism call, and releases all children
counts with one noisy-count call. The Python loops run over levels, never over records,
nodes or thresholds.

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

from dataclasses import dataclass, field
from typing import cast

import numpy as np
from numpy.typing import NDArray

import dpcore.models._splitting as split
from dpcore.mechanisms import Exponential, Geometric, GridMedian, Laplace, count_mechanism


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
        self.left: list[int] = []
        self.right: list[int] = []
        self.depth: list[int] = []
        self.count: list[float] = []

    def add(self, depth: int, counts: np.ndarray) -> np.ndarray:
        start = len(self.feature)
        k = len(counts)
        self.feature.extend([-1] * k)
        self.threshold.extend([0.0] * k)
        self.left.extend([-1] * k)
        self.right.extend([-1] * k)
        self.depth.extend([depth] * k)
        self.count.extend(np.asarray(counts, dtype=float).tolist())
        return np.arange(start, start + k)


def grow(X_unit: np.ndarray, y: np.ndarray, root_of_record: np.ndarray, n_roots: int, s: GrowthSettings) -> TreeArrays:
    """Grow ``n_roots`` DP trees, each on the records whose ``root_of_record`` names it.

    ``X_unit`` is in [0, 1]; ``y`` is in [0, 1] (regression) or class codes (classification).
    Records with ``root_of_record < 0`` take part in no tree.
    """
    used = root_of_record >= 0
    X_unit, y, record_node = X_unit[used], y[used], root_of_record[used].astype(np.int64)
    classification = s.leaf == "class_counts"
    stats = split.class_statistics(y, s.n_classes) if classification else split.regression_statistics(y)
    counts_mech = count_mechanism(s.count_noise, s.budget_per_query, s.rng_noise)
    bins = split.bin_features(X_unit, split.threshold_grid(s.n_thresholds)) if s.candidates == "grid" else None
    levels = split.target_levels(y) if s.leaf == "median" else None
    d = X_unit.shape[1]

    nodes = _Nodes()
    root_counts = np.full(n_roots, np.nan)
    if s.root_count or (s.max_depth == 0 and not classification):
        root_counts = counts_mech.randomise(np.bincount(record_node, minlength=n_roots)).astype(float)
    frontier = nodes.add(0, root_counts)

    for depth in range(s.max_depth + 1):
        if len(frontier) == 0:
            break
        count = np.asarray(nodes.count)[frontier]
        can_split = np.full(len(frontier), depth < s.max_depth)
        can_split &= np.isnan(count) | (count >= s.min_samples_split)
        splitting = frontier[can_split]
        if len(splitting) == 0:
            break
        local = np.full(len(nodes.feature), -1)
        local[splitting] = np.arange(len(splitting))
        in_split = local[record_node] >= 0
        # While every record is still splitting (the usual case near the root) use the arrays
        # as they are: copying an n × d matrix per level dominated large fits.
        pick = slice(None) if in_split.all() else in_split
        rec_local = local[record_node[pick]]
        X_split = X_unit[pick]
        feature, threshold = _choose_splits(
            X_split, None if levels is None else levels[pick], stats[pick], rec_local, len(splitting), s,
            None if bins is None else bins[pick], d,
        )

        goes_left = X_split[np.arange(len(rec_local)), feature[rec_local]] <= threshold[rec_local]
        child_key = rec_local * 2 + (~goes_left)
        true_children = np.bincount(child_key, minlength=2 * len(splitting))
        if s.child_counts:
            child_counts = counts_mech.randomise(true_children).astype(float).reshape(-1, 2)
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
        feat_list, thr_list = nodes.feature, nodes.threshold
        for (node_id, f, t, (lc, rc)) in zip(kept, feature[keep], threshold[keep], children):
            feat_list[node_id], thr_list[node_id] = int(f), float(t)
            nodes.left[node_id], nodes.right[node_id] = int(lc), int(rc)
        # Move the records of kept nodes to their children.
        child_of = np.full((len(nodes.feature), 2), -1)
        child_of[kept] = children
        split_records = np.flatnonzero(in_split)
        new_node = child_of[record_node[split_records], (~goes_left).astype(int)]
        moved = new_node >= 0
        record_node[split_records[moved]] = new_node[moved]
        frontier = children.ravel()

    feature = np.asarray(nodes.feature)
    leaves = np.flatnonzero(feature < 0)
    value = _leaf_values(y, levels, stats, record_node, leaves, np.asarray(nodes.count), s, counts_mech, len(feature))
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


def _choose_splits(
    X: np.ndarray, levels: np.ndarray | None, stats: np.ndarray, rec_local: np.ndarray, n_nodes: int, s: GrowthSettings,
    bins: np.ndarray | None, d: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One exponential-mechanism draw per splitting node; returns (feature, threshold) arrays."""
    selector = Exponential(s.budget_per_query, s.sensitivity, s.selection, s.rng_noise)
    if s.candidates == "random":
        k = s.n_random_candidates
        features = s.rng_structure.integers(0, d, size=(n_nodes, k))
        thresholds = s.rng_structure.random((n_nodes, k))
        totals = split.node_totals(rec_local, stats, n_nodes)
        left = split.candidate_left_statistics(X, rec_local, stats, features, thresholds)
        utility = _utility(s.utility, left, totals[:, None, :])
        chosen = selector.select(utility)
        rows = np.arange(n_nodes)
        return features[rows, chosen], thresholds[rows, chosen]

    grid = split.threshold_grid(s.n_thresholds)
    assert bins is not None, "grid candidates are scored from the binned features"
    if s.utility == "sae":
        assert levels is not None, "the summed-absolute-error utility reads the targets' grid levels"
        utility = split.sae_utility_grid(bins, rec_local, levels, n_nodes, s.n_thresholds)
    else:
        totals = split.node_totals(rec_local, stats, n_nodes)
        left = split.grid_left_statistics(bins, rec_local, stats, n_nodes, s.n_thresholds)
        utility = _utility(s.utility, left, totals[:, None, None, :])
    if s.features_per_node is not None and s.features_per_node < d:
        allowed = np.argsort(s.rng_structure.random((n_nodes, d)), axis=1) < s.features_per_node
        utility = np.where(allowed[:, :, None], utility, -np.inf)
    chosen = cast(NDArray[np.intp], selector.select(utility.reshape(n_nodes, -1)))  # 2-D: one choice per node
    return chosen // s.n_thresholds, grid[chosen % s.n_thresholds]


def _utility(kind: str, left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    if kind == "sse":
        return split.sse_utility(left, totals)
    if kind == "gini":
        return split.gini_utility(left, totals)
    raise ValueError(f"unknown utility {kind!r}")


def _leaf_values(
    y: np.ndarray, levels: np.ndarray | None, stats: np.ndarray, record_node: np.ndarray, leaves: np.ndarray, counts: np.ndarray, s: GrowthSettings,
    counts_mech: Laplace | Geometric, n_nodes: int,
) -> np.ndarray:
    """Noisy leaf values for every leaf with one mechanism call."""
    leaf_pos = np.full(n_nodes, -1)
    leaf_pos[leaves] = np.arange(len(leaves))
    rec_leaf = leaf_pos[record_node]
    if s.leaf == "class_counts":
        true = np.stack([np.bincount(rec_leaf, weights=stats[:, c], minlength=len(leaves)) for c in range(s.n_classes)], axis=1)
        value: np.ndarray = np.zeros((n_nodes, s.n_classes))
        value[leaves] = counts_mech.randomise(np.rint(true)).astype(float)
        return value
    value = np.full(n_nodes, np.nan)
    if s.leaf == "mean":
        sums = np.bincount(rec_leaf, weights=y, minlength=len(leaves))
        noisy = Laplace(s.budget_per_query, 1.0, s.rng_noise).randomise(sums)
        value[leaves] = np.clip(noisy / np.maximum(counts[leaves], 1.0), 0.0, 1.0)
        return value
    assert levels is not None, "median leaves read the targets' grid levels"
    n_levels = split.TARGET_LEVELS
    histograms = np.bincount(rec_leaf * n_levels + levels, minlength=len(leaves) * n_levels).reshape(-1, n_levels)
    value[leaves] = GridMedian(s.budget_per_query, (0.0, 1.0), s.rng_noise).randomise(histograms)
    return value
