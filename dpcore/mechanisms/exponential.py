"""The exponential mechanism, in log space, sampled exactly."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms import exact
from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike

SELECTION_METHODS = ("gumbel", "permute_and_flip")


class Exponential(Mechanism):
    r"""Pick a candidate with probability ``∝ exp(ε·u / (2Δu))``.

    Privacy: if every candidate's utility ``u`` moves by at most ``Δu`` (``sensitivity``)
    when one record is added or removed, the choice is ε-DP (McSherry & Talwar 2007).

    Two samplers, both working on ``ε·u/(2Δu)`` directly so utilities of size 10⁶ or more
    never overflow:

    * ``"gumbel"`` (the name kept from its first sampler, the argmax under Gumbel noise):
      the exponential mechanism itself, drawn by :func:`exact_choice`.
    * ``"permute_and_flip"``: visit candidates in random order and accept each with
      probability ``exp(ε(u − u*)/(2Δu))`` (McKenna & Sheldon 2020); also ε-DP and never
      worse in expected utility.

    Both draw their coins exactly (:func:`~dpcore.mechanisms.exact.bernoulli_exp_neg`, integer
    arithmetic where float64 cannot tell) and their orders from exact integer draws: numpy's
    Gumbel noise came from a float uniform turned into a log and never exceeded about 37, which
    made the choice ε-DP only up to a δ near 1e-14. The law is exact for the scaled scores as
    computed in float64 (a score's rounding moves the privacy loss by about 1e-16 of its size).

    ``utilities`` may be a 2-D array: each row is an independent selection (one per tree
    node), which keeps the models vectorised. ``-inf`` marks a candidate that cannot be
    chosen; ``log_weights`` adds a data-independent base measure (e.g. interval lengths).

    Examples
    --------
    >>> Exponential(epsilon=1.0, random_state=0).select([0.0, 1e6, 0.0])
    np.int64(1)
    """

    name = "exponential"

    def __init__(
        self, epsilon: float, sensitivity: float = 1.0, method: str = "gumbel", random_state: RandomStateLike = None
    ) -> None:
        super().__init__(epsilon, sensitivity, random_state)
        if method not in SELECTION_METHODS:
            raise ValueError(f"method must be one of {SELECTION_METHODS}, got {method!r}")
        self.method = method

    def log_probabilities(self, utilities: ArrayLike, log_weights: ArrayLike | None = None) -> NDArray[np.float64]:
        """The exact log selection probabilities of the exponential mechanism (``"gumbel"``; for tests and docs)."""
        scores = self._scores(np.asarray(utilities, dtype=float), log_weights)
        top = np.max(scores, axis=-1, keepdims=True)
        return scores - top - np.log(np.sum(np.exp(scores - top), axis=-1, keepdims=True))

    def _scores(self, utilities: NDArray[np.float64], log_weights: ArrayLike | None) -> NDArray[np.float64]:
        if self.sensitivity == 0:
            scale = 0.0
        else:
            scale = self.epsilon / (2.0 * self.sensitivity)
        with np.errstate(invalid="ignore"):
            scores = np.where(np.isneginf(utilities), -np.inf, scale * utilities)
        if log_weights is not None:
            scores = scores + np.asarray(log_weights, dtype=float)
        return scores

    def select(self, utilities: ArrayLike, log_weights: ArrayLike | None = None) -> np.intp | NDArray[np.intp]:
        """Return the chosen index (an int for 1-D input, an array of ints per row for 2-D)."""
        utilities = np.asarray(utilities, dtype=float)
        if utilities.ndim not in (1, 2) or utilities.shape[-1] == 0:
            raise ValueError("utilities must be a non-empty 1-D array or a 2-D array of rows")
        if np.any(np.isnan(utilities)) or np.any(np.isposinf(utilities)):
            raise ValueError("utilities must not contain NaN or +inf")
        scores = self._scores(utilities, log_weights)
        if np.any(np.all(np.isneginf(scores), axis=-1)):
            raise ValueError("every candidate has zero weight in at least one selection")
        choice = exact_choice(scores, self.rng) if self.method == "gumbel" else self._permute_and_flip(scores)
        return self._released(utilities, choice)

    def _permute_and_flip(self, scores: NDArray[np.float64]) -> np.intp | NDArray[np.intp]:
        rows = np.atleast_2d(scores)
        n_rows, k = rows.shape
        order = self.rng.permuted(np.broadcast_to(np.arange(k), (n_rows, k)), axis=1)
        permuted = np.take_along_axis(rows, order, axis=1)
        top = np.max(permuted, axis=1, keepdims=True)
        gaps = top - permuted  # −inf scores: an infinite gap, never accepted
        accepted = exact.bernoulli_exp_neg(exact.GeneratorWords(self.rng), gaps).reshape(n_rows, k)
        # The best candidate is accepted with probability 1, so every row accepts one.
        first = np.argmax(accepted, axis=1)
        chosen = order[np.arange(n_rows), first]
        return chosen[0] if scores.ndim == 1 else chosen


def exact_choice(scores: ArrayLike, rng: np.random.Generator) -> np.intp | NDArray[np.intp]:
    """Index ``i`` with probability ``∝ exp(scores[i])`` (per row of a 2-D array), sampled exactly.

    Rejection from the uniform proposal: a candidate drawn uniformly (an exact integer draw)
    is kept with probability ``exp(scores[i] − max)`` (an exact coin), and the first kept one
    of a row is its choice — exactly the exponential mechanism's law. A round proposes as many
    candidates as a row has, so it keeps at least one in expectation (the best is always kept
    when drawn), and rows still empty-handed go again. ``-inf`` is never chosen.
    """
    array = np.asarray(scores, dtype=np.float64)
    rows = np.atleast_2d(array)
    n_rows, k = rows.shape
    if k == 0 or np.isneginf(rows).all(axis=1).any() or np.isnan(rows).any():
        raise ValueError("every row needs a candidate with a finite score")
    gaps = np.max(rows, axis=1, keepdims=True) - rows  # −inf scores: an infinite gap, never kept
    source = exact.GeneratorWords(rng)
    if rows.size <= exact.FEW:
        raw = rng.bit_generator.random_raw
        few = [_choose_one(list(map(float, row)), raw, source) for row in gaps]
        return np.intp(few[0]) if array.ndim == 1 else np.asarray(few, dtype=np.intp)
    chosen = np.zeros(n_rows, dtype=np.intp)
    pending = np.arange(n_rows)
    while pending.size:
        proposals = rng.integers(0, k, size=(pending.size, k))
        kept = exact.bernoulli_exp_neg(source, gaps[pending[:, None], proposals]).reshape(pending.size, k)
        done = kept.any(axis=1)
        chosen[pending[done]] = proposals[done, np.argmax(kept[done], axis=1)]
        pending = pending[~done]
    return chosen[0] if array.ndim == 1 else chosen


def _choose_one(gaps: list[float], raw: Callable[[], int], source: exact.WordSource) -> int:
    """:func:`exact_choice` of one row of a few candidates, one proposal after another on Python numbers."""
    k = len(gaps)
    whole = (1 << 64) - (1 << 64) % k  # words below it map onto 0 … k − 1 equally often
    while True:
        word = raw()
        if word < whole and exact.bernoulli_exp_neg_one(raw, gaps[word % k], source):
            return word % k
