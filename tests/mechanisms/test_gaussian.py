"""The Gaussian mechanism and its zCDP accounting (approximate DP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privacy_testing import ALPHA
from scipy import stats

from dpcore.mechanisms import Gaussian, record_mechanism_calls, zcdp_rho


def test_noise_is_normal_with_the_calibrated_sigma():
    mech = Gaussian(rho=0.2, sensitivity=3.0, random_state=1)
    assert mech.sigma == pytest.approx(3.0 / math.sqrt(0.4))
    draws = mech.randomise(np.zeros(100_000))
    assert stats.kstest(draws, stats.norm(scale=mech.sigma).cdf).pvalue > ALPHA


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-5), (1.0, 1e-5), (4.0, 1e-8)])
def test_zcdp_budget_converts_back_to_the_declared_epsilon(epsilon, delta):
    rho = zcdp_rho(epsilon, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(epsilon)


@pytest.mark.parametrize("delta", [0.0, -1e-5, 1.0, float("nan")])
def test_bad_delta_is_refused(delta):
    with pytest.raises(ValueError, match="delta"):
        zcdp_rho(1.0, delta)


def test_calls_are_recorded():
    with record_mechanism_calls() as recorder:
        Gaussian(rho=0.5, random_state=0).randomise([1.0, 2.0])
    assert recorder.calls[0].mechanism == "gaussian"


def test_outputs_are_rounded_to_a_power_of_two_grid():
    """Exact noise on a grid (Mironov 2012): every output is a whole number of grid steps of 2^-k·Δ/√size."""
    mechanism = Gaussian(rho=0.5, sensitivity=1.0, random_state=3)
    grid = mechanism.grid_for(10_000)
    assert grid == 2.0 ** np.floor(np.log2(1.0 / (4096 * 100)))
    out = mechanism.randomise(np.full(10_000, 0.123456789))
    assert np.all(out / grid == np.round(out / grid))


def test_a_query_of_sensitivity_zero_is_returned_unchanged():
    """No noise, no grid (as Laplace): the grid once took log2(0) and raised."""
    mechanism = Gaussian(rho=0.5, sensitivity=0.0, random_state=0)
    assert mechanism.grid == 0.0
    assert mechanism.randomise([1.0, 2.5]).tolist() == [1.0, 2.5]
