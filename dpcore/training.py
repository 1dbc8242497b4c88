"""Train one model on a design: hold out rows, fit, charge the ledger, then score.

:func:`train` is the one way a model is trained for the owner — by the Train page and by
``dpcore train`` alike — so the budget rule lives here once: the ledger is charged **after**
the fit and **before** anything about the model is returned. If the ledger refuses the charge,
the fitted model is dropped unseen; a fit that fails charges nothing (a failed fit shows
nobody anything, and the refusal of the ledger depends only on the budget, never on the data).

The scores (held-out error or accuracy, and what a trivial guess would give) are measured on
the owner's raw rows: they are for the owner's eyes only, never part of a release.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    mean_absolute_error,
    root_mean_squared_error,
)

from dpcore.budget.accountant import DEFAULT_TOTAL_DELTA, BudgetLedger, Charge
from dpcore.budget.persons import per_person, per_row
from dpcore.i18n import N_, _
from dpcore.models.registry import Estimator, get
from dpcore.models.subsample_aggregate import is_teacher
from dpcore.progress import RoundsTimeLeft, watching_rounds
from dpcore.tables.design import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION, Design
from dpcore.validation import check_delta

HOLDOUT_SHARE = 0.2
CALIBRATION_SHARE = 0.05
#: The δ per person an approximate-DP model spends unless the owner chooses another.
DEFAULT_MODEL_DELTA = DEFAULT_TOTAL_DELTA
#: ``progress(elapsed, seconds_left)`` while a model trains; ``seconds_left`` is None while it is being measured.
Progress = Callable[[float, float | None], None]


@dataclass
class TrainedModel:
    """A model fitted and paid for, with what its owner may look at.

    ``metrics`` and ``details`` (held-out scores, the trivial baseline, confusion table) are
    measured on raw rows: owner's eyes only. The model itself, its tree records and its
    boosting rounds are the DP release. ``epsilon`` and :attr:`delta` are per person: with
    ``rows_per_person`` = k > 1 the model was fitted at ε/k per row (:mod:`dpcore.budget.persons`).
    ``read_from_data`` names the columns whose domain was read from the data when it was fitted:
    such a model is for its owner's screen only (its file and card are refused,
    :func:`~dpcore.tables.schema.check_releasable`), however the declarations change afterwards.
    """

    key: str
    name: str
    task: str
    model: Estimator
    epsilon: float
    parameters: dict[str, Any]
    metrics: dict[str, float]
    feature_names: list[str]
    seeded: bool
    details: dict[str, Any] = field(default_factory=dict)
    rows_per_person: int = 1
    read_from_data: list[str] = field(default_factory=list)

    @property
    def delta(self) -> float:
        """The δ of the model per person (its own δ is per row)."""
        return person_delta(self.model, self.epsilon, self.rows_per_person)


def spent_delta(model: object) -> float:
    """The δ a fitted model used (0 for pure ε-DP models); per row when it was fitted for k rows per person.

    Read from what the fit recorded (``delta_spent_``), never from the hyper-parameter, so the
    ledger is charged what the model says it spent, from memory and from rows alike.
    """
    return float(getattr(model, "delta_spent_", 0.0) or 0.0)


def person_delta(model: object, epsilon: float, rows_per_person: int) -> float:
    """The δ per person of ``model``, fitted at ``epsilon`` per person for up to ``rows_per_person`` rows each.

    The registry fitted it at the per-row ε of :func:`~dpcore.budget.persons.per_row`; its own δ
    (:func:`spent_delta`) is per row, and :func:`~dpcore.budget.persons.per_person` turns it into the
    person's δ by group privacy. With one row each it is the model's own δ.
    """
    row_epsilon = per_row(epsilon, 0.0, rows_per_person)[0]
    return per_person(row_epsilon, spent_delta(model), rows_per_person)[1]


def holdout_split(
    n: int, rng: np.random.Generator, share: float = HOLDOUT_SHARE, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A data-independent random split of row positions: about ``share`` of them (or of the ``groups``) held out."""
    test = rng.random(n) < share if groups is None else (rng.random(int(groups.max()) + 1) < share)[groups]
    return np.flatnonzero(~test), np.flatnonzero(test)


