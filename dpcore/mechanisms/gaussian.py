"""The Gaussian mechanism, with zero-concentrated DP (zCDP) accounting."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms import exact
from dpcore.mechanisms._base import Mechanism, noised_on_grid, refuse_non_finite
from dpcore.validation import RandomStateLike, check_delta, check_epsilon


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP implies (ε, δ)-DP by ``ε = ρ + 2√(ρ·ln(1/δ))`` (Bun & Steinke 2016)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta <= 0:
        raise ValueError("delta must be > 0 for approximate DP")
    log_term = math.log(1.0 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


class Gaussian(Mechanism):
    r"""Add Gaussian noise with ``σ = Δ₂ / √(2ρ)``: ρ-zCDP for a query of L2 sensitivity Δ₂.

    Approximate DP, for owners who accept δ > 0: ρ-zCDP composes by adding the ρ's, and a
    total ρ gives (ε, δ)-DP for ``ε = ρ + 2√(ρ ln(1/δ))`` (Bun & Steinke 2016, Prop. 1.3). The
    class takes ``rho`` as its privacy parameter; ``epsilon`` is kept equal to ρ for the
    shared base class and the call recorder.

    Exact noise (Canonne, Kamath & Steinke 2020; :mod:`dpcore.mechanisms.exact`): the values are
    rounded to a public power-of-two grid of at most Δ₂/(4096·√size) (coarser only when σ
    exceeds 2^24 steps), which moves an L2 distance by at most √size steps; the noise is the
    *discrete* Gaussian on that grid, with ``σ²`` in steps the exact rational
    ``(Δ₂/grid + ⌈√size⌉)² / (2ρ)`` rounded up (:func:`~dpcore.mechanisms.exact.gaussian_plan`),
    and each draw's law exactly its pmf. The discrete Gaussian of that σ is ρ-zCDP for the rounded
    query (CKS20, Theorem 14), so the accounting is unchanged. Outputs are grid values;
    :attr:`sigma` is the continuous law's. Values must be finite: a missing or infinite one is
    refused with a :class:`~dpcore.exceptions.DataError`, never passed through unnoised.

    Examples
    --------
    >>> Gaussian(rho=0.5, sensitivity=1.0, random_state=0).randomise([1.0, 2.0]).shape
    (2,)
    """

    name = "gaussian"

    def __init__(self, rho: float, sensitivity: float = 1.0, random_state: RandomStateLike = None) -> None:
        super().__init__(check_epsilon(rho, "rho"), sensitivity, random_state)
        self.rho = self.epsilon

    @property
    def sigma(self) -> float:
        return self.sensitivity / math.sqrt(2.0 * self.rho)

    def grid_for(self, size: int) -> float:
        """The grid an array of ``size`` values is released on (0: no noise, no rounding)."""
        return exact.gaussian_plan(self.sensitivity, self.rho, size)[0] if self.sensitivity > 0 else 0.0

    @property
    def grid(self) -> float:
        """The grid of one value."""
        return self.grid_for(1)

    def randomise(self, values: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` plus independent discrete Gaussian noise (any shape), on :meth:`grid_for` its size."""
        values = np.asarray(values, dtype=float)
        if self.sensitivity == 0 or values.size == 0:
            refuse_non_finite(values)
            return self._released(values, values.copy())
        grid, t, m = exact.gaussian_plan(self.sensitivity, self.rho, values.size)
        words = exact.GeneratorWords(self.rng)
        return self._released(values, noised_on_grid(values, grid, lambda who: exact.discrete_gaussian(words, who, t, m)))
