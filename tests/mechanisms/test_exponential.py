"""The exponential mechanism: its exact sampler (``"gumbel"``, by name) and permute-and-flip.

Many selections are drawn in one call by passing a 2-D array of identical rows (each row is
an independent selection). Seeded statistical tests; ALPHA (1e-6) is the false-alarm rate
on a fresh seed.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_exceeds_epsilon, assert_within_epsilon, chi_square_pvalue, estimate_privacy_loss

import dpcore.mechanisms.exact as exact_module
from dpcore.mechanisms import SELECTION_METHODS, Exponential, record_mechanism_calls
from dpcore.mechanisms.exact import GeneratorWords, bernoulli_exp_neg
from dpcore.mechanisms.exponential import exact_choice

N_DRAWS = 200_000
N_RUNS = 100_000


def _draws(mech: Exponential, utilities, n=N_DRAWS, log_weights=None) -> np.ndarray:
    return mech.select(np.tile(np.asarray(utilities, dtype=float), (n, 1)), log_weights=log_weights)


def _counts(choices: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(choices, minlength=k)


def permute_and_flip_probabilities(scores) -> np.ndarray:
    """Exact selection probabilities of permute-and-flip, by enumerating every visiting order."""
    scores = np.asarray(scores, dtype=float)
    accept = np.exp(scores - scores.max())
    k = scores.size
    out = np.zeros(k)
    for order in itertools.permutations(range(k)):
        still_running = 1.0
        for candidate in order:
            out[candidate] += still_running * accept[candidate]
            still_running *= 1.0 - accept[candidate]
    return out / math.factorial(k)


# --- distribution --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "utilities", "log_weights"),
    [
        (1.0, 1.0, [0.0, 1.0, 2.0, 3.0, -1.0], None),
        (0.2, 2.0, [5.0, -5.0, 0.0], None),
        (2.0, 1.0, [0.0, 0.5, -np.inf, 1.0], None),
        (1.0, 1.0, [0.0, 0.0, 1.0, 1.0], np.log([0.1, 0.4, 0.2, 0.3])),
    ],
)
def test_gumbel_sampler_matches_log_probabilities(epsilon, sensitivity, utilities, log_weights):
    mech = Exponential(epsilon, sensitivity, method="gumbel", random_state=31)
    probabilities = np.exp(mech.log_probabilities(utilities, log_weights))
    scores = epsilon * np.asarray(utilities) / (2 * sensitivity) + (0 if log_weights is None else log_weights)
    np.testing.assert_allclose(probabilities, np.exp(scores) / np.exp(scores).sum(), rtol=1e-12)  # ∝ exp(ε u / 2Δu)
    choices = _draws(mech, utilities, log_weights=log_weights)
    # Chi-square at false-alarm rate ALPHA; a candidate of weight 0 (-inf) must never be drawn.
    assert chi_square_pvalue(_counts(choices, len(utilities)), probabilities) > ALPHA


@pytest.mark.parametrize("unsure_everywhere", [False, True])
def test_the_coins_are_exactly_bernoulli_exp_minus_x(monkeypatch, unsure_everywhere):
    """Float decisions where they are sure; with a margin of 1 every coin takes the integer path, with the same law."""
    if unsure_everywhere:
        monkeypatch.setattr(exact_module, "FLOAT_MARGIN", 1.0)
    exponents = np.array([0.0, 0.125, 0.5, 1.0, 3.0, 2.0**-30, np.inf])
    draws = 20_000 if unsure_everywhere else 200_000
    coins = bernoulli_exp_neg(GeneratorWords(np.random.default_rng(5)), np.tile(exponents, draws)).reshape(draws, -1)
    for column, x in enumerate(exponents):
        heads, p = int(coins[:, column].sum()), math.exp(-x)
        assert chi_square_pvalue([heads, draws - heads], [p, 1 - p]) > ALPHA if 0 < p < 1 else heads == draws * p


def test_one_selection_of_a_few_candidates_runs_on_python_numbers_with_the_same_law():
    rng = np.random.default_rng(8)
    scores = np.array([0.0, -3.0, -1.0, -np.inf, 0.25])
    choices = np.array([exact_choice(scores, rng) for _ in range(20_000)])
    weights = np.exp(scores - scores.max())
    assert chi_square_pvalue(_counts(choices, scores.size), weights / weights.sum()) > ALPHA


def test_a_row_without_a_finite_score_is_refused():
    with pytest.raises(ValueError, match="finite score"):
        exact_choice(np.array([[0.0, 1.0], [-np.inf, -np.inf]]), np.random.default_rng(0))


@pytest.mark.parametrize(
    ("epsilon", "utilities"),
    [(1.0, [0.0, 1.0, 2.0, 3.0, -1.0]), (0.5, [4.0, 4.0, 0.0]), (2.0, [0.0, 0.5, -np.inf, 1.0, 0.25])],
)
def test_permute_and_flip_matches_its_exact_distribution(epsilon, utilities):
    mech = Exponential(epsilon, method="permute_and_flip", random_state=32)
    scores = epsilon * np.asarray(utilities) / 2.0
    exact = permute_and_flip_probabilities(scores)
    choices = _draws(mech, utilities)
    assert chi_square_pvalue(_counts(choices, len(utilities)), exact) > ALPHA


def test_permute_and_flip_differs_from_gumbel_and_favours_the_best():
    """Sanity of the two tests above: the two samplers really have different distributions."""
    utilities, epsilon = [0.0, 1.0, 2.0, 3.0, -1.0], 1.0
    gumbel = np.exp(Exponential(epsilon).log_probabilities(utilities))
    pf = permute_and_flip_probabilities(epsilon * np.asarray(utilities) / 2)
    assert pf[3] > gumbel[3]
    choices = _draws(Exponential(epsilon, method="permute_and_flip", random_state=33), utilities)
    assert chi_square_pvalue(_counts(choices, 5), gumbel) < ALPHA


@pytest.mark.parametrize("method", SELECTION_METHODS)
def test_huge_utilities_do_not_overflow(method):
    mech = Exponential(1.0, method=method, random_state=34)
    base = np.array([0.0, 1.0, 2.0, -3.0])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert mech.select([0.0, 1e6, 0.0]) == 1
        assert mech.select([-1e9, 1e9, 5e8]) == 1
        choices = _draws(mech, 1e6 + base)
        log_p = mech.log_probabilities(1e6 + base)
    assert np.all(np.isfinite(log_p))
    # Only differences of utilities matter: the distribution is that of the small utilities.
    np.testing.assert_allclose(np.exp(log_p), np.exp(mech.log_probabilities(base)), rtol=1e-9)
    exact = np.exp(log_p) if method == "gumbel" else permute_and_flip_probabilities(base / 2)
    assert chi_square_pvalue(_counts(choices, 4), exact) > ALPHA


@pytest.mark.parametrize("method", SELECTION_METHODS)
def test_two_dimensional_rows_are_independent_selections(method):
    mech = Exponential(1.0, method=method, random_state=35)
    rows = np.array([[4.0, 0.0, 0.0], [0.0, 0.0, 4.0], [0.0, 2.0, -np.inf]])
    n = N_DRAWS // 4
    choices = mech.select(np.repeat(rows, n, axis=0)).reshape(len(rows), n)
    assert choices.shape == (3, n)
    for row, chosen in zip(rows, choices):
        scores = row / 2.0
        exact = np.exp(mech.log_probabilities(row)) if method == "gumbel" else permute_and_flip_probabilities(scores)
        assert chi_square_pvalue(_counts(chosen, 3), exact) > ALPHA
    assert not np.any(choices[2] == 2)
    # Rows do not share their draw: two identical rows agree only at the chance rate Σ p².
    p_first = np.exp(mech.log_probabilities(rows[0]))
    if method == "gumbel":
        pair = mech.select(np.repeat(rows[:1], 2 * n, axis=0)).reshape(n, 2)
        agree = np.mean(pair[:, 0] == pair[:, 1])
        chance = np.sum(p_first**2)
        assert abs(agree - chance) < 5.3 * math.sqrt(chance * (1 - chance) / n)  # ~1e-7 two-sided


def test_log_probabilities_of_rows_sum_to_one():
    mech = Exponential(0.7, 1.5)
    log_p = mech.log_probabilities([[1.0, 2.0, 3.0], [0.0, -np.inf, 1e7]])
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0)
    assert log_p[1, 1] == -np.inf


def test_select_returns_an_int_for_one_row_and_an_array_for_many():
    for method in SELECTION_METHODS:
        mech = Exponential(1.0, method=method, random_state=0)
        one = mech.select([0.0, 1.0])
        assert np.ndim(one) == 0 and int(one) in (0, 1)
        many = mech.select(np.zeros((7, 3)))
        assert many.shape == (7,) and many.dtype.kind == "i"


# --- neighbouring datasets ----------------------------------------------------------------


class ForgotTheHalfExponential(Exponential):
    """A calibration bug: weights exp(ε u / Δu) instead of exp(ε u / (2Δu)) (sensitivity halved)."""

    def _scores(self, utilities, log_weights):
        return super()._scores(2.0 * np.asarray(utilities), log_weights)


K = 10
# One record moves every utility by Δu = 1, in the direction that shifts the most mass:
# the only candidate it favours on D is the only one it disfavours on D'.
U_D = np.array([1.0] + [0.0] * (K - 1))
U_D_PRIME = np.array([0.0] + [1.0] * (K - 1))


def _selection_loss(mechanism_class, method, epsilon, seed=0):
    choices_d = _draws(mechanism_class(epsilon, 1.0, method=method, random_state=seed), U_D, n=N_RUNS)
    choices_d_prime = _draws(mechanism_class(epsilon, 1.0, method=method, random_state=seed + 1), U_D_PRIME, n=N_RUNS)
    return estimate_privacy_loss(choices_d, choices_d_prime, epsilon, n_outcomes=K)


@pytest.mark.parametrize("method", SELECTION_METHODS)
@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_neighbouring_selection_stays_within_epsilon(method, epsilon):
    assert_within_epsilon(_selection_loss(Exponential, method, epsilon))


@pytest.mark.parametrize("method", SELECTION_METHODS)
@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_neighbouring_test_catches_the_missing_factor_two(method, epsilon):
    assert_exceeds_epsilon(_selection_loss(ForgotTheHalfExponential, method, epsilon))


# --- parameters and bad utilities ------------------------------------------------------------


def test_unknown_method_is_refused_by_name():
    with pytest.raises(ValueError, match="method"):
        Exponential(1.0, method="softmax")


@pytest.mark.parametrize(
    ("epsilon", "error"),
    [(0.0, ValueError), (float("nan"), ValueError), (float("-inf"), ValueError), ("2", TypeError), (False, TypeError)],
)
def test_bad_epsilon_names_epsilon(epsilon, error):
    with pytest.raises(error, match="epsilon"):
        Exponential(epsilon)


@pytest.mark.parametrize(
    "utilities",
    [
        [],
        [[]],
        np.zeros((2, 2, 2)),
        [0.0, float("nan")],
        [0.0, float("inf")],
        [-np.inf, -np.inf],
        [[0.0, 1.0], [-np.inf, -np.inf]],
    ],
)
def test_bad_utilities_are_refused(utilities):
    with pytest.raises(ValueError, match="utilities|candidate"):
        Exponential(1.0, random_state=0).select(utilities)


def test_zero_weight_from_log_weights_is_never_chosen():
    for method in SELECTION_METHODS:
        choices = _draws(
            Exponential(1.0, method=method, random_state=36), [5.0, 0.0, 0.0], n=2000, log_weights=np.array([-np.inf, 0.0, 0.0])
        )
        assert not np.any(choices == 0)


# --- randomness and recording --------------------------------------------------------------


@pytest.mark.parametrize("method", SELECTION_METHODS)
def test_no_seed_gives_fresh_choices_and_same_seed_repeats(method):
    utilities = np.zeros((64, 8))
    assert not np.array_equal(
        Exponential(1.0, method=method).select(utilities), Exponential(1.0, method=method).select(utilities)
    )
    np.testing.assert_array_equal(
        Exponential(1.0, method=method, random_state=9).select(utilities),
        Exponential(1.0, method=method, random_state=9).select(utilities),
    )


def test_calls_are_recorded_with_utilities_as_query_and_replayed():
    with record_mechanism_calls() as recorder:
        chosen = Exponential(0.4, 2.0, random_state=1).select([1.0, 2.0, 3.0])
    (call,) = recorder.calls
    assert (call.mechanism, call.epsilon, call.sensitivity) == ("exponential", 0.4, 2.0)
    np.testing.assert_array_equal(call.query, [1.0, 2.0, 3.0])
    assert int(call.output) == int(chosen)
    with record_mechanism_calls(replay=recorder.calls):
        replayed = [Exponential(0.4, 2.0).select([1.0, 2.0, 30.0])]
    assert int(replayed[0]) == int(chosen)
