"""The geometric (discrete Laplace) mechanism for counts.

Seeded statistical tests; ALPHA (1e-6) is the false-alarm rate on a fresh seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_exceeds_epsilon, assert_within_epsilon, chi_square_pvalue, estimate_privacy_loss
from scipy import stats

from dpcore.mechanisms import COUNT_NOISES, Geometric, Laplace, count_mechanism, record_mechanism_calls

N_DRAWS = 200_000
N_RUNS = 100_000


def _noise_counts(noise: np.ndarray, support: np.ndarray) -> np.ndarray:
    return np.array([(noise == k).sum() for k in support] + [(np.abs(noise) > support.max()).sum()])


# --- distribution --------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.3, 1), (2.0, 3), (8.0, 1)])
def test_noise_is_two_sided_geometric(epsilon, sensitivity):
    mech = Geometric(epsilon, sensitivity, random_state=21)
    out = mech.randomise(np.full(N_DRAWS, 40))
    assert out.dtype.kind == "i"
    noise = out - 40
    exact = stats.dlaplace(epsilon / sensitivity)  # P(k) ∝ exp(-ε|k|/Δ) = α^|k|
    support = np.arange(-int(exact.ppf(1 - 1e-7)), int(exact.ppf(1 - 1e-7)) + 1)
    probabilities = np.append(exact.pmf(support), 2 * exact.sf(support.max()))
    # Chi-square at false-alarm rate ALPHA (small cells pooled).
    assert chi_square_pvalue(_noise_counts(noise, support), probabilities) > ALPHA
    assert mech.alpha == pytest.approx(math.exp(-epsilon / sensitivity))
    assert mech.variance == pytest.approx(exact.var())


def test_chi_square_has_power_against_a_ten_percent_wrong_epsilon():
    noise = Geometric(1.0, random_state=22).randomise(np.zeros(N_DRAWS, dtype=int))
    wrong = stats.dlaplace(1.1)
    support = np.arange(-15, 16)
    probabilities = np.append(wrong.pmf(support), 2 * wrong.sf(15))
    assert chi_square_pvalue(_noise_counts(noise, support), probabilities) < ALPHA


def test_shape_and_integers_are_kept():
    out = Geometric(1.0, random_state=0).randomise(np.arange(12).reshape(3, 4))
    assert out.shape == (3, 4)
    assert out.dtype == np.int64
    assert Geometric(1.0, random_state=0).randomise(np.array([1.0, 2.0])).dtype == np.int64  # whole floats are fine
    assert Geometric(1.0, random_state=0).randomise([]).shape == (0,)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy's inf % 1
@pytest.mark.parametrize("values", [[0.5], [1.0, float("nan")], [float("inf")]])
def test_non_whole_values_are_refused(values):
    with pytest.raises(ValueError, match="whole-number"):
        Geometric(1.0).randomise(values)


# --- neighbouring datasets ----------------------------------------------------------------


class DoubledEpsilonGeometric(Geometric):
    """A calibration bug: claims ε but draws the noise of a 2ε mechanism."""

    def randomise(self, values):
        claimed = self.epsilon
        self.epsilon = 2.0 * claimed
        try:
            return super().randomise(values)
        finally:
            self.epsilon = claimed


def _count_loss(mechanism_class, epsilon, sensitivity=1, seed=0):
    """A (sensitivity-scaled) count: 5 on D, 5 + sensitivity on D'; outcomes -10 … 20 plus two tails."""
    low, high = -10, 20
    m = high - low + 3

    def codes(out):
        return np.clip(out, low - 1, high + 1) - (low - 1)

    out_d = mechanism_class(epsilon, sensitivity, random_state=seed).randomise(np.full(N_RUNS, 5))
    out_d_prime = mechanism_class(epsilon, sensitivity, random_state=seed + 1).randomise(np.full(N_RUNS, 5 + sensitivity))
    return estimate_privacy_loss(codes(out_d), codes(out_d_prime), epsilon, n_outcomes=m)


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(0.5, 1), (1.0, 1), (2.0, 1), (1.0, 2)])
def test_neighbouring_counts_stay_within_epsilon(epsilon, sensitivity):
    assert_within_epsilon(_count_loss(Geometric, epsilon, sensitivity))


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_neighbouring_test_catches_doubled_epsilon(epsilon):
    assert_exceeds_epsilon(_count_loss(DoubledEpsilonGeometric, epsilon))


def test_neighbouring_test_catches_a_sensitivity_declared_too_small():
    """Declared sensitivity 1, but the query really moves by 2: not ε-DP."""
    epsilon, low, high = 1.0, -10, 20

    def codes(out):
        return np.clip(out, low - 1, high + 1) - (low - 1)

    out_d = Geometric(epsilon, 1, random_state=3).randomise(np.full(N_RUNS, 5))
    out_d_prime = Geometric(epsilon, 1, random_state=4).randomise(np.full(N_RUNS, 7))
    assert_exceeds_epsilon(estimate_privacy_loss(codes(out_d), codes(out_d_prime), epsilon, n_outcomes=high - low + 3))


# --- parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "error"),
    [
        (0, ValueError),
        (-0.5, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ("1", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_epsilon_names_epsilon(epsilon, error):
    with pytest.raises(error, match="epsilon"):
        Geometric(epsilon)


@pytest.mark.parametrize("sensitivity", [0, 0.5, 1.5, -1])
def test_sensitivity_must_be_a_whole_number_at_least_one(sensitivity):
    with pytest.raises(ValueError, match="sensitivity"):
        Geometric(1.0, sensitivity)


def test_sensitivity_type_is_checked():
    with pytest.raises(TypeError, match="sensitivity"):
        Geometric(1.0, "1")


# --- randomness and recording --------------------------------------------------------------


def test_no_seed_gives_fresh_noise_and_same_seed_repeats():
    values = np.zeros(64, dtype=int)
    assert not np.array_equal(Geometric(0.5).randomise(values), Geometric(0.5).randomise(values))
    np.testing.assert_array_equal(
        Geometric(0.5, random_state=8).randomise(values), Geometric(0.5, random_state=8).randomise(values)
    )


def test_calls_are_recorded_with_integer_query():
    with record_mechanism_calls() as recorder:
        out = Geometric(0.7, 2, random_state=1).randomise([3, 4])
    (call,) = recorder.calls
    assert (call.mechanism, call.epsilon, call.sensitivity) == ("geometric", 0.7, 2.0)
    np.testing.assert_array_equal(call.query, [3, 4])
    np.testing.assert_array_equal(call.output, out)


def test_count_mechanism_factory():
    assert isinstance(count_mechanism("laplace", 1.0), Laplace)
    geometric = count_mechanism("geometric", 0.5, random_state=1)
    assert isinstance(geometric, Geometric) and geometric.sensitivity == 1
    assert set(COUNT_NOISES) == {"laplace", "geometric"}
    with pytest.raises(ValueError, match="count noise"):
        count_mechanism("gaussian", 1.0)
