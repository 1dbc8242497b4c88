"""The stability-based histogram: which values of a column many records share, without a domain.

A column's list of values is private: a value held by one person names that person. The
stability histogram (Korolova, Kenthapadi, Mishra & Ntoulas 2009; Bun, Nissim & Stemmer 2016;
Wilson et al. 2020) releases only the values whose count, plus Laplace noise, clears a
threshold high enough that a value held by one record almost never does.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms.laplace import Laplace
from dpcore.validation import RandomStateLike, check_delta, check_epsilon


def stability_threshold(epsilon: float, delta: float) -> float:
    """``τ = 1 + ln(1/(2δ))/ε``: a count of 1 plus Laplace(1/ε) noise clears it with probability exactly δ.

    >>> round(stability_threshold(1.0, 0.05), 6)  # 1 + ln(10)
    3.302585
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if not 0 < delta < 0.5:
        raise ValueError(f"delta must be above 0 and below 0.5 for a stability histogram, got {delta!r}")
    return 1.0 + math.log(1.0 / (2.0 * delta)) / epsilon


class StabilityHistogram:
    r"""Keep the values whose count plus Laplace(1/ε) noise exceeds ``τ = 1 + ln(1/(2δ))/ε``.

    Privacy argument (add/remove one record, each record holding one value): only values that
    occur are counted, each record adds 1 to the count of its own value and to no other.
    Adding a record whose value already occurs moves one count by 1, and Laplace noise of
    scale 1/ε on that count makes the kept set ε-DP (Dwork et al. 2006; keeping is
    post-processing of the noisy count, which is never released). Adding a record whose value
    did not occur creates a count of 1, which is kept with probability
    ``P(1 + Lap(1/ε) > τ) = ½·exp(−(τ − 1)ε) = δ``, so the release is (ε, δ)-DP. A caller whose
    records are persons with several rows counts each value once per person after bounding
    contributions, and scales ε and δ by group privacy (:func:`dpcore.budget.persons.per_row`).

    The noisy counts, their order and the threshold's margin are never returned: only which
    values were kept (sorted by the caller as it likes).

    Examples
    --------
    >>> kept = StabilityHistogram(1.0, 1e-6, random_state=0).keep([500, 1])
    >>> kept.tolist()
    [True, False]
    """

    def __init__(self, epsilon: float, delta: float, random_state: RandomStateLike = None) -> None:
        self.threshold = stability_threshold(epsilon, delta)
        self.epsilon, self.delta = float(epsilon), float(delta)
        self._noise = Laplace(self.epsilon, 1.0, random_state)

    def keep(self, counts: ArrayLike) -> NDArray[np.bool_]:
        """Which of the values with these counts (each ≥ 1: values that occur) are released."""
        counts = np.asarray(counts, dtype=float)
        if counts.size and counts.min() < 1:
            raise ValueError("a stability histogram counts only values that occur (every count at least 1)")
        # Discrete Laplace on a grid: P(Z ≥ k) = α^k/(1+α) in grid steps. Clearing τ by half a step more makes that
        # at most ½·exp(−(τ − 1)ε) for a count of 1 (1/(2·cosh(1/2a)) ≤ ½), so its chance stays at most δ.
        grid = self._noise.grid_for(counts.size)
        return np.asarray(self._noise.randomise(counts) > self.threshold + grid / 2, dtype=bool)
