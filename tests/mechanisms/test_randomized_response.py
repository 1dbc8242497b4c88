"""Randomized response: the k-ary mechanism, Warner's coin, and the buyer's estimator.

Seeded statistical tests; ALPHA (1e-6) is the false-alarm rate on a fresh seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_exceeds_epsilon, assert_within_epsilon, chi_square_pvalue, estimate_privacy_loss

from dpcore.mechanisms import COIN_EPSILON, CoinRandomizedResponse, KaryRandomizedResponse, record_mechanism_calls

N_DRAWS = 200_000
N_RUNS = 100_000


def _counts(released, k):
    return np.bincount(np.asarray(released), minlength=k)


# --- distribution --------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "k", "true"), [(1.0, 4, 2), (0.5, 2, 0), (3.0, 7, 6), (0.1, 3, 1)])
def test_true_category_is_kept_with_probability_e_eps_over_e_eps_plus_k_minus_1(epsilon, k, true):
    rr = KaryRandomizedResponse(epsilon, k, random_state=41)
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    assert rr.keep_probability == pytest.approx(p)
    assert rr.other_probability == pytest.approx((1 - p) / (k - 1))
    released = rr.randomise(np.full(N_DRAWS, true))
    assert released.dtype == np.int64 and released.min() >= 0 and released.max() < k
    expected = np.full(k, (1 - p) / (k - 1))
    expected[true] = p
    # Chi-square at false-alarm rate ALPHA: kept w.p. p, else uniform over the other k-1.
    assert chi_square_pvalue(_counts(released, k), expected) > ALPHA


def test_chi_square_has_power_against_a_slightly_wrong_keep_rate():
    rr = KaryRandomizedResponse(1.0, 4, random_state=42)
    released = rr.randomise(np.zeros(N_DRAWS, dtype=int))
    p = rr.keep_probability + 0.01
    assert chi_square_pvalue(_counts(released, 4), [p] + [(1 - p) / 3] * 3) < ALPHA


def test_response_matrix_is_column_stochastic_with_ratio_e_eps():
    rr = KaryRandomizedResponse(1.3, 5)
    matrix = rr.response_matrix()
    np.testing.assert_allclose(matrix.sum(axis=0), 1.0)
    assert matrix.max() / matrix.min() == pytest.approx(math.exp(1.3))


@pytest.mark.parametrize("bad_code", [-1, 4, 99])
def test_out_of_domain_codes_become_uniform(bad_code):
    released = KaryRandomizedResponse(2.0, 4, random_state=43).randomise(np.full(N_DRAWS, bad_code))
    assert chi_square_pvalue(_counts(released, 4), np.full(4, 0.25)) > ALPHA


def test_missing_codes_become_uniform_and_never_pass_through():
    codes = np.array([np.nan, -1.0, 0.0, 2.0] * (N_DRAWS // 4))
    released = KaryRandomizedResponse(2.0, 3, random_state=44).randomise(codes)
    assert released.dtype == np.int64 and set(np.unique(released)) <= {0, 1, 2}
    assert chi_square_pvalue(_counts(released[0::4], 3), np.full(3, 1 / 3)) > ALPHA
    assert chi_square_pvalue(_counts(released[1::4], 3), np.full(3, 1 / 3)) > ALPHA


def test_coin_keeps_the_truth_with_probability_three_quarters():
    coin = CoinRandomizedResponse(random_state=45)
    assert coin.epsilon == COIN_EPSILON == pytest.approx(math.log(3))
    assert coin.keep_probability == pytest.approx(0.75)
    for true in (0, 1):
        released = coin.randomise(np.full(N_DRAWS, true))
        expected = [0.75, 0.25] if true == 0 else [0.25, 0.75]
        assert chi_square_pvalue(_counts(released, 2), expected) > ALPHA


@pytest.mark.parametrize("bad_code", [-1, 2, 7])
def test_coin_out_of_domain_answers_are_a_fair_coin(bad_code):
    released = CoinRandomizedResponse(random_state=46).randomise(np.full(N_DRAWS, bad_code))
    assert set(np.unique(released)) <= {0, 1}
    assert chi_square_pvalue(_counts(released, 2), [0.5, 0.5]) > ALPHA


def test_shape_is_kept():
    assert KaryRandomizedResponse(1.0, 3, random_state=0).randomise(np.zeros((4, 5), dtype=int)).shape == (4, 5)
    assert CoinRandomizedResponse(random_state=0).randomise(np.zeros((4, 5), dtype=int)).shape == (4, 5)


# --- the buyer's estimator --------------------------------------------------------------------


def test_kary_estimator_is_unbiased_with_the_stated_standard_error():
    truth = np.array([0.5, 0.3, 0.15, 0.05])
    codes = np.repeat(np.arange(4), (truth * N_DRAWS).astype(int))
    rr = KaryRandomizedResponse(1.0, 4, random_state=47)
    estimate, std_error = rr.estimate_frequencies(rr.randomise(codes))
    p, q = rr.keep_probability, rr.other_probability
    # For a fixed table each record's output is its own Bernoulli draw.
    expected = np.sqrt((truth * p * (1 - p) + (1 - truth) * q * (1 - q)) / N_DRAWS) / (p - q)
    np.testing.assert_allclose(std_error, expected, rtol=0.05)
    # 5.3 standard errors: two-sided false-alarm rate ~1e-7 per category.
    assert np.all(np.abs(estimate - truth) < 5.3 * std_error)


def test_coin_estimator_is_two_lambda_minus_a_half():
    coin = CoinRandomizedResponse(random_state=48)
    codes = (np.arange(N_DRAWS) < 0.3 * N_DRAWS).astype(int)  # 30 % say yes
    released = coin.randomise(codes)
    estimate, std_error = coin.estimate_frequencies(released)
    share_yes = released.mean()
    assert estimate[1] == pytest.approx(2 * share_yes - 0.5)
    assert abs(estimate[1] - 0.3) < 5.3 * std_error[1]


# --- neighbouring values (local DP: one person's answer is the whole dataset) ------------------


class DoubledEpsilonRR(KaryRandomizedResponse):
    """A calibration bug: keeps the truth as often as a 2ε mechanism would."""

    @property
    def keep_probability(self) -> float:
        return 1.0 / (1.0 + (self.n_categories - 1) * math.exp(-2.0 * self.epsilon))


class BiasedCoinRR(CoinRandomizedResponse):
    """A bug: the first coin lands heads 3/4 of the time, so the truth is kept w.p. 7/8 (ε = ln 7)."""

    def randomise(self, codes):
        codes = np.asarray(codes)
        first = self.rng.random(codes.shape) < 0.75
        second = self.rng.integers(0, 2, size=codes.shape)
        return np.where(first, codes, second)


def _rr_loss(make, a, b, k, epsilon, seed=0):
    released_a = make(seed).randomise(np.full(N_RUNS, a))
    released_b = make(seed + 1).randomise(np.full(N_RUNS, b))
    return estimate_privacy_loss(released_a, released_b, epsilon, n_outcomes=k)


@pytest.mark.parametrize(("epsilon", "k", "a", "b"), [(1.0, 4, 0, 1), (0.5, 2, 0, 1), (2.0, 6, 5, 0), (1.0, 4, -1, 2)])
def test_neighbouring_values_stay_within_epsilon(epsilon, k, a, b):
    assert_within_epsilon(_rr_loss(lambda seed: KaryRandomizedResponse(epsilon, k, random_state=seed), a, b, k, epsilon))


@pytest.mark.parametrize(("epsilon", "k"), [(1.0, 4), (0.5, 2)])
def test_neighbouring_test_catches_doubled_epsilon(epsilon, k):
    assert_exceeds_epsilon(_rr_loss(lambda seed: DoubledEpsilonRR(epsilon, k, random_state=seed), 0, 1, k, epsilon))


def test_coin_neighbouring_values_stay_within_ln_3_and_the_biased_coin_is_caught():
    assert_within_epsilon(_rr_loss(lambda seed: CoinRandomizedResponse(random_state=seed), 0, 1, 2, COIN_EPSILON))
    assert_within_epsilon(_rr_loss(lambda seed: CoinRandomizedResponse(random_state=seed), -1, 1, 2, COIN_EPSILON))
    assert_exceeds_epsilon(_rr_loss(lambda seed: BiasedCoinRR(random_state=seed), 0, 1, 2, COIN_EPSILON))


# --- parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "error"),
    [
        (1, ValueError),
        (0, ValueError),
        (-3, ValueError),
        (2.5, TypeError),
        (True, TypeError),
        ("3", TypeError),
        (None, TypeError),
    ],
)
def test_bad_number_of_categories_names_n_categories(k, error):
    with pytest.raises(error, match="n_categories"):
        KaryRandomizedResponse(1.0, k)


def test_numpy_integer_categories_are_accepted():
    assert KaryRandomizedResponse(1.0, np.int64(3)).n_categories == 3


@pytest.mark.parametrize(
    ("epsilon", "error"),
    [
        (0, ValueError),
        (-1.0, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ("1", TypeError),
        (True, TypeError),
    ],
)
def test_bad_epsilon_names_epsilon(epsilon, error):
    with pytest.raises(error, match="epsilon"):
        KaryRandomizedResponse(epsilon, 3)


# --- randomness and recording --------------------------------------------------------------


def test_no_seed_gives_fresh_answers_and_same_seed_repeats():
    codes = np.zeros(200, dtype=int)
    assert not np.array_equal(KaryRandomizedResponse(0.5, 5).randomise(codes), KaryRandomizedResponse(0.5, 5).randomise(codes))
    assert not np.array_equal(CoinRandomizedResponse().randomise(codes), CoinRandomizedResponse().randomise(codes))
    np.testing.assert_array_equal(
        KaryRandomizedResponse(0.5, 5, random_state=4).randomise(codes),
        KaryRandomizedResponse(0.5, 5, random_state=4).randomise(codes),
    )
    np.testing.assert_array_equal(
        CoinRandomizedResponse(random_state=4).randomise(codes), CoinRandomizedResponse(random_state=4).randomise(codes)
    )


def test_calls_are_recorded():
    with record_mechanism_calls() as recorder:
        kary = KaryRandomizedResponse(0.9, 3, random_state=1).randomise([0, 2, -1])
        coin = CoinRandomizedResponse(random_state=2).randomise([1, 0])
    assert [(c.mechanism, c.epsilon, c.sensitivity) for c in recorder.calls] == [
        ("randomized_response", 0.9, 1.0),
        ("coin_randomized_response", COIN_EPSILON, 1.0),
    ]
    np.testing.assert_array_equal(recorder.calls[0].query, [0, 2, -1])
    np.testing.assert_array_equal(recorder.calls[0].output, kary)
    np.testing.assert_array_equal(recorder.calls[1].output, coin)
