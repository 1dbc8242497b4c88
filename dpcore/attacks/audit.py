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
* ``"mean"``: not the model — the DP mean (:class:`~dpcore.models.DPMeanRegressor`) of the same
  sample's share of the canary's label (regression: its target scaled by the declared bounds),
  given ``broken_factor`` × ε while ε is claimed, fitted as many times on ``D`` and ``D′``. Its
  fits take microseconds, so it costs nothing, and one number carries the whole mechanism: caught,
  it shows that the audit's size sees noise cut ``broken_factor``-fold in the simplest mechanism.
  It says nothing of the model's own statistic, so it never makes a pass conclusive by itself.

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
from dpcore.attacks.statistics import best_event, clopper_pearson, epsilon_lower_bound, largest_certifiable
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, fixed, short
from dpcore.models.mean import DPMeanRegressor
from dpcore.models.registry import Estimator, get
from dpcore.progress import Clock, Progress, TimeLeft
from dpcore.tables.design import Design
from dpcore.training import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION, spent_delta
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

CANARIES = ("outlier", "row")
CONTROLS = {
    "budget": N_("the same model given {factor} × ε while claiming ε (its noise cut {factor}-fold)"),
    "frozen": N_(
        "the same model with its noise frozen (one random seed reused on every fit) and given {factor} × ε while claiming ε"
    ),
    "mean": N_(
        "not your model: the DP mean of the same sample's {target} given {factor} × ε while claiming ε (its noise cut "
        "{factor}-fold), fitted as many times; caught, it shows that this many runs can see such a bug in the simplest "
        "mechanism"
    ),
}
#: Controls that are the audited model itself, broken: only catching one of them makes a pass say something about the model.
MODEL_CONTROLS = ("budget", "frozen")
PILOT_SHARE = 0.25
#: Rounds (a pair of fits of every variant), after the first, whose time sizes a time-limited audit.
SIZING_PAIRS = 2
#: The fewest runs a time limit cuts an audit to (5 could prove nothing at all). So small an audit proves ε ≥ 0.16 at most at
#: 95 % and says so ("too small to tell"); a larger floor would break the quick setting's time label on a wide table.
FEWEST_RUNS = 6
PROBES = 8
Pair = tuple[NDArray[np.float64], NDArray[np.float64]]
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
    #: The audited model (or a broken version of it); False for the DP-mean control, which tests the audit's size only.
    of_model: bool = True


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
        """A broken version of the audited model was caught at this setting: only then does a pass say anything.

        (The DP-mean control, caught, shows only that the audit's size could see a 10-fold noise cut in the
        simplest mechanism: one prediction of the model may still hide the same bug.)"""
        return any(self.caught(run) for run in self.controls if run.of_model)

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
    controls: Sequence[str] = MODEL_CONTROLS,
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
    controls : sequence of {"budget", "frozen", "mean"}
        The broken controls to audit too (:data:`CONTROLS`; default the model's own,
        :data:`MODEL_CONTROLS`); empty: none.
    broken_factor : float
        How many times ε the broken controls spend: 10 by default, a realistic bug (a budget
        split wrongly, a sensitivity off by a factor) that the audit should be sized to catch.
    time_limit : float, optional
        Seconds; fewer runs are made when the measured cost of a round (a pair of fits of the model
        and of each control) shows they would not fit, and the rounds stop early when they turn out
        slower. The model and its controls always make the same number of runs; the result says
        how many, and its power says what the smaller audit could still show.
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
    # (title, description, ε it spends, frozen seed, whether it is the model): the model first, then its controls.
    variants: list[tuple[str, str, float, int | None, bool]] = [
        (_("as built"), _("{name} as it is trained for you").format(name=spec.name), epsilon, None, True)
    ]
    factor = short(broken_factor)
    for control in dict.fromkeys(controls):
        if control == "frozen":
            frozen = int(rng.integers(0, 2**31 - 1))
            variants.append(
                (_("broken: noise frozen"), _(CONTROLS[control]).format(factor=factor), epsilon * broken_factor, frozen, True)
            )
        elif control == "budget":
            title = _("broken: ε × {factor}").format(factor=factor)
            variants.append((title, _(CONTROLS[control]).format(factor=factor), epsilon * broken_factor, None, True))
        else:
            target = _("share of the record's label") if design.task == "classification" else _("target")
            title = _("broken DP mean: ε × {factor}").format(factor=factor)
            variants.append(
                (title, _(CONTROLS[control]).format(factor=factor, target=target), epsilon * broken_factor, None, False)
            )
    pilot = max(5, math.ceil(PILOT_SHARE * n_runs))
    # The variants take turns, one pair of fits each (a round): every variant then has made as many runs as the others
    # whenever the audit stops, so a broken control is never caught with more runs than the model was tested with, and
    # a round costs the same from the first to the last. (Variant after variant, a control given 10 × ε fitted more
    # boosting rounds than the model, its pairs cost twice to five times as much, and the last seconds' figure — one cost
    # per fit for all — was 5 times too small; a time limit then cut the last control to 6 runs.) The very first round
    # pays one-time costs (imports, caches): a stage of its own, not a typical round.
    work = TimeLeft([("first round", 1), ("rounds", pilot - 1 + n_runs)], progress, clock)
    # No time left is said before a typical round is measured (each variant's share of it too) and the audit sized.
    work.sizing = True
    notes: list[str] = []
    runs: list[AuditRun] = []
    delta = 0.0

    def output(
        model_epsilon: float, frozen: int | None, data: tuple[NDArray[Any], NDArray[Any]], of_model: bool = True
    ) -> NDArray[np.float64]:
        seed = frozen if frozen is not None else int(rng.integers(0, 2**31 - 1)) if seeded else None
        if not of_model:
            return _dp_mean(data[1], label, design, model_epsilon, seed, len(points))
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

    seconds_of = np.zeros(len(variants))  # each variant's pairs so far: their shares of a round's cost

    def one_round(what: str) -> list[Pair]:
        """A pair of fits (with and without the canary) of every variant, each ticked as its measured share of a round."""
        shares = seconds_of / seconds_of.sum() if seconds_of.sum() > 0 else np.full(len(variants), 1 / len(variants))
        outputs = []
        for i, (title, _description, model_epsilon, frozen, of_model) in enumerate(variants):
            before = clock()
            outputs.append(
                (output(model_epsilon, frozen, with_canary, of_model), output(model_epsilon, frozen, without, of_model))
            )
            seconds_of[i] += clock() - before
            work.tick(what.format(title=title), float(shares[i]))
        return outputs

    choosing = _("{title}: pilot fits that choose the event")
    pilots: list[list[Pair]] = [one_round(choosing)]
    seconds_of[:] = 0.0  # the first round's one-time costs fell on the first variant: they say nothing of the shares
    work.begin("rounds")
    pilots.append(one_round(choosing))
    planned = n_runs
    if time_limit is None:
        work.sizing = False
    else:
        for _unused in range(SIZING_PAIRS - 1):
            pilots.append(one_round(choosing))
        # Planned on nine tenths of the time left: the stop below then only cuts an audit that really overruns.
        pilot, planned = _sized(0.9 * (time_limit - (clock() - started)), work.per_unit() or 0.0, len(pilots), n_runs)
        work.resize("rounds", pilot - 1 + planned)
        work.sizing = False
    while len(pilots) < pilot:
        pilots.append(one_round(choosing))
    events = [
        _choose_event(np.array([row[i] for row in pilots]), (planned, planned), confidence, delta) for i in range(len(variants))
    ]
    tested: list[list[Pair]] = []
    while len(tested) < planned:
        each = work.per_unit()
        if time_limit is not None and len(tested) >= FEWEST_RUNS and each is not None:
            if clock() - started + each > time_limit:  # slower than measured: stop every variant at the same count
                planned = len(tested)
                work.resize("rounds", 0)  # no more rounds: none is left to wait for
                break
        tested.append(one_round(_("{title}: fits on the table with and without the record")))
    for position, (title, description, model_epsilon, _frozen, of_model) in enumerate(variants):
        centres, threshold, above, likelier_with = events[position]
        scores = _score(np.array([row[position] for row in tested]), centres)
        event = (scores >= threshold) == above
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
                of_model,
            )
        )
    if planned < n_runs:
        # Every variant ran the same count; said once, so no reader takes a control's count for another audit's.
        notes.append(
            _(
                "{planned} runs on each table instead of {n_runs}, for the model and each broken control, to stay within the time limit."
            ).format(planned=planned, n_runs=n_runs)
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


def _sized(seconds: float, per_round: float, made: int, n_runs: int) -> tuple[int, int]:
    """``(pilot, runs)`` rounds that fit in ``seconds`` at ``per_round`` seconds a round (a pair of fits of every
    variant), ``made`` pilot rounds being already made: as many runs as fit, at most ``n_runs`` and at least
    :data:`FEWEST_RUNS`, with :data:`PILOT_SHARE` of them (at least ``made``) as pilot rounds."""
    rounds = seconds / max(per_round, 1e-9) + made
    runs = int(rounds / (1 + PILOT_SHARE)) if rounds >= 5 / PILOT_SHARE * (1 + PILOT_SHARE) else int(rounds - 5)
    runs = max(FEWEST_RUNS, min(n_runs, runs))
    return max(made, math.ceil(PILOT_SHARE * runs)), runs


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


def _dp_mean(y: NDArray[Any], label: Any, design: Design, epsilon: float, seed: int | None, points: int) -> NDArray[np.float64]:
    """The DP mean control's output (repeated at every point): the ε-DP mean of the sample's share of the canary's
    label, or of its target scaled to [0, 1] by the declared bounds (:class:`~dpcore.models.DPMeanRegressor`)."""
    if design.task == "classification":
        unit = (np.asarray(y).astype(str) == str(label)).astype(float)
    else:
        lower, upper = design.target_bounds if design.target_bounds is not None else (0.0, 1.0)
        unit = np.clip((np.asarray(y, dtype=float) - lower) / (upper - lower), 0.0, 1.0)
    mean = DPMeanRegressor(epsilon=epsilon, target_bounds=(0.0, 1.0), random_state=seed).fit(np.zeros((len(unit), 1)), unit)
    return np.full(points, mean.mean_unit_)


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


@dataclass(frozen=True)
class SplitAudit:
    """What :func:`audit_outputs` found: the event chosen on one half of the fits, counted on the other half.

    ``lower`` is the ``confidence`` lower bound on ε (Clopper–Pearson at ``(1 − confidence)/2`` on each rate),
    ``upper`` the matching upper end of the interval, ``estimate`` the ratio of the counted rates themselves;
    ``largest_certifiable`` the most any audit of ``n_test`` runs each way could show.
    """

    lower: float
    estimate: float
    upper: float
    hits_with: int
    hits_without: int
    n_test: int
    statistic: str
    largest_certifiable: float


def audit_outputs(
    with_record: NDArray[np.float64],
    without_record: NDArray[np.float64],
    confidence: float = 0.95,
    delta: float = 0.0,
    random_state: RandomStateLike = None,
) -> SplitAudit:
    """The ε that fits' outputs on ``D′ = D + x`` and on ``D`` show: the event chosen on half the fits, tested on the rest.

    ``with_record`` and ``without_record`` are ``runs × outputs`` (the first output the one most sensitive to
    ``x``, e.g. the prediction at ``x``; a 1-D array is one output a run), as many runs each. A random half of the
    runs of each side chooses the statistic and event as :func:`audit_model`'s pilot does (:data:`STATISTICS`:
    the first output, or the outputs' distance to their typical values with and without ``x``); the other half
    counts it. Choosing and counting on different runs keeps the bound honest.
    """
    first = np.asarray(with_record, dtype=float)
    second = np.asarray(without_record, dtype=float)
    first, second = (first[:, None], second[:, None]) if first.ndim == 1 else (first, second)
    if first.shape != second.shape or len(first) < 4:
        raise ValueError(f"need as many runs (at least 4) on each side, got {first.shape} and {second.shape}")
    rng = check_random_state(random_state)
    order = rng.permutation(len(first))
    half = len(first) // 2
    choose, test = order[:half], order[half:]
    n_test = len(test)
    centres, threshold, above, likelier_with = _choose_event(
        np.stack([first[choose], second[choose]], axis=1), (n_test, n_test), confidence, delta
    )
    scores = _score(np.stack([first[test], second[test]], axis=1), centres)
    event = (scores >= threshold) == above
    hits_with, hits_without = int(event[:, 0].sum()), int(event[:, 1].sum())
    likelier, rarer = (hits_with, hits_without) if likelier_with else (hits_without, hits_with)
    alpha = (1.0 - confidence) / 2.0
    high_likelier = float(clopper_pearson(likelier, n_test, alpha)[1])
    low_rarer = float(clopper_pearson(rarer, n_test, alpha)[0])
    # No run of the rarer side showed the event: nothing bounds the ratio from above.
    upper = math.log(high_likelier / low_rarer) if low_rarer > 0 else math.inf
    estimate = math.log(likelier / rarer) if rarer > 0 and likelier > 0 else (math.inf if likelier > 0 else 0.0)
    return SplitAudit(
        float(epsilon_lower_bound(likelier, n_test, rarer, n_test, confidence, delta)),
        max(estimate, 0.0),
        max(upper, 0.0),
        hits_with,
        hits_without,
        n_test,
        STATISTICS[centres is not None],
        largest_certifiable(n_test, confidence),
    )
