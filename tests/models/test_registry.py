"""The registry's side of our models: defaults read from the estimators, privacy summaries, keyword-only arguments."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dpcore.models
from dpcore.models import DPBoostingRegressor, DPGaussianNB, DPRegressionTree
from dpcore.models._specs import CONTEXT_ARGUMENTS
from dpcore.models.baselines import DeclaredBoundsScaler, EncodedLabelClassifier, PartitionedForestRegressor
from dpcore.models.registry import MODELS, ModelContext, estimator_defaults, get, privacy_summary

OURS = [spec for spec in MODELS.values() if spec.kind == "ours"]
ESTIMATORS = [getattr(dpcore.models, name) for name in dpcore.models.__all__]


def _context(spec, **overrides) -> ModelContext:
    classes = ["a", "b"] if spec.task == "classification" else None
    return ModelContext(n_features=2, classes=classes, **overrides)


def test_every_one_of_our_registry_entries_names_its_estimator():
    assert {spec.estimator for spec in OURS} == set(ESTIMATORS)
    assert all(spec.estimator is None for spec in MODELS.values() if spec.kind != "ours")


@pytest.mark.parametrize("spec", OURS, ids=lambda s: s.key)
def test_a_default_lives_in_the_estimator_only(spec):
    defaults = estimator_defaults(spec.estimator)
    for parameter in spec.parameters:
        assert parameter.default == defaults[parameter.name]
        # a box of whole numbers whose default is a word ("auto") is one the estimator fills in: said, not guessed
        assert parameter.automatic == (isinstance(parameter.default, str) and not parameter.choices)
    # Built with no choices, every hyper-parameter the context does not set keeps the estimator's default.
    built = spec.make(_context(spec)).get_params()
    context_bound = {*CONTEXT_ARGUMENTS, "delta", "leaf"}
    assert {k: v for k, v in built.items() if k not in context_bound} == {
        k: v for k, v in defaults.items() if k not in context_bound
    }


def test_owner_choices_use_the_estimators_names_and_never_override_the_budget():
    spec = get("dp_forest")
    model = spec.make(_context(spec, epsilon=0.5, params={"n_estimators": 7.0, "max_depth": 3, "epsilon": 99.0, "unknown": 1}))
    assert (model.n_estimators, model.max_depth, model.epsilon, model.leaf) == (7, 3, 0.5, "mean")
    assert isinstance(model.n_estimators, int)
    assert get("dp_forest_median").make(_context(spec, params={"leaf": "mean"})).leaf == "median"


def test_approximate_entries_take_delta_from_the_context_and_pure_ones_keep_zero():
    spec = get("dp_boosting_reg_approx")
    assert spec.make(_context(spec, delta=1e-6)).delta == 1e-6
    assert get("dp_boosting_reg").make(_context(spec, delta=1e-6)).delta == 0.0


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_every_estimator_states_its_privacy_argument_once_in_a_few_sentences(estimator):
    summary = estimator.privacy_summary
    assert isinstance(summary, str)
    assert summary.startswith("Neighbouring datasets differ by one added or removed record.")
    assert 2 <= summary.count(". ") + 1 <= 4
    assert "ε" in summary
    assert privacy_summary(estimator) == privacy_summary(estimator()) == summary


def test_privacy_summary_by_registry_key():
    for spec in MODELS.values():
        expected = spec.estimator.privacy_summary if spec.estimator is not None else spec.description
        assert privacy_summary(spec.key) == expected
    assert "(ε, δ)-DP" in privacy_summary("dp_boosting_clf_approx")
    assert "Gini" in privacy_summary("dp_random_forest") and "Gini" not in privacy_summary("dp_extra_trees_reg")
    with pytest.raises(TypeError, match="registry key"):
        privacy_summary(object())
    with pytest.raises(ValueError, match="unknown model"):
        privacy_summary("no-such-model")


@pytest.mark.parametrize(
    "estimator", [*ESTIMATORS, DeclaredBoundsScaler, EncodedLabelClassifier, PartitionedForestRegressor], ids=lambda e: e.__name__
)
def test_estimator_arguments_are_keyword_only(estimator):
    parameters = list(inspect.signature(estimator.__init__).parameters.values())[1:]
    assert parameters and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    with pytest.raises(TypeError):
        estimator(1.0)


@pytest.mark.parametrize(
    ("model", "delta"),
    [
        (DPRegressionTree(max_depth=2), 0.0),
        (DPGaussianNB(classes=[0, 1]), 0.0),
        (DPBoostingRegressor(n_rounds=3, delta=1e-6), 1e-6),
    ],
    ids=lambda m: type(m).__name__ if not isinstance(m, float) else "",
)
def test_a_fitted_model_reports_the_epsilon_and_delta_it_spent(model, delta):
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    model.set_params(epsilon=0.9, random_state=0).fit(X, y)
    assert (model.epsilon_spent_, model.delta_spent_) == (0.9, delta)
