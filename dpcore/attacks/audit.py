r"""Empirical privacy audit: fit a model many times with and without one record, and bound its ε from below.

Differential privacy is a promise about two neighbouring tables, ``D`` and ``D′ = D + x``:
for every set of outputs ``E``, ``P[M(D′) ∈ E] ≤ e^ε · P[M(D) ∈ E] + δ`` and the same with ``D``
and ``D′`` swapped. The audit (after Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021) tests
the promise directly on the owner's model:

1. ``D`` is a small random sample of the owner's rows (small, so that one record matters as
   much as it can) and ``x`` the **canary**: by default a made-up outlier — every feature at
   the top of its declared range, with the least common label (or the target bound farthest from
   the sample's mean) — or a row of the table that is not in ``D``.
2. The output event is a threshold on the model's prediction at ``x`` (the probability of the
   canary's label — its log-odds for models that give their joint log-likelihoods, which do not
   round to 0 or 1 — or the prediction scaled to [0, 1] by the declared target bounds), or on
   how much nearer the model's predictions at ``x`` and at a few rows of ``D`` (:data:`PROBES`)
   are to their typical values with the canary than without it — whichever shows more on the
   **pilot** fits. Both the statistic and its threshold are chosen on pilot fits that are then
   thrown away, so the fits that test the event never chose it. (One prediction can coincide with
   and without the canary — clipped to a target bound, or a vote share of a few trees — while the
   model as a whole still differs.)
3. The model is fitted ``n_runs`` times on ``D`` and ``n_runs`` times on ``D′``, each time with
   fresh noise; the event's frequencies give Clopper–Pearson bounds and a lower bound on ε
   (:func:`~dpcore.attacks.statistics.epsilon_lower_bound`) that is right with probability at
   least ``confidence``.

A lower bound at or below the claimed ε means the audit found no violation (it cannot prove the
claim, only fail to refute it). As a **control**, the same audit runs on a deliberately broken
variant of the same model, whose lower bound should exceed the claim — that shows the audit
can catch a bug (:data:`CONTROLS`):

* ``"frozen"``: the noise is frozen — every fit reuses one random seed, the classic bug of a
  hard-coded seed — and the model is given ``broken_factor`` × ε while ε is claimed. The model
  becomes a deterministic function of its data, so its outputs with and without the canary are
  two fixed points, which the chosen event separates unless the two coincide (the larger budget
  makes that all but impossible: without it, a prediction swamped by frozen noise can be clipped
  to the same bound with and without the canary).
* ``"budget"``: the model is given ``broken_factor`` × ε while ε is claimed (its noise cut by
  that factor). Models whose randomness is not all privacy noise (random tree structures,
  random partitions) stay hard to tell apart from one prediction even then, so this control is
  caught only for some models; the result says whether it was.

**Power.** ``n_runs`` limits what any audit can show: with ``n`` fits each way at confidence
``1 − α`` the largest lower bound it could ever report, at perfect separation (the event on every
fit with the record and on none without it), is ``ln(lower_CP(n, n) / upper_CP(0, n))``
(:func:`~dpcore.attacks.statistics.largest_certifiable`; 3.98 for 200 fits at 95 %). The result
states it (:attr:`AuditResult.power`): the audit can tell a model apart from its claim only when
that claim is below it. A pass means something only when a broken control was caught at the same
setting: when none was (or none was run), the verdict says the audit was too small to tell and to
run the full audit, never "no violation found" (:attr:`AuditResult.conclusive`).

Everything here is owner's eyes only and charges no budget: the audited models are thrown away.

References
----------
M. Jagielski, J. Ullman, A. Oprea. *Auditing differentially private machine learning: how
private is private SGD?* NeurIPS 2020.
M. Nasr, S. Song, A. Thakurta, N. Papernot, N. Carlini. *Adversary instantiation: lower bounds
for differentially private machine learning.* IEEE S&P 2021.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.attacks.membership import fit_or_explain, probabilities
from dpcore.attacks.statistics import best_event, epsilon_lower_bound, largest_certifiable
from dpcore.design import Design
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, fixed, short
from dpcore.models.registry import Estimator, get
from dpcore.progress import Clock, Progress, TimeLeft
from dpcore.training import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION, spent_delta
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

CANARIES = ("outlier", "row")
CONTROLS = {
    "budget": N_("the same model given {factor} × ε while claiming ε (its noise cut {factor}-fold)"),
    "frozen": N_(
        "the same model with its noise frozen (one random seed reused on every fit) and given {factor} × ε while claiming ε"
    ),
}
PILOT_SHARE = 0.25
#: Pairs of fits, after the first, whose time sizes a time-limited audit.
SIZING_PAIRS = 2
#: The fewest runs a time limit cuts an audit to (5 could prove nothing at all). So small an audit proves ε ≥ 0.16 at most at
#: 95 % and says so ("too small to tell"); a larger floor would break the quick setting's time label on a wide table.
FEWEST_RUNS = 6
PROBES = 8
STATISTICS = (N_("prediction at the record"), N_("predictions at the record and at rows of the sample"))
#: The table's column names stay English (its CSV and JSON); the app shows them translated (``_(name)``).
TABLE_HEADERS = (
    N_("variant"),
    N_("what it is"),
    N_("claimed ε"),
    N_("ε it spends"),
    N_("lower bound on ε"),
    N_("confidence"),
    N_("event with the record"),
    N_("event without it"),
    N_("most any audit of this size can show"),
    N_("verdict"),
)


@dataclass(frozen=True)
class AuditRun:
    """One audited variant: how often the event happened with and without the canary, and the ε it proves."""

    label: str
    description: str
    model_epsilon: float
    lower_bound: float
    hits_with: int
    hits_without: int
    n_runs: int
    threshold: float
    above: bool
    largest_certifiable: float
    statistic: str = STATISTICS[0]


@dataclass(frozen=True)
class AuditResult:
    """The audit of one model, with its broken control; owner's eyes only."""

    key: str
    name: str
    claimed_epsilon: float
    delta: float
    confidence: float
    n_rows: int
    canary: str
    model: AuditRun
    controls: tuple[AuditRun, ...]
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """The model's lower bound does not exceed its claim."""
        return self.model.lower_bound <= self.claimed_epsilon

    def caught(self, run: AuditRun) -> bool:
        """A control's lower bound exceeds the claim: the audit caught the bug."""
        return run.lower_bound > self.claimed_epsilon

    @property
    def control_caught(self) -> bool | None:
        """Some broken control's lower bound exceeds the claim (None without a control)."""
        return None if not self.controls else any(self.caught(run) for run in self.controls)

    @property
    def power(self) -> float:
        """The largest ε lower bound this audit's size and confidence could ever show (perfect separation)."""
        return self.model.largest_certifiable

    @property
    def conclusive(self) -> bool:
        """A broken control was caught at this setting: only then does a pass say anything."""
        return bool(self.control_caught)

    def table(self) -> pd.DataFrame:
        """One row per audited variant: claimed ε, what the model really spent, the lower bound and the counts."""
        return pd.DataFrame(
            [
                {
                    "variant": run.label,
                    "what it is": run.description,
                    "claimed ε": self.claimed_epsilon,
                    "ε it spends": run.model_epsilon,
                    "lower bound on ε": run.lower_bound,
                    "confidence": self.confidence,
                    "event with the record": _("{hits} of {runs}").format(hits=run.hits_with, runs=run.n_runs),
                    "event without it": _("{hits} of {runs}").format(hits=run.hits_without, runs=run.n_runs),
                    "most any audit of this size can show": run.largest_certifiable,
                    "verdict": _verdict(self, run),
                }
                for run in (self.model, *self.controls)
            ]
        )


