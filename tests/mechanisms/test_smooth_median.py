"""The smooth-sensitivity median: the exact bound, its exact Laplace release, the heavy-tailed sampler, and privacy with a power check on β."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from exact_testing import assert_pmf, pmf_pvalue, rounded_heavy_tailed_cdf, rounded_laplace_cdf
from privacy_testing import ALPHA, assert_exceeds_epsilon, discretise, estimate_privacy_loss

from dpcore.mechanisms.smooth_median import SmoothMedian, median_smooth_sensitivity

GRID = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
N_EXACT = 1_000_000


def _median(rows: np.ndarray) -> np.ndarray:
    k = rows.shape[-1]
    return np.sort(rows, axis=-1)[..., (k + 1) // 2 - 1]


def _brute_force_smooth_sensitivity(x: np.ndarray, beta: float) -> float:
    """``max_t e^(−tβ)·max_{d(x,y) ≤ t} LS(y)`` by enumerating every vector on the grid (the extremes are on it)."""
    k = len(x)
    every = np.array(list(itertools.product(GRID, repeat=k)))
    medians = _median(every)
    # LS(y): the median moves most when one answer is replaced by a bound.
    local = np.zeros(len(every))
    for i in range(k):
        for bound in (0.0, 1.0):
            changed = every.copy()
            changed[:, i] = bound
            local = np.maximum(local, np.abs(_median(changed) - medians))
    distance = (every != x).sum(axis=1)
    return max(math.exp(-t * beta) * local[distance <= t].max() for t in range(k + 1))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_smooth_sensitivity_is_exact_against_brute_force(k):
    rng = np.random.default_rng(k)
    for beta in (0.05, 0.7, 3.0):
        for x in rng.choice(GRID, size=(6, k)):
            assert math.isclose(median_smooth_sensitivity([x], beta)[0], _brute_force_smooth_sensitivity(x, beta), rel_tol=1e-12)


def test_smooth_sensitivity_is_beta_smooth_between_neighbours():
    rng = np.random.default_rng(0)
    x = rng.random((500, 9))
    x_prime = x.copy()
    x_prime[np.arange(500), rng.integers(0, 9, 500)] = rng.random(500)
    beta = 0.3
    s, s_prime = median_smooth_sensitivity(x, beta), median_smooth_sensitivity(x_prime, beta)
    assert np.all(s <= math.exp(beta) * s_prime + 1e-12) and np.all(s_prime <= math.exp(beta) * s + 1e-12)


def test_constants_follow_nissim_raskhodnikova_smith():
    laplace = SmoothMedian(1.0, delta=1e-6)
    assert (laplace.noise, laplace.alpha, laplace.beta) == ("laplace", 0.5, 1.0 / (2 * math.log(2e6)))
    heavy = SmoothMedian(2.0, gamma=4.0)
    assert (heavy.noise, heavy.alpha, heavy.beta) == ("heavy_tailed", 2.0 / 16, 0.5)


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="delta"):
        SmoothMedian(1.0, noise="laplace")
    for gamma in (1.0, 2.5, 17.0):
        with pytest.raises(ValueError, match="gamma"):
            SmoothMedian(1.0, gamma=gamma)
    with pytest.raises(ValueError, match="noise"):
        SmoothMedian(1.0, noise="gaussian")


# --- neighbouring answers, and a wrong β -------------------------------------------------
#
# k = 161 answers, most at 0.5 and c of them at the upper bound 1: the median is 0.5, the local
# sensitivity is 0, and the smooth bound is set by the distance t0 = m − 1 − c at which the top
# answers reach the median. Moving one answer from 0.5 to 1 shortens t0 by one, so the two
# neighbours' noise scales differ by exactly e^β: the largest ratio an honest β allows. A β that
# is too large lets them differ by more than the admissible noise absorbs, which shows in the
# tails. c is chosen per mechanism so that the noise scale is about 0.05 (the tails fit in [0, 1]).
# The exact bound of a row is checked above against brute force; here it is computed once for
# each of the two rows and the release step is drawn 400 000 times.

K, N_DRAWS, TARGET_SCALE = 161, 400_000, 0.05


class WrongBeta(SmoothMedian):
    """Deliberately broken: β = ε/2 for Laplace (the ln(2/δ) forgotten) or β = ε for the heavy-tailed noise."""

    @property
    def beta(self) -> float:
        return self.epsilon / 2.0 if self.noise == "laplace" else self.epsilon


def _answers(top: int) -> np.ndarray:
    return np.array([0.5] * (K - top) + [1.0] * top)


def _loss(mechanism_class, epsilon: float, delta: float, seed: int):
    mech = mechanism_class(epsilon, delta, random_state=seed)
    m = (K + 1) // 2
    t0 = math.ceil(math.log(0.5 / (mech.alpha * TARGET_SCALE)) / mech.beta)
    top = m - 1 - t0
    assert 0 <= top < m - 2
    rows = np.vstack([_answers(top), _answers(top + 1)])
    smooth = median_smooth_sensitivity(rows, mech.smoothing)
    assert math.isclose(smooth[1], math.exp(mech.smoothing) * smooth[0])  # neighbours as far apart as β allows
    scale = smooth[0] / mech.alpha
    width = 3.8 if mech.noise == "laplace" else 2.0  # where the two tails differ most (a public choice)
    edges = [0.5 - width * scale, 0.5 + width * scale]
    assert edges[0] > 0 and edges[1] < 1  # clipping does not hide the tails
    codes = [discretise(mech.add_noise(np.full(N_DRAWS, 0.5), np.full(N_DRAWS, s)), edges)[0] for s in smooth]
    return estimate_privacy_loss(codes[0], codes[1], epsilon, n_outcomes=len(edges) + 2, alpha=ALPHA)


def test_the_release_step_is_the_one_randomise_uses():
    mech = SmoothMedian(1.0, 1e-5, random_state=7)
    rows = np.vstack([_answers(3), _answers(4)])
    expected = SmoothMedian(1.0, 1e-5, random_state=7).add_noise(np.full(2, 0.5), median_smooth_sensitivity(rows, mech.smoothing))
    np.testing.assert_array_equal(mech.randomise(rows), expected)


# --- the Laplace release is the continuous one rounded to the grid, drawn exactly ------------


@pytest.mark.parametrize(("lower", "upper", "median"), [(0.0, 1.0, 0.3), (-5.0, 20.0, 7.123456789)])
def test_laplace_release_is_the_rounded_median_plus_exact_rounded_laplace_steps(lower, upper, median):
    mech = SmoothMedian(1.0, 1e-5, lower=lower, upper=upper, random_state=8)
    grid = (upper - lower) * 2.0**-20
    smooth = 3e-4 * (upper - lower)  # noise of about 0.0006 of the range: far from the bounds
    released = mech.add_noise(np.full(N_EXACT, median), np.full(N_EXACT, smooth))
    steps = (released - lower) / grid
    assert np.array_equal(steps, np.round(steps))  # every output on the grid
    centre = round((median - lower) / grid)
    # The scale in steps pays for the grid's two steps and the float margin, and no more than that.
    scale = (smooth + 2 * grid) / mech.alpha / grid
    assert_pmf(np.round(steps).astype(np.int64) - centre, rounded_laplace_cdf(scale * (1 + 2.0**-40)))


def test_laplace_noise_scale_never_falls_below_the_smooth_bound():
    """The scale drawn is at least (S* + 2g)/α: 10 % less is caught by the same test (its power)."""
    mech = SmoothMedian(1.0, 1e-5, random_state=9)
    grid = 2.0**-20
    released = mech.add_noise(np.full(N_EXACT, 0.5), np.full(N_EXACT, 5e-4))
    scale = (5e-4 + 2 * grid) / mech.alpha / grid
    assert pmf_pvalue(np.round(released / grid).astype(np.int64) - 2**19, rounded_laplace_cdf(0.9 * scale)) < ALPHA


def test_heavy_tailed_release_is_the_rounded_median_plus_exact_rounded_heavy_tailed_steps():
    mech = SmoothMedian(1.0, lower=-5.0, upper=20.0, random_state=10)
    grid = 25 * 2.0**-20
    smooth = 1e-5 * 25  # noise of about 0.002 of the range: its heavy tails stay inside the bounds
    released = mech.add_noise(np.full(N_EXACT, 7.123456789), np.full(N_EXACT, smooth))
    steps = (released + 5.0) / grid
    assert np.array_equal(steps, np.round(steps))
    scale = (smooth + 2 * grid) / mech.alpha / grid
    assert_pmf(np.round(steps).astype(np.int64) - round(12.123456789 / grid), rounded_heavy_tailed_cdf(scale, 4, 2**21))


def test_the_smoothing_keeps_a_margin_below_beta():
    mech = SmoothMedian(1.0, 1e-5)
    assert 0 < mech.beta - mech.smoothing <= 2.0**-36
    with pytest.raises(ValueError, match="epsilon"):
        SmoothMedian(1e-12, 1e-5)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (1.0, 0.0)], ids=["laplace", "heavy_tailed"])
def test_neighbouring_answers_stay_within_epsilon_delta(epsilon, delta):
    estimate = _loss(SmoothMedian, epsilon, delta, seed=3)
    assert estimate.loss_d_to_d_prime <= estimate.tolerance_d_to_d_prime + delta, str(estimate)
    assert estimate.loss_d_prime_to_d <= estimate.tolerance_d_prime_to_d + delta, str(estimate)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (1.0, 0.0)], ids=["laplace", "heavy_tailed"])
def test_the_privacy_test_catches_a_wrong_beta(epsilon, delta):
    estimate = _loss(WrongBeta, epsilon, delta, seed=4)
    assert estimate.excess > delta, str(estimate)
    assert_exceeds_epsilon(estimate)


# --- a shift and a dilation at once, in exact probabilities -------------------------------
#
# NRS's constants as the spec gives them (β = ε/γ) hold at γ ≤ 4 only: a neighbour that moves the
# median *and* changes the smooth bound by e^β costs |λ|(γ − 1) + γ|d| in the tails. The rows below
# (a privacy review's construction) make both happen: 2n + 1 answers, the ones below the median
# spaced so that S* is set by the farthest, and one answer above the median moved to the lower
# bound. The released grid value's pmf is computed exactly from the noise's law (a regularised
# incomplete beta function), so ratios of e^1.09 against e^1 are told apart, which sampling cannot.


class SpecBeta(SmoothMedian):
    """β = ε/γ for every γ, as the spec writes it: not ε-DP for γ ≥ 9."""

    @property
    def beta(self) -> float:
        return self.epsilon / self.gamma if self.noise == "heavy_tailed" else super().beta


def _largest_log_ratio(mechanism_class, gamma: int, n: int, epsilon: float = 1.0) -> float:
    from scipy.special import betainc

    from dpcore.mechanisms.smooth_median import GRID_BITS, SCALE_MARGIN

    mech = mechanism_class(epsilon, gamma=gamma)
    k, m, centre = 2 * n + 1, n + 1, 0.5
    gap = 0.5 * math.exp(-n * mech.smoothing)
    y = np.full(k, centre)
    y[: m - 1] = centre - gap * np.exp(np.arange(m - 2, -1, -1) * mech.smoothing)
    x = y.copy()
    x[m] = 0.0  # one answer above the median moved to the lower bound

    def released(row):
        median = np.sort(row)[m - 1]
        smooth = median_smooth_sensitivity(row[None, :], mech.smoothing)[0]
        grid = 2.0**-GRID_BITS
        return float(np.rint(median / grid)), (smooth + 2 * grid) / mech.alpha / grid * (1 + SCALE_MARGIN)

    def cells(offsets, scale):  # P(round(scale·Z) = j) for Z ∝ 1/(1 + |z|^γ), by symmetry on |j|
        j = np.abs(offsets)
        head = lambda z: 0.5 * betainc(1 / gamma, 1 - 1 / gamma, z**gamma / (1 + z**gamma))  # noqa: E731
        tail = lambda z: 0.5 * betainc(1 - 1 / gamma, 1 / gamma, 1 / (1 + z**gamma))  # noqa: E731
        low, high = np.maximum(j - 0.5, 0) / scale, (j + 0.5) / scale
        return np.where(j == 0, 2 * head(0.5 / scale), np.where(high <= 1, head(high) - head(low), tail(low) - tail(high)))

    (steps_x, scale_x), (steps_y, scale_y) = released(x), released(y)
    outputs = np.arange(int(steps_x - 40 * scale_x), int(steps_x + 40 * scale_x))
    outputs = outputs[(outputs > 0) & (outputs < 2**GRID_BITS)]  # the clipped ends are sums of tails, never larger
    p_x, p_y = cells(outputs - steps_x, scale_x), cells(outputs - steps_y, scale_y)
    both = (p_x > 1e-300) & (p_y > 1e-300)
    return float(np.max(np.abs(np.log(p_x[both] / p_y[both]))))


@pytest.mark.parametrize(("gamma", "n"), [(9, 72), (16, 128)])
def test_a_shift_and_a_dilation_together_stay_within_epsilon_and_the_specs_beta_does_not(gamma, n):
    assert _largest_log_ratio(SmoothMedian, gamma, n) <= 1.0
    assert _largest_log_ratio(SpecBeta, gamma, n) > 1.0  # the control: the spec's β at this γ


def test_beta_keeps_the_specs_value_at_the_default_gamma_and_is_smaller_above():
    assert SmoothMedian(1.0).beta == pytest.approx(1.0 / 4)
    assert SmoothMedian(1.0, gamma=16).beta == pytest.approx(3.0 / 60)
    with pytest.raises(ValueError, match="too small for exact noise"):
        SmoothMedian(1e-5, gamma=16)
