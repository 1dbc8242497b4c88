"""Neighbouring-dataset privacy tests, shared by the mechanism tests and (later) the model tests.

The test (after Google's ``VerifyApproximateDp`` / stochastic tester, DP-Auditorium and StatDP):
run a release on a dataset ``D`` and on a neighbour ``D'`` (one record added or removed) many
times with seeded generators, map every output to one of ``m`` outcomes fixed *before* looking
at the outputs (integers, or bins of a continuous output), and estimate, in both directions,

    δ̂(D → D') = Σ_o max(0, P̂_D(o) − e^ε · P̂_D'(o)).

For an ε-DP release the true value is 0 for every partition of the outputs (binning is
post-processing). The estimate is biased upwards by sampling noise, so it is compared with a
tolerance that a correct release exceeds with probability at most ``alpha``:

    Σ_o max(0, p̂_o − e^ε q̂_o) ≤ Σ_o max(0, p_o − e^ε q_o) + TV(p̂, p) + e^ε · TV(q̂, q),

and by Weissman et al. (2003), ``P(‖p̂ − p‖₁ ≥ t) ≤ (2^m − 2)·exp(−n t²/2)``, so with
``t(n) = sqrt(2 (m ln 2 + ln(2/alpha)) / n)`` both empirical distributions are within ``t/2``
in total variation of the truth, simultaneously, with probability at least ``1 − alpha``.
Then a correct release has ``δ̂(D → D') ≤ (t(n_D) + e^ε t(n_D'))/2`` and the mirror bound,
both at once. The bound holds for any number of runs, so a test that fails is evidence,
not noise; it is conservative, so keep the number of outcomes small (≲ 50) and put the bins
where the two output distributions differ most, which is where a privacy bug shows.

Use :func:`estimate_privacy_loss` on outcome codes you computed, or
:func:`neighbouring_privacy_loss` to run a release on both datasets and do everything.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> same = estimate_privacy_loss(rng.integers(0, 3, 20_000), rng.integers(0, 3, 20_000), epsilon=0.1, n_outcomes=3)
>>> same.within_epsilon
True
>>> never_the_same = estimate_privacy_loss(np.zeros(1000, int), np.ones(1000, int), epsilon=1.0, n_outcomes=2)
>>> never_the_same.within_epsilon, never_the_same.loss
(False, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Default false-alarm rate: the chance that a correct ε-DP release fails the test.
ALPHA = 1e-6


def l1_deviation_bound(n_samples: int, n_outcomes: int, alpha: float) -> float:
    """``t`` with ``P(‖p̂ − p‖₁ ≥ t) ≤ alpha`` for an empirical distribution of ``n_samples`` draws.

    Weissman, Ordentlich, Seroussi, Verdú & Weinberger (2003): the probability is at most
    ``(2^m − 2) exp(−n t²/2)``; ``2^m − 2`` is replaced by ``2^m`` (conservative, no overflow).
    """
    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    return math.sqrt(2.0 * (n_outcomes * math.log(2.0) + math.log(1.0 / alpha)) / n_samples)


@dataclass(frozen=True)
class PrivacyLossEstimate:
    """The estimated privacy loss of one neighbouring pair at a claimed ε, with its tolerance."""

    epsilon: float
    loss_d_to_d_prime: float
    loss_d_prime_to_d: float
    tolerance_d_to_d_prime: float
    tolerance_d_prime_to_d: float
    n_outcomes: int
    n_runs: tuple[int, int]
    alpha: float

    @property
    def loss(self) -> float:
        """The larger of the two directions' estimated loss ``Σ max(0, P̂ − e^ε P̂')``."""
        return max(self.loss_d_to_d_prime, self.loss_d_prime_to_d)

    @property
    def tolerance(self) -> float:
        return max(self.tolerance_d_to_d_prime, self.tolerance_d_prime_to_d)

    @property
    def within_epsilon(self) -> bool:
        """True unless one direction's loss is beyond its tolerance: consistent with ε-DP."""
        return self.loss_d_to_d_prime <= self.tolerance_d_to_d_prime and self.loss_d_prime_to_d <= self.tolerance_d_prime_to_d

    @property
    def excess(self) -> float:
        """How far the worse direction is beyond its tolerance (> 0 means ε-DP is rejected)."""
        return max(
            self.loss_d_to_d_prime - self.tolerance_d_to_d_prime,
            self.loss_d_prime_to_d - self.tolerance_d_prime_to_d,
        )

    def __str__(self) -> str:
        return (
            f"claimed ε = {self.epsilon:g}: estimated loss D→D' = {self.loss_d_to_d_prime:.4f} "
            f"(tolerance {self.tolerance_d_to_d_prime:.4f}), D'→D = {self.loss_d_prime_to_d:.4f} "
            f"(tolerance {self.tolerance_d_prime_to_d:.4f}); {self.n_outcomes} outcomes, "
            f"{self.n_runs[0]} + {self.n_runs[1]} runs, false-alarm rate {self.alpha:g}"
        )