def canary_record(
    design: Design, rows: NDArray[np.int64], kind: str, rng: np.random.Generator
) -> tuple[NDArray[np.float64], Any, str]:
    """``(features, label, description)`` of the record whose presence is audited.

    ``"outlier"``: every feature at the top of its declared range; the label is the declared
    class least common among ``rows`` (regression: the target bound farther from their mean).
    ``"row"``: a random row of the design that is not among ``rows``.
    """
    if kind == "row":
        others = np.setdiff1d(np.arange(len(design.y)), rows)
        if others.size == 0:
            raise DataError(_("Every row is in the audited sample, so none is left to be the added record."))
        pick = int(rng.choice(others))
        return design.X[pick].astype(float), design.y[pick], _("a row of your table, not in the sample")
    if kind != "outlier":
        raise ValueError(f"canary must be one of {CANARIES}, got {kind!r}")
    features = np.asarray(design.bounds[1], dtype=float).copy()
    if design.task == "classification":
        classes = list(design.classes or np.unique(design.y))
        counts = np.array([np.sum(design.y[rows] == c) for c in classes])
        label: Any = classes[int(np.flatnonzero(counts == counts.min())[-1])]
    else:
        lower, upper = design.target_bounds if design.target_bounds is not None else (0.0, 1.0)
        label = upper if np.mean(design.y[rows]) < (lower + upper) / 2 else lower
    rarest = _("the rarest label") if design.task == "classification" else _("the target at its farther bound")
    return features, label, _("a made-up person at the edge of every declared range, with {rarest}").format(rarest=rarest)


