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
        noisy = values + self.rng.laplace(0.0, self.scale, size=values.shape)
        if self.grid > 0:
            noisy = np.round(noisy / self.grid) * self.grid
        return self._released(values, noisy)
