r"""Membership inference: can an attacker tell who was in the training data?

The experiment (after Yeom et al. 2018 and Carlini et al. 2022, "LiRA"):

1. Every record — every **person** when the table names a privacy unit, with all of that
   person's rows on the same side — is made a *member* or a *non-member* by a fair coin
   (as :func:`dpcore.training.holdout_split` holds rows out). The coin never looks at the data.
2. The chosen model is trained on the members only: once without DP (a non-private
   reference) and once with DP at the chosen ε.
3. Two attacks score every record, each seeing only the trained model and the population:

   * **loss threshold** (Yeom et al.): a model fits its training records better, so a low loss
     (log-loss of the true class, or squared error scaled by the declared target range) says
     "member";
   * **LiRA** (likelihood-ratio attack, Carlini et al., online variant with a fixed variance):
     the attacker trains *reference models* of the same kind on random halves of the
     population, in pairs of complementary halves, so every record was in exactly half of
     them. For each record it compares the target model's confidence with the confidences of
     the reference models that saw it and of those that did not, and asks which of the two
     Gaussians explains it better. The reference models are the attacker's own, trained on the
     population (which contains every record whether or not it is a member), so the coin of
     step 1 affects only the target model: DP's guarantee covers the whole attack.

4. Sweeping a threshold over the scores gives each attack's ROC curve, its AUC and its
   true-positive rate at a 1 % false-positive rate, shown beside the ceiling that ε guarantees
   (:mod:`dpcore.attacks.statistics`). A person's score is the mean of their rows' losses, or
   the sum of their rows' log-likelihood ratios.

Everything here is measured on the owner's raw rows: owner's eyes only, never released, and
it charges no budget. The time is bounded by measuring, not guessing: on a table larger than
:data:`PILOT_ROWS`, each model is first fitted once on a random :data:`PILOT_ROWS` rows, and the
measured seconds per row (fits here grow about linearly with the rows, so a small pilot's fixed
costs make it err on the slow side) size the attack's rows so that the target models and
:data:`MIN_REFERENCES` reference models each fit in :data:`TIME_SHARE` of the time limit; the result
says how many rows it used and why. Reference models are then trained only while the time limit
allows, and LiRA is left out (with a note) when fewer than four fit in it.

References
----------
S. Yeom, I. Giacomelli, M. Fredrikson, S. Jha. *Privacy risk in machine learning: analyzing
the connection to overfitting.* CSF 2018.
N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis, F. Tramèr. *Membership inference attacks
from first principles.* IEEE S&P 2022.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.attacks.statistics import (
    LOW_FPR,
    auc_ceiling,
    auc_error,
    empirical_epsilon,
    roc,
    roc_auc,
    thin,
    tpr_at,
    tpr_ceiling,
)
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer
from dpcore.models.registry import Estimator, ModelContext, ModelSpec, get
from dpcore.progress import Clock, Progress, Stage, TimeLeft
from dpcore.tables.design import Design
from dpcore.training import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION, person_delta
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

ATTACKS = ("loss threshold", "LiRA")
#: The table's column names stay English (its CSV and JSON); the app shows them translated (``_(name)``).
TABLE_HEADERS = (
    N_("model"),
    N_("DP"),
    N_("attack"),
    N_("AUC"),
    N_("AUC ± (95 %)"),
    N_("AUC ceiling"),
    N_("TPR at 1 % FPR"),
    N_("TPR ± (95 %)"),
    N_("TPR ceiling"),
    N_("empirical ε (lower bound)"),
    N_("reference models"),
    N_("loss threshold"),
)
#: Probabilities are kept inside [CLIP, 1 − CLIP] before taking logarithms.
CLIP = 1e-6
MIN_REFERENCES = 4
#: Rows of the pilot fits that measure each model's seconds per row (a table this small is attacked whole).
PILOT_ROWS = 500
#: The share of the time limit the sized attack plans to use (the rest absorbs a slower fit than measured).
TIME_SHARE = 0.6
#: The fewest rows an attack is cut to, whatever the time limit: fewer would say nothing.
MIN_ROWS = 200


@dataclass(frozen=True)
class AttackSettings:
    """How hard to attack.

    Parameters
    ----------
    max_rows : int or None
        Attack at most this many rows (whole people, drawn at random); None: every row.
    n_references : int
        LiRA's reference models per target model (even; pairs of complementary halves).
    time_limit : float
        Seconds for the whole attack; fewer reference models are trained when they would not fit.
    confidence : float
        Confidence of the error bars and of the empirical ε lower bound.
    """

    max_rows: int | None = 10_000
    n_references: int = 4
    time_limit: float = 20.0
    confidence: float = 0.95


QUICK = AttackSettings()
THOROUGH = AttackSettings(max_rows=None, n_references=16, time_limit=600.0)


@dataclass(frozen=True)
class AttackCurve:
    """One attack on one model: its ROC curve (thinned for charts) and what it reached."""

    attack: str
    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    auc: float
    auc_error: float
    tpr_at_low_fpr: float
    tpr_error: float
    epsilon_lower: float


@dataclass(frozen=True)
class ModelUnderAttack:
    """A trained model and the attacks on it; ``epsilon`` is None for the non-private reference."""

    key: str
    name: str
    epsilon: float | None
    delta: float
    curves: tuple[AttackCurve, ...]
    n_references: int
    utility: dict[str, float] = field(default_factory=dict)

    @property
    def private(self) -> bool:
        return self.epsilon is not None

    def curve(self, attack: str) -> AttackCurve | None:
        return next((c for c in self.curves if c.attack == attack), None)

    def strongest(self) -> AttackCurve:
        """The attack that spotted most members at the low false-positive rate."""
        return max(self.curves, key=lambda c: (c.tpr_at_low_fpr, c.auc))


@dataclass(frozen=True)
class MembershipResult:
    """What the membership attacks found; owner's eyes only."""

    models: tuple[ModelUnderAttack, ...]
    task: str
    n_members: int
    n_non_members: int
    unit: str
    rows_per_person: int
    seconds: float
    confidence: float
    notes: tuple[str, ...] = ()

    def table(self) -> pd.DataFrame:
        """One row per model and attack, with the ceiling ε sets beside what the attack reached."""
        rows = []
        for m in self.models:
            for c in m.curves:
                rows.append(
                    {
                        "model": m.name,
                        "DP": "yes" if m.private else "no",
                        "ε": m.epsilon,
                        "attack": c.attack,
                        "AUC": c.auc,
                        "AUC ± (95 %)": c.auc_error,
                        "AUC ceiling": auc_ceiling(m.epsilon, m.delta) if m.epsilon is not None else np.nan,
                        "TPR at 1 % FPR": c.tpr_at_low_fpr,
                        "TPR ± (95 %)": c.tpr_error,
                        "TPR ceiling": float(tpr_ceiling(LOW_FPR, m.epsilon, m.delta)) if m.epsilon is not None else np.nan,
                        "empirical ε (lower bound)": c.epsilon_lower,
                        "reference models": m.n_references if c.attack == "LiRA" else 0,
                    }
                )
        return pd.DataFrame(rows)

    def curves_frame(self) -> pd.DataFrame:
        """Long table of every ROC curve, plus each DP model's ceiling and the chance line, for a chart."""
        parts = []
        for m in self.models:
            for c in m.curves:
                parts.append(
                    pd.DataFrame(
                        {
                            "line": f"{m.name} — {c.attack}",
                            "model": m.name,
                            "attack": c.attack,
                            "kind": "attack",
                            "fpr": c.fpr,
                            "tpr": c.tpr,
                        }
                    )
                )
        grid = thin(np.array([0.0, 1.0]), np.array([0.0, 1.0]))[0]
        for eps, delta in sorted({(m.epsilon, m.delta) for m in self.models if m.epsilon is not None}):
            parts.append(
                pd.DataFrame(
                    {
                        "line": f"ceiling of ε = {eps:g}",
                        "model": "",
                        "attack": "",
                        "kind": "ceiling",
                        "fpr": grid,
                        "tpr": tpr_ceiling(grid, eps, delta),
                    }
                )
            )
        parts.append(pd.DataFrame({"line": "chance", "model": "", "attack": "", "kind": "chance", "fpr": grid, "tpr": grid}))
        return pd.concat(parts, ignore_index=True)


