"""The exponential mechanism, in log space."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism
from dpcore.validation import RandomStateLike

SELECTION_METHODS = ("gumbel", "permute_and_flip")


class Exponential(Mechanism):
    r"""Pick a candidate with probability ``∝ exp(ε·u / (2Δu))``.

    Privacy: if every candidate's utility ``u`` moves by at most ``Δu`` (``sensitivity``)
    when one record is added or removed, the choice is ε-DP (McSherry & Talwar 2007).

    Two samplers, both working on ``ε·u/(2Δu)`` directly so utilities of size 10⁶ or more
    never overflow:

    * ``"gumbel"``: add independent Gumbel noise to the scaled utilities and take the
      argmax, which samples the exponential mechanism exactly.
    * ``"permute_and_flip"``: visit candidates in random order and accept each with
      probability ``exp(ε(u − u*)/(2Δu))`` (McKenna & Sheldon 2020); also ε-DP and never
      worse in expected utility.

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
        """The exact log selection probabilities of the Gumbel sampler (for tests and docs)."""
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
        if self.method == "gumbel":
            choice = np.argmax(scores + self.rng.gumbel(size=scores.shape), axis=-1)
        else:
            choice = self._permute_and_flip(scores)
        return self._released(utilities, choice)

    def _permute_and_flip(self, scores: NDArray[np.float64]) -> np.intp | NDArray[np.intp]:
        rows = np.atleast_2d(scores)
        n_rows, k = rows.shape
        order = np.argsort(self.rng.random((n_rows, k)), axis=1)
        permuted = np.take_along_axis(rows, order, axis=1)
        top = np.max(permuted, axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            accept_log_p = permuted - top
        accepted = np.log(self.rng.random((n_rows, k))) < accept_log_p
        # The best candidate is accepted with probability 1, so every row accepts one.
        first = np.argmax(accepted, axis=1)
        chosen = order[np.arange(n_rows), first]
        return chosen[0] if scores.ndim == 1 else chosen
