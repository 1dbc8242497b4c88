"""The Laplace mechanism, and the call recorder every mechanism shares.

Statistical tests are seeded; ALPHA (1e-6) is the false-alarm rate each would have on a
fresh seed, so a failure here is a real change in behaviour, not bad luck.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_exceeds_epsilon, assert_within_epsilon, discretise, estimate_privacy_loss
from scipy import stats

from dpcore.mechanisms import Laplace, MechanismCall, record_mechanism_calls

N_DRAWS = 200_000  # per distribution test; vectorised, so about 10 ms
N_RUNS = 100_000  # per dataset in a neighbouring test


# --- distribution ------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "sensitivity", "value"), [(1.0, 1.0, 0.0), (0.1, 2.0, 3.5), (5.0, 0.5, -7.0)])
def test_output_is_value_plus_laplace_noise_of_scale_sensitivity_over_epsilon(epsilon, sensitivity, value):
    mech = Laplace(epsilon, sensitivity, random_state=11)
    noisy = mech.randomise(np.full(N_DRAWS, value))
    exact = stats.laplace(loc=value, scale=sensitivity / epsilon)
    # KS at false-alarm rate ALPHA: a correct sampler fails with probability <= 1e-6.
    assert stats.kstest(noisy, exact.cdf).pvalue > ALPHA
    assert mech.scale == pytest.approx(sensitivity / epsilon)
    assert mech.variance == pytest.approx(2 * (sensitivity / epsilon) ** 2)


def test_ks_test_has_power_against_a_ten_percent_wrong_scale():
    noisy = Laplace(1.0, 1.0, random_state=12).randomise(np.zeros(N_DRAWS))
    assert stats.kstest(noisy, stats.laplace(scale=1.1).cdf).pvalue < ALPHA


def test_every_cell_gets_its_own_independent_noise_and_shape_is_kept():
    noisy = Laplace(1.0, 1.0, random_state=13).randomise(np.zeros((N_DRAWS // 2, 2)))
    assert noisy.shape == (N_DRAWS // 2, 2)
    assert stats.kstest(noisy.ravel(), stats.laplace(scale=1.0).cdf).pvalue > ALPHA
    # Independent columns: |Pearson r| of n independent pairs is ~ N(0, 1/n); 5.3 sd ~ 1e-7 two-sided.
    r = np.corrcoef(noisy[:, 0], noisy[:, 1])[0, 1]
    assert abs(r) < 5.3 / math.sqrt(noisy.shape[0])


def test_scalar_and_list_inputs():
    mech = Laplace(1.0, random_state=0)
    assert mech.randomise(2.0).shape == ()
    assert mech.randomise([1, 2, 3]).dtype == float


# --- neighbouring datasets ----------------------------------------------------------------


class HalvedSensitivityLaplace(Laplace):
    """A calibration bug: the noise scale uses half the declared sensitivity (so really 2ε-DP)."""

    def noise_plan(self, size: int) -> tuple[float, Fraction]:
        grid, scale = super().noise_plan(size)
        return grid, scale / 2


class EpsilonAsScaleLaplace(Laplace):
    """A classic slip: noise scale ε instead of Δ/ε (at ε = 0.5, Δ = 1 the real ε is 2)."""

    def noise_plan(self, size: int) -> tuple[float, Fraction]:
        grid, _scale = super().noise_plan(size)
        return grid, Fraction(self.epsilon) / Fraction(grid)


COUNT_EDGES = 10.5 + np.arange(-6.0, 6.5, 0.5)  # 25 cut points around the two answers: 27 outcomes


def _count_loss(mechanism_class, epsilon, seed=0):
    """A count query: 10 on D, 11 on D' (one record added), sensitivity 1."""
    mech_d = mechanism_class(epsilon, 1.0, random_state=seed)
    mech_d_prime = mechanism_class(epsilon, 1.0, random_state=seed + 1)
    codes_d, m = discretise(mech_d.randomise(np.full(N_RUNS, 10.0)), COUNT_EDGES)
    codes_d_prime, _ = discretise(mech_d_prime.randomise(np.full(N_RUNS, 11.0)), COUNT_EDGES)
    return estimate_privacy_loss(codes_d, codes_d_prime, epsilon, n_outcomes=m)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_neighbouring_counts_stay_within_epsilon(epsilon):
    assert_within_epsilon(_count_loss(Laplace, epsilon))


@pytest.mark.parametrize("broken", [HalvedSensitivityLaplace, EpsilonAsScaleLaplace])
def test_neighbouring_test_catches_miscalibrated_noise(broken):
    assert_exceeds_epsilon(_count_loss(broken, 0.5))


def test_neighbouring_vector_query_with_l1_sensitivity():
    """Two answers that move by 0.5 each (L1 distance 1) under one shared ε: the joint output is ε-DP."""
    epsilon, edges = 1.0, np.arange(-2.0, 2.6, 0.5)
    d = np.tile([0.0, 0.0], (N_RUNS, 1))
    d_prime = np.tile([0.5, 0.5], (N_RUNS, 1))

    def loss(mechanism_class):
        codes_d, m = discretise(mechanism_class(epsilon, 1.0, random_state=5).randomise(d), edges)
        codes_d_prime, _ = discretise(mechanism_class(epsilon, 1.0, random_state=6).randomise(d_prime), edges)
        return estimate_privacy_loss(codes_d, codes_d_prime, epsilon, n_outcomes=m)

    assert_within_epsilon(loss(Laplace))
    assert_exceeds_epsilon(loss(HalvedSensitivityLaplace))


