"""The Laplace mechanism."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism


class Laplace(Mechanism):
    r"""Add Laplace noise of scale ``sensitivity / epsilon`` to every value.

    Privacy: if one record changes each value of the query by at most ``sensitivity`` in
    L1 norm over the whole array, the output is ε-DP (Dwork et al. 2006). When the array
    holds the answers of one query over *disjoint* parts of the data (a histogram), each
    cell may use the full ``sensitivity`` of one record: parallel composition.

    Floating point: textbook float Laplace noise is open to Mironov's 2012 attack on its low
    bits. Outputs are therefore rounded to a power-of-two grid of about scale/1000
    (``grid``): post-processing, so ε is unchanged, and the low-order bits the attack reads
    are gone. This is not Mironov's full snapping mechanism (which also clamps and rounds to
    a grid as coarse as the scale), so a small residual risk is documented rather than
    claimed away; integer counts should use :class:`~dpcore.mechanisms.geometric.Geometric`,
    which has no such artefacts (the app's default for counts).

    Examples
    --------
    >>> mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=0)
    >>> mech.randomise([10.0, 20.0]).shape
    (2,)
    """

    name = "laplace"

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        return 2.0 * self.scale**2

    @property
    def grid(self) -> float:
        """The power of two, about scale/1000, that outputs are rounded to."""
        if self.scale == 0:
            return 0.0
        return 2.0 ** math.ceil(math.log2(self.scale / 1024.0))

    def randomise(self, values: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` plus independent Laplace noise (any shape), rounded to :attr:`grid`."""
        values = np.asarray(values, dtype=float)
        return self._rounded(values, values + self.rng.laplace(0.0, self.scale, size=values.shape))

    def randomise_keyed(self, values: ArrayLike, uniforms: ArrayLike) -> NDArray[np.float64]:
        """:meth:`randomise` of a 1-D array with each value's randomness given: ``uniforms`` in [0, 1), one per value.

        The noise is Laplace's inverse CDF at the centre of the uniform's 2^-53 cell,
        ``w = 2u − 1 + 2^-53`` (exact, symmetric, never 0 or ±1): ``−b·sign(w)·ln(1 − |w|)``.
        Its law is Laplace's up to that grid (tails cut beyond about 37 b, probability 2^-53).
        """
        values = np.asarray(values, dtype=float)
        w = 2.0 * np.asarray(uniforms, dtype=float).reshape(values.shape) - 1.0 + 2.0**-53
        return self._rounded(values, values - self.scale * np.sign(w) * np.log1p(-np.abs(w)))

    def _rounded(self, values: NDArray[np.float64], noisy: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.grid > 0:
            noisy = np.round(noisy / self.grid) * self.grid
        return self._released(values, noisy)