def _histogram(codes: np.ndarray, n_outcomes: int) -> np.ndarray:
    return np.bincount(codes, minlength=n_outcomes)[:n_outcomes] / codes.size


def estimate_privacy_loss(
    codes_d,
    codes_d_prime,
    epsilon: float,
    n_outcomes: int | None = None,
    alpha: float = ALPHA,
) -> PrivacyLossEstimate:
    """Estimate ``Σ_o max(0, P̂_D(o) − e^ε P̂_D'(o))`` both ways, with a tolerance at false-alarm rate ``alpha``.

    ``codes_d`` and ``codes_d_prime`` are the outcome codes (integers ``0 … m−1``) of
    independent runs on ``D`` and ``D'``. ``n_outcomes`` is ``m``, the number of possible
    outcomes, which must be fixed before the runs (e.g. by :func:`discretise`); ``None``
    takes the number of distinct codes seen, an approximation that is fine when every
    possible outcome has shown up.
    """
    codes_d = np.asarray(codes_d).ravel()
    codes_d_prime = np.asarray(codes_d_prime).ravel()
    if codes_d.size == 0 or codes_d_prime.size == 0:
        raise ValueError("need at least one run on each dataset")
    if not (np.issubdtype(codes_d.dtype, np.integer) and np.issubdtype(codes_d_prime.dtype, np.integer)):
        raise TypeError("outcome codes must be integers; use discretise() for continuous outputs")
    if min(codes_d.min(), codes_d_prime.min()) < 0:
        raise ValueError("outcome codes must be >= 0")
    seen = int(max(codes_d.max(), codes_d_prime.max())) + 1
    if n_outcomes is None:
        n_outcomes = len(np.union1d(codes_d, codes_d_prime))
        size = seen
    else:
        if seen > n_outcomes:
            raise ValueError(f"an outcome code is >= n_outcomes ({n_outcomes})")
        size = n_outcomes
    p = _histogram(codes_d, size)
    q = _histogram(codes_d_prime, size)
    e_eps = math.exp(epsilon)
    # alpha/2 for each of the two empirical distributions: both deviation bounds hold at once
    # with probability >= 1 - alpha, and together they cover both directions.
    t_d = l1_deviation_bound(codes_d.size, n_outcomes, alpha / 2.0)
    t_d_prime = l1_deviation_bound(codes_d_prime.size, n_outcomes, alpha / 2.0)
    return PrivacyLossEstimate(
        epsilon=float(epsilon),
        loss_d_to_d_prime=float(np.maximum(0.0, p - e_eps * q).sum()),
        loss_d_prime_to_d=float(np.maximum(0.0, q - e_eps * p).sum()),
        tolerance_d_to_d_prime=(t_d + e_eps * t_d_prime) / 2.0,
        tolerance_d_prime_to_d=(t_d_prime + e_eps * t_d) / 2.0,
        n_outcomes=int(n_outcomes),
        n_runs=(int(codes_d.size), int(codes_d_prime.size)),
        alpha=float(alpha),
    )