def observe(
    model: Estimator, X: NDArray[Any], y: NDArray[Any], task: str, target_bounds: tuple[float, float] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[Any]]:
    """``(loss, confidence, prediction)`` of a fitted model on every row.

    Classification: log-loss of the true class, its logit-scaled probability
    ``log(p/(1−p))`` (Carlini et al.'s statistic) and the predicted label. Regression: the
    squared error on the target scaled to [0, 1] by its declared bounds, ``−log(error + 1e-6)``
    and the prediction.
    """
    if task == "classification":
        proba, classes = probabilities(model, X)
        column = pd.Index(classes.astype(str)).get_indexer(np.asarray(y).astype(str))
        p = np.where(column >= 0, proba[np.arange(len(y)), np.maximum(column, 0)], 0.0)
        p = np.clip(p, CLIP, 1.0 - CLIP)
        return -np.log(p), np.log(p) - np.log1p(-p), classes[np.argmax(proba, axis=1)]
    lower, upper = target_bounds if target_bounds is not None else (0.0, 1.0)
    predicted = np.asarray(model.predict(X), dtype=float)
    error = ((np.asarray(y, dtype=float) - predicted) / (upper - lower)) ** 2
    return error, -np.log(error + CLIP), predicted


def probabilities(model: Estimator, X: NDArray[Any]) -> tuple[NDArray[np.float64], NDArray[Any]]:
    """A fitted classifier's ``predict_proba`` and the ``classes_`` its columns stand for."""
    classifier: Any = model  # the registry's Estimator protocol only promises fit and predict
    return np.asarray(classifier.predict_proba(X), dtype=np.float64), np.asarray(classifier.classes_)