def audit_model(
    design: Design,
    model: str,
    epsilon: float,
    *,
    n_runs: int = 200,
    n_rows: int = 50,
    canary: str = "outlier",
    controls: Sequence[str] = tuple(CONTROLS),
    broken_factor: float = 10.0,
    confidence: float = 0.95,
    time_limit: float | None = None,
    clock: Clock = time.monotonic,
    count_noise: str = DEFAULT_COUNT_NOISE,
    selection: str = DEFAULT_SELECTION,
    random_state: RandomStateLike = None,
    progress: Progress | None = None,
) -> AuditResult:
    """Audit registry model ``model`` at a claimed ``epsilon`` per record (see the module's description).

    Parameters
    ----------
    n_runs : int
        Fits on each of ``D`` and ``D′`` that test the event (plus a quarter as many pilot fits
        that choose it), for the model and again for the broken control.
    n_rows : int
        Rows of ``D`` (a random sample of the design's rows).
    canary : {"outlier", "row"}
    controls : sequence of {"budget", "frozen"}
        The broken controls to audit too (:data:`CONTROLS`); empty: none.
    broken_factor : float
        How many times ε the broken controls spend: 10 by default, a realistic bug (a budget
        split wrongly, a sensitivity off by a factor) that the audit should be sized to catch.
    time_limit : float, optional
        Seconds; fewer runs are made when the pilot fits' measured cost shows they would not fit
        (the result says how many, and its power says what the smaller audit could still show).
    clock : callable
        Seconds from any fixed origin (default :func:`time.monotonic`); tests pass a fake clock.

    Raises
    ------
    DataError
        The model cannot be fitted on the sample (said in a sentence).
    """
    check_epsilon(epsilon)
    if n_runs < 10 or n_rows < 2:
        raise ValueError(f"n_runs must be at least 10 and n_rows at least 2, got {n_runs!r} and {n_rows!r}")
    started = clock()
    rng = check_random_state(random_state)
    seeded = random_state is not None
    spec = get(model)
    rows = np.sort(rng.choice(len(design.y), size=min(n_rows, len(design.y) - 1), replace=False))
    x, label, described = canary_record(design, rows, canary, rng)
    without = (design.X[rows], design.y[rows])
    points = np.vstack([x[None, :], design.X[rows[:PROBES]]]).astype(float)
    with_canary = (np.vstack([design.X[rows], x[None, :]]), np.r_[design.y[rows], np.asarray([label], dtype=design.y.dtype)])
    context = replace(design.context(epsilon, count_noise=count_noise, selection=selection), rows_per_person=1)
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown:
        raise ValueError(f"controls must be among {tuple(CONTROLS)}, got {unknown!r}")
    variants: list[tuple[str, str, float, int | None]] = [
        (_("as built"), _("{name} as it is trained for you").format(name=spec.name), epsilon, None)
    ]
    for control in dict.fromkeys(controls):
        description = _(CONTROLS[control]).format(factor=short(broken_factor))
        if control == "frozen":
            variants.append((_("broken: noise frozen"), description, epsilon * broken_factor, int(rng.integers(0, 2**31 - 1))))
        else:
            variants.append(
                (_("broken: ε × {factor}").format(factor=short(broken_factor)), description, epsilon * broken_factor, None)
            )
    pilot = max(5, math.ceil(PILOT_SHARE * n_runs))
    work = TimeLeft([("fits", 2 * len(variants) * (pilot + n_runs))], progress, clock)
    work.sizing = time_limit is not None  # the first pairs decide how many fits there will be: no time left before
    notes: list[str] = []
    runs: list[AuditRun] = []
    delta = 0.0

    def output(model_epsilon: float, frozen: int | None, data: tuple[NDArray[Any], NDArray[Any]]) -> NDArray[np.float64]:
        seed = frozen if frozen is not None else int(rng.integers(0, 2**31 - 1)) if seeded else None
        fitted = fit_or_explain(
            spec,
            replace(context, epsilon=model_epsilon, random_state=seed),
            *data,
            where=_("the audit's small sample"),
            advice=_("more rows or another model"),
        )
        nonlocal delta
        delta = max(delta, spent_delta(fitted))
        return _predictions(fitted, points, label, design)

    def pair(model_epsilon: float, frozen: int | None, what: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        outputs = output(model_epsilon, frozen, with_canary), output(model_epsilon, frozen, without)
        work.tick(what, 2)
        return outputs

    planned = n_runs
    for position, (title, description, model_epsilon, frozen) in enumerate(variants):
        pilot_fits: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
        while len(pilot_fits) < pilot:
            pilot_fits.append(pair(model_epsilon, frozen, _("{title}: pilot fits that choose the event").format(title=title)))
            if time_limit is not None and position == 0 and len(pilot_fits) == 1:
                warm = clock()  # the first pair pays one-time costs (imports, caches): it is not a typical pair
            if time_limit is not None and position == 0 and len(pilot_fits) == SIZING_PAIRS + 1:
                # Pairs 2 and 3 measure a pair's cost: the pilots and the runs are sized to it, not only the runs.
                per_fit = (clock() - warm) / (2 * SIZING_PAIRS)
                pilot, planned = _sized(time_limit - (clock() - started), per_fit, len(variants), n_runs)
                work.resize("fits", 2 * len(variants) * (pilot + planned))
                work.sizing = False
        trial = np.array(pilot_fits)
        if time_limit is not None:
            left = time_limit - (clock() - started)
            later = len(variants) - position - 1
            affordable = int(left / (work.per_unit() or 1.0) / 2) - later * pilot
            runs_now = max(FEWEST_RUNS, min(planned, affordable // (later + 1)))
            work.resize("fits", work.stage("fits").units - 2 * (planned - runs_now) * (later + 1))
            planned = runs_now
        centres, threshold, above, likelier_with = _choose_event(trial, (planned, planned), confidence, delta)
        tested = _score(
            np.array(
                [
                    pair(model_epsilon, frozen, _("{title}: fits on the table with and without the record").format(title=title))
                    for _unused in range(planned)
                ]
            ),
            centres,
        )
        event = (tested >= threshold) == above
        hits_with, hits_without = int(event[:, 0].sum()), int(event[:, 1].sum())
        # The event was chosen likelier with the canary, or likelier without it (DP bounds both ratios).
        first, second = (hits_with, hits_without) if likelier_with else (hits_without, hits_with)
        bound = float(epsilon_lower_bound(first, planned, second, planned, confidence, delta))
        runs.append(
            AuditRun(
                title,
                description,
                model_epsilon,
                bound,
                hits_with,
                hits_without,
                planned,
                threshold,
                above,
                largest_certifiable(planned, confidence),
                STATISTICS[centres is not None],
            )
        )
    # The cut is planned variant by variant: say which ran fewer fits, so a reader never takes
    # the broken controls' count for the model's (a newcomer read "100 fits" and "15 runs" as one audit).
    for run in runs:
        if run.n_runs < n_runs:
            notes.append(
                _("{variant}: {planned} runs on each table instead of {n_runs}, to stay within the time limit.").format(
                    variant=run.label, planned=run.n_runs, n_runs=n_runs
                )
            )
    if runs[0].largest_certifiable <= epsilon:
        notes.append(
            _(
                "With {planned} runs on each table no audit can show more than ε = {largest_certifiable}, which is "
                "not above the claimed ε = {epsilon}: run more to give the control a chance to fail."
            ).format(planned=planned, largest_certifiable=fixed(runs[0].largest_certifiable, 2), epsilon=short(epsilon))
        )
    return AuditResult(
        model,
        spec.name,
        epsilon,
        delta,
        confidence,
        len(rows),
        described,
        runs[0],
        tuple(runs[1:]),
        clock() - started,
        tuple(notes),
    )


def _sized(seconds: float, per_fit: float, variants: int, n_runs: int) -> tuple[int, int]:
    """``(pilot, runs)`` per variant that fit in ``seconds`` at ``per_fit`` seconds a fit: as many runs as fit, at most
    ``n_runs`` and at least :data:`FEWEST_RUNS`, with :data:`PILOT_SHARE` of them (at least 3 after the sizing pairs)
    as pilot fits."""
    pairs = seconds / max(2 * per_fit, 1e-9) / variants
    runs = int(pairs / (1 + PILOT_SHARE)) if pairs >= 5 / PILOT_SHARE * (1 + PILOT_SHARE) else int(pairs - 5)
    runs = max(FEWEST_RUNS, min(n_runs, runs))
    return max(SIZING_PAIRS + 1, math.ceil(PILOT_SHARE * runs)), runs


def _verdict(result: AuditResult, run: AuditRun) -> str:
    if run is result.model:
        if not result.passed:
            return _("VIOLATION: the model leaks more than it claims")
        return _("no violation found") if result.conclusive else _("too small to tell: run the full audit")
    return _("caught: the audit sees the bug") if result.caught(run) else _("not caught with this many runs")


Centres = tuple[NDArray[np.float64], NDArray[np.float64]] | None


def _score(outputs: NDArray[np.float64], centres: Centres) -> NDArray[np.float64]:
    """``outputs`` (runs × {with, without} × points) to one number per fit: the prediction at the canary, or
    how much farther the predictions are from their typical values without the canary than with it."""
    if centres is None:
        return outputs[..., 0]
    typical_with, typical_without = centres
    return np.asarray(np.linalg.norm(outputs - typical_without, axis=-1) - np.linalg.norm(outputs - typical_with, axis=-1))


def _choose_event(
    trial: NDArray[np.float64], n_test: tuple[int, int], confidence: float, delta: float
) -> tuple[Centres, float, bool, bool]:
    """On the pilot fits only: the statistic (:data:`STATISTICS`) and event that prove the most on the pilot itself.

    Returns ``(centres, threshold, above, likelier_with)`` (no centres: the prediction at the canary); ties go to the prediction at the canary.
    """
    pilot = len(trial)
    members = np.r_[np.ones(pilot, bool), np.zeros(pilot, bool)]
    best: tuple[float, Centres, float, bool, bool] | None = None
    for centres in (None, (np.median(trial[:, 0], axis=0), np.median(trial[:, 1], axis=0))):
        scores = _score(trial, centres)
        threshold, above, likelier_with = best_event(np.r_[scores[:, 0], scores[:, 1]], members, n_test, confidence, delta)
        hits = ((scores >= threshold) == above).sum(axis=0)
        first, second = (hits[0], hits[1]) if likelier_with else (hits[1], hits[0])
        shown = float(epsilon_lower_bound(int(first), pilot, int(second), pilot, confidence, delta))
        if best is None or shown > best[0]:
            best = (shown, centres, threshold, above, likelier_with)
    assert best is not None
    return best[1:]


def _predictions(model: Estimator, points: NDArray[np.float64], label: Any, design: Design) -> NDArray[np.float64]:
    """The model's outputs at ``points`` (the canary first): the probability (or log-odds) of the canary's label,
    or the prediction scaled by the target bounds."""
    if design.task == "classification":
        proba, labels = probabilities(model, points)
        classes = [str(c) for c in labels]
        if str(label) not in classes:
            return np.zeros(len(points))
        at = classes.index(str(label))
        classifier: Any = model
        if hasattr(classifier, "predict_joint_log_proba"):  # log-odds do not round to 0 or 1 far from the data
            joint = np.asarray(classifier.predict_joint_log_proba(points), dtype=float)
            return np.asarray(joint[:, at] - np.logaddexp.reduce(np.delete(joint, at, axis=1), axis=1), dtype=float)
        return np.asarray(proba[:, at], dtype=float)
    lower, upper = design.target_bounds if design.target_bounds is not None else (0.0, 1.0)
    return (np.asarray(model.predict(points), dtype=float).ravel() - lower) / (upper - lower)
