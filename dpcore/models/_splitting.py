"""Split scoring shared by every tree model: per-node histograms and their utilities.

All statistics come from per-(node, feature, bin) histograms built with one ``bincount``
and turned into left/right statistics for every candidate threshold by a cumulative sum, so
scoring all ``nodes × features × thresholds`` candidates costs O(n·d + nodes·d·T) with no
Python loop over records or thresholds.

Each record carries a small vector of *statistics* whose sums the utilities need:
``[1, y, y²]`` for regression, the one-hot class indicator for classification.
"""

from __future__ import annotations

import numpy as np


def threshold_grid(n_thresholds: int) -> np.ndarray:
    """``n_thresholds`` equally spaced points strictly inside (0, 1): data-independent."""
    return np.arange(1, n_thresholds + 1) / (n_thresholds + 1.0)


def bin_features(X_unit: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Bin index per value: ``x <= grid[j]`` exactly when ``bin <= j``.

    The grid is equally spaced, so the bin is computed arithmetically and then corrected by
    one comparison each way against the grid itself (floating-point ties at a threshold).
    """
    t = len(grid)
    guess = np.clip(np.floor(X_unit * (t + 1)).astype(np.int32), 0, t)
    below = guess > 0
    guess -= below & (grid[np.maximum(guess - 1, 0)] >= X_unit)
    above = guess < t
    guess += above & (grid[np.minimum(guess, t - 1)] < X_unit)
    return guess


def regression_statistics(y: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(y), y, y * y])


def class_statistics(y_codes: np.ndarray, n_classes: int) -> np.ndarray:
    return np.eye(n_classes)[y_codes]


def node_totals(node: np.ndarray, stats: np.ndarray, n_nodes: int) -> np.ndarray:
    """Sum of statistics per node: shape ``(n_nodes, s)``."""
    return np.stack([np.bincount(node, weights=stats[:, k], minlength=n_nodes) for k in range(stats.shape[1])], axis=1)


def grid_left_statistics(bins: np.ndarray, node: np.ndarray, stats: np.ndarray, n_nodes: int, n_thresholds: int) -> np.ndarray:
    """Left-side statistic sums for every (node, feature, threshold): ``(n_nodes, d, T, s)``.

    ``bins`` are the records' bin indices ``(n, d)``, ``node`` their node index in
    ``0 … n_nodes−1``.
    """
    n, d = bins.shape
    width = n_thresholds + 1
    hist = np.empty((n_nodes, d, width, stats.shape[1]))
    node_offset = node * width
    for f in range(d):  # one bincount per (feature, statistic): no n × d key array
        keys = node_offset + bins[:, f]
        for k in range(stats.shape[1]):
            hist[:, f, :, k] = np.bincount(keys, weights=stats[:, k], minlength=n_nodes * width).reshape(n_nodes, width)
    return np.cumsum(hist, axis=2)[:, :, :n_thresholds, :]


def candidate_left_statistics(
    X_unit: np.ndarray, node: np.ndarray, stats: np.ndarray, features: np.ndarray, thresholds: np.ndarray
) -> np.ndarray:
    """Left-side sums for per-node random candidates: ``(n_nodes, K, s)``.

    ``features`` and ``thresholds`` are ``(n_nodes, K)``: candidate ``k`` of node ``ℓ`` sends a
    record left when ``x[features[ℓ, k]] <= thresholds[ℓ, k]``.
    """
    n_nodes, k = features.shape
    goes_left = np.take_along_axis(X_unit, features[node], axis=1) <= thresholds[node]
    keys = (node[:, None] * k + np.arange(k)[None, :]).ravel()
    weights = goes_left.ravel()
    return np.stack(
        [
            np.bincount(keys, weights=weights * np.repeat(stats[:, s], k), minlength=n_nodes * k)
            for s in range(stats.shape[1])
        ],
        axis=-1,
    ).reshape(n_nodes, k, stats.shape[1])


def _sse(side: np.ndarray) -> np.ndarray:
    count, total, total_sq = side[..., 0], side[..., 1], side[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        sse = total_sq - np.where(count > 0, total * total / count, 0.0)
    return np.maximum(sse, 0.0)


def sse_utility(left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``−(SSE_left + SSE_right)``; sensitivity 1 for targets in [0, 1] under add/remove-one.

    Adding a record ``y`` to a side raises its minimal SSE by ``(n/(n+1))(y − ȳ)² ≤ 1`` and
    never lowers it, and the record lands on exactly one side.
    """
    right = totals - left
    return -(_sse(left) + _sse(right))


def _gini(side: np.ndarray) -> np.ndarray:
    count = side.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, count - (side * side).sum(axis=-1) / count, 0.0)


