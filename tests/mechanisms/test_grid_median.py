"""The grid median: many disjoint groups' DP medians in one call, from histograms on a public grid.

It must be :class:`Median` on the same values (same output distribution, row by row), and
its one call must stay within ε on neighbouring histograms. Seeded; ALPHA is the false-alarm
rate on a fresh seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_within_epsilon, neighbouring_privacy_loss
from scipy import stats
from test_median import exact_median_cdf

from dpcore.mechanisms import GridMedian, record_mechanism_calls

N_POINTS = 11
GRID = np.linspace(0.0, 1.0, N_POINTS)


def _histogram(levels):
    return np.bincount(levels, minlength=N_POINTS).astype(float)


@pytest.mark.parametrize(("epsilon", "levels"), [(1.0, [1, 1, 4, 4, 5, 8, 9]), (0.3, [0, 3, 3, 3, 10, 10]), (2.0, [])])
def test_each_row_follows_the_median_of_its_grid_values(epsilon, levels):
    levels = np.asarray(levels, dtype=int)
    rows = np.tile(_histogram(levels), (20_000, 1))  # one call, 20,000 independent rows
    medians = GridMedian(epsilon, random_state=61).randomise(rows)
    assert stats.kstest(medians, exact_median_cdf(GRID[levels], epsilon, 0.0, 1.0)).pvalue > ALPHA


def test_outputs_stay_in_the_bounds_and_rows_are_independent_groups():
    counts = np.zeros((3, N_POINTS))
    counts[0, 2] = counts[1, 9] = 500
    counts[2, :] = 0
    medians = GridMedian(4.0, bounds=(10.0, 20.0), random_state=62).randomise(counts)
    assert medians.shape == (3,)
    assert np.all((medians >= 10.0) & (medians <= 20.0))


def test_neighbouring_histograms_stay_within_epsilon():
    epsilon = 0.5
    d = _histogram(np.array([4, 4, 5, 5, 6]))
    d_prime = d.copy()
    d_prime[10] += 1  # one record more, at the top of the range

    def release(data, rng):
        return GridMedian(epsilon, random_state=rng).randomise(data)[0]

    estimate = neighbouring_privacy_loss(release, d, d_prime, epsilon, 6_000, edges=np.linspace(0, 1, 11)[1:-1])
    assert_within_epsilon(estimate)


def test_the_call_is_recorded_once_with_its_histograms():
    counts = np.ones((4, N_POINTS))
    with record_mechanism_calls() as recorder:
        GridMedian(0.7, random_state=63).randomise(counts)
    (call,) = recorder.calls
    assert (call.mechanism, call.epsilon, call.sensitivity) == ("grid_median", 0.7, 1.0)
    assert call.query.shape == (4, N_POINTS) and call.output.shape == (4,)


def test_a_grid_needs_two_points():
    with pytest.raises(ValueError, match="two grid points"):
        GridMedian(1.0).randomise(np.ones((2, 1)))
