"""The Laplace mechanism."""

from __future__ import annotations

import numpy as np

from dpcore.mechanisms._base import Mechanism


class Laplace(Mechanism):
    r"""Add Laplace noise of scale ``sensitivity / epsilon`` to every value.

    Privacy: if one record changes each value of the query by at most ``sensitivity`` in
    L1 norm over the whole array, the output is ε-DP (Dwork et al. 2006). When the array
    holds the answers of one query over *disjoint* parts of the data (a histogram), each
    cell may use the full ``sensitivity`` of one record: parallel composition.

    Floating point: textbook float Laplace noise is open to Mironov's 2012 attack on the
    low bits. Integer counts should use :class:`~dpcore.mechanisms.geometric.Geometric`;
    released floats here are sums that models post-process and round for display.

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

    def randomise(self, values) -> np.ndarray:
        """Return ``values`` plus independent Laplace noise (any shape)."""
        values = np.asarray(values, dtype=float)
        noisy = values + self.rng.laplace(0.0, self.scale, size=values.shape)
        return self._released(values, noisy)
