"""Seeded smoke tests: the models learn something, and more ε buys more accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.models import (
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPGaussianNB,
    DPMeanRegressor,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
)


def _regression(n=8000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    y = np.clip(0.6 * (X[:, 0] > 0.5) + 0.3 * X[:, 1] + 0.05 * rng.standard_normal(n), 0, 1)
    return X[: n // 2], y[: n // 2], X[n // 2 :], y[n // 2 :]


def _classification(n=8000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    y = ((X[:, 0] > 0.5) ^ (rng.random(n) < 0.1)).astype(int)
    return X[: n // 2], y[: n // 2], X[n // 2 :], y[n // 2 :]


def _mae(model, data):
    X, y, Xt, yt = data
    return float(np.abs(model.fit(X, y).predict(Xt) - yt).mean())


@pytest.mark.parametrize(
    "model",
    [
        DPRegressionTree(max_depth=6, random_state=0),
        DPRegressionTree(max_depth=4, leaf="median", random_state=0),
        DPPartitionedForest(n_estimators=5, random_state=0),
        DPExtraTreesRegressor(n_estimators=5, max_depth=3, random_state=0),
    ],
    ids=lambda m: f"{type(m).__name__}-{m.get_params().get('leaf', '')}",
)
def test_regressors_beat_the_dp_mean_at_large_epsilon(model):
    data = _regression()
    baseline = _mae(DPMeanRegressor(epsilon=20.0, random_state=0), data)
    assert _mae(model.set_params(epsilon=20.0), data) < 0.7 * baseline


@pytest.mark.parametrize(
    "model",
    [
        DPExtraTreesClassifier(n_estimators=5, max_depth=3, classes=[0, 1], random_state=0),
        DPRandomForestClassifier(n_estimators=5, max_depth=3, classes=[0, 1], random_state=0),
        DPGaussianNB(classes=[0, 1], random_state=0),
    ],
    ids=lambda m: type(m).__name__,
)
def test_classifiers_learn_at_large_epsilon(model):
    X, y, Xt, yt = _classification()
    assert model.set_params(epsilon=20.0).fit(X, y).score(Xt, yt) > 0.8


def test_forest_error_falls_as_epsilon_grows():
    data = _regression()
    errors = [
        np.mean([_mae(DPPartitionedForest(n_estimators=5, epsilon=eps, random_state=s), data) for s in range(3)])
        for eps in (0.05, 20.0)
    ]
    assert errors[1] < errors[0]


def test_same_seed_same_model_and_no_seed_fresh_noise():
    X, y, Xt, _ = _regression(2000)
    a = DPRegressionTree(max_depth=4, random_state=3).fit(X, y).predict(Xt)
    b = DPRegressionTree(max_depth=4, random_state=3).fit(X, y).predict(Xt)
    c = DPRegressionTree(max_depth=4).fit(X, y).predict(Xt)
    d = DPRegressionTree(max_depth=4).fit(X, y).predict(Xt)
    assert np.array_equal(a, b)
    assert not np.array_equal(c, d)


def test_tree_records_are_plain_data_in_original_units():
    X, y, _, _ = _regression(3000)
    model = DPRegressionTree(max_depth=3, epsilon=10.0, bounds=(0, 10), target_bounds=(100, 200), random_state=0).fit(
        X * 10, 100 + 100 * y
    )
    records = model.tree_records(["a", "b", "c", "d"])
    root = records[0]
    assert root["feature"] in {"a", "b", "c", "d"} and 0 < root["threshold"] < 10
    leaves = [r for r in records if r.get("leaf")]
    assert len(leaves) == model.n_leaves_ and all(100 <= r["value"] <= 200 for r in leaves)


def test_boosting_approaches_scikit_learn_gradient_boosting_at_large_epsilon():
    from sklearn.ensemble import GradientBoostingRegressor

    from dpcore.models import DPBoostingRegressor

    X, y, Xt, yt = _regression(20_000)
    reference = float(np.abs(GradientBoostingRegressor(random_state=0).fit(X, y).predict(Xt) - yt).mean())
    ours = _mae(DPBoostingRegressor(epsilon=100.0, random_state=0), (X, y, Xt, yt))
    baseline = _mae(DPMeanRegressor(epsilon=100.0, random_state=0), (X, y, Xt, yt))
    assert ours < reference + 0.25 * (baseline - reference)


def test_boosting_classifier_handles_multiclass_and_declared_categories():
    from dpcore.models import DPBoostingClassifier

    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, 6000)
    X = np.column_stack([rng.random(6000), codes / 3])
    y = np.array(["a", "b", "c"])[np.where(codes == 2, 2, (X[:, 0] > 0.5).astype(int))]
    model = DPBoostingClassifier(epsilon=20.0, classes=["a", "b", "c", "d"], categorical_levels={1: 4}, random_state=0)
    model.fit(X[:4000], y[:4000])
    assert model.predict_proba(X[4000:]).shape == (2000, 4)
    assert model.score(X[4000:], y[4000:]) > 0.85
