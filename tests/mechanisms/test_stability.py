"""The stability histogram: a value one record holds is kept with probability at most δ."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.mechanisms.stability import StabilityHistogram, stability_threshold


def test_the_threshold_is_one_plus_the_log_term():
    assert stability_threshold(0.5, 1e-6) == pytest.approx(1 + math.log(1 / 2e-6) / 0.5)


def test_a_count_of_one_is_kept_about_delta_of_the_time_never_more():
    delta = 0.01
    kept = StabilityHistogram(1.0, delta, random_state=0).keep(np.ones(400_000)).mean()
    # binomial(400 000, 0.01): 4 standard deviations is 0.0006
    assert kept <= delta + 6e-4 and kept > delta - 1e-3


def test_common_values_are_kept_and_counts_below_one_are_refused():
    histogram = StabilityHistogram(1.0, 1e-6, random_state=1)
    assert histogram.keep([10_000, 5_000]).all()
    with pytest.raises(ValueError, match="occur"):
        histogram.keep([0, 3])


@pytest.mark.parametrize("delta", [0.0, 0.5, 1.0])
def test_delta_must_leave_a_threshold(delta):
    with pytest.raises(ValueError, match="delta"):
        stability_threshold(1.0, delta)
