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


def sae_utility_grid(bins: np.ndarray, node: np.ndarray, y: np.ndarray, n_nodes: int, n_thresholds: int) -> np.ndarray:
    """``−(SAE_left + SAE_right)`` around each side's median, for every (node, feature, threshold).

    Sensitivity 1 for ``y`` in [0, 1]: the median minimises the sum of absolute errors, so
    adding one record raises a side's minimum by at most ``|y − median| ≤ 1`` and never
    lowers it. Computed per feature from cumulative counts along the records sorted by
    (node, y): the lower median of a side is found with one ``searchsorted`` over all
    (threshold, node) pairs at once.
    """
    if len(y) == 0:
        return np.zeros((n_nodes, bins.shape[1], n_thresholds))
    order = np.lexsort((y, node))
    node_sorted, y_sorted, bins_sorted = node[order], y[order], bins[order]
    n = len(y)
    starts = np.searchsorted(node_sorted, np.arange(n_nodes), side="left")
    ends = np.searchsorted(node_sorted, np.arange(n_nodes), side="right")
    d = bins.shape[1]
    utility = np.zeros((n_nodes, d, n_thresholds))
    thresholds = np.arange(n_thresholds, dtype=np.int32)
    all_counts = np.arange(n + 1, dtype=np.int32)[None, :]
    all_sums = np.concatenate([[0.0], np.cumsum(y_sorted)])[None, :]
    for f in range(d):
        goes_left = bins_sorted[:, f][None, :] <= thresholds[:, None]
        left_counts = np.zeros((n_thresholds, n + 1), dtype=np.int32)
        np.cumsum(goes_left, axis=1, out=left_counts[:, 1:])
        left_sums = np.zeros((n_thresholds, n + 1))
        np.cumsum(goes_left * y_sorted[None, :], axis=1, out=left_sums[:, 1:])
        # The right side's running sums are the totals minus the left's: no second pass.
        left = _sae(left_counts, left_sums, y_sorted, starts, ends, n)
        right = _sae(all_counts - left_counts, all_sums - left_sums, y_sorted, starts, ends, n)
        utility[:, f, :] = -(left + right).T
    return utility


def _sae(
    counts_cum: np.ndarray, sums_cum: np.ndarray, y_sorted: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int
) -> np.ndarray:
    """Sum of absolute errors about the lower median of each (row, node) member set: ``(T, n_nodes)``.

    ``counts_cum``/``sums_cum`` are running member counts and member sums along the records
    sorted by (node, y), with a leading zero column.
    """
    t = counts_cum.shape[0]
    before = counts_cum[:, starts]
    count = counts_cum[:, ends] - before
    total = sums_cum[:, ends] - sums_cum[:, starts]
    low = (count + 1) // 2
    # Rows are made one increasing sequence by offsetting row r by r·(n+1).
    offsets = (np.arange(t, dtype=np.int64) * (n + 1))[:, None]
    flat = (counts_cum + offsets).ravel()
    position = np.searchsorted(flat, (before + low + offsets).ravel(), side="left").reshape(t, -1) - offsets
    position = np.clip(position, 1, n)
    median = y_sorted[position - 1]
    low_sum = sums_cum[np.arange(t)[:, None], position] - sums_cum[:, starts]
    sae = (total - low_sum) - (count - low) * median + low * median - low_sum
    return np.where(count > 0, np.maximum(sae, 0.0), 0.0)
