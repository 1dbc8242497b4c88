"""Split utilities against brute force: the summed-absolute-error utility from level histograms."""

from __future__ import annotations

import numpy as np
import pytest

import dpcore.models._splitting as split


def _brute_force_sae(bins, node, levels, n_nodes, n_thresholds):
    values = levels / (split.TARGET_LEVELS - 1)
    out = np.zeros((n_nodes, bins.shape[1], n_thresholds))
    for v in range(n_nodes):
        for f in range(bins.shape[1]):
            for t in range(n_thresholds):
                mine = node == v
                for side in (mine & (bins[:, f] <= t), mine & (bins[:, f] > t)):
                    if side.any():
                        out[v, f, t] -= np.abs(values[side] - np.median(values[side])).sum()
    return out


@pytest.mark.parametrize(("n", "n_nodes"), [(0, 2), (1, 1), (60, 1), (200, 5)])
def test_sae_utility_is_the_exact_summed_absolute_error_around_each_sides_median(n, n_nodes):
    rng = np.random.default_rng(n)
    X = rng.random((n, 3))
    y = rng.random(n) ** 3
    node = rng.integers(0, n_nodes, n)
    node[node == 1] = 0  # node 1 is empty when there are several
    bins = split.bin_features(X, split.threshold_grid(6))
    levels = split.target_levels(y)
    got = split.sae_utility_grid(bins, node, levels, n_nodes, 6)
    np.testing.assert_allclose(got, _brute_force_sae(bins, node, levels, n_nodes, 6), atol=1e-9)


def test_target_levels_round_to_the_nearest_public_grid_point():
    y = np.array([0.0, 1.0, 0.5, 1 / 510 - 1e-9, -0.3, 1.7])
    levels = split.target_levels(y)
    np.testing.assert_array_equal(levels, [0, 255, 128, 0, 0, 255])
    assert np.abs(levels / 255 - np.clip(y, 0, 1)).max() <= 1 / 510


def test_sae_utility_does_not_wrap_when_the_level_weighted_sum_passes_int32():
    # Wide level gaps make a small table reach the sums a node of ~17M records reaches on 256 levels.
    n, n_levels = 10_000, 2**20 + 1
    levels = np.r_[np.zeros(n // 2, np.int64), np.full(n // 2, n_levels - 1)]
    bins = np.zeros((n, 1), np.int64)
    got = split.sae_utility_grid(bins, np.zeros(n, np.int64), levels, 1, 1, n_levels=n_levels)
    assert got[0, 0, 0] == pytest.approx(-n / 2)