# --- parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, float("nan"), float("inf"), -float("inf")])
def test_bad_epsilon_value_is_a_value_error_naming_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        Laplace(epsilon)


@pytest.mark.parametrize("epsilon", ["1", None, True, False, [1.0], 1 + 0j])
def test_bad_epsilon_type_is_a_type_error_naming_epsilon(epsilon):
    with pytest.raises(TypeError, match="epsilon"):
        Laplace(epsilon)


@pytest.mark.parametrize(
    ("sensitivity", "error"),
    [(-1.0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), ("1", TypeError), (True, TypeError)],
)
def test_bad_sensitivity_names_sensitivity(sensitivity, error):
    with pytest.raises(error, match="sensitivity"):
        Laplace(1.0, sensitivity)


def test_numpy_scalars_are_accepted():
    mech = Laplace(np.float32(0.5), np.int64(2))
    assert mech.epsilon == 0.5 and mech.sensitivity == 2.0


def test_bad_random_state_is_a_type_error():
    for bad in ("seed", 1.5, True):
        with pytest.raises(TypeError, match="random_state"):
            Laplace(1.0, random_state=bad)


# --- randomness ----------------------------------------------------------------------------


def test_no_seed_gives_fresh_noise_every_time():
    values = np.zeros(16)
    assert not np.array_equal(Laplace(1.0).randomise(values), Laplace(1.0).randomise(values))


def test_same_seed_gives_identical_noise():
    values = np.arange(16.0)
    np.testing.assert_array_equal(
        Laplace(1.0, random_state=42).randomise(values), Laplace(1.0, random_state=42).randomise(values)
    )


def test_a_shared_generator_is_used_not_copied():
    rng = np.random.default_rng(3)
    first = Laplace(1.0, random_state=rng).randomise(np.zeros(4))
    second = Laplace(1.0, random_state=rng).randomise(np.zeros(4))
    assert not np.array_equal(first, second)
    rng_again = np.random.default_rng(3)
    np.testing.assert_array_equal(first, Laplace(1.0, random_state=rng_again).randomise(np.zeros(4)))


# --- call recorder (shared by all mechanisms; see dpcore/mechanisms/_base.py) ---------------


def test_recorder_logs_name_epsilon_sensitivity_query_and_output():
    with record_mechanism_calls() as recorder:
        out = Laplace(0.5, 2.0, random_state=1).randomise([1.0, 2.0])
        out2 = Laplace(0.25, 1.0, random_state=2).randomise(7.0)
    assert [c.mechanism for c in recorder.calls] == ["laplace", "laplace"]
    first, second = recorder.calls
    assert isinstance(first, MechanismCall)
    assert (first.epsilon, first.sensitivity) == (0.5, 2.0)
    assert (second.epsilon, second.sensitivity) == (0.25, 1.0)
    np.testing.assert_array_equal(first.query, [1.0, 2.0])
    np.testing.assert_array_equal(first.output, out)
    np.testing.assert_array_equal(second.query, 7.0)
    np.testing.assert_array_equal(second.output, out2)


def test_recorder_keeps_copies_not_views():
    values = np.array([1.0, 2.0])
    with record_mechanism_calls() as recorder:
        out = Laplace(1.0, random_state=1).randomise(values)
    values[:] = 99.0
    out[:] = -99.0
    np.testing.assert_array_equal(recorder.calls[0].query, [1.0, 2.0])
    assert not np.any(recorder.calls[0].output == -99.0)


def test_nothing_is_recorded_outside_the_block():
    with record_mechanism_calls() as recorder:
        pass
    Laplace(1.0, random_state=1).randomise([1.0])
    assert recorder.calls == []


def test_replay_returns_the_recorded_outputs_and_logs_the_new_queries():
    with record_mechanism_calls() as original:
        first = Laplace(1.0, random_state=1).randomise([10.0, 20.0])
        second = Laplace(0.5, random_state=2).randomise(3.0)
    # A neighbouring run (different queries, different seed) walks the same noisy path.
    with record_mechanism_calls(replay=original.calls) as replayed:
        again_first = Laplace(1.0, random_state=99).randomise([11.0, 20.0])
        again_second = Laplace(0.5, random_state=98).randomise(4.0)
    np.testing.assert_array_equal(again_first, first)
    np.testing.assert_array_equal(again_second, second)
    np.testing.assert_array_equal(replayed.calls[0].query, [11.0, 20.0])
    differences = [np.abs(r.query - o.query).sum() for r, o in zip(replayed.calls, original.calls)]
    assert all(diff <= call.sensitivity for diff, call in zip(differences, original.calls))


def test_replay_refuses_a_run_with_more_calls_than_recorded():
    with record_mechanism_calls() as original:
        Laplace(1.0, random_state=1).randomise([1.0])
    with record_mechanism_calls(replay=original.calls), pytest.raises(AssertionError, match="more mechanism calls"):
        Laplace(1.0).randomise([1.0])
        Laplace(1.0).randomise([1.0])


def test_recorders_nest_and_restore():
    with record_mechanism_calls() as outer:
        Laplace(1.0, random_state=1).randomise([1.0])
        with record_mechanism_calls() as inner:
            Laplace(1.0, random_state=1).randomise([2.0])
        Laplace(1.0, random_state=1).randomise([3.0])
    assert [float(c.query[0]) for c in outer.calls] == [1.0, 3.0]
    assert [float(c.query[0]) for c in inner.calls] == [2.0]
