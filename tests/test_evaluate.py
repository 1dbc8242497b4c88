"""The evaluation engine and the model registry."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpcore.evaluate import COLUMNS, fold_indices, plan_sweep, run_sweep, summarise
from dpcore.exceptions import PrivacyLeakWarning
from dpcore.models.registry import KINDS, REGISTRY, ModelContext, get, models_for


def test_registry_lists_every_kind_and_task():
    assert {m.kind for m in REGISTRY} == set(KINDS)
    assert {m.task for m in REGISTRY} == {"regression", "classification"}
    assert len({m.key for m in REGISTRY}) == len(REGISTRY)
    with pytest.raises(ValueError, match="unknown model"):
        get("no-such-model")


@pytest.mark.parametrize("spec", [m for m in REGISTRY if m.kind != "interpret"], ids=lambda m: m.key)
def test_every_registry_model_fits_with_declared_domains_and_no_leak_warning(spec):
    rng = np.random.default_rng(0)
    X = rng.random((300, 3)) * 10
    if spec.task == "classification":
        y = np.where(X[:, 0] > 5, "high", "low")
        context = ModelContext(
            n_features=3, epsilon=2.0, bounds=(np.zeros(3), np.full(3, 10.0)), classes=["high", "low", "unused"], random_state=0
        )
    else:
        y = 50 + 10 * X[:, 0]
        context = ModelContext(
            n_features=3, epsilon=2.0, bounds=(np.zeros(3), np.full(3, 10.0)), target_bounds=(50, 150), random_state=0
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.filterwarnings("error", message=".*[Pp]rivacy.*")
        model = spec.make(context).fit(X, y)
    predicted = model.predict(X[:5])
    assert len(predicted) == 5
    if spec.task == "classification":
        assert set(predicted) <= {"high", "low", "unused"}


def test_diffprivlib_forest_gets_integer_labels_and_decodes_them():
    """diffprivlib 0.6.6 assigns random leaf labels unless labels are 0..K-1."""
    rng = np.random.default_rng(1)
    X = rng.random((3000, 2))
    y = np.where(X[:, 0] > 0.5, "yes", "no")
    context = ModelContext(
        n_features=2, epsilon=50.0, bounds=(0.0, 1.0), classes=["no", "yes"], random_state=0, params={"max_depth": 3}
    )
    model = get("dpl_random_forest").make(context).fit(X, y)
    assert set(model.predict(X)) <= {"no", "yes"}


def test_sweep_gives_a_tidy_table_with_progress_and_stops_when_asked():
    rng = np.random.default_rng(2)
    X = rng.random((400, 2))
    y = X[:, 0]
    tasks = plan_sweep(["dp_tree", "dp_mean", "sk_tree_reg"], [0.5, 2.0], n_folds=3, repetitions=2)
    assert len(tasks) == 2 * 2 * 2 * 3 + 3
    folds = fold_indices(y, "regression", 3, shuffle=True, random_state=0)
    context = ModelContext(n_features=2, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0))
    seen = []
    results = run_sweep(tasks, X, y, folds, context, "regression", seed=0, progress=lambda done, total, task: seen.append(done))
    assert list(results.columns) == COLUMNS
    assert seen == list(range(1, len(tasks) + 1))
    assert len(results) == 2 * len(tasks)
    summary = summarise(results)
    assert summary[summary["model"] == "sk_tree_reg"]["epsilon"].isna().all()
    stopped = run_sweep(
        tasks,
        X,
        y,
        folds,
        context,
        "regression",
        should_stop=lambda: len(seen) >= len(tasks) + 4,
        progress=lambda done, total, task: seen.append(done),
    )
    assert 0 < len(stopped) < len(results)


def test_unshuffled_folds_keep_file_order():
    folds = fold_indices(np.zeros(100), "regression", 10, shuffle=False)
    assert list(folds[0][1]) == list(range(10))


def test_models_for_filters_by_task_and_kind():
    ours = models_for("classification", kinds=("ours",))
    assert ours and all(m.kind == "ours" and m.task == "classification" for m in ours)
