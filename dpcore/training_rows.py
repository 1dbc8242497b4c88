"""Train one model on rows that live elsewhere (a Spark table): the same rule as :func:`dpcore.training.train`.

The ledger is checked before the fit and charged after it, before anything about the model is
returned. The held-out part is chosen by keyed per-row randomness (:mod:`dpcore.mechanisms.keyed`),
not by position, so it is the same on every backend and never depends on the values. Scores are
summed over row batches like every other statistic here — exact integer sums, so the driver
never holds the rows — and, as in :func:`~dpcore.training.train`, they are measured on raw rows:
owner's eyes only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dpcore.backends import RowBatch, Rows, exact_bincount, fixed, unfixed
from dpcore.budget.accountant import BudgetLedger, Charge
from dpcore.i18n import N_, _
from dpcore.mechanisms import keyed
from dpcore.models.registry import DPEstimatorMixin, Estimator, ModelSpec, get
from dpcore.tables.design import Design
from dpcore.training import DEFAULT_COUNT_NOISE, DEFAULT_MODEL_DELTA, DEFAULT_SELECTION, HOLDOUT_SHARE, TrainedModel, spent_delta
from dpcore.validation import check_delta

HOLDOUT_STREAM = 7
#: Cells of the target histogram the trivial guess (the training rows' median) is read from.
MEDIAN_CELLS = 4096


def holdout_parts(rows: Rows, share: float, seed: int | None) -> tuple[Rows, Rows]:
    """The rows to fit on and the rows held out: each row held out with probability ``share``, by a keyed draw."""
    key = keyed.new_key(np.random.default_rng(seed))

    def part(held_out: bool) -> Any:
        def take(batch: RowBatch) -> RowBatch:
            chosen = keyed.uniforms(key, batch.key, HOLDOUT_STREAM)[:, 0] < share
            return batch.take(chosen if held_out else ~chosen)

        return take

    return rows.prepared(part(False)), rows.prepared(part(True))


def check_fits_rows(model: str) -> ModelSpec:
    """Registry model ``model``, if it is one of our private models and fits from a backend's rows (else a sentence)."""
    spec = get(model)
    if not spec.private or spec.kind != "ours" or spec.estimator is None:
        raise ValueError(
            _("{name} is not one of DP Studio's private models; train one of those for release").format(name=spec.name)
        )
    if not spec.estimator.fits_rows():
        raise ValueError(_("{name} cannot be fitted on Spark yet; use the local engine").format(name=spec.name))
    return spec


def train_rows(
    domain: Design,
    rows: Rows,
    model: str,
    epsilon: float,
    ledger: BudgetLedger,
    *,
    params: dict[str, Any] | None = None,
    count_noise: str = DEFAULT_COUNT_NOISE,
    selection: str = DEFAULT_SELECTION,
    seed: int | None = None,
    holdout: float = HOLDOUT_SHARE,
    delta: float | None = None,
) -> TrainedModel:
    """Fit registry model ``model`` on ``rows`` (features in declared units, raw target), charge ``ledger``, score it.

    As :func:`dpcore.training.train`, for one row per person (a privacy-unit column needs the
    single-machine path, which bounds each person's rows).
    """
    spec = check_fits_rows(model)
    model_delta = (DEFAULT_MODEL_DELTA if delta is None else check_delta(delta)) if spec.approximate else 0.0
    context = domain.context(epsilon, params=params, random_state=seed, count_noise=count_noise, selection=selection)
    if spec.approximate:
        context = replace(context, delta=model_delta)
    fitted = spec.make(context)
    assert isinstance(fitted, DPEstimatorMixin)  # check_fits_rows: one of our estimators
    charge = Charge(
        f"Train {spec.name}",
        epsilon,
        model_delta,
        seeded=seed is not None,
        mechanism=type(fitted).__name__,
        released="a trained model",
        action=N_("Training"),
        undone=N_("trained"),
        alternative=N_("Or choose a pure ε-DP model.") if spec.approximate else "",
    )
    with ledger.charging(charge) as paid:
        fit_part, test_part = holdout_parts(rows, holdout, seed) if holdout > 0 else (rows, None)
        fitted.fit_rows(fit_part)
        paid.delta = spent_delta(fitted)
    details: dict[str, Any] = {}
    metrics = _scores(domain, fitted, fit_part, test_part, details) if test_part is not None else {}
    if hasattr(fitted, "tree_records"):
        details["tree"] = fitted.tree_records(domain.feature_names)
    if hasattr(fitted, "rounds_as_records"):
        details["rounds"] = fitted.rounds_as_records(domain.feature_names)
    return TrainedModel(
        model,
        spec.name,
        spec.task,
        fitted,
        epsilon,
        dict(params or {}),
        metrics,
        domain.feature_names,
        seed is not None,
        details,
        1,
        read_from_data=domain.schema.read_from_data() if domain.schema is not None else [],
    )