def gini_utility(left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``−Σ_sides |T_j|·(1 − Σ_c p_jc²)``; sensitivity 2 under add/remove-one (Friedman & Schuster 2010)."""
    right = totals - left
    return -(_gini(left) + _gini(right))


TARGET_LEVELS = 256


def target_levels(y: np.ndarray, n_levels: int = TARGET_LEVELS) -> np.ndarray:
    """Each target in [0, 1] rounded to the nearest of ``n_levels`` public grid points ``k/(n_levels − 1)``.

    The grid is fixed before any data is seen and the rounding is a per-record map, so a
    neighbouring dataset's levels differ from this one's in that one record only: every
    sensitivity argued for targets in [0, 1] holds for the rounded targets unchanged. The
    rounding moves a target by at most ``1/(2(n_levels − 1))`` (0.002 for 256 levels).
    """
    return np.rint(np.clip(y, 0.0, 1.0) * (n_levels - 1)).astype(np.int64)


def sae_utility_grid(
    bins: np.ndarray, node: np.ndarray, levels: np.ndarray, n_nodes: int, n_thresholds: int, n_levels: int = TARGET_LEVELS
) -> np.ndarray:
    """``−(SAE_left + SAE_right)`` around each side's median, for every (node, feature, threshold).

    ``levels`` are the targets on the public grid of :func:`target_levels` (integer codes);
    the utility is in the units of [0, 1].

    Sensitivity 1: the median minimises the sum of absolute errors, so adding one record
    (its rounded target in [0, 1]) raises a side's minimum by at most ``|y − median| ≤ 1``
    and never lowers it; the record lands on exactly one side of each candidate.

    Computed from counts only. For a side with ``N`` records of which ``C_k`` sit at level
    ``≤ k``, the summed distance to its median is ``Σ_k g_k · min(C_k, N − C_k)`` over the
    gaps ``g_k`` between consecutive occupied levels: a gap separates the median from the
    records on its smaller side. Per node only its occupied levels are kept (a
    (node, level) *pair* per occupied level), so the cumulative (pair, feature, threshold)
    counts take at most ``min(records, nodes × n_levels) × d × T`` cells, built with one
    ``bincount`` and two cumulative sums, with no loop over records, nodes or thresholds.
    """
    n_records, d = bins.shape
    utility = np.zeros((n_nodes, d, n_thresholds))
    if n_records == 0:
        return utility
    width = n_thresholds + 1
    pair_key, pair_of_record = np.unique(node * n_levels + levels, return_inverse=True)
    pair_node, pair_level = pair_key // n_levels, pair_key % n_levels
    # Pairs are sorted by (node, level): each node's pairs are one run, lowest level first.
    pairs_per_node = np.bincount(pair_node, minlength=n_nodes)
    occupied = np.flatnonzero(pairs_per_node)
    first_pair = np.concatenate([[0], np.cumsum(pairs_per_node)])[occupied]
    last_in_node = np.r_[pair_node[1:] != pair_node[:-1], True]
    gap = np.where(last_in_node, 0, np.r_[np.diff(pair_level), 0]).astype(np.int64)[:, None]
    keys = pair_of_record * width
    for f in range(d):  # per feature, so the (pairs, thresholds) arrays stay in cache
        hist = np.bincount(keys + bins[:, f], minlength=len(pair_key) * width).reshape(-1, width)
        # below[j, t]: records of pair j's node at a level ≤ pair j's with bin ≤ t (t = T: every bin).
        below = np.cumsum(hist, axis=1, dtype=np.int32)
        np.cumsum(below, axis=0, out=below)
        offset = np.concatenate([np.zeros((1, width), np.int32), below[first_pair[1:] - 1]])
        below -= np.repeat(offset, pairs_per_node[occupied], axis=0)
        total = np.repeat(below[np.r_[first_pair[1:], len(pair_key)] - 1], pairs_per_node[occupied], axis=0)
        left, everything = below[:, :n_thresholds], below[:, n_thresholds:]
        left_total, node_total = total[:, :n_thresholds], total[:, n_thresholds:]
        right = everything - left
        # int64 from here: the level-weighted sum reaches 255·n/2, past int32 once a node holds ~17M records,
        # and a wrapped utility would break its sensitivity of 1.
        per_pair = np.minimum(left, left_total - left).astype(np.int64)
        per_pair += np.minimum(right, (node_total - left_total) - right)
        per_pair *= gap
        utility[occupied, f, :] = np.add.reduceat(per_pair, first_pair, axis=0)
    return utility / -(n_levels - 1)
