"""Randomized response: the classic coin and its k-ary generalisation."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike, check_positive_int

COIN_EPSILON = math.log(3.0)


class KaryRandomizedResponse(Mechanism):
    r"""Keep each category code with probability ``p = e^ε/(e^ε+k−1)``, else report a uniform other one.

    Privacy (local, per value): for any two true values ``a, b`` and any output ``o``,
    ``P(o | a) / P(o | b) ≤ p / q = e^ε`` with ``q = 1/(e^ε+k−1)``, so each released value is
    ε-DP on its own; whole-table release follows by parallel composition over records.

    Values outside ``0 … k−1`` (unknown or missing codes, given as negative numbers) are
    replaced by a uniformly random category — never passed through — which is a valid
    output distribution too (each output has probability ``1/k``, between ``q`` and ``p``).

    The buyer's unbiased estimator of the true frequency of category ``j`` from the released
    share ``λ̂_j`` is ``π̂_j = (λ̂_j − q)/(p − q)``. For a fixed table its variance is
    ``(π_j p(1−p) + (1−π_j) q(1−q)) / (n (p−q)²)`` (each record's output is an independent
    Bernoulli draw); the textbook ``λ_j(1−λ_j)/(n (p−q)²)`` also counts sampling the table from
    a population and over-covers for the table itself.

    Examples
    --------
    >>> rr = KaryRandomizedResponse(epsilon=1.0, n_categories=3, random_state=0)
    >>> rr.randomise([0, 1, 2, -1]).shape
    (4,)
    """

    name = "randomized_response"

    def __init__(self, epsilon: float, n_categories: int, random_state: RandomStateLike = None) -> None:
        super().__init__(epsilon, 1.0, random_state)
        self.n_categories = check_positive_int(n_categories, "n_categories", minimum=2)

    @property
    def keep_probability(self) -> float:
        """``p``: the chance a true category is written unchanged."""
        return 1.0 / (1.0 + (self.n_categories - 1) * math.exp(-self.epsilon))

    @property
    def other_probability(self) -> float:
        """``q``: the chance of writing one particular other category."""
        return (1.0 - self.keep_probability) / (self.n_categories - 1)

    def response_matrix(self) -> NDArray[np.float64]:
        """``M[o, t] = P(output o | true t)``."""
        k = self.n_categories
        matrix = np.full((k, k), self.other_probability)
        np.fill_diagonal(matrix, self.keep_probability)
        return matrix

    def randomise(self, codes: ArrayLike) -> NDArray[np.int64]:
        codes = np.asarray(codes)
        k = self.n_categories
        valid = (codes >= 0) & (codes < k)
        true = np.where(valid, codes, 0).astype(np.int64)
        keep = self.rng.random(codes.shape) < self.keep_probability
        # A uniform draw over the k−1 other categories: shift past the true one.
        other = self.rng.integers(0, k - 1, size=codes.shape)
        other = other + (other >= true)
        uniform = self.rng.integers(0, k, size=codes.shape)
        released = np.where(valid, np.where(keep, true, other), uniform)
        return self._released(codes, released)

    def randomise_keyed(self, codes: ArrayLike, uniforms: ArrayLike) -> NDArray[np.int64]:
        """:meth:`randomise` with each row's randomness given: ``uniforms`` ``(n, 2)`` in [0, 1), independent across rows.

        For draws that must not depend on which process randomises a row (keyed per-row draws,
        :mod:`dpcore.mechanisms.keyed`): the first uniform decides keeping, the second picks the
        other category (or, for a value outside ``0 … k−1``, the uniform one). Each output's
        probability is the mechanism's up to the uniforms' 2^-53 grid, so the bound is unchanged.
        """
        codes, uniforms = np.asarray(codes), np.asarray(uniforms, dtype=float)
        k = self.n_categories
        valid = (codes >= 0) & (codes < k)
        true = np.where(valid, codes, 0).astype(np.int64)
        keep = uniforms[:, 0] < self.keep_probability
        other = np.minimum(np.floor(uniforms[:, 1] * (k - 1)), k - 2).astype(np.int64)
        other = other + (other >= true)
        uniform = np.minimum(np.floor(uniforms[:, 1] * k), k - 1).astype(np.int64)
        released = np.where(valid, np.where(keep, true, other), uniform)
        return self._released(codes, released)

    def estimate_from_counts(self, counts: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Unbiased true-share estimates and their standard errors from released category counts."""
        counts = np.asarray(counts, dtype=float)
        n = max(counts.sum(), 1.0)
        p, q = self.keep_probability, self.other_probability
        estimate = (counts / n - q) / (p - q)
        return estimate, self.share_std_error(estimate, n)

    def share_std_error(self, share: ArrayLike, n: float) -> NDArray[np.float64]:
        """Standard error of an estimated true share from ``n`` released values: √((π p(1−p) + (1−π) q(1−q))/n)/(p−q)."""
        p, q = self.keep_probability, self.other_probability
        pi = np.clip(np.asarray(share, dtype=float), 0.0, 1.0)  # the variance formula needs a share in [0, 1]
        return np.asarray(np.sqrt((pi * p * (1 - p) + (1 - pi) * q * (1 - q)) / max(n, 1.0)) / (p - q))

    def estimate_frequencies(self, released_codes: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """:meth:`estimate_from_counts` on the counts of released codes."""
        return self.estimate_from_counts(
            np.bincount(np.asarray(released_codes), minlength=self.n_categories)[: self.n_categories]
        )


class CoinRandomizedResponse(KaryRandomizedResponse):
    r"""Warner's two-coin randomized response for yes/no values (ε = ln 3).

    First coin heads: answer truthfully; tails: a second fair coin decides. The truth is
    kept with probability 3/4, so ``P(o|a)/P(o|b) ≤ (3/4)/(1/4) = 3``. The buyer's estimate
    of the true share of "yes" from the released share ``λ̂`` is ``π̂ = 2λ̂ − 1/2``.
    """

    name = "coin_randomized_response"

    def __init__(self, random_state: RandomStateLike = None) -> None:
        super().__init__(COIN_EPSILON, 2, random_state)

    def randomise(self, codes: ArrayLike) -> NDArray[np.int64]:
        codes = np.asarray(codes)
        valid = (codes == 0) | (codes == 1)
        first_heads = self.rng.random(codes.shape) < 0.5
        second = self.rng.integers(0, 2, size=codes.shape)
        released = np.where(valid & first_heads, codes, second).astype(np.int64)
        return self._released(codes, released)

    def randomise_keyed(self, codes: ArrayLike, uniforms: ArrayLike) -> NDArray[np.int64]:
        """:meth:`randomise` with each row's two coins given as ``uniforms`` ``(n, 2)`` in [0, 1)."""
        codes, uniforms = np.asarray(codes), np.asarray(uniforms, dtype=float)
        valid = (codes == 0) | (codes == 1)
        second = (uniforms[:, 1] >= 0.5).astype(np.int64)
        released = np.where(valid & (uniforms[:, 0] < 0.5), codes, second).astype(np.int64)
        return self._released(codes, released)
