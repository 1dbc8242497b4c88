r"""Rényi DP of a Poisson-subsampled mechanism, from nothing but the mechanism's Rényi curve.

DP-SGD's noise is a discrete Gaussian, for which no exact subsampled curve is published; what is
proved about it is its Rényi curve, ``ε(α) ≤ α·Δ²/(2σ²)`` (Canonne, Kamath & Steinke 2020). This
module turns any such curve into a curve for the mechanism run on a Poisson sample, by a bound
that holds for every mechanism with that curve, so it holds for the discrete Gaussian.

The bound (Zhu & Wang 2019, Theorem 5, the general upper bound): if a mechanism ``M`` is
``(l, ε(l))``-RDP under add/remove-one neighbours at every integer order ``2 ≤ l ≤ α``, then ``M``
applied to a Poisson sample of rate ``q`` (each record kept independently with probability
``q``, the sample never released) is ``(α, ε_q(α))``-RDP for the integer ``α ≥ 2``, with

.. math::

    ε_q(α) ≤ \frac{1}{α-1} \log\Big[(1-q)^{α-1}(αq - q + 1)
        + \binom{α}{2} q^2 (1-q)^{α-2} e^{ε(2)}
        + 3 \sum_{l=3}^{α} \binom{α}{l} q^l (1-q)^{α-l} e^{(l-1)ε(l)}\Big].

For the continuous Gaussian the same sum *without* the factor 3 is exact (Mironov, Talwar & Zhang
2019), so this bound is never below the continuous subsampled Gaussian's at any order: the 3 is
the price of knowing only the curve. Its ``l = 2`` term has no 3, so at ``α = 2`` the two agree:
``ε_q(2) = log(1 + q²(e^{ε(2)} − 1))``.

We also take the minimum with ``ε(α)`` itself: the subsampled mechanism's outputs on neighbours
are mixtures, with equal weights, of pairs of the base mechanism's outputs on neighbours (or on
the same data), and the Rényi divergence is jointly quasi-convex (van Erven & Harremoës 2014,
Theorem 13), so sampling never costs more than not sampling. At ``q = 1`` the result is
``ε(α)`` exactly; the bound alone would add ``log(3)/(α − 1)``. Kairouz, Liu & Steinke 2021
account the subsampled (distributed) discrete Gaussian the same way.

Everything is computed in log space with exact binomial coefficients (``math.comb``) and
``logsumexp``, at integer orders only: the bound says nothing about fractional ones. The bracket is
summed as one plus its non-negative excess over 1 (see the code), so a bound far below 1e-15 keeps
its digits instead of cancelling to zero or below.

Written here rather than taken from ``autodp`` (the authors' library): its general Poisson path
(``AmplificationBySampling(PoissonSampling=True)``, i.e. ``compose_poisson_subsampled_mechanisms1``)
sums terms ``e^{l·ε(l+1)}`` without the factor 3, which is not the theorem as published; its
RDP accountant API is marked deprecated by its authors, and its last release (0.2.3.1) is
from November 2023. ``dp_accounting`` has no subsampling rule for a mechanism known only by
its curve.

References
----------
Y. Zhu and Y.-X. Wang, "Poisson Subsampled Rényi Differential Privacy", ICML 2019 (PMLR 97).
C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
I. Mironov, K. Talwar and L. Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism", 2019.
T. van Erven and P. Harremoës, "Rényi Divergence and Kullback-Leibler Divergence", IEEE T-IT 2014.
P. Kairouz, Z. Liu and T. Steinke, "The Distributed Discrete Gaussian Mechanism for Federated
Learning with Secure Aggregation", ICML 2021.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

#: A Rényi curve: ``ε(l)`` for an array of integer orders ``l ≥ 2``.
RenyiCurve = Callable[[NDArray[np.int64]], NDArray[np.float64]]


def gaussian_curve(noise_multiplier: float) -> RenyiCurve:
    """``ε(α) = α/(2σ²)``: the (discrete or continuous) Gaussian's Rényi curve at noise multiplier ``σ = noise/Δ``."""
    scale = 1.0 / (2.0 * noise_multiplier**2)

    def curve(orders: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.asarray(orders * scale, dtype=np.float64)

    return curve


@lru_cache(maxsize=8)
def _layout(orders: tuple[int, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The terms' indices ``l = 0 … max(orders)`` and, per order, ``log C(α, l)``, −∞ outside ``2 ≤ l ≤ α``."""
    top = max(orders)
    terms = np.arange(top + 1, dtype=np.int64)
    weights = np.full((len(orders), top + 1), -np.inf)
    for row, order in enumerate(orders):
        weights[row, 2 : order + 1] = [math.log(math.comb(order, term)) for term in range(2, order + 1)]
    return terms, weights


def _log_excess(terms: NDArray[np.int64], base: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(w_l·e^{(l−1)ε(l)} − 1)`` with ``w_2 = 1`` and ``w_l = 3`` from ``l = 3``, without cancellation (−∞ where it is 0)."""
    x = (terms - 1) * base
    with np.errstate(divide="ignore"):
        once = x + np.log(-np.expm1(-x))  # log(e^x − 1)
    thrice = x + np.log(3.0 - np.exp(-x))  # log(3e^x − 1)
    return np.where(terms >= 3, thrice, once)


def poisson_subsampled_rdp(curve: RenyiCurve, sampling_rate: float, orders: Sequence[int]) -> NDArray[np.float64]:
    """``ε_q(α)`` at each integer order: Zhu & Wang's general bound for rate ``q``, capped by ``ε(α)``.

    Parameters
    ----------
    curve : callable
        The base mechanism's Rényi curve at integer orders (must hold at every ``l`` from 2 to
        the largest order).
    sampling_rate : float
        ``q`` in [0, 1].
    orders : sequence of int
        Orders ``α ≥ 2``.

    Returns
    -------
    ndarray
        The subsampled mechanism's Rényi DP at each order (add/remove-one neighbours).
    """
    order_tuple = tuple(int(a) for a in orders)
    if min(order_tuple) < 2 or any(a != b for a, b in zip(order_tuple, orders, strict=True)):
        raise ValueError("the subsampled bound holds at integer orders ≥ 2 only")
    if not 0.0 <= sampling_rate <= 1.0:
        raise ValueError(f"sampling_rate must be in [0, 1], got {sampling_rate!r}")
    alphas = np.asarray(order_tuple, dtype=np.int64)
    unsampled = np.asarray(curve(alphas), dtype=float)
    if sampling_rate == 0.0:
        return np.zeros(len(alphas))
    if sampling_rate == 1.0:
        return unsampled * (1.0 + 1e-13)
    terms, weights = _layout(order_tuple)
    log_q, log_kept = math.log(sampling_rate), math.log1p(-sampling_rate)
    base = np.zeros(len(terms))
    base[2:] = np.asarray(curve(terms[2:]), dtype=float)
    # The binomial weights C(α, l)·q^l·(1 − q)^(α − l) over l = 0 … α sum to 1, and the l = 0, 1 ones are the
    # bound's first term; so the bracket is 1 + Σ_{l≥2} C(α, l)·q^l·(1 − q)^(α − l)·(w_l·e^{(l−1)ε(l)} − 1), a sum of
    # non-negative terms. Summing those and taking log1p keeps a tiny bound's digits: computing the bracket
    # and then its log cancels to zero or below when the bound is under ~1e-15 (a rate near 1e-8).
    spread = (alphas[:, None] - terms[None, :]) * log_kept
    excess = _log_excess(terms[2:], base[2:])
    log_terms = np.full(weights.shape, -np.inf)
    log_terms[:, 2:] = np.where(np.isfinite(weights[:, 2:]), weights[:, 2:] + spread[:, 2:] + terms[2:] * log_q + excess, -np.inf)
    bound = np.logaddexp(0.0, logsumexp(log_terms, axis=1)) / (alphas - 1)
    # Rounded up past the float error of the sums and of the curve (measured ≤ 1e-14 relative against 60-digit arithmetic).
    return np.asarray(np.minimum(bound, unsampled) * (1.0 + 1e-13), dtype=float)
