"""The geometric (discrete Laplace) mechanism for integer counts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms import exact
from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike


class Geometric(Mechanism):
    r"""Add two-sided geometric noise to integer values.

    ``P(noise = k) ∝ α^{|k|}`` with ``α = exp(-ε / sensitivity)``: the discrete analogue of
    Laplace (Ghosh, Roughgarden & Sundararajan 2009). For integer queries whose value moves by
    at most ``sensitivity`` (an integer, 1 for a count) when one record is added or removed,
    the output is ε-DP. Output stays an integer, so there are no floating-point artefacts, and the
    noise's law is exactly the discrete Laplace pmf (:func:`~dpcore.mechanisms.exact.discrete_laplace`)
    at the scale Δ/ε rounded up on a 2^-20 grid (:attr:`noise_scale`; :attr:`alpha` is ``exp(−ε/Δ)``).

    Examples
    --------
    >>> Geometric(epsilon=1.0, random_state=0).randomise([5, 7]).dtype.kind
    'i'
    """

    name = "geometric"

    def __init__(self, epsilon: float, sensitivity: float = 1, random_state: RandomStateLike = None) -> None:
        super().__init__(epsilon, sensitivity, random_state)
        if self.sensitivity != int(self.sensitivity) or self.sensitivity < 1:
            raise ValueError(f"sensitivity must be a whole number >= 1 for the geometric mechanism, got {sensitivity!r}")

    @property
    def alpha(self) -> float:
        return math.exp(-self.epsilon / self.sensitivity)

    @property
    def variance(self) -> float:
        a = self.alpha
        return 2.0 * a / (1.0 - a) ** 2

    def randomise(self, values: ArrayLike) -> NDArray[np.int64]:
        """Return integer ``values`` plus two-sided geometric noise (any shape)."""
        values = np.asarray(values)
        if values.size and not np.all(np.equal(np.mod(values, 1), 0)):
            raise ValueError("the geometric mechanism takes whole-number values (counts)")
        values = values.astype(np.int64)
        return self._released(values, values + self._noise(values.size).reshape(values.shape))

    def _noise(self, size: int) -> NDArray[np.int64]:
        return exact.discrete_laplace(exact.GeneratorWords(self.rng), np.arange(size), self.noise_scale)

    @property
    def noise_scale(self) -> Fraction:
        """The discrete Laplace scale Δ/ε as a fraction over 2^20, rounded up (at most 2^-20·ε/Δ more noise)."""
        return Fraction(math.ceil(Fraction(self.sensitivity) / Fraction(self.epsilon) * 2**20), 2**20)