def discretise(outputs, edges) -> tuple[np.ndarray, int]:
    """Map continuous outputs to outcome codes over fixed bins; returns ``(codes, n_outcomes)``.

    ``edges`` are increasing cut points; each output dimension gets ``len(edges) + 2``
    outcomes: ``(−∞, e_0)``, the ``len(edges) − 1`` inner bins, ``[e_last, ∞)`` and NaN.
    ``outputs`` of shape ``(runs,)`` use one set of edges; ``(runs, d)`` take one shared
    ``edges`` array or a list of ``d`` arrays, and the joint bin is the outcome (keep ``d``
    small: the number of outcomes multiplies).

    >>> discretise([-5.0, 0.2, 0.7, 3.0, float("nan")], edges=[0.0, 0.5, 1.0])
    (array([0, 1, 2, 3, 4]), 5)
    """
    outputs = np.asarray(outputs, dtype=float)
    columns = outputs[:, None] if outputs.ndim == 1 else outputs
    if columns.ndim != 2:
        raise ValueError("outputs must be one value or one row of values per run")
    d = columns.shape[1]
    per_dim = [np.asarray(edges, dtype=float)] * d if np.ndim(edges[0]) == 0 else [np.asarray(e, dtype=float) for e in edges]
    if len(per_dim) != d:
        raise ValueError(f"got {len(per_dim)} edge arrays for {d} output dimensions")
    codes, sizes = [], []
    for j, cut in enumerate(per_dim):
        if cut.ndim != 1 or np.any(np.diff(cut) <= 0):
            raise ValueError("edges must be strictly increasing")
        column = columns[:, j]
        code = np.searchsorted(cut, column, side="right")
        codes.append(np.where(np.isnan(column), cut.size + 1, code))
        sizes.append(cut.size + 2)
    return np.ravel_multi_index(codes, sizes), int(np.prod(sizes))


def run_many(release: Callable[[Any, np.random.Generator], Any], data, n_runs: int, seed) -> np.ndarray:
    """``release(data, rng)`` called ``n_runs`` times with one seeded Generator; the outputs stacked."""
    rng = np.random.default_rng(seed)
    return np.asarray([release(data, rng) for _ in range(n_runs)])


def neighbouring_privacy_loss(
    release: Callable[[Any, np.random.Generator], Any],
    d,
    d_prime,
    epsilon: float,
    n_runs: int,
    edges: Sequence | None = None,
    n_outcomes: int | None = None,
    seed: int = 0,
    alpha: float = ALPHA,
) -> PrivacyLossEstimate:
    """Run ``release`` on ``d`` and on ``d_prime`` (independent seeded streams) and estimate the loss.

    ``release(data, rng)`` must draw all its randomness from ``rng`` and return an integer
    outcome, or a number / small vector that ``edges`` bins (see :func:`discretise`).
    """
    seed_d, seed_d_prime = np.random.SeedSequence(seed).spawn(2)
    out_d = run_many(release, d, n_runs, seed_d)
    out_d_prime = run_many(release, d_prime, n_runs, seed_d_prime)
    if edges is not None:
        out_d, n_outcomes = discretise(out_d, edges)
        out_d_prime, _ = discretise(out_d_prime, edges)
    return estimate_privacy_loss(out_d, out_d_prime, epsilon, n_outcomes=n_outcomes, alpha=alpha)


# --- distribution tests ------------------------------------------------------------------


def chi_square_pvalue(observed_counts, probabilities, min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of counts against exact cell probabilities.

    Cells expected to hold fewer than ``min_expected`` draws are pooled into one cell, so
    the chi-square approximation holds. Any draw in a cell of probability 0 gives p = 0.
    """
    from scipy import stats

    observed = np.asarray(observed_counts, dtype=float).ravel()
    probabilities = np.asarray(probabilities, dtype=float).ravel()
    if observed.shape != probabilities.shape:
        raise ValueError("one probability per cell")
    if np.any(observed[probabilities == 0] > 0):
        return 0.0
    expected = probabilities / probabilities.sum() * observed.sum()
    small = expected < min_expected
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected).pvalue)


def assert_within_epsilon(estimate: PrivacyLossEstimate) -> None:
    """Fail unless the estimate is consistent with ε-DP (a correct release fails w.p. ≤ alpha)."""
    assert estimate.within_epsilon, f"privacy loss beyond ε: {estimate}"


def assert_exceeds_epsilon(estimate: PrivacyLossEstimate) -> None:
    """Fail unless the test rejects ε-DP: used to show the test catches a broken release."""
    assert not estimate.within_epsilon, f"the privacy test did not catch a release known to be broken: {estimate}"
