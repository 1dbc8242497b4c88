"""The engine's training: a design from declarations, a charge after the fit, the model card and the model file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.preprocessing import FunctionTransformer

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.model_card import model_card
from dpcore.model_files import load_model, model_bytes, save_model
from dpcore.models.registry import models_for
from dpcore.tables.design import Design
from dpcore.training import train


@pytest.fixture
def california_design(california_frame, california_schema) -> Design:
    return Design.from_table(california_frame.head(3000), california_schema)


def _ledger(tmp_path, total=5.0) -> BudgetLedger:
    return BudgetLedger("table", total_epsilon=total, path=tmp_path / "ledger.sqlite3")


def test_a_design_takes_its_domain_from_the_declarations_not_the_rows(california_frame, california_schema):
    design = Design.from_table(california_frame.head(500), california_schema)
    target = california_schema.target
    assert design.task == "regression" and design.target_bounds == (target.lower, target.upper)
    lower, upper = design.bounds
    assert len(lower) == len(upper) == design.n_features == len(design.feature_names)
    numeric = [i for i, c in enumerate(california_schema.features) if c.kind == "numeric"]
    assert [lower[i] for i in numeric] == [california_schema.features[i].lower for i in numeric]
    context = design.context(0.5, params={"max_depth": 3}, random_state=1)
    assert context.epsilon == 0.5 and context.target_bounds == design.target_bounds and context.params == {"max_depth": 3}


def test_rows_without_a_target_are_counted_and_too_few_rows_are_refused_in_words(adult_schema):
    frame = pd.DataFrame({c.name: [None] * 30 for c in adult_schema.columns})
    frame[adult_schema.target.name] = [">50K", "<=50K", None] * 10
    design = Design.from_table(frame, adult_schema)
    assert design.n_without_target == 10 and design.classes == list(adult_schema.target.categories)
    with pytest.raises(DataError, match="Fewer than 20 rows"):
        Design.from_table(frame.head(12), adult_schema)


def test_train_charges_exactly_epsilon_after_the_fit(tmp_path, california_design):
    ledger = _ledger(tmp_path)
    trained = train(california_design, "dp_tree", 0.7, ledger, seed=3)
    assert ledger.spent == pytest.approx(0.7)
    [spend] = ledger.spends()
    assert "demo seed" in spend.label and spend.mechanism == type(trained.model).__name__
    assert set(trained.metrics) == {"MAE", "RMSE"} and trained.details["n_train"] + trained.details["n_test"] == 3000
    assert "tree" in trained.details


def test_a_teacher_is_never_trained_for_release(tmp_path, california_design, monkeypatch):
    from dpcore.models import registry
    from dpcore.models.subsample_aggregate import SubsampleAggregateRegressor

    ledger = _ledger(tmp_path)
    monkeypatch.setattr(registry.ModelSpec, "make", lambda self, context: SubsampleAggregateRegressor(target_bounds=(0, 1)))
    with pytest.raises(ValueError, match="cannot be trained for release"):
        train(california_design, "dp_tree", 0.5, ledger)
    assert ledger.spent == 0


def test_a_model_the_budget_cannot_pay_for_is_never_fitted(tmp_path, california_design, monkeypatch):
    import dpcore.training

    ledger = _ledger(tmp_path, total=0.5)
    fitted = []
    original = dpcore.training.fit_with_progress
    monkeypatch.setattr(dpcore.training, "fit_with_progress", lambda *args: fitted.append(1) or original(*args))
    with pytest.raises(BudgetExceededError, match="Nothing was trained or charged"):
        train(california_design, "dp_tree", 0.6, ledger)
    assert fitted == [] and ledger.spent == 0


def test_a_fit_that_fails_charges_nothing(tmp_path, california_design):
    ledger = _ledger(tmp_path)
    with pytest.raises(ValueError):
        train(california_design, "dp_tree", 0.5, ledger, params={"max_depth": -1})
    assert ledger.spends() == []


def test_the_same_seed_gives_the_same_model_and_no_seed_differs(tmp_path, california_design):
    first = train(california_design, "dp_forest", 0.5, _ledger(tmp_path / "a"), seed=7)
    second = train(california_design, "dp_forest", 0.5, _ledger(tmp_path / "b"), seed=7)
    free = train(california_design, "dp_forest", 0.5, _ledger(tmp_path / "c"))
    X = california_design.X[:200]
    assert np.array_equal(first.model.predict(X), second.model.predict(X))
    assert not np.array_equal(first.model.predict(X), free.model.predict(X))


def test_a_non_private_model_is_not_trained_for_release(tmp_path, california_design):
    with pytest.raises(ValueError, match="not differentially private"):
        train(california_design, "sk_tree_reg", 1.0, _ledger(tmp_path))


def test_the_model_card_states_the_estimators_own_privacy_argument(tmp_path, california_design, california_schema):
    trained = train(california_design, "dp_tree", 0.5, _ledger(tmp_path), seed=1)
    card = model_card(trained, california_schema)
    summary = getattr(type(trained.model), "privacy_summary", None)
    assert summary and summary in card
    assert "ε = 0.5" in card and "do not release" in card
    assert "MAE" not in card  # scores are measured on raw rows: owner's eyes only


@pytest.mark.parametrize(
    "spec", [s for task in ("regression", "classification") for s in models_for(task, kinds=("ours",))], ids=lambda s: s.key
)
def test_every_model_of_ours_goes_through_a_skops_file_unchanged(
    tmp_path, spec, california_frame, california_schema, adult_frame, adult_schema
):
    frame, schema = (california_frame, california_schema) if spec.task == "regression" else (adult_frame, adult_schema)
    design = Design.from_table(frame.head(1500), schema)
    model = spec.make(design.context(1.0, random_state=0)).fit(design.X, design.y)
    path = save_model(model, tmp_path / "model", read_from_data=[])
    assert path.suffix == ".skops"
    opened = load_model(path)
    assert type(opened) is type(model)
    assert np.array_equal(opened.predict(design.X[:100]), model.predict(design.X[:100]))


def test_a_model_file_that_could_run_code_is_refused_in_words():
    hostile = sio.dumps(FunctionTransformer(func=eval))
    with pytest.raises(DataError, match="does not trust"):
        load_model(hostile)
    with pytest.raises(DataError, match="not a DP Studio model file"):
        load_model(b"\x80\x04 a pickle, not a skops file")
    assert load_model(model_bytes(FunctionTransformer(), read_from_data=[])) is not None
