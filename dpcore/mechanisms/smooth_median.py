"""The median of a few answers, with noise scaled to its smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike, check_bounds, check_delta

NOISES = ("laplace", "heavy_tailed")


def median_smooth_sensitivity(answers: ArrayLike, beta: float, lower: float = 0.0, upper: float = 1.0) -> NDArray[np.float64]:
    r"""The exact β-smooth sensitivity of the median, one value per row of ``answers``.

    Each row holds ``k`` answers clipped to ``[lower, upper]``; the median is the order
    statistic ``x_m``, ``m = ⌈k/2⌉`` (1-based, the lower median for even ``k``). With the
    answers sorted and ``x_i = lower`` for ``i < 1``, ``x_i = upper`` for ``i > k``,

    ``S*(x) = max_{t ≥ 0} e^(−tβ) · max_{0 ≤ j ≤ t+1} (x_{m+j} − x_{m+j−t−1})``

    (NRS 2007, Proposition 3.4: the inner max is the largest change of the median when ``t+1``
    answers are replaced). It is computed exactly in ``O(k²)`` per row, vectorised over rows;
    ``t`` stops at ``k`` since from there the inner max is ``upper − lower``.

    >>> float(median_smooth_sensitivity([[0.5, 0.5, 0.5]], beta=1.0)[0]) == 0.5 * math.exp(-1.0)
    True
    """
    x = np.sort(np.clip(np.atleast_2d(np.asarray(answers, dtype=float)), lower, upper), axis=1)
    rows, k = x.shape
    m = (k + 1) // 2
    # padded[:, k + 1 + i] is x_i (1-based) for i in 1..k; lower below, upper above.
    padded = np.concatenate([np.full((rows, k + 2), lower), x, np.full((rows, k + 2), upper)], axis=1)
    offset = k + 1
    best = np.zeros(rows)
    for t in range(k + 1):
        j = np.arange(t + 2)
        widths = padded[:, offset + m + j] - padded[:, offset + m + j - t - 1]
        best = np.maximum(best, math.exp(-t * beta) * widths.max(axis=1))
    return best


def heavy_tailed_noise(rng: np.random.Generator, size: int | tuple[int, ...], gamma: float) -> NDArray[np.float64]:
    """Draws from the density ``∝ 1/(1 + |z|^γ)``, exactly.

    ``U = |Z|^γ`` has density ``∝ u^(1/γ − 1)/(1 + u)``, the beta-prime distribution with
    parameters ``(1/γ, 1 − 1/γ)``, so ``U = B/(1 − B)`` with ``B ~ Beta(1/γ, 1 − 1/γ)``; the
    sign is a fair coin.
    """
    b = rng.beta(1.0 / gamma, 1.0 - 1.0 / gamma, size=size)
    magnitude = (b / (1.0 - b)) ** (1.0 / gamma)
    return np.where(rng.random(size) < 0.5, -magnitude, magnitude)


class SmoothMedian(Mechanism):
    r"""Release the median of each row of ``k`` answers plus noise scaled to its smooth sensitivity.

    The answers are the ``k`` blocks' answers to one query in subsample-and-aggregate: one
    record is in one block, so adding or removing it changes **one answer of the row** (the
    rows of a batch all change in the same block). On such neighbouring answer vectors NRS
    2007's analysis applies as written (``k`` is public and fixed).

    Output: ``median + (S*_β(x)/α)·Z``, clipped to ``[lower, upper]`` (post-processing), with
    ``S*_β`` from :func:`median_smooth_sensitivity` and an (α, β)-admissible noise ``Z``
    (NRS 2007, Definition 2.5 and Lemma 2.6: then the release is (ε, δ)-DP):

    * ``noise="laplace"`` (needs δ > 0): ``Z`` standard Laplace, ``α = ε/2``,
      ``β = ε/(2 ln(2/δ))`` (NRS 2007, Lemma 2.9, Laplace): (ε, δ)-DP, approximate.
    * ``noise="heavy_tailed"`` (δ = 0): ``Z ∝ 1/(1 + |z|^γ)`` with ``γ > 1``,
      ``α = ε/(4γ)``, ``β = ε/γ`` (NRS 2007, Lemma 2.7): pure ε-DP, heavier tails.

    ``sensitivity`` is ``upper − lower``: the most one changed answer can move the median,
    declared for the call recorder; the noise itself follows the smooth bound.

    Examples
    --------
    >>> mech = SmoothMedian(epsilon=1.0, delta=1e-6, random_state=0)
    >>> mech.randomise([[0.4, 0.5, 0.6], [0.1, 0.1, 0.9]]).shape
    (2,)
    """

    name = "smooth_median"

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        noise: str | None = None,
        lower: float = 0.0,
        upper: float = 1.0,
        gamma: float = 4.0,
        random_state: RandomStateLike = None,
    ) -> None:
        check_bounds((lower, upper), 1)
        super().__init__(epsilon, upper - lower, random_state)
        self.delta = check_delta(delta)
        self.noise = noise if noise is not None else ("laplace" if self.delta > 0 else "heavy_tailed")
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")
        if self.noise == "laplace" and not 0 < self.delta < 1:
            raise ValueError("Laplace noise on the smooth sensitivity needs 0 < delta < 1 (it is (ε, δ)-DP)")
        if not gamma > 1:
            raise ValueError("gamma must be above 1")
        self.lower, self.upper, self.gamma = float(lower), float(upper), float(gamma)

    @property
    def alpha(self) -> float:
        """The noise scale divisor α of the admissible noise."""
        return self.epsilon / 2.0 if self.noise == "laplace" else self.epsilon / (4.0 * self.gamma)

    @property
    def beta(self) -> float:
        """The smoothing β: how fast the sensitivity of distant answer vectors is discounted."""
        return self.epsilon / (2.0 * math.log(2.0 / self.delta)) if self.noise == "laplace" else self.epsilon / self.gamma

    def randomise(self, answers: ArrayLike) -> NDArray[np.float64]:
        """One noisy median per row of ``answers`` (a 1-D array is one row)."""
        rows = np.clip(np.atleast_2d(np.asarray(answers, dtype=float)), self.lower, self.upper)
        if rows.shape[1] == 0:
            raise ValueError("each query needs at least one answer")
        median = np.sort(rows, axis=1)[:, (rows.shape[1] + 1) // 2 - 1]
        noisy = self.add_noise(median, median_smooth_sensitivity(rows, self.beta, self.lower, self.upper))
        return self._released(rows, noisy)

    def add_noise(self, median: NDArray[np.float64], smooth_sensitivity: NDArray[np.float64]) -> NDArray[np.float64]:
        """``median + (S*/α)·Z``, clipped to the bounds and rounded to a fixed grid (the release step of :meth:`randomise`)."""
        if self.noise == "laplace":
            z = self.rng.laplace(0.0, 1.0, size=median.shape)
        else:
            z = heavy_tailed_noise(self.rng, median.shape, self.gamma)
        noisy = np.clip(median + smooth_sensitivity / self.alpha * z, self.lower, self.upper)
        # A fixed output grid (2^-20 of the range, data-independent) drops the low-order float bits
        # that Mironov's 2012 attack reads; post-processing, so ε and δ are unchanged.
        grid = (self.upper - self.lower) * 2.0**-20
        return self.lower + np.round((noisy - self.lower) / grid) * grid
