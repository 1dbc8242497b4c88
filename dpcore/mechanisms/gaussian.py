"""The Gaussian mechanism, with zero-concentrated DP (zCDP) accounting."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism
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

    Floating point: textbook float Gaussian samples, like float Laplace ones, leave gaps in
    the low-order bits that depend on the true value (Mironov 2012's attack carries over to
    any float sampler). Outputs are therefore rounded to a power-of-two grid of about σ/1000
    (:attr:`grid`): post-processing, so the guarantee is unchanged, and the low bits the attack
    reads are gone. Rounding moves a value by at most grid/2 ≈ σ/2000, so accuracy is
    unaffected; what remains is the tiny residual risk of any non-snapping sampler, documented
    as for :class:`~dpcore.mechanisms.Laplace`.

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

    @property
    def grid(self) -> float:
        """The power of two, about σ/1000, that outputs are rounded to (0: no noise, no rounding)."""
        if self.sigma == 0:
            return 0.0
        return 2.0 ** math.floor(math.log2(self.sigma / 1000.0))

    def randomise(self, values: ArrayLike) -> NDArray[np.float64]:
        values = np.asarray(values, dtype=float)
        noisy = values + self.rng.normal(0.0, self.sigma, size=values.shape)
        if self.grid > 0:
            noisy = np.round(noisy / self.grid) * self.grid
        return self._released(values, noisy)
