"""The median of a few answers, with noise scaled to its smooth sensitivity (Nissim, Raskhodnikova & Smith 2007).

Privacy: NRS's continuous release (the median on a public grid plus noise scaled to a β-smooth
bound on its local sensitivity, Lemmas 2.6, 2.7 and 2.9), rounded to the grid and clipped, which
is post-processing. The rounding is drawn exactly (:mod:`dpcore.mechanisms.exact`), so no float
noise is released; the float rounding of the smooth bound is paid for by a margin on β and on the
noise scale. :class:`SmoothMedian` states the argument step by step.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms import exact
from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike, check_bounds, check_delta

NOISES = ("laplace", "heavy_tailed")
#: The heavy-tailed noise's exponents γ its exact sampler takes.
GAMMAS = range(2, 17)
#: The output grid is 2^-GRID_BITS of the range (data-independent).
GRID_BITS = 20
#: β kept back from the smooth bound's computation for the float rounding of S* and of the noise scale.
BETA_MARGIN = 2.0**-36
#: The noise scale in grid steps is rounded up by this much (relative) past its float error.
SCALE_MARGIN = 2.0**-40


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


class SmoothMedian(Mechanism):
    r"""Release the median of each row of ``k`` answers plus noise scaled to its smooth sensitivity.

    The answers are the ``k`` blocks' answers to one query in subsample-and-aggregate: one
    record is in one block, so adding or removing it changes **one answer of the row** (the
    rows of a batch all change in the same block). On such neighbouring answer vectors NRS
    2007's analysis applies as written (``k`` is public and fixed).

    Output: the median rounded to the grid ``g = 2^-20·(upper − lower)`` (public, data-independent),
    plus ``(S/α)·Z``, rounded to the grid and clipped to ``[lower, upper]`` (post-processing), with
    an (α, β)-admissible noise ``Z`` (NRS 2007, Definition 2.5 and Lemma 2.6: then the release
    is (ε, δ)-DP):

    * ``noise="laplace"`` (needs δ > 0): ``Z`` standard Laplace, ``α = ε/2``,
      ``β = ε/(2 ln(2/δ))`` (NRS 2007, Lemma 2.9, Laplace): (ε, δ)-DP, approximate.
    * ``noise="heavy_tailed"`` (δ = 0): ``Z ∝ 1/(1 + |z|^γ)``, a whole ``γ`` from 2 to 16,
      ``α = ε/(4γ)``, ``β = 3ε/(4(γ − 1))``: pure ε-DP, heavier tails. The density of
      ``m + s·Z`` against its neighbour's ``m' + e^λ·s·Z`` (shift ``d = (m − m')/s``, at most α
      in noise units since ``s ≥ α``-scaled local sensitivity) has log-ratio at most
      ``max(λ, |λ|(γ − 1)) + γ|d|`` (``log(1 + |z|^γ)`` is γ-Lipschitz; a dilation by ``e^λ``
      costs ``|λ|(γ − 1)`` in the tails), so ``β(γ − 1) ≤ 3ε/4`` and ``γα = ε/4`` give ε. At
      the default ``γ = 4`` this is ``β = ε/γ``, the spec's (§10.2); for ``γ ≥ 9`` the spec's
      ``β = ε/γ`` is *not* ε-DP (a shift and a dilation together reach 1.09ε at ``γ = 16``), so
      the smaller β is used.

    Privacy, step by step. (1) The released centre is ``m̃ = lower + g·rint((m − lower)/g)``
    (a monotone float division, then rounding): neighbours' ``m̃`` differ by at most their
    medians' difference plus ``g`` (and a float error far below a second ``g``), so
    ``LS(m̃) ≤ LS(m) + 2g``. (2) ``S = S*_β' + 2g`` bounds it, and stays β'-smooth
    (``S*(x) + 2g ≤ e^β'·(S*(y) + 2g)``). (3) ``S*`` is computed in float at ``β' = β − 2^-36``
    (:attr:`smoothing`) and the scale in grid steps ``S/(α·g)`` is rounded up by 2^-40, past
    the float errors (under 2^-44 relative): the scale used is at least the exact one, and its
    ratio between neighbours at most ``e^β'·(1 + 2^-39) ≤ e^β``, so it is a β-smooth upper
    bound on ``LS(m̃)`` and NRS's lemma applies to the continuous release ``m̃ + (S/α)·Z``.
    (4) The release is that continuous release rounded to the grid and clipped, drawn exactly:
    ``m̃/g`` plus ``round(b·Z)`` for ``b`` the scale in steps, whose law is exactly that
    rounding's, tails included (:func:`~dpcore.mechanisms.exact.rounded_laplace`, and
    :func:`~dpcore.mechanisms.exact.rounded_heavy_tailed` by exact rejection; its cap at twice
    the range in steps is clipped to the same bound as the uncapped value). No float noise is
    left to attack (Mironov 2012), and rounding and clipping are post-processing, so the
    guarantee is the continuous one's.

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
        if gamma not in GAMMAS:
            raise ValueError("gamma must be a whole number from 2 to 16 (exact heavy-tailed noise)")
        self.lower, self.upper, self.gamma = float(lower), float(upper), float(gamma)
        if not self.beta > 2 * BETA_MARGIN:
            raise ValueError("epsilon is too small for the smooth sensitivity's rounding margin")
        # The largest scale in grid steps (S* at most the range) must stay within exact sampling's range; refused here,
        # from public settings, rather than deep in the sampler (a clamped scale would be a privacy bug).
        if (2.0**GRID_BITS + 2.0) / self.alpha * (1.0 + SCALE_MARGIN) > exact.MAX_ROUNDED_SCALE:
            raise ValueError("epsilon is too small for exact noise on the smooth median; use a larger epsilon")

    @property
    def alpha(self) -> float:
        """The noise scale divisor α of the admissible noise."""
        return self.epsilon / 2.0 if self.noise == "laplace" else self.epsilon / (4.0 * self.gamma)

    @property
    def beta(self) -> float:
        """The smoothing β: how fast the sensitivity of distant answer vectors is discounted."""
        if self.noise == "laplace":
            return self.epsilon / (2.0 * math.log(2.0 / self.delta))
        return 3.0 * self.epsilon / (4.0 * (self.gamma - 1.0))

    @property
    def smoothing(self) -> float:
        """The β at which ``S*`` is computed: :attr:`beta` less :data:`BETA_MARGIN` for float rounding."""
        return self.beta - BETA_MARGIN

    def randomise(self, answers: ArrayLike) -> NDArray[np.float64]:
        """One noisy median per row of ``answers`` (a 1-D array is one row)."""
        rows = np.clip(np.atleast_2d(np.asarray(answers, dtype=float)), self.lower, self.upper)
        if rows.shape[1] == 0:
            raise ValueError("each query needs at least one answer")
        median = np.sort(rows, axis=1)[:, (rows.shape[1] + 1) // 2 - 1]
        noisy = self.add_noise(median, median_smooth_sensitivity(rows, self.smoothing, self.lower, self.upper))
        return self._released(rows, noisy)

    def add_noise(self, median: NDArray[np.float64], smooth_sensitivity: NDArray[np.float64]) -> NDArray[np.float64]:
        """The median on the grid plus noise of scale ``(S* + 2g)/α``, clipped to the bounds (the release step of :meth:`randomise`).

        ``smooth_sensitivity`` is ``S*`` at :attr:`smoothing`. With Laplace noise the grid steps
        are drawn exactly (:func:`~dpcore.mechanisms.exact.rounded_laplace`); the class docstring
        has the privacy argument.
        """
        grid = (self.upper - self.lower) * 2.0**-GRID_BITS
        steps = np.rint((median - self.lower) / grid)
        # Rounded up past the float error of S* and of this quotient (under 2^-44 relative).
        scale_steps = (smooth_sensitivity + 2.0 * grid) / self.alpha / grid * (1.0 + SCALE_MARGIN)
        source = exact.GeneratorWords(self.rng)
        if self.noise == "laplace":
            steps = steps + exact.rounded_laplace(source, scale_steps)
        else:
            # Noise beyond twice the range is clipped to the same bound whatever its size: capped there.
            steps = steps + exact.rounded_heavy_tailed(source, scale_steps, int(self.gamma), cap=2 ** (GRID_BITS + 1))
        return self.lower + np.clip(steps, 0, 2**GRID_BITS) * grid