def train(
    design: Design,
    model: str,
    epsilon: float,
    ledger: BudgetLedger,
    *,
    params: dict[str, Any] | None = None,
    count_noise: str = DEFAULT_COUNT_NOISE,
    selection: str = DEFAULT_SELECTION,
    seed: int | None = None,
    holdout: float = HOLDOUT_SHARE,
    progress: Progress | None = None,
    delta: float | None = None,
) -> TrainedModel:
    """Fit registry model ``model`` on ``design`` at ``epsilon``, charge ``ledger``, and score it.

    Parameters
    ----------
    design : Design
    model : str
        A registry key of one of our DP models (``dpcore.models.registry``).
    epsilon : float
        The ε the model spends (add/remove-one neighbours; the ledger converts to its unit).
    ledger : BudgetLedger
        The dataset's budget. It is checked before the fit (so no time is wasted on a model
        that cannot be paid for) and charged after it.
    seed : int, optional
        For tests and demos only: the split and the model's noise become reproducible, the
        ledger line says so, and the model must not be released.
    holdout : float
        Share of rows held out for scoring (0 trains on every row and reports no scores).
    progress : callable, optional
        Called as ``progress(seconds_elapsed, seconds_left)`` while the fit runs (``seconds_left`` None while it is
        being measured; see :func:`fit_with_progress`).
    delta : float, optional
        The δ per person (add/remove neighbours) of an approximate-DP model (``spec.approximate``):
        default :data:`DEFAULT_MODEL_DELTA`. A pure ε-DP model takes none.

    Raises
    ------
    BudgetExceededError
        If the ledger cannot pay ``epsilon`` (or an approximate model's ``delta``, or the dataset
        allows no δ at all); nothing is fitted or charged.
    """
    spec = get(model)
    if not spec.private:
        raise ValueError(f"{spec.name} is not differentially private; only DP models can be trained for release")
    if spec.kind != "ours":
        # A baseline's (ε, δ) is not read reliably from its wrapper, so the ledger could not be told the truth.
        raise ValueError(f"{spec.name} is a comparison baseline; train one of DP Studio's models for release")
    if delta is not None and delta > 0 and not spec.approximate:
        raise ValueError(_("{name} is pure ε-DP and spends no δ; leave δ out.").format(name=spec.name))
    model_delta = (DEFAULT_MODEL_DELTA if delta is None else check_delta(delta)) if spec.approximate else 0.0
    if spec.approximate and model_delta == 0:
        raise ValueError(_("{name} is approximate DP and needs a δ above 0.").format(name=spec.name))
    context = design.context(epsilon, params=params, random_state=seed, count_noise=count_noise, selection=selection)
    if spec.approximate:
        context = replace(context, delta=model_delta)
    estimator = spec.make(context)
    if is_teacher(estimator):
        # A teacher keeps models fitted on raw rows and pays per answer: it is queried (answer_queries), never released.
        raise ValueError(f"{spec.name} answers queries at a price and cannot be trained for release; train its student")
    charge = Charge(
        f"Train {spec.name}",
        epsilon,
        model_delta,
        privacy_unit=design.schema.privacy_unit if design.schema is not None else None,
        rows_per_person=design.rows_per_person,
        seeded=seed is not None,
        mechanism=type(estimator).__name__,
        released="a trained model",
        action=N_("Training"),
        undone=N_("trained"),
        alternative=N_("Or choose a pure ε-DP model.") if spec.approximate else "",
    )
    with ledger.charging(charge) as paid:
        rng = np.random.default_rng(seed)
        fit_rows, test_rows = (
            holdout_split(len(design.y), rng, holdout, design.groups) if holdout > 0 else (np.arange(len(design.y)), np.arange(0))
        )
        fitted = fit_with_progress(lambda: spec.make(context), design.X[fit_rows], design.y[fit_rows], progress)
        paid.delta = person_delta(fitted, epsilon, design.rows_per_person)
    details: dict[str, Any] = {
        "n_train": len(fit_rows),
        "n_test": len(test_rows),
        "n_without_target": design.n_without_target,
        "rows_over_bound": design.rows_over_bound,
        "encoding": design.encoding,  # the owner's choice, for a recipe that fits the same model again
    }
    metrics: dict[str, float] = {}
    if len(test_rows):
        metrics = _scores(design, fitted, fit_rows, test_rows, details)
    if hasattr(fitted, "chosen_"):
        details["chosen"] = fitted.chosen_  # DP model choice: the registry key of the learner it chose
    inner = getattr(fitted, "final_model_", fitted)  # what is inside a chosen model is the chosen learner's
    if hasattr(inner, "tree_records"):
        details["tree"] = inner.tree_records(design.feature_names)
    if hasattr(inner, "rounds_as_records"):
        details["rounds"] = inner.rounds_as_records(design.feature_names)
    if hasattr(inner, "weights_as_records"):
        details["weights"] = inner.weights_as_records(design.feature_names)
    if hasattr(fitted, "spending_in_words"):
        details["spending"] = fitted.spending_in_words()
    if hasattr(inner, "weights_path_records"):
        details["weights_path"] = inner.weights_path_records()
    return TrainedModel(
        model,
        spec.name,
        spec.task,
        fitted,
        epsilon,
        dict(params or {}),
        metrics,
        design.feature_names,
        seed is not None,
        details,
        design.rows_per_person,
        read_from_data=design.schema.read_from_data() if design.schema is not None else [],
    )


