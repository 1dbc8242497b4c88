"""Goodness of fit of integer draws against an exact pmf (the exact samplers' distribution tests).

A chi-square test on integer intervals chosen from the *expected* law before the draws are
looked at (at the law's quantiles, so each expects about 1/60 of the draws; the two tails are
intervals of their own), with false-alarm rate ALPHA: a correct sampler fails with probability at most 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from privacy_testing import ALPHA
from scipy import special, stats


def discrete_laplace_cdf(scale: Fraction | float) -> Callable[[np.ndarray], np.ndarray]:
    """``P(Z ≤ k)`` for ``P(Z = z) ∝ exp(−|z|/scale)``: ``1 − α^(k+1)/(1+α)`` for k ≥ 0, ``α^(−k)/(1+α)`` below."""
    log_alpha = -1.0 / float(scale)
    alpha = math.exp(log_alpha)

    def cdf(k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        upper = 1.0 - np.exp((np.maximum(k, 0) + 1) * log_alpha) / (1 + alpha)
        lower = np.exp(-np.minimum(k, -1) * log_alpha) / (1 + alpha)
        return np.where(k >= 0, upper, lower)

    return cdf


def rounded_laplace_cdf(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """``P(K ≤ k)`` for ``K = round(b·Z)``, ``Z`` standard Laplace: the Laplace CDF at ``(k + ½)/b``."""

    def cdf(k: np.ndarray) -> np.ndarray:
        z = (np.asarray(k, dtype=float) + 0.5) / scale
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0)))

    return cdf


def rounded_heavy_tailed_cdf(scale: float, gamma: int, cap: int) -> Callable[[np.ndarray], np.ndarray]:
    """``P(K ≤ k)`` for ``K = round(b·Z)`` clipped to ``[−cap, cap]``, ``Z`` of density ``∝ 1/(1 + |z|^γ)``.

    ``|Z|^γ`` is beta-prime(1/γ, 1 − 1/γ), so ``P(|Z| ≤ x)`` is the regularised incomplete beta at
    ``x^γ/(1 + x^γ)``; ``Z`` is symmetric.
    """

    def cdf(k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        z = (k + 0.5) / scale
        power = np.abs(z) ** gamma
        inside = special.betainc(1 / gamma, 1 - 1 / gamma, power / (1 + power))
        law = 0.5 + 0.5 * np.sign(z) * inside
        return np.where(k >= cap, 1.0, np.where(k < -cap, 0.0, law))

    return cdf


def discrete_gaussian_cdf(variance: float) -> Callable[[np.ndarray], np.ndarray]:
    """``P(Z ≤ k)`` for ``P(Z = z) ∝ exp(−z²/(2σ²))``, summed over ±40σ (the rest is below 1e-300).

    Beyond σ = 10⁴ the sum would not fit in memory and the midpoint rule ``Φ((k + ½)/σ)`` is
    used instead: its error (Euler–Maclaurin, about 1/(24σ²) < 1e-9) is far below what 10⁶
    draws can see.
    """
    sigma = math.sqrt(variance)
    if sigma > 1e4:
        return lambda k: stats.norm.cdf((np.asarray(k, dtype=float) + 0.5) / sigma)
    reach = int(40 * sigma) + 2
    support = np.arange(-reach, reach + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2.0 * variance))
    cumulative = np.cumsum(pmf / pmf.sum())

    def cdf(k: np.ndarray) -> np.ndarray:
        index = np.clip(np.asarray(k, dtype=np.int64) + reach, -1, len(support) - 1)
        return np.where(index < 0, 0.0, cumulative[np.maximum(index, 0)])

    return cdf


def pmf_pvalue(draws: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], n_bins: int = 60) -> float:
    """Chi-square p-value of integer ``draws`` against the law with this ``cdf`` (bins set from the cdf alone)."""
    draws = np.asarray(draws)
    assert np.issubdtype(draws.dtype, np.integer)
    n = len(draws)
    # Cut points at the law's quantiles (bisection on the integers); bin i holds draws in (cut i-1, cut i].
    lo, hi = -(2**40), 2**40
    cuts = []
    for q in np.linspace(0, 1, n_bins + 1)[1:-1]:
        a, b = lo, hi
        while b - a > 1:
            mid = (a + b) // 2
            if cdf(np.array([mid]))[0] < q:
                a = mid
            else:
                b = mid
        cuts.append(b)
    cuts = sorted(set(cuts))
    edges = np.array(cuts)
    probabilities = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    counts = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=len(edges) + 1)
    expected = probabilities * n
    assert expected.min() >= 20, "bins too thin for a chi-square test"
    return float(stats.chisquare(counts, expected).pvalue)


def assert_pmf(draws: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> None:
    """Fail when ``draws`` are not from the law of ``cdf`` at false-alarm rate ALPHA."""
    assert pmf_pvalue(draws, cdf) > ALPHA


def assert_discrete_laplace(draws: np.ndarray, scale: Fraction | float) -> None:
    assert_pmf(draws, discrete_laplace_cdf(scale))