def lira_scores(
    confidence: NDArray[np.float64], references: NDArray[np.float64], inside: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """Per-row log-likelihood ratio "member" vs "not": online LiRA with one shared variance.

    ``references[k, i]`` is reference model ``k``'s confidence on row ``i`` and ``inside[k, i]``
    whether that model was trained on it (each row is inside exactly half of them).
    """
    n_in = inside.sum(axis=0)
    n_out = (~inside).sum(axis=0)
    mean_in = np.where(inside, references, 0.0).sum(axis=0) / np.maximum(n_in, 1)
    mean_out = np.where(~inside, references, 0.0).sum(axis=0) / np.maximum(n_out, 1)
    centred = references - np.where(inside, mean_in, mean_out)
    dof = max(references.size - 2 * references.shape[1], 1)
    variance = max(float((centred**2).sum()) / dof, 1e-12)
    return ((confidence - mean_out) ** 2 - (confidence - mean_in) ** 2) / (2.0 * variance)


def _per_unit(values: NDArray[np.float64], units: NDArray[np.int64], n_units: int, mean: bool) -> NDArray[np.float64]:
    total = np.bincount(units, weights=values, minlength=n_units).astype(np.float64)
    return total / np.maximum(np.bincount(units, minlength=n_units), 1) if mean else total


def _sample_units(units: NDArray[np.int64], max_rows: int | None, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Rows of whole units drawn at random, at most ``max_rows`` of them (all when None)."""
    if max_rows is None or len(units) <= max_rows:
        return np.ones(len(units), dtype=bool)
    sizes = np.bincount(units)
    order = rng.permutation(len(sizes))
    chosen = order[np.cumsum(sizes[order]) <= max_rows]
    picked = np.zeros(len(sizes), dtype=bool)
    picked[chosen] = True
    return picked[units]


def fit_or_explain(
    spec: ModelSpec, context: ModelContext, X: NDArray[Any], y: NDArray[Any], where: str, advice: str | None = None
) -> Estimator:
    """``spec.make(context).fit(X, y)``; a failure becomes a :class:`DataError` sentence naming ``where`` and ``advice``.

    The library's own message is never shown: it may quote a value of the table.
    """
    try:
        return spec.make(context).fit(X, y)
    except Exception as error:
        raise DataError(
            _("{name} could not be trained on {where} ({name2}); try {advice}.").format(
                name=spec.name, where=where, name2=type(error).__name__, advice=advice or _("another model")
            )
        ) from error


class _Fitter:
    """Trains one registry model the same way each time: on the design's rows that a mask selects."""

    def __init__(
        self,
        spec: ModelSpec,
        design: Design,
        epsilon: float,
        rng: np.random.Generator,
        seeded: bool,
        count_noise: str,
        selection: str,
    ) -> None:
        self.spec, self.design, self.epsilon, self.rng, self.seeded = spec, design, epsilon, rng, seeded
        self.count_noise, self.selection = count_noise, selection

    def fit(self, rows: NDArray[np.bool_], epsilon: float | None = None) -> Estimator:
        seed = int(self.rng.integers(0, 2**31 - 1)) if self.seeded else None
        context = self.design.context(
            self.epsilon if epsilon is None else epsilon,
            random_state=seed,
            count_noise=self.count_noise,
            selection=self.selection,
        )
        return fit_or_explain(self.spec, context, self.design.X[rows], self.design.y[rows], _("part of this table"))


def attack_membership(
    design: Design,
    model: str,
    epsilon: float,
    *,
    baseline: str | None = None,
    settings: AttackSettings = QUICK,
    count_noise: str = DEFAULT_COUNT_NOISE,
    selection: str = DEFAULT_SELECTION,
    random_state: RandomStateLike = None,
    progress: Progress | None = None,
    clock: Clock = time.monotonic,
) -> MembershipResult:
    """Attack ``model`` trained at ``epsilon`` (and the non-private ``baseline``) on ``design``'s rows.

    Parameters
    ----------
    design : Design
        The owner's table as a model sees it. When it names a privacy unit (``design.groups``),
        members are drawn person by person and a person's score sums over their rows.
    model : str
        Registry key of the DP model; a non-private key is attacked as such (ε is then ignored).
    epsilon : float
        ε of the DP model, per person when the design bounds rows per person.
    baseline : str, optional
        Registry key of a non-private model to attack beside it (shows what DP protects).
    settings : AttackSettings
        :data:`QUICK` (under half a minute on the bundled samples) or :data:`THOROUGH`.
    random_state : None, int or Generator
        Seeds the split, the reference halves and every model's noise (tests and benchmarks only).
    progress : callable, optional
        ``progress(share_done, seconds_left, what)`` after every fit (:class:`~dpcore.progress.TimeLeft`).
    clock : callable
        Seconds from any fixed origin (default :func:`time.monotonic`); tests pass a fake clock.

    Raises
    ------
    DataError
        Too few rows or people to split, or a model that cannot be trained (said in a sentence).
    """
    check_epsilon(epsilon)
    if settings.n_references < 0 or settings.n_references % 2:
        raise ValueError(f"n_references must be an even number of at least 0, got {settings.n_references!r}")
    started = clock()
    rng = check_random_state(random_state)
    seeded = random_state is not None
    persons = design.groups
    units = np.asarray(persons, dtype=np.int64) if persons is not None else np.arange(len(design.y), dtype=np.int64)
    keys = [k for k in (baseline, model) if k is not None]
    # One stage per model: each model's fits cost alike, and its pilot predicts them (a cheap model's ratio of real to
    # predicted time says nothing about a dear one's).
    work = TimeLeft([Stage("pilot", len(keys)), *(Stage(key, 1 + settings.n_references) for key in keys)], progress, clock)
    max_rows, per_row = _affordable_rows(design, units, keys, epsilon, settings, rng, seeded, count_noise, selection, work)
    rows = _sample_units(units, max_rows, rng)
    X, y = design.X[rows], design.y[rows]
    _unused, units = np.unique(units[rows], return_inverse=True)
    n_units = int(units.max()) + 1 if units.size else 0
    member_unit = rng.random(n_units) < 0.5
    if n_units < 20 or member_unit.sum() < 10 or (~member_unit).sum() < 10:
        raise DataError(
            _("The table has too few rows (or people) to split into members and non-members; an attack needs at least 20.")
        )
    members = member_unit[units]
    halves = rng.random((settings.n_references // 2, n_units)) < 0.5
    inside = np.concatenate([halves, ~halves])[:, units] if halves.size else np.zeros((0, len(units)), dtype=bool)
    sub = replace(design, X=X, y=y, groups=None)
    for key in keys:
        work.stage(key).prior = per_row[key] * len(y) if per_row else None
    notes: list[str] = []
    attacked = []
    for position, key in enumerate(keys):
        spec = get(key)
        fitter = _Fitter(spec, sub, epsilon, rng, seeded, count_noise, selection)
        work.begin(key)
        one = clock()
        target = fitter.fit(members)
        loss, confidence, guessed = observe(target, X, y, sub.task, sub.target_bounds)
        seconds = clock() - one
        work.tick(_("trained {name} on the members").format(name=spec.name))
        left = settings.time_limit - (clock() - started)
        affordable = int(left / max(seconds, 1e-3) / (len(keys) - position))
        n_refs = min(settings.n_references, 2 * (affordable // 2))
        if n_refs < MIN_REFERENCES:
            n_refs = 0
            if settings.n_references:
                notes.append(
                    _("LiRA was left out for {name}: its reference models would not fit in the time limit.").format(
                        name=spec.name
                    )
                )
        work.resize(key, 1 + n_refs)
        order = np.r_[np.arange(n_refs // 2), settings.n_references // 2 + np.arange(n_refs // 2)]
        references = np.empty((n_refs, len(y)))
        for j, k in enumerate(order):
            references[j] = observe(fitter.fit(inside[k]), X, y, sub.task, sub.target_bounds)[1]
            work.tick(_("{name}: reference model {number} of {n_refs}").format(name=spec.name, number=j + 1, n_refs=n_refs))
        scores = {"loss threshold": -_per_unit(loss, units, n_units, mean=True)}
        if n_refs:
            scores["LiRA"] = _per_unit(lira_scores(confidence, references, inside[order]), units, n_units, mean=False)
        private = spec.private
        delta = person_delta(target, epsilon, design.rows_per_person) if private else 0.0
        curves = tuple(_curve(name, s, member_unit, settings.confidence, delta, rng) for name, s in scores.items())
        attacked.append(
            ModelUnderAttack(
                key, spec.name, epsilon if private else None, delta, curves, n_refs, _utility(sub, y[~members], guessed[~members])
            )
        )
    if persons is not None:
        notes.append(
            _(
                "Members and non-members were drawn person by person: all of a person's rows are on the same side, "
                "and ε is per person (up to {rows_per_person} rows each)."
            ).format(rows_per_person=design.rows_per_person)
        )
    if not rows.all():
        if max_rows != settings.max_rows:
            notes.append(
                _(
                    "The attack used a random {used} of the table's {rows} rows: one fit of each model on {pilot} rows "
                    "showed that more would not finish within its time limit of {seconds} s."
                ).format(
                    used=integer(int(rows.sum())),
                    rows=integer(len(rows)),
                    pilot=integer(PILOT_ROWS),
                    seconds=integer(settings.time_limit),
                )
            )
        else:
            notes.append(
                _("The attack used a random {used} of the table's {rows} rows.").format(
                    used=integer(int(rows.sum())), rows=integer(len(rows))
                )
            )
    return MembershipResult(
        tuple(attacked),
        design.task,
        int(member_unit.sum()),
        int((~member_unit).sum()),
        "person" if persons is not None else "row",
        design.rows_per_person,
        clock() - started,
        settings.confidence,
        tuple(notes),
    )


def _affordable_rows(
    design: Design,
    units: NDArray[np.int64],
    keys: Sequence[str],
    epsilon: float,
    settings: AttackSettings,
    rng: np.random.Generator,
    seeded: bool,
    count_noise: str,
    selection: str,
    work: TimeLeft,
) -> tuple[int | None, dict[str, float]]:
    """The most rows the attack can afford, from one pilot fit per model (see the module); ``(max_rows, seconds per row)``.

    A table of at most :data:`PILOT_ROWS` rows (or one with fewer rows than ``settings.max_rows``
    is not cut below) is attacked as it is, without a pilot: ``(settings.max_rows, {})``.
    """
    ceiling = len(units) if settings.max_rows is None else min(settings.max_rows, len(units))
    if ceiling <= PILOT_ROWS:
        return settings.max_rows, {}
    pilot = _sample_units(units, PILOT_ROWS, rng)
    half = np.zeros(len(units), dtype=bool)
    half[np.flatnonzero(pilot)] = rng.random(int(pilot.sum())) < 0.5
    per_row: dict[str, float] = {}
    for key in keys:
        spec = get(key)
        fitter = _Fitter(spec, design, epsilon, rng, seeded, count_noise, selection)
        before = work.clock()
        try:
            observe(fitter.fit(half), design.X[pilot], design.y[pilot], design.task, design.target_bounds)
        except DataError:
            return settings.max_rows, {}  # the real fit will say what is wrong
        per_row[key] = (work.clock() - before) / int(pilot.sum())
        work.tick(_("measured one fit of {name} on {rows} rows").format(name=spec.name, rows=integer(PILOT_ROWS)))
    fits_each = 1 + min(settings.n_references, MIN_REFERENCES)
    left = settings.time_limit - work.elapsed
    affordable = int(TIME_SHARE * max(left, 0.0) / max(sum(per_row.values()) * fits_each, 1e-12))
    return (settings.max_rows if affordable >= ceiling else max(affordable, MIN_ROWS)), per_row


def _curve(
    name: str, scores: NDArray[np.float64], members: NDArray[np.bool_], confidence: float, delta: float, rng: np.random.Generator
) -> AttackCurve:
    fpr, tpr = roc(scores, members)
    auc = roc_auc(fpr, tpr)
    n_in, n_out = int(members.sum()), int((~members).sum())
    low = tpr_at(fpr, tpr, LOW_FPR)
    thinned = thin(fpr, tpr)
    return AttackCurve(
        name,
        thinned[0],
        thinned[1],
        auc,
        auc_error(auc, n_in, n_out),
        low,
        1.96 * float(np.sqrt(max(low * (1 - low), 1.0 / n_in) / n_in)),
        empirical_epsilon(scores, members, confidence, delta, rng),
    )


def _utility(design: Design, truth: NDArray[Any], predicted: NDArray[Any]) -> dict[str, float]:
    """How good the target model is on the non-members (it never saw them): owner's eyes only."""
    if truth.size == 0:
        return {}
    if design.task == "classification":
        return {"accuracy": float(np.mean(truth.astype(str) == predicted.astype(str)))}
    return {"MAE": float(np.mean(np.abs(truth.astype(float) - predicted.astype(float))))}