def _scores(
    design: Design, fitted: Estimator, fit_rows: np.ndarray, test_rows: np.ndarray, details: dict[str, Any]
) -> dict[str, float]:
    """Held-out scores, and the same scores for a trivial guess (into ``details``): owner's eyes only."""
    truth, predicted = design.y[test_rows], fitted.predict(design.X[test_rows])
    if design.task == "regression":
        typical = np.full(len(test_rows), np.median(design.y[fit_rows]))
        details["baseline"] = {"MAE": mean_absolute_error(truth, typical), "RMSE": root_mean_squared_error(truth, typical)}
        details["baseline_name"] = N_("always predicting the training rows' median")
        return {"MAE": mean_absolute_error(truth, predicted), "RMSE": root_mean_squared_error(truth, predicted)}
    values, counts = np.unique(design.y[fit_rows], return_counts=True)
    majority = np.full(len(test_rows), values[np.argmax(counts)], dtype=object)
    details["baseline"] = {
        "accuracy": accuracy_score(truth, majority),
        "balanced accuracy": balanced_accuracy_score(truth, majority),
    }
    details["baseline_name"] = N_("always predicting the most common class")
    classes = design.classes
    if classes is None:  # Design.from_table always declares them; pd.Index(None) failed with a TypeError
        raise ValueError("a classification design needs its declared classes")
    details["confusion"] = pd.DataFrame(
        confusion_matrix(truth, predicted, labels=classes),
        index=pd.Index(classes, name="true"),
        columns=pd.Index(classes, name="predicted"),
    )
    details["per_class"] = per_class_table(truth, predicted, classes)
    return {"accuracy": accuracy_score(truth, predicted), "balanced accuracy": balanced_accuracy_score(truth, predicted)}


def per_class_table(y_true: np.ndarray, y_pred: np.ndarray, classes: Sequence[Any]) -> pd.DataFrame:
    """Rows, precision and recall of every declared class (NaN where a class was never seen or guessed)."""
    actual = np.asarray(y_true)[:, None] == np.asarray(classes, dtype=object)[None, :]
    guessed = np.asarray(y_pred)[:, None] == np.asarray(classes, dtype=object)[None, :]
    hits = (actual & guessed).sum(axis=0)
    rows, guesses = actual.sum(axis=0), guessed.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(guesses > 0, hits / np.maximum(guesses, 1), np.nan)
        recall = np.where(rows > 0, hits / np.maximum(rows, 1), np.nan)
    return pd.DataFrame({"class": classes, "rows": rows.astype(int), "precision": precision, "recall": recall})


