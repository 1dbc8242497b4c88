"""The DP median by the exponential mechanism over gaps between sorted values."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpcore.mechanisms._base import Mechanism
from dpcore.mechanisms.exponential import exact_choice
from dpcore.validation import Bounds, RandomStateLike, check_bounds


class Median(Mechanism):
    r"""ε-DP median of values in declared bounds ``[lower, upper]``.

    Sort the clipped values ``z_1 ≤ … ≤ z_n`` and add ``z_0 = lower``, ``z_{n+1} = upper``.
    Gap ``i`` (between ``z_i`` and ``z_{i+1}``) is chosen with probability proportional to
    ``(z_{i+1} − z_i) · exp(−ε·|i − n/2|)``, then the output is uniform inside it (Smith
    2011). This is the exponential mechanism over the output interval with Lebesgue base
    measure and utility ``u(x) = −|rank(x) − n/2|``, ``rank(x)`` the number of values below
    ``x``. Adding or removing one record moves ``rank(x)`` by at most 1 on one side of it and
    ``n/2`` by 1/2, so ``|rank(x) − n/2|`` moves by at most 1/2: sensitivity ``Δu = 1/2``,
    and ``exp(ε·u/(2Δu)) = exp(−ε·|rank − n/2|)`` is ε-DP. (The spec's weight
    ``exp(−ε·|i − n/2|/2)`` assumes Δu = 1 and so spends only ε/2.)

    Examples
    --------
    >>> 0.0 <= Median(epsilon=1.0, bounds=(0, 1), random_state=0).randomise([0.2, 0.5, 0.7]) <= 1.0
    True
    """

    name = "median"

    def __init__(self, epsilon: float, bounds: Bounds = (0.0, 1.0), random_state: RandomStateLike = None) -> None:
        super().__init__(epsilon, 1.0, random_state)
        lower, upper = check_bounds(bounds, 1)
        self.lower, self.upper = float(lower[0]), float(upper[0])

    def randomise(self, values: ArrayLike) -> float:
        values = np.asarray(values, dtype=float).ravel()
        # A missing value is dropped (a per-record filter): left in, it made every output NaN.
        values = np.sort(np.clip(values[~np.isnan(values)], self.lower, self.upper))
        n = values.size
        edges = np.concatenate(([self.lower], values, [self.upper]))
        gaps = np.diff(edges)
        ranks = np.arange(n + 1)
        with np.errstate(divide="ignore"):
            scores = np.log(gaps) - self.epsilon * np.abs(ranks - n / 2.0)
        chosen = int(exact_choice(scores, self.rng))
        output = edges[chosen] + self.rng.random() * gaps[chosen]
        return float(self._released(values, np.array(output)))


class GridMedian(Mechanism):
    r"""ε-DP medians of many disjoint groups whose values sit on a public grid, in one call.

    The values are given as histograms: row ``r`` counts group ``r``'s values at each of the
    ``L`` grid points ``lower + k·(upper − lower)/(L − 1)``. Row by row this is
    :class:`Median` applied to those values, with the same distribution: between grid
    points ``k`` and ``k + 1`` every output ``x`` has rank ``C_k`` (the values at points
    ``≤ k``), so interval ``k`` is drawn with probability proportional to its width times
    ``exp(−ε·|C_k − n/2|)`` and the output is uniform inside it (intervals between two
    empty points split one of :class:`Median`'s gaps in parts of the same weight per unit
    length, and the gaps of width zero between equal values carry no mass in either).

    Privacy: adding or removing one record changes one count of one row by one (the query's
    L1 sensitivity, declared as 1), which moves ``|C_k − n/2|`` by at most 1/2 for every
    ``k``: rank utility sensitivity 1/2, so each row's draw is ε-DP, and rows hold disjoint
    records (parallel composition), so the call is ε-DP. The grid is public and fixed
    before the data is seen.

    Examples
    --------
    >>> counts = np.zeros((2, 11)); counts[0, 2:5] = 20; counts[1, 7:10] = 20
    >>> medians = GridMedian(epsilon=5.0, random_state=0).randomise(counts)
    >>> bool(0.2 <= medians[0] <= 0.4 and 0.7 <= medians[1] <= 0.9)
    True
    """

    name = "grid_median"

    def __init__(self, epsilon: float, bounds: Bounds = (0.0, 1.0), random_state: RandomStateLike = None) -> None:
        super().__init__(epsilon, 1.0, random_state)
        lower, upper = check_bounds(bounds, 1)
        self.lower, self.upper = float(lower[0]), float(upper[0])

    def randomise(self, histograms: ArrayLike) -> np.ndarray:
        counts = np.atleast_2d(np.asarray(histograms, dtype=float))
        n_points = counts.shape[1]
        if n_points < 2:
            raise ValueError("a grid median needs at least two grid points")
        below = np.cumsum(counts, axis=1)[:, :-1]  # rank inside interval k: values at points ≤ k
        half = counts.sum(axis=1, keepdims=True) / 2.0
        scores = -self.epsilon * np.abs(below - half)
        chosen = np.asarray(exact_choice(scores, self.rng))
        step = (self.upper - self.lower) / (n_points - 1)
        output = self.lower + (chosen + self.rng.random(len(chosen))) * step
        return np.asarray(self._released(counts, output), dtype=float)
