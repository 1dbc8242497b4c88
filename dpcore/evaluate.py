"""Cross-validation and ε sweeps over registry models, for the app and the benchmarks.

A sweep is a list of :class:`Task` (model, ε, repetition, fold). Running tasks one at a time
lets a caller show progress, stop early and keep what finished, and skip tasks whose rows
it already has. Results are a tidy DataFrame: one row per (task, metric).

Everything here measures models on the owner's raw data. Those figures are for the owner's
eyes only: they are not differentially private and must never go into a release.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, balanced_accuracy_score, mean_absolute_error, root_mean_squared_error
from sklearn.model_selection import KFold, StratifiedKFold

from dpcore.i18n import N_
from dpcore.models.registry import ModelContext, get

METRICS = {
    # The metrics' names are keys (tables, JSON); pages show them translated.
    "regression": {N_("MAE"): mean_absolute_error, N_("RMSE"): root_mean_squared_error},
    "classification": {N_("accuracy"): accuracy_score, N_("balanced accuracy"): balanced_accuracy_score},
}
COLUMNS = ["model", "name", "kind", "epsilon", "repetition", "fold", "metric", "value", "fit_seconds"]


@dataclass(frozen=True)
class Task:
    model: str
    epsilon: float  # NaN for a non-private model (fitted once per fold, drawn as a reference line)
    repetition: int
    fold: int

    @property
    def key(self) -> tuple[str, float | None, int, int]:
        eps = None if np.isnan(self.epsilon) else float(self.epsilon)
        return (self.model, eps, self.repetition, self.fold)


def plan_sweep(models: Iterable[str], epsilons: Iterable[float], n_folds: int, repetitions: int = 1) -> list[Task]:
    """Every (model, ε, repetition, fold) to fit; non-private models once per fold."""
    tasks: list[Task] = []
    epsilons = [float(e) for e in epsilons]
    for key in models:
        spec = get(key)
        model_epsilons = epsilons if spec.private else [float("nan")]
        model_reps = repetitions if spec.private else 1
        for eps in model_epsilons:
            for rep in range(model_reps):
                tasks.extend(Task(key, eps, rep, fold) for fold in range(n_folds))
    return tasks


def fold_indices(
    y: np.ndarray, task: str, n_folds: int, shuffle: bool, random_state: int | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test indices; stratified for classification when shuffling."""
    if task == "classification" and shuffle:
        splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
        return list(splitter.split(np.zeros(len(y)), y))
    splitter = KFold(n_splits=n_folds, shuffle=shuffle, random_state=random_state if shuffle else None)
    return list(splitter.split(np.zeros(len(y))))


Folds = Sequence[tuple[np.ndarray, np.ndarray]]


def run_task(
    task: Task, X: np.ndarray, y: np.ndarray, folds: Folds, context: ModelContext, problem: str, seed: int | None = None
) -> list[dict[str, Any]]:
    """Fit one model on one fold and score it: one row per metric."""
    spec = get(task.model)
    train, test = folds[task.fold]
    eps = task.epsilon if spec.private else 1.0
    task_seed = None if seed is None else _task_seed(seed, task)
    model = spec.make(replace(context, epsilon=eps, random_state=task_seed))
    start = time.perf_counter()
    model.fit(X[train], y[train])
    seconds = time.perf_counter() - start
    predicted = model.predict(X[test])
    return [
        {
            "model": task.model,
            "name": spec.name,
            "kind": spec.kind,
            "epsilon": task.epsilon,
            "repetition": task.repetition,
            "fold": task.fold,
            "metric": metric,
            "value": float(score(y[test], predicted)),
            "fit_seconds": seconds,
        }
        for metric, score in METRICS[problem].items()
    ]


def _task_seed(seed: int, task: Task) -> int:
    model_index = sum(map(ord, task.model))
    eps_part = 0 if np.isnan(task.epsilon) else int(round(task.epsilon * 1000))
    return int(np.random.SeedSequence([seed, model_index, eps_part, task.repetition, task.fold]).generate_state(1)[0])


def run_sweep(
    tasks: list[Task],
    X: np.ndarray,
    y: np.ndarray,
    folds: Folds,
    context: ModelContext,
    problem: str,
    seed: int | None = None,
    progress: Callable[[int, int, Task], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Run ``tasks`` in order; ``progress(done, total, task)`` after each; stop early if asked."""
    rows: list[dict[str, Any]] = []
    for done, task in enumerate(tasks, start=1):
        if should_stop is not None and should_stop():
            break
        rows.extend(run_task(task, X, y, folds, context, problem, seed))
        if progress is not None:
            progress(done, len(tasks), task)
    return pd.DataFrame(rows, columns=COLUMNS)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count per (model, ε, metric); non-private rows keep ε = NaN."""
    if results.empty:
        return pd.DataFrame(columns=["model", "name", "kind", "epsilon", "metric", "mean", "std", "runs", "fit_seconds"])
    grouped = results.groupby(["model", "name", "kind", "epsilon", "metric"], dropna=False)
    out = grouped.agg(mean=("value", "mean"), std=("value", "std"), runs=("value", "size"), fit_seconds=("fit_seconds", "median"))
    return out.reset_index()
