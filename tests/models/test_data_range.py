"""Tree ensembles that buy a DP data range per feature: thresholds land on the data, exports stay in units."""

from __future__ import annotations

import numpy as np

from dpcore.models import DPExtraTreesClassifier, DPExtraTreesRegressor, DPRandomForestClassifier


def _wide(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = 0.45 + rng.random((n, 3)) / 10  # a tenth of the declared [0, 1]
    return X, X[:, 0] + 0.02 * rng.standard_normal(n)


def test_exported_thresholds_are_in_original_units_inside_the_data_range():
    X, y = _wide()
    X_units = 100 + 50 * X  # declared bounds (100, 150)
    model = DPExtraTreesRegressor(epsilon=2.0, bounds=(100.0, 150.0), random_state=0).fit(X_units, y)
    low, high = 100 + 50 * model.data_range_[:, 0], 100 + 50 * model.data_range_[:, 1]
    for tree in range(len(model.trees_)):
        for node in model.tree_records(tree=tree):
            if "threshold" in node:
                f = int(node["feature"][1:])
                assert low[f] - 1e-9 <= node["threshold"] <= high[f] + 1e-9
    assert np.all(high - low < 15)  # the data fill 5 of the declared 50 units


def test_the_data_range_helps_on_wide_bounds_and_a_refit_forgets_it():
    X, y = _wide()
    X_test, y_test = _wide(2000, seed=1)
    narrowed = DPExtraTreesRegressor(epsilon=1.0, random_state=0).fit(X, y)
    declared = DPExtraTreesRegressor(epsilon=1.0, range_share=0.0, random_state=0).fit(X, y)
    mae = lambda m: np.abs(m.predict(X_test) - y_test).mean()  # noqa: E731
    assert mae(narrowed) < 0.95 * mae(declared)
    assert declared.data_range_ is None
    narrowed.set_params(range_share=0.0).fit(X, y)
    assert narrowed.data_range_ is None and narrowed.epsilon_spent_ == 1.0


def test_classifiers_with_a_data_range_predict_from_the_same_rescaling():
    X, _ = _wide()
    labels = (X[:, 1] > 0.5).astype(int)
    for model in (
        DPRandomForestClassifier(epsilon=2.0, classes=[0, 1], random_state=0),
        DPExtraTreesClassifier(epsilon=2.0, classes=[0, 1], random_state=0),
    ):
        model.fit(X, labels)
        assert model.data_range_.shape == (3, 2)
        assert model.score(X, labels) > 0.8