def fit_with_progress(
    make: Callable[[], Estimator],
    X: np.ndarray,
    y: np.ndarray,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Estimator:
    """``make().fit(X, y)``, reporting ``progress(elapsed, seconds_left)`` about twice a second while it runs.

    A model that fits in rounds (``reports_rounds``: boosting rounds, trees, optimiser steps) says
    each round as it ends (:func:`~dpcore.progress.round_done`): the time left is the rounds left ×
    the seconds per round measured on this very fit (:class:`~dpcore.progress.RoundsTimeLeft`),
    None ("measuring…") until a round after the first has ended. (A line through two throw-away
    fits, fixed for the whole fit, was 8 times off near the end of a 2.5-s fit on a 76-column table.)

    Any other model: two throw-away fits on random 2.5 % and 5 % of the rows (at least 100 and 200)
    give a fixed cost and a cost per row, extrapolated to every row; the time left is that estimate
    minus the time elapsed, and None once the fit has run past nine tenths of it (the estimate was
    wrong, and nothing left to measure says by how much). The throw-away models are never shown
    nor released, so they cost no budget. ``clock`` is injectable for tests.
    """
    if progress is None:
        return make().fit(X, y)
    model = make()
    rounds = RoundsTimeLeft(clock) if getattr(model, "reports_rounds", False) else None
    estimate = float("nan") if rounds is not None else _estimate_fit_seconds(make, X, y, clock)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            if rounds is None:
                outcome["model"] = model.fit(X, y)
            else:
                with watching_rounds(rounds):
                    outcome["model"] = model.fit(X, y)
        except BaseException as error:  # re-raised below, in the caller's thread
            outcome["error"] = error

    def seconds_left(elapsed: float) -> float | None:
        if rounds is not None:
            return rounds.seconds_left()
        return estimate - elapsed if estimate == estimate and elapsed < 0.9 * estimate else None

    started = clock()
    progress(0.0, seconds_left(0.0))
    worker = threading.Thread(target=work, name="dpstudio-fit", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
        elapsed = clock() - started
        progress(elapsed, seconds_left(elapsed))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["model"]


def _estimate_fit_seconds(make: Callable[[], Estimator], X: np.ndarray, y: np.ndarray, clock: Callable[[], float]) -> float:
    """Seconds a fit on every row should take: the line through two throw-away fits on 2.5 % and 5 % of the rows (NaN if they fail)."""
    rng = np.random.default_rng()
    size = min(len(y), max(200, int(CALIBRATION_SHARE * len(y))))
    sample = rng.choice(len(y), size=size, replace=False)
    try:
        before = clock()
        make().fit(X[sample[: size // 2]], y[sample[: size // 2]])
        half = max(clock() - before, 1e-6)
        before = clock()
        make().fit(X[sample], y[sample])
        whole = max(clock() - before, 1e-6)
    except Exception:  # the real fit will say what is wrong
        return float("nan")
    per_row = max(whole - half, 0.0) / max(size - size // 2, 1)
    return max(whole + per_row * (len(y) - size), whole)


@dataclass
class AnsweredQueries:
    """Private answers to a batch of queries, paid for one by one: the answers may leave the owner's screen."""

    answers: np.ndarray
    epsilon: float
    delta: float
    n_queries: int


def answer_queries(
    design: Design,
    queries: np.ndarray,
    epsilon_per_query: float,
    ledger: BudgetLedger,
    *,
    delta_per_query: float = 0.0,
    n_blocks: int | None = None,
    seed: int | None = None,
) -> AnsweredQueries:
    """Answer every row of ``queries`` with a subsample-and-aggregate teacher fitted on ``design``, charged per query.

    The budget rule of :func:`train`, for a model that pays per answer: the whole batch's cost
    (``m·ε`` and ``m·δ`` by basic composition, per person) is checked before anything is fitted,
    charged after the answers are computed and before they are returned. The teacher (its block
    models are not private) is dropped here and never returned.

    Raises
    ------
    BudgetExceededError
        If the ledger cannot pay for all the queries; nothing is answered or charged.
    """
    from dpcore.models.subsample_aggregate import SubsampleAggregateClassifier, SubsampleAggregateRegressor

    if design.task != "regression" and delta_per_query > 0:
        raise ValueError(
            _("A classifier's answers are a noisy vote, pure ε-DP: give delta_per_query = 0 (a δ would be charged for nothing).")
        )
    n_queries = len(queries)
    epsilon, delta = epsilon_per_query * n_queries, delta_per_query * n_queries
    context = design.context(epsilon_per_query, random_state=seed)
    context.delta = delta_per_query
    row = context.per_row()
    common: dict[str, Any] = {"epsilon": row.epsilon, "bounds": row.bounds, "random_state": seed}
    if n_blocks is not None:
        common["n_blocks"] = n_blocks
    if design.task == "regression":
        teacher: Any = SubsampleAggregateRegressor(delta=row.delta, target_bounds=row.target_bounds, **common)
    else:
        teacher = SubsampleAggregateClassifier(classes=row.classes, **common)
    charge = Charge(
        f"Answer {n_queries} queries (subsample and aggregate)",
        epsilon,
        delta,
        privacy_unit=design.schema.privacy_unit if design.schema is not None else None,
        rows_per_person=design.rows_per_person,
        seeded=seed is not None,
        mechanism=type(teacher).__name__,
        released=f"{n_queries} answered queries",
        action=N_("Answering these queries"),
        undone=N_("answered"),
    )
    with ledger.charging(charge):
        answers = teacher.fit(design.X, design.y).predict(queries)
    return AnsweredQueries(answers, epsilon, delta, n_queries)