def _scores(domain: Design, fitted: Estimator, fit_part: Rows, test_part: Rows, details: dict[str, Any]) -> dict[str, float]:
    """Held-out scores and a trivial guess's, from sums over the rows (owner's eyes only)."""
    if domain.task == "regression":
        return _regression_scores(domain, fitted, fit_part, test_part, details)
    return _classification_scores(domain, fitted, fit_part, test_part, details)


def _regression_scores(
    domain: Design, fitted: Estimator, fit_part: Rows, test_part: Rows, details: dict[str, Any]
) -> dict[str, float]:
    assert domain.target_bounds is not None, "a regression domain declares its target bounds"
    low, high = domain.target_bounds
    span = high - low

    def cells(batch: RowBatch) -> np.ndarray:
        unit = np.clip((batch.y.astype(float) - low) / span, 0.0, 1.0)
        return exact_bincount(np.minimum((unit * MEDIAN_CELLS).astype(np.int64), MEDIAN_CELLS - 1), None, MEDIAN_CELLS)

    histogram = fit_part.aggregate(cells)
    median = low + span * (np.searchsorted(np.cumsum(histogram), histogram.sum() / 2) + 0.5) / MEDIAN_CELLS

    def errors(batch: RowBatch) -> np.ndarray:
        truth = np.clip(batch.y.astype(float), low, high)
        out = np.zeros(5, dtype=np.int64)
        out[0] = len(batch)
        if len(batch):
            for slot, guess in ((1, fitted.predict(batch.X)), (3, np.full(len(batch), median))):
                q = fixed(np.abs(truth - np.clip(guess, low, high)) / span)
                out[slot], out[slot + 1] = int(q.sum()), int((q * q).sum())
        return out

    n, model_abs, model_sq, base_abs, base_sq = test_part.aggregate(errors)
    n = max(int(n), 1)
    details["n_test"] = n
    details["baseline"] = {"MAE": float(unfixed(base_abs)) * span / n, "RMSE": float(np.sqrt(unfixed(base_sq, 28) / n)) * span}
    details["baseline_name"] = N_("always predicting the training rows' median")
    return {"MAE": float(unfixed(model_abs)) * span / n, "RMSE": float(np.sqrt(unfixed(model_sq, 28) / n)) * span}


def _classification_scores(
    domain: Design, fitted: Estimator, fit_part: Rows, test_part: Rows, details: dict[str, Any]
) -> dict[str, float]:
    classes = np.asarray(list(domain.classes or []), dtype=object)
    k = len(classes)

    def codes(labels: np.ndarray) -> np.ndarray:
        found = labels[:, None] == classes[None, :]
        return np.where(found.any(axis=1), found.argmax(axis=1), -1)

    def class_counts(batch: RowBatch) -> np.ndarray:
        c = codes(np.asarray(batch.y, dtype=object))
        return exact_bincount(c[c >= 0], None, k)

    def confusion(batch: RowBatch) -> np.ndarray:
        truth = codes(np.asarray(batch.y, dtype=object))
        guess = codes(np.asarray(fitted.predict(batch.X), dtype=object)) if len(batch) else truth
        known = (truth >= 0) & (guess >= 0)
        return exact_bincount(truth[known] * k + guess[known], None, k * k)

    majority = int(np.argmax(fit_part.aggregate(class_counts)))
    table = test_part.aggregate(confusion).reshape(k, k)
    rows = table.sum(axis=1)
    n = max(int(rows.sum()), 1)
    seen = rows > 0
    recall = np.diag(table)[seen] / rows[seen]
    details["n_test"] = int(rows.sum())
    details["baseline"] = {
        "accuracy": rows[majority] / n,
        "balanced accuracy": (1.0 / max(int(seen.sum()), 1)) if seen[majority] else 0.0,
    }
    details["baseline_name"] = N_("always predicting the most common class")
    return {"accuracy": float(np.trace(table) / n), "balanced accuracy": float(recall.mean()) if recall.size else 0.0}
