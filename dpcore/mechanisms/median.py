"""The DP median by the exponential mechanism over gaps between sorted values."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpcore.mechanisms._base import Mechanism
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
        chosen = int(np.argmax(scores + self.rng.gumbel(size=scores.shape)))
        output = edges[chosen] + self.rng.random() * gaps[chosen]
        return float(self._released(values, np.array(output)))
