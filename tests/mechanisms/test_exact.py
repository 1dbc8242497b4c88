"""Exact samplers (privacy-tests.md row 22): discrete Laplace and discrete Gaussian against their exact pmf.

Each distribution test takes 10⁶ seeded draws and a chi-square test at false-alarm rate 1e-6
(:mod:`exact_testing`); the power tests show the same test rejects a law 10% off.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_testing import (
    assert_discrete_laplace,
    assert_pmf,
    discrete_gaussian_cdf,
    discrete_laplace_cdf,
    pmf_pvalue,
    rounded_heavy_tailed_cdf,
    rounded_laplace_cdf,
)
from privacy_testing import ALPHA

from dpcore.exceptions import DataError
from dpcore.mechanisms import Gaussian, Geometric, Laplace, exact, keyed

N_DRAWS = 1_000_000


def generator_source(seed: int) -> exact.GeneratorWords:
    return exact.GeneratorWords(np.random.default_rng(seed))


# 2^26·3 + 1 takes two digits (a bounded base-2^24 one under a geometric one of scale about 12).
@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(10, 3), Fraction(4097), Fraction(3 * 2**26 + 1)])
def test_discrete_laplace_has_its_exact_pmf(scale):
    draws = exact.discrete_laplace(generator_source(1), np.arange(N_DRAWS), scale)
    assert draws.dtype == np.int64
    assert_discrete_laplace(draws, scale)


@pytest.mark.parametrize(("t", "m"), [(1, 1), (4, 3), (4097, 4096)])
def test_discrete_gaussian_has_its_exact_pmf(t, m):
    draws = exact.discrete_gaussian(generator_source(2), np.arange(N_DRAWS), t, m)
    assert draws.dtype == np.int64
    assert_pmf(draws, discrete_gaussian_cdf(t * m))


def test_the_pmf_test_has_power_against_a_ten_percent_wrong_scale():
    laplace = exact.discrete_laplace(generator_source(3), np.arange(N_DRAWS), Fraction(10))
    assert pmf_pvalue(laplace, discrete_laplace_cdf(11)) < ALPHA
    gaussian = exact.discrete_gaussian(generator_source(4), np.arange(N_DRAWS), 11, 10)
    assert pmf_pvalue(gaussian, discrete_gaussian_cdf(110 * 1.1**2)) < ALPHA


# The rounded Laplace round(b·Z): scales below one step, fractional, and far above 2^24 steps.
@pytest.mark.parametrize("scale", [0.3, 1.0, 10 / 3, 4097.5, 3 * 2.0**30 + 0.25])
def test_rounded_laplace_has_its_exact_pmf(scale):
    draws = exact.rounded_laplace(generator_source(13), np.full(N_DRAWS, scale))
    assert draws.dtype == np.int64
    assert_pmf(draws, rounded_laplace_cdf(scale))


def test_rounded_laplace_gives_each_element_its_own_scale():
    scales = np.tile([2.5, 700.0], N_DRAWS // 2)
    draws = exact.rounded_laplace(generator_source(14), scales)
    assert_pmf(draws[0::2], rounded_laplace_cdf(2.5))
    assert_pmf(draws[1::2], rounded_laplace_cdf(700.0))


def test_the_rounded_laplace_test_has_power_against_a_ten_percent_wrong_scale():
    draws = exact.rounded_laplace(generator_source(15), np.full(N_DRAWS, 10.0))
    assert pmf_pvalue(draws, rounded_laplace_cdf(11.0)) < ALPHA


def test_rounded_laplace_refuses_a_scale_it_cannot_draw_exactly():
    for bad in (0.0, -1.0, float("nan"), 2.0**41):
        with pytest.raises(ValueError, match="scale"):
            exact.rounded_laplace(generator_source(16), np.array([1.0, bad]))


# Heavy-tailed round(b·Z): below a step, fractional, and with the cap taking about 0.5 % of the draws (b = 2^19).
@pytest.mark.parametrize(("scale", "gamma"), [(0.3, 4), (10 / 3, 4), (4097.5, 4), (2.0**19, 4), (7.5, 2), (7.5, 3)])
def test_rounded_heavy_tailed_has_its_exact_pmf(scale, gamma):
    draws = exact.rounded_heavy_tailed(generator_source(18), np.full(N_DRAWS, scale), gamma, cap=2**21)
    assert draws.dtype == np.int64
    assert_pmf(draws, rounded_heavy_tailed_cdf(scale, gamma, 2**21))


def test_rounded_heavy_tailed_gives_each_element_its_own_scale_and_has_power():
    draws = exact.rounded_heavy_tailed(generator_source(19), np.tile([2.5, 700.0], N_DRAWS // 2), 4, cap=2**21)
    assert_pmf(draws[0::2], rounded_heavy_tailed_cdf(2.5, 4, 2**21))
    assert_pmf(draws[1::2], rounded_heavy_tailed_cdf(700.0, 4, 2**21))
    assert pmf_pvalue(draws[1::2], rounded_heavy_tailed_cdf(770.0, 4, 2**21)) < ALPHA  # 10 % off
    assert pmf_pvalue(draws[1::2], rounded_heavy_tailed_cdf(700.0, 3, 2**21)) < ALPHA  # the wrong tail


@pytest.mark.parametrize("distrusted", [["FLOAT_MARGIN"], ["FLOAT_MARGIN", "HEAVY_TAILED_MARGIN"]], ids=["magnitudes", "all"])
def test_the_exact_heavy_tailed_decisions_alone_give_the_same_law(monkeypatch, distrusted):
    """No float decision trusted: the magnitudes, or also the acceptances, go through integer arithmetic."""
    for margin in distrusted:
        monkeypatch.setattr(exact, margin, float("inf"))
    draws = exact.rounded_heavy_tailed(generator_source(20), np.full(10_000, 10 / 3), 4, cap=2**21)
    assert_pmf(draws, rounded_heavy_tailed_cdf(10 / 3, 4, 2**21))


def test_exp_brackets_hold_the_exponential():
    from decimal import Decimal, getcontext

    getcontext().prec = 80
    for x in [Fraction(0), Fraction(1, 10**9), Fraction(7, 3), Fraction(4097, 3), Fraction(3 * 2**26 + 1, 2**24)]:
        lo, hi = exact.exp_neg_bracket(x, 200)
        truth = (-Decimal(x.numerator) / Decimal(x.denominator)).exp() * Decimal(2) ** 200
        assert lo <= truth <= hi and hi - lo <= 8


@pytest.mark.parametrize(("scale", "n_draws"), [(Fraction(10, 3), 10_000), (Fraction(3 * 2**26 + 1), 2_000)])
def test_the_exact_comparisons_alone_give_the_same_laws(monkeypatch, scale, n_draws):
    """With no float comparison trusted, every decision goes through the integer brackets (chi-square, fewer draws)."""
    monkeypatch.setattr(exact, "FLOAT_MARGIN", float("inf"))
    assert_discrete_laplace(exact.discrete_laplace(generator_source(11), np.arange(n_draws), scale), scale)
    if n_draws == 10_000:
        gaussian = exact.discrete_gaussian(generator_source(12), np.arange(n_draws), 4, 3)
        assert_pmf(gaussian, discrete_gaussian_cdf(12))
    rounded = exact.rounded_laplace(generator_source(17), np.full(n_draws, float(scale)))
    assert_pmf(rounded, rounded_laplace_cdf(float(scale)))


def test_few_draws_are_the_many_draws_decisions():
    """The one-at-a-time path for a few draws decides as the vectorised one: the same words give the same draws."""
    rows = np.arange(3000, dtype=np.uint64)
    for scale in [Fraction(10, 3), Fraction(3 * 2**26 + 1)]:
        many = exact.discrete_laplace(exact.KeyedWords(b"k" * 16, rows, 5), np.arange(3000), scale)
        few = [
            exact.discrete_laplace(exact.KeyedWords(b"k" * 16, rows[i : i + 3], 5), np.arange(3), scale)
            for i in range(0, 3000, 3)
        ]
        assert np.array_equal(many, np.concatenate(few))
    many = exact.discrete_gaussian(exact.KeyedWords(b"k" * 16, rows, 6), np.arange(3000), 30, 30)
    few = [
        exact.discrete_gaussian(exact.KeyedWords(b"k" * 16, rows[i : i + 3], 6), np.arange(3), 30, 30) for i in range(0, 3000, 3)
    ]
    assert np.array_equal(many, np.concatenate(few))


def test_keyed_draws_are_a_rows_own_whatever_its_chunk():
    rows = np.arange(10_000, dtype=np.uint64)
    whole = exact.discrete_gaussian(exact.KeyedWords(b"k" * 16, rows, 3), np.arange(10_000), 30, 30)
    part = exact.discrete_gaussian(exact.KeyedWords(b"k" * 16, rows[7000:7100], 3), np.arange(100), 30, 30)
    assert np.array_equal(part, whole[7000:7100])
    other = exact.discrete_gaussian(exact.KeyedWords(b"k" * 16, rows, 4), np.arange(10_000), 30, 30)
    assert not np.array_equal(other, whole)


def test_keyed_words_are_the_rows_words_in_order():
    rows = np.arange(5, 10, dtype=np.uint64)
    source = exact.KeyedWords(b"u" * 16, rows, 2)
    drawn = np.concatenate([source.words(np.arange(5), 3), source.words(np.arange(5), 2)], axis=1)
    assert np.array_equal(drawn, keyed.random_words(b"u" * 16, rows, 2, 5))


# --- the mechanisms release grid values with exact noise -------------------------------------


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1.0), (0.1, 3.0)])
def test_laplace_outputs_are_grid_values_with_discrete_laplace_noise(epsilon, sensitivity):
    mechanism = Laplace(epsilon, sensitivity, random_state=6)
    size = N_DRAWS
    grid, scale = exact.laplace_plan(sensitivity, epsilon, size)
    assert grid == mechanism.grid_for(size) and grid <= sensitivity / (4096 * size)
    value = 0.3 * grid + 2.0  # off the grid: rounded to 2.0 first
    steps = mechanism.randomise(np.full(size, value)) / grid
    assert np.array_equal(steps, np.round(steps))  # no output off the grid
    assert_discrete_laplace(np.round(steps).astype(np.int64) - round(2.0 / grid), scale)
    # The rounded query's sensitivity is below Δ/grid + size steps, and the scale pays for it.
    assert scale >= (Fraction(sensitivity) / Fraction(grid) + size) / Fraction(epsilon)
    assert float(scale) * grid <= mechanism.scale * (1 + 2 / 4096)


def test_a_scalar_is_released_on_its_own_grid():
    mechanism = Laplace(0.5, 2.0, random_state=10)
    outputs = np.array([mechanism.randomise(0.1234567) for _ in range(200)])
    assert np.array_equal(outputs / mechanism.grid, np.round(outputs / mechanism.grid))
    assert mechanism.grid == 2.0**-11


def test_gaussian_outputs_are_grid_values_with_discrete_gaussian_noise():
    mechanism = Gaussian(rho=0.2, sensitivity=3.0, random_state=7)
    grid, t, m = exact.gaussian_plan(3.0, 0.2, N_DRAWS)
    draws = mechanism.randomise(np.full((N_DRAWS // 10, 10), 1.0 + grid / 3)).ravel()
    steps = draws / grid
    assert np.array_equal(steps, np.round(steps))
    assert_pmf(np.round(steps).astype(np.int64) - round(1.0 / grid), discrete_gaussian_cdf(t * m))
    # σ² in steps covers the rounded query's L2 sensitivity Δ/grid + √size at ρ = Δ²/(2σ²).
    assert Fraction(t * m) >= ((Fraction(3.0) / Fraction(grid) + 1000) ** 2) / (2 * Fraction(0.2))
    assert (t * m) ** 0.5 * grid <= mechanism.sigma * (1 + 2 / 4096)


def test_a_large_sigma_coarsens_the_grid_to_keep_integers_exact():
    mechanism = Gaussian(rho=1e-12, sensitivity=1.0, random_state=8)
    grid, t, m = exact.gaussian_plan(1.0, 1e-12, 1)
    assert t <= 2 * exact.MAX_SIGMA_UNITS + 2 and grid >= mechanism.sigma / 2**25
    assert np.isfinite(mechanism.randomise(np.zeros(1000))).all()


def test_geometric_noise_is_discrete_laplace_at_scale_sensitivity_over_epsilon():
    mechanism = Geometric(0.7, 2, random_state=9)
    draws = mechanism.randomise(np.zeros(N_DRAWS, dtype=np.int64))
    assert draws.dtype.kind == "i"
    assert mechanism.noise_scale >= Fraction(2) / Fraction(0.7) and float(mechanism.noise_scale) <= 2 / 0.7 + 2**-20
    assert_discrete_laplace(draws, mechanism.noise_scale)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("mechanism", [Laplace(1.0, 1.0, random_state=0), Gaussian(0.5, 1.0, random_state=0), Laplace(1.0, 0.0)])
def test_non_finite_values_are_refused_with_a_sentence(mechanism, value):
    """A missing or infinite value would leave unnoised (privacy-tests.md row 22): refused, naming the way out."""
    for size in (2, 100):  # a few values go through Python numbers, more through numpy
        with pytest.raises(DataError, match="finite numbers.*Fill or drop them"):
            mechanism.randomise(np.r_[np.ones(size - 1), value])
    if isinstance(mechanism, Laplace):
        with pytest.raises(DataError, match="finite numbers"):
            mechanism.randomise_keyed(np.array([value, 1.0]), b"k" * 16, np.arange(2, dtype=np.uint64), 0)


def test_a_zero_sensitivity_adds_nothing():
    assert Laplace(1.0, 0.0, random_state=0).randomise([1.25]).tolist() == [1.25]


def test_a_sensitivity_too_small_for_a_grid_is_refused_not_rounded_to_a_coarse_grid():
    with pytest.raises(ValueError, match="grid"):
        exact.laplace_plan(5e-324, 1.0, 1)
