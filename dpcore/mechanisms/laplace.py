"""The Laplace mechanism, with exact discrete Laplace noise on a public grid."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms import exact
from dpcore.mechanisms._base import Mechanism, noised_on_grid, refuse_non_finite


class Laplace(Mechanism):
    r"""Add Laplace noise of scale ``sensitivity / epsilon`` to every value, exactly, on a grid.

    Privacy: if one record changes each value of the query by at most ``sensitivity`` in
    L1 norm over the whole array, the output is ε-DP (Dwork et al. 2006). When the array
    holds the answers of one query over *disjoint* parts of the data (a histogram), each
    cell may use the full ``sensitivity`` of one record: parallel composition.

    Exact noise (Canonne, Kamath & Steinke 2020; :mod:`dpcore.mechanisms.exact`): the values
    are rounded to a public power-of-two grid of at most ``sensitivity / (4096·size)`` (it
    depends only on the declared sensitivity and the array's size), which moves an L1
    distance by at most one grid step per value; the noise is *discrete* Laplace on that
    grid, with its scale computed for the rounded query's sensitivity ``Δ/grid + size`` steps
    (at most 1/4096 above Δ) on the exact rationals of Δ and ε and rounded up
    (:func:`~dpcore.mechanisms.exact.laplace_plan`). Each draw's law is exactly that pmf: every
    decision is an exact comparison of a uniform with its threshold (in float64 only where a
    margin proves the answer). Outputs are grid values: no float sampler's low bits (Mironov
    2012), no cut tails. :attr:`scale` and :attr:`variance` are the continuous law's, which the
    discrete one matches to 1/4096. Values must be finite: a missing or infinite one is
    refused with a :class:`~dpcore.exceptions.DataError`, never passed through unnoised.

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

    def noise_plan(self, size: int) -> tuple[float, Fraction]:
        """The grid of an array of ``size`` values and its noise scale in grid steps (:func:`~dpcore.mechanisms.exact.laplace_plan`)."""
        return exact.laplace_plan(self.sensitivity, self.epsilon, size)

    def grid_for(self, size: int) -> float:
        """The grid an array of ``size`` values is released on (0: no noise, no rounding)."""
        return self.noise_plan(size)[0] if self.sensitivity > 0 else 0.0

    @property
    def grid(self) -> float:
        """The grid of one value."""
        return self.grid_for(1)

    def randomise(self, values: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` plus independent Laplace noise (any shape), on :meth:`grid_for` its size."""
        values = np.asarray(values, dtype=float)
        return self._noised(values, None)

    def randomise_keyed(self, values: ArrayLike, key: bytes, rows: ArrayLike, stream: int) -> NDArray[np.float64]:
        """:meth:`randomise` of a 1-D array of per-row values, each with its own keyed randomness.

        Value ``i`` is row ``rows[i]`` and draws its words from (``key``, its row, ``stream``)
        (:class:`~dpcore.mechanisms.exact.KeyedWords`); its grid is the one of a single value,
        since one record changes one row.
        """
        values = np.asarray(values, dtype=float).ravel()
        return self._noised(values, exact.KeyedWords(key, np.asarray(rows, dtype=np.uint64), stream))

    def _noised(self, values: NDArray[np.float64], source: exact.KeyedWords | None) -> NDArray[np.float64]:
        """Grid values plus discrete Laplace steps: from ``source``, one value a row, or else from :attr:`rng`."""
        if self.sensitivity == 0 or values.size == 0:
            refuse_non_finite(values)
            return self._released(values, values.copy())
        grid, scale = self.noise_plan(1 if source is not None else values.size)
        words = source or exact.GeneratorWords(self.rng)
        return self._released(values, noised_on_grid(values, grid, lambda who: exact.discrete_laplace(words, who, scale)))
