"""What an attack measured, and what ε allows: ROC curves, error bars and the ceilings of differential privacy.

An attack gives every record (or person) a score: the higher, the surer the attacker is that
it was a member. Sweeping a threshold over the scores gives the attack's **ROC curve**, true-
positive rate (members spotted) against false-positive rate (non-members wrongly accused).

The ceiling
-----------
For an (ε, δ)-DP model, any test that tells "x was in the training data" from "x was not" has,
at every threshold (Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022),

    TPR ≤ e^ε · FPR + δ    and    1 − FPR ≤ e^ε · (1 − TPR) + δ,

so the ROC curve stays under :func:`tpr_ceiling`. Integrating that curve gives the largest AUC
ε allows, ``e^ε/(1 + e^ε)`` for δ = 0 (:func:`auc_ceiling`), and the largest advantage
``max(TPR − FPR) = (e^ε − 1 + 2δ)/(e^ε + 1)`` (:func:`advantage_ceiling`).

Measured rates carry sampling error. :func:`clopper_pearson` gives exact binomial intervals,
and :func:`epsilon_lower_bound` turns an event's frequencies on two neighbouring inputs into a
high-confidence lower bound on the ε that produced them: if the lower bound is above the claimed
ε, the claim is false (with the stated confidence); if not, the test found no violation.

Examples
--------
>>> round(auc_ceiling(1.0), 4), round(advantage_ceiling(1.0), 4)
(0.7311, 0.4621)
>>> fpr, tpr = roc([0.9, 0.8, 0.3, 0.1], [True, True, False, False])
>>> roc_auc(fpr, tpr), tpr_at(fpr, tpr, 0.01)
(1.0, 1.0)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import beta

#: The false-positive rate at which the headline true-positive rate is read.
LOW_FPR = 0.01
#: Points kept of a ROC curve for charts and reports.
CURVE_POINTS = 200


def tpr_ceiling(fpr: ArrayLike, epsilon: float, delta: float = 0.0) -> NDArray[np.float64]:
    """The highest true-positive rate an (ε, δ)-DP model lets any attack reach at false-positive rate ``fpr``."""
    rate = np.clip(np.asarray(fpr, dtype=np.float64), 0.0, 1.0)
    grow = math.exp(epsilon)
    return np.clip(np.minimum(grow * rate + delta, 1.0 - (1.0 - delta - rate) / grow), rate, 1.0)


def auc_ceiling(epsilon: float, delta: float = 0.0) -> float:
    """The largest area under the ROC curve an (ε, δ)-DP model allows (``e^ε/(1+e^ε)`` when δ = 0)."""
    if delta == 0.0:
        return 1.0 / (1.0 + math.exp(-epsilon))
    grid = np.linspace(0.0, 1.0, 20_001)
    return float(np.trapezoid(tpr_ceiling(grid, epsilon, delta), grid))


def advantage_ceiling(epsilon: float, delta: float = 0.0) -> float:
    """The largest membership advantage ``TPR − FPR`` an (ε, δ)-DP model allows."""
    return min(1.0, (math.exp(epsilon) - 1.0 + 2.0 * delta) / (math.exp(epsilon) + 1.0))


def roc(scores: ArrayLike, members: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(fpr, tpr)`` of thresholding ``scores`` (higher: "member"), from (0, 0) to (1, 1).

    Tied scores make one step, so a score that says nothing (all equal) gives the diagonal;
    reading the curve between its corners (:func:`tpr_at`) is the rate of a threshold that
    breaks the tie by a coin, which an attacker can do.
    """
    scores = np.asarray(scores, dtype=float)
    members = np.asarray(members, dtype=bool)
    n_in, n_out = int(members.sum()), int((~members).sum())
    if n_in == 0 or n_out == 0:
        raise ValueError("a ROC curve needs both members and non-members")
    order = np.argsort(-scores, kind="stable")
    ranked, hit = scores[order], members[order]
    last_of_tie = np.r_[ranked[1:] != ranked[:-1], True]
    tp = np.cumsum(hit)[last_of_tie]
    fp = np.cumsum(~hit)[last_of_tie]
    return np.r_[0.0, fp / n_out], np.r_[0.0, tp / n_in]


