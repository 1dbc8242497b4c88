"""What every DP estimator promises beyond scikit-learn's contract (which tests/test_common.py checks)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from test_common import ESTIMATORS as COMMON_ESTIMATORS

from dpcore.exceptions import PrivacyLeakWarning
from dpcore.models import (
    DPBoostingRegressor,
    DPExtraTreesRegressor,
    DPMeanRegressor,
    DPPartitionedForest,
    DPRegressionTree,
)
from dpcore.models.clustering import DPGridDensityClustering
from dpcore.models.subsample_aggregate import is_teacher

# The registry's models as the contract checks make them (tests/test_common.py), without the
# teachers, which are queried at a price and never fitted for release, and the group map (a clusterer,
# with tests of its own in tests/models/test_clustering.py).
ESTIMATORS = [e for e in COMMON_ESTIMATORS if not is_teacher(e) and not isinstance(e, DPGridDensityClustering)]


@pytest.fixture(autouse=True)
def _quiet_leak_warnings():
    # Some classifiers here are fitted without declared classes, which warns by design.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield


def _data(classifier: bool):
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = (X[:, 0] > 0.5).astype(int) if classifier else X[:, 0]
    return X, y


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_fit_leaves_hyper_parameters_untouched(estimator):
    estimator = clone(estimator).set_params(random_state=0)
    if hasattr(estimator, "classes"):
        estimator.set_params(classes=[0, 1])
    before = estimator.get_params()
    X, y = _data(hasattr(estimator, "classes"))
    estimator.fit(X, y)
    assert estimator.get_params() == before


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_works_in_pipelines_and_cross_validation(estimator):
    estimator = clone(estimator).set_params(random_state=0, epsilon=5.0)
    if hasattr(estimator, "classes"):
        estimator.set_params(classes=[0, 1])
    X, y = _data(hasattr(estimator, "classes"))
    scores = cross_val_score(make_pipeline(FunctionTransformer(), estimator), X, y, cv=3)
    assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_reports_the_epsilon_it_spent(estimator):
    estimator = clone(estimator).set_params(random_state=0, epsilon=0.7)
    if hasattr(estimator, "classes"):
        estimator.set_params(classes=[0, 1])
    X, y = _data(hasattr(estimator, "classes"))
    assert estimator.fit(X, y).epsilon_spent_ == 0.7


CLASSIFIERS = [e for e in ESTIMATORS if hasattr(e, "classes")]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_declared_classes_that_never_occur_still_appear(estimator):
    X, y = _data(True)
    model = clone(estimator).set_params(classes=[0, 1, 2], random_state=0).fit(X, y)
    assert list(model.classes_) == [0, 1, 2]
    assert model.predict_proba(X).shape == (len(X), 3)
    assert np.allclose(model.predict_proba(X).sum(axis=1), 1.0)


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_dropping_the_rarest_class_leaves_classes_unchanged(estimator):
    rng = np.random.default_rng(1)
    X = rng.random((400, 3))
    y = np.where(X[:, 0] > 0.5, "b", "a").astype(object)
    y[:2] = "rare"
    declared = ["a", "b", "rare"]
    with_rare = clone(estimator).set_params(classes=declared, random_state=0).fit(X, y)
    without = clone(estimator).set_params(classes=declared, random_state=0).fit(X[2:], y[2:])
    assert list(with_rare.classes_) == list(without.classes_) == declared


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_undeclared_classes_warn_about_the_leak(estimator):
    X, y = _data(True)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        clone(estimator).set_params(classes=None, random_state=0).fit(X, y)


@pytest.mark.parametrize(
    "estimator",
    [DPRegressionTree(), DPPartitionedForest(), DPExtraTreesRegressor(), DPMeanRegressor(), DPBoostingRegressor()],
    ids=lambda e: type(e).__name__,
)
def test_predictions_come_back_in_target_units(estimator):
    rng = np.random.default_rng(2)
    X = rng.random((2000, 2)) * 100
    y = 1000 + 500 * (X[:, 0] > 50)
    params = {"target_bounds": (1000, 1500), "epsilon": 20.0, "random_state": 0}
    if "bounds" in estimator.get_params():
        params["bounds"] = (0, 100)
    predicted = clone(estimator).set_params(**params).fit(X, y).predict(X)
    assert np.all((predicted >= 1000) & (predicted <= 1500))
