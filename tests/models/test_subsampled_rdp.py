"""The Poisson-subsampled Rényi bound for a mechanism known only by its curve (Zhu & Wang 2019)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dpcore.models._subsampled_rdp import gaussian_curve, poisson_subsampled_rdp

ORDERS = (*range(2, 65), 96, 128, 256)
SIGMAS = (0.4, 0.7, 1.0, 1.5, 3.0, 8.0)
RATES = (1e-4, 1 / 128, 0.05, 0.3, 0.9)


def continuous_subsampled_gaussian(sigma, q, orders):
    """dp_accounting's exact curve for the continuous Gaussian (Mironov, Talwar & Zhang 2019)."""
    accountant = dp_accounting.rdp.RdpAccountant(orders=list(orders))
    accountant.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)))
    return accountant.rdp


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("q", RATES)
def test_order_two_is_the_closed_form(sigma, q):
    # At α = 2 the bound has no factor 3: log((1 − q)(1 + q) + q²·e^(ε(2))), ε(2) = 1/σ².
    expected = math.log1p(q**2 * math.expm1(1 / sigma**2))
    assert poisson_subsampled_rdp(gaussian_curve(sigma), q, [2])[0] == pytest.approx(min(expected, 1 / sigma**2), rel=1e-12)


def test_order_three_by_hand():
    sigma, q = 1.2, 0.1
    eps = {2: 2 / (2 * sigma**2), 3: 3 / (2 * sigma**2)}
    total = (1 - q) ** 2 * (3 * q - q + 1) + 3 * q**2 * (1 - q) * math.exp(eps[2]) + 3 * q**3 * math.exp(2 * eps[3])
    assert poisson_subsampled_rdp(gaussian_curve(sigma), q, [3])[0] == pytest.approx(math.log(total) / 2, rel=1e-12)


def test_order_five_by_hand_with_a_curve_that_is_not_a_gaussians():
    def curve(orders):
        return 0.3 * np.sqrt(orders)

    q = 0.2
    total = (1 - q) ** 4 * (5 * q - q + 1) + math.comb(5, 2) * q**2 * (1 - q) ** 3 * math.exp(0.3 * math.sqrt(2))
    total += sum(3 * math.comb(5, j) * q**j * (1 - q) ** (5 - j) * math.exp((j - 1) * 0.3 * math.sqrt(j)) for j in range(3, 6))
    assert poisson_subsampled_rdp(curve, q, [5])[0] == pytest.approx(min(math.log(total) / 4, 0.3 * math.sqrt(5)), rel=1e-12)


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("q", RATES)
def test_never_below_the_continuous_subsampled_gaussian(sigma, q):
    ours = poisson_subsampled_rdp(gaussian_curve(sigma), q, ORDERS)
    library = continuous_subsampled_gaussian(sigma, q, ORDERS)
    assert np.all(ours >= library * (1 - 1e-9) - 1e-15)
    assert ours[0] == pytest.approx(library[0], rel=1e-9)  # α = 2: the two agree


@pytest.mark.parametrize("sigma", SIGMAS)
def test_grows_with_the_sampling_rate(sigma):
    rates = np.linspace(0.0, 1.0, 41)
    curves = np.array([poisson_subsampled_rdp(gaussian_curve(sigma), q, ORDERS) for q in rates])
    assert np.all(np.diff(curves, axis=0) >= -1e-12)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_without_sampling_it_is_the_mechanisms_own_curve(sigma):
    unsampled = np.asarray(ORDERS) / (2 * sigma**2)
    assert poisson_subsampled_rdp(gaussian_curve(sigma), 1.0, ORDERS) == pytest.approx(unsampled, rel=1e-12)
    nearly = poisson_subsampled_rdp(gaussian_curve(sigma), 1 - 1e-9, ORDERS)
    assert nearly == pytest.approx(unsampled, rel=1e-6)
    assert np.all(poisson_subsampled_rdp(gaussian_curve(sigma), 0.0, ORDERS) == 0.0)


@pytest.mark.parametrize("q", RATES)
def test_never_above_the_mechanisms_own_curve(q):
    for sigma in SIGMAS:
        ours = poisson_subsampled_rdp(gaussian_curve(sigma), q, ORDERS)
        assert np.all(ours <= np.asarray(ORDERS) / (2 * sigma**2) * (1 + 1e-12))


@pytest.mark.parametrize("orders", [[1], [2, 2.5], [0, 3]])
def test_fractional_or_small_orders_are_refused(orders):
    with pytest.raises(ValueError, match="integer orders"):
        poisson_subsampled_rdp(gaussian_curve(1.0), 0.1, orders)


@pytest.mark.parametrize(("q", "sigma"), [(5.01e-8, 27_480.0), (1e-3, 1e4), (2**-7, 638.85), (0.25, 1.0), (0.9, 0.5)])
def test_a_tiny_bound_keeps_its_digits_and_is_never_below_the_theorem_in_60_digit_arithmetic(q, sigma):
    """A privacy review's case: summed as a bracket and then logged, the bound at q ≈ 5e-8 cancelled to zero or below."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    orders = [*range(2, 33), 64, 256]

    def theorem(order):
        eps = [mp.mpf(j) / (2 * mp.mpf(sigma) ** 2) for j in range(order + 1)]
        p = mp.mpf(q)
        bracket = (1 - p) ** (order - 1) * (order * p - p + 1) + mp.binomial(order, 2) * p**2 * (1 - p) ** (
            order - 2
        ) * mp.e ** eps[2]
        bracket += 3 * mp.fsum(
            mp.binomial(order, j) * p**j * (1 - p) ** (order - j) * mp.e ** ((j - 1) * eps[j]) for j in range(3, order + 1)
        )
        return min(mp.log(bracket) / (order - 1), eps[order])

    ours = poisson_subsampled_rdp(gaussian_curve(sigma), q, orders)
    for order, value in zip(orders, ours, strict=True):
        truth = theorem(order)
        assert value > 0 and mp.mpf(value) >= truth and float(truth) == pytest.approx(value, rel=1e-11)