def roc_auc(fpr: ArrayLike, tpr: ArrayLike) -> float:
    """Area under a ROC curve (ties counted as half, like the Mann–Whitney statistic)."""
    return float(np.trapezoid(np.asarray(tpr, dtype=float), np.asarray(fpr, dtype=float)))


def auc_error(auc: float, n_members: int, n_non_members: int) -> float:
    """Half-width of a 95 % interval for an AUC (Hanley & McNeil 1982)."""
    q1, q2 = auc / (2.0 - auc), 2.0 * auc**2 / (1.0 + auc)
    variance = (auc * (1 - auc) + (n_members - 1) * (q1 - auc**2) + (n_non_members - 1) * (q2 - auc**2)) / (
        n_members * n_non_members
    )
    return 1.96 * math.sqrt(max(variance, 0.0))


def tpr_at(fpr: ArrayLike, tpr: ArrayLike, at: float = LOW_FPR) -> float:
    """The true-positive rate at false-positive rate ``at``, read off the curve between its corners."""
    return float(_envelope(np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float), np.asarray([at]))[0])


def thin(fpr: ArrayLike, tpr: ArrayLike, points: int = CURVE_POINTS) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The curve read at ``points`` false-positive rates, log-spaced near 0 where attacks matter most."""
    grid = np.unique(np.r_[0.0, np.geomspace(1e-4, 1.0, points - 1)])
    return grid, _envelope(np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float), grid)


def _envelope(fpr: NDArray[np.float64], tpr: NDArray[np.float64], at: NDArray[np.float64]) -> NDArray[np.float64]:
    """A ROC curve read at ``at`` by straight lines between its corners, taking the top of vertical steps."""
    top = np.r_[fpr[1:] != fpr[:-1], True]
    return np.interp(at, fpr[top], tpr[top])


def clopper_pearson(successes: ArrayLike, trials: ArrayLike, alpha: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided exact binomial bounds: ``(lower, upper)``, each wrong with probability at most ``alpha``."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(k < n, beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return np.nan_to_num(lower, nan=0.0), np.nan_to_num(upper, nan=1.0)


def epsilon_lower_bound(
    hits_in: ArrayLike, n_in: ArrayLike, hits_out: ArrayLike, n_out: ArrayLike, confidence: float = 0.95, delta: float = 0.0
) -> NDArray[np.float64]:
    """A lower bound on ε from how often one event happened with and without the record.

    ``hits_in`` of ``n_in`` runs (or members) showed the event with the record, ``hits_out`` of
    ``n_out`` without. For an (ε, δ)-DP mechanism ``P_in ≤ e^ε P_out + δ``, so
    ``ε ≥ ln((P_in − δ)/P_out)``; with Clopper–Pearson bounds ``P_in ≥ lower`` and
    ``P_out ≤ upper`` (each at error ``(1 − confidence)/2``) the bound holds with probability at
    least ``confidence``. It is 0 when the data show no privacy loss at all.

    >>> round(float(epsilon_lower_bound(100, 100, 0, 100)), 2)
    3.28
    """
    alpha = (1.0 - confidence) / 2.0
    low_in, _ = clopper_pearson(hits_in, n_in, alpha)
    _, high_out = clopper_pearson(hits_out, n_out, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.log(np.maximum(low_in - delta, 0.0) / high_out)
    return np.nan_to_num(np.maximum(bound, 0.0), nan=0.0, neginf=0.0)


def largest_certifiable(n_runs: int, confidence: float = 0.95) -> float:
    """The largest ε lower bound ``n_runs`` runs each way could ever show (perfect separation)."""
    return float(epsilon_lower_bound(n_runs, n_runs, 0, n_runs, confidence))


def best_event(
    scores: NDArray[np.float64],
    members: NDArray[np.bool_],
    n_test: tuple[int, int],
    confidence: float = 0.95,
    delta: float = 0.0,
    candidates: int = 64,
) -> tuple[float, bool, bool]:
    """The event on the scores that should prove the largest ε on a test of ``n_test`` runs.

    ``scores`` and ``members`` are the pilot: outputs with the record (True) and without it.
    Every candidate event — a score at or above a threshold (a quantile of the pilot), or below
    it — and each way round (likelier with the record, or without it: DP bounds both ratios)
    gets the lower bound :func:`epsilon_lower_bound` would give if the test's frequencies matched
    the pilot's, with ``n_test = (runs with, runs without)``; that favours events frequent enough
    to be measured. Returns ``(threshold, above, likelier_with)``: the event is ``score ≥
    threshold`` when ``above``, else ``score < threshold``. Choose it on data that are not used
    to test it.
    """
    cuts = np.unique(np.quantile(scores, np.linspace(0.0, 1.0, candidates + 1)[1:-1])) if scores.size else np.zeros(0)
    if cuts.size == 0:
        return 0.0, True, True
    at_or_above = scores[:, None] >= cuts[None, :]
    n_in, n_out = max(int(members.sum()), 1), max(int((~members).sum()), 1)
    p_in = (at_or_above[members].sum(axis=0) + 0.5) / (n_in + 1.0)
    p_out = (at_or_above[~members].sum(axis=0) + 0.5) / (n_out + 1.0)
    test_in, test_out = n_test

    def bound(first: NDArray[np.float64], n_first: int, second: NDArray[np.float64], n_second: int) -> NDArray[np.float64]:
        proven = epsilon_lower_bound(np.round(first * n_first), n_first, np.round(second * n_second), n_second, confidence, delta)
        return proven + 1e-9 * np.log(first / second)  # ties (e.g. all 0) go to the larger point estimate

    options = np.stack(
        [
            bound(p_in, test_in, p_out, test_out),
            bound(p_out, test_out, p_in, test_in),
            bound(1 - p_in, test_in, 1 - p_out, test_out),
            bound(1 - p_out, test_out, 1 - p_in, test_in),
        ]
    )
    which, best = np.unravel_index(int(np.argmax(options)), options.shape)
    return float(cuts[best]), bool(which < 2), bool(which % 2 == 0)


def empirical_epsilon(
    scores: ArrayLike,
    members: ArrayLike,
    confidence: float = 0.95,
    delta: float = 0.0,
    random_state: np.random.Generator | None = None,
) -> float:
    """A high-confidence lower bound on the ε an attack's scores reveal.

    Half of the records (at random) choose the attack's best threshold; the other half test
    it with :func:`epsilon_lower_bound`. Choosing and testing on different records keeps the
    bound honest: the threshold is fixed before the records that test it are looked at.
    """
    scores = np.asarray(scores, dtype=float)
    members = np.asarray(members, dtype=bool)
    rng = random_state if random_state is not None else np.random.default_rng()
    choose = rng.random(scores.size) < 0.5
    if members[choose].all() or not members[choose].any() or members[~choose].all() or not members[~choose].any():
        return 0.0
    test_scores, test_members = scores[~choose], members[~choose]
    n_test = (int(test_members.sum()), int((~test_members).sum()))
    threshold, above, likelier_in = best_event(scores[choose], members[choose], n_test, confidence, delta)
    event = (test_scores >= threshold) == above
    hits_in, n_in = int(event[test_members].sum()), int(test_members.sum())
    hits_out, n_out = int(event[~test_members].sum()), int((~test_members).sum())
    if not likelier_in:  # the mirror ratio: non-members show the event more often
        return float(epsilon_lower_bound(hits_out, n_out, hits_in, n_in, confidence, delta))
    return float(epsilon_lower_bound(hits_in, n_in, hits_out, n_out, confidence, delta))
