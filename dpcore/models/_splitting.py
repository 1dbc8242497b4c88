"""Split scoring shared by every tree model: utilities from per-node histograms.

The histograms themselves are summed over the rows by the jobs of
:mod:`dpcore.models._tree_rows`; here they become left/right statistics for every candidate
threshold by a cumulative sum, so scoring all ``nodes × features × thresholds`` candidates
costs O(nodes·d·T) on the driver, with no Python loop over records or thresholds.

A side's *statistics* are the sums the utilities need: ``[count, Σy, Σy²]`` for regression,
the class counts for classification.
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


def _sse(side: np.ndarray) -> np.ndarray:
    count, total, total_sq = side[..., 0], side[..., 1], side[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        sse = total_sq - np.where(count > 0, total * total / count, 0.0)
    return np.maximum(sse, 0.0)


def sse_utility(left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``−(SSE_left + SSE_right)``; sensitivity 1 for targets in [0, 1] under add/remove-one.

    Adding a record ``y`` to a side raises its minimal SSE by ``(n/(n+1))(y − ȳ)² ≤ 1`` and
    never lowers it, and the record lands on exactly one side. The statistics are the jobs'
    exact integer sums of ``q = fixed(y)`` and ``q²`` scaled back by powers of two, so this is
    exactly the SSE of the targets rounded to the public 2^-14 grid, which lie in [0, 1]: the
    argument holds for them as it stands.
    """
    right = totals - left
    return -(_sse(left) + _sse(right))


def _gini(side: np.ndarray) -> np.ndarray:
    count = side.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, count - (side * side).sum(axis=-1) / count, 0.0)


def gini_utility(left: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``−Σ_sides |T_j|·(1 − Σ_c p_jc²)``; sensitivity 2 under add/remove-one (Friedman & Schuster 2010).

    The class counts are exact integer sums, so the utility is exactly this function of the records.
    """
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


def occupied_pairs(occupancy: np.ndarray) -> np.ndarray:
    """The occupied ``(node, level)`` pairs of a ``(nodes, n_levels)`` count table, as keys ``node·n_levels + level``.

    Sorted by node, then level: each node's pairs are one run, lowest level first.
    """
    return np.flatnonzero(np.asarray(occupancy).ravel() > 0)


def sae_utility_grid(
    bins: np.ndarray, node: np.ndarray, levels: np.ndarray, n_nodes: int, n_thresholds: int, n_levels: int = TARGET_LEVELS
) -> np.ndarray:
    """:func:`sae_utility_pairs` from the records themselves (bins ``(n, d)``, node and level per record)."""
    n_records, d = bins.shape
    width = n_thresholds + 1
    pair_key, pair_of_record = np.unique(node * n_levels + levels, return_inverse=True)
    hist = (
        np.stack(
            [
                np.bincount(pair_of_record * width + bins[:, f], minlength=len(pair_key) * width).reshape(-1, width)
                for f in range(d)
            ]
        )
        if n_records
        else np.zeros((d, 0, width), np.int64)
    )
    return sae_utility_pairs(hist, pair_key, n_nodes, n_thresholds, n_levels)


def sae_utility_pairs(
    hist: np.ndarray, pair_key: np.ndarray, n_nodes: int, n_thresholds: int, n_levels: int = TARGET_LEVELS
) -> np.ndarray:
    """``−(SAE_left + SAE_right)`` around each side's median, for every (node, feature, threshold).

    ``hist[f, j, b]`` counts the records of occupied pair ``j`` (key ``node·n_levels + level``,
    sorted as :func:`occupied_pairs` gives them) whose feature ``f`` falls in bin ``b`` of the
    grid (``T + 1`` bins); the levels are the targets on the public grid of
    :func:`target_levels`. The utility is in the units of [0, 1].

    Sensitivity 1: the median minimises the sum of absolute errors, so adding one record
    (its rounded target in [0, 1]) raises a side's minimum by at most ``|y − median| ≤ 1``
    and never lowers it; the record lands on exactly one side of each candidate. The counts
    are exact integers, so the utility is exactly this function of the rounded targets.

    Computed from counts only. For a side with ``N`` records of which ``C_k`` sit at level
    ``≤ k``, the summed distance to its median is ``Σ_k g_k · min(C_k, N − C_k)`` over the
    gaps ``g_k`` between consecutive occupied levels: a gap separates the median from the
    records on its smaller side. Per node only its occupied levels are kept, so the
    cumulative (pair, feature, threshold) counts take at most
    ``min(records, nodes × n_levels) × d × T`` cells, turned into utilities by two cumulative
    sums, with no loop over records, nodes or thresholds.
    """
    d, n_pairs, width = hist.shape
    utility = np.zeros((n_nodes, d, n_thresholds))
    if n_pairs == 0:
        return utility
    # Cumulative counts stay below the rows of one node: int32 (faster, half the memory) while they fit.
    count_type = np.int32 if hist[0].sum() < np.iinfo(np.int32).max else np.int64
    pair_node, pair_level = pair_key // n_levels, pair_key % n_levels
    pairs_per_node = np.bincount(pair_node, minlength=n_nodes)
    occupied = np.flatnonzero(pairs_per_node)
    first_pair = np.concatenate([[0], np.cumsum(pairs_per_node)])[occupied]
    last_in_node = np.r_[pair_node[1:] != pair_node[:-1], True]
    gap = np.where(last_in_node, 0, np.r_[np.diff(pair_level), 0]).astype(np.int64)[:, None]
    for f in range(d):  # per feature, so the (pairs, thresholds) arrays stay in cache
        # below[j, t]: records of pair j's node at a level ≤ pair j's with bin ≤ t (t = T: every bin).
        below: np.ndarray = np.cumsum(hist[f], axis=1, dtype=count_type)
        np.cumsum(below, axis=0, out=below)
        offset: np.ndarray = np.concatenate([np.zeros((1, width), count_type), below[first_pair[1:] - 1]])
        below -= np.repeat(offset, pairs_per_node[occupied], axis=0)
        total: np.ndarray = np.repeat(below[np.r_[first_pair[1:], n_pairs] - 1], pairs_per_node[occupied], axis=0)
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
