"""scikit-learn's estimator contract, with the checks a DP model cannot pass listed and explained."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpcore.exceptions import PrivacyLeakWarning
from dpcore.models import (
    DPBoostingClassifier,
    DPBoostingRegressor,
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPGaussianNB,
    DPMeanRegressor,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
    DPSGDClassifier,
    DPSGDRegressor,
)

ESTIMATORS = [
    DPRegressionTree(max_depth=3),
    DPRegressionTree(max_depth=3, leaf="median"),
    DPPartitionedForest(n_estimators=3),
    DPMeanRegressor(),
    DPExtraTreesClassifier(n_estimators=3),
    DPExtraTreesRegressor(n_estimators=3),
    DPRandomForestClassifier(n_estimators=3),
    DPGaussianNB(),
    DPBoostingRegressor(n_rounds=5),
    DPBoostingClassifier(n_rounds=5),
    DPBoostingClassifier(n_rounds=5, delta=1e-5),
    DPSGDRegressor(),
    DPSGDClassifier(),
    DPSGDClassifier(hidden_units=4),
]


def expected_failures(estimator) -> dict:
    failures = {
        # NaN and ±inf are accepted on purpose: NaN becomes the middle of the declared bounds and
        # infinities the nearest bound, before anything is counted (privacy-tests.md #6), so a bad
        # cell can neither crash a release nor carry more than one record's weight.
        "check_estimators_nan_inf": "NaN/inf are mapped into the declared bounds, not rejected",
    }
    linear_sgd = isinstance(estimator, DPSGDClassifier) and not estimator.hidden_units
    if not (isinstance(estimator, DPGaussianNB | DPBoostingClassifier) or linear_sgd):
        # These demand near-perfect training scores on a few dozen rows at the default ε = 1;
        # with honest noise on so few records no DP tree can reach them.
        failures["check_regressors_train"] = "DP noise at ε = 1 on ~30 rows cannot reach the required training score"
        failures["check_classifiers_train"] = "DP noise at ε = 1 on ~30 rows cannot reach the required training accuracy"
    if isinstance(estimator, DPBoostingClassifier):
        # Standardised blobs clipped into the declared [0, 1]: five rounds at ε = 1 reach 0.78-0.86 over
        # seeds on the three classes (28 % of seeds pass the check's 0.83 bar; the approximate mode alike)
        # and 0.91 on average on two (95 % pass, 96 % before the first-level picks), and the check
        # always runs seed 0, which lands where the coin falls: 0.867 on three classes, 0.815 on two.
        failures["check_classifiers_train"] = "five noisy rounds on 300 clipped rows straddle the 0.83 bar"
    return failures


@pytest.fixture(autouse=True)
def _quiet_leak_warnings():
    # The checks fit classifiers without declared classes, which warns by design.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_scikit_learn_contract(estimator, check):
    check(estimator)


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
