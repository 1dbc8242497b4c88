"""Approximate-DP models through train(): the δ is charged per person, and refused in words before any fit."""

from __future__ import annotations

import pytest

from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger
from dpcore.exceptions import BudgetExceededError
from dpcore.model_card import model_card
from dpcore.models.registry import MODELS
from dpcore.tables.design import Design
from dpcore.training import train


@pytest.fixture
def adult_design(adult_frame, adult_schema) -> Design:
    return Design.from_table(adult_frame.head(3000), adult_schema)


def _ledger(tmp_path, total_delta=1e-5, unit=None) -> BudgetLedger:
    return BudgetLedger("table", total_epsilon=5.0, path=tmp_path / "ledger.sqlite3", total_delta=total_delta, unit=unit)


def test_every_approximate_entry_is_labelled_so_in_its_name():
    for spec in MODELS.values():
        if spec.approximate:
            assert "approximate" in spec.name.lower() and spec.kind == "ours"


def test_dp_sgd_charges_its_epsilon_and_delta(tmp_path, adult_design):
    ledger = _ledger(tmp_path)
    trained = train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=4e-6, seed=0)
    assert (ledger.spent, ledger.spent_delta) == (pytest.approx(1.0), pytest.approx(4e-6))
    [spend] = ledger.spends()
    assert spend.mechanism == "DPSGDClassifier" and spend.delta == pytest.approx(4e-6)
    assert trained.delta == pytest.approx(4e-6) and trained.model.delta_spent_ == pytest.approx(4e-6)
    assert "steps of gradient descent" in trained.details["spending"]
    assert {r["feature"] for r in trained.details["weights"]} == set(adult_design.feature_names)
    card = model_card(trained, adult_design.schema)
    assert "APPROXIMATE DP" in card and "δ = 4e-06" in card and "Zhu & Wang" in card


def test_the_default_delta_is_1e_5(tmp_path, adult_design):
    ledger = _ledger(tmp_path, total_delta=1e-4)
    assert train(adult_design, "dp_sgd_logistic", 0.5, ledger, seed=0).delta == pytest.approx(1e-5)


def test_a_dataset_without_delta_refuses_an_approximate_model_before_the_fit(tmp_path, adult_design, monkeypatch):
    from dpcore.models.dpsgd import DPSGDClassifier

    monkeypatch.setattr(DPSGDClassifier, "fit", lambda *a: pytest.fail("fitted although the budget cannot pay"))
    ledger = _ledger(tmp_path, total_delta=0.0)
    with pytest.raises(BudgetExceededError, match="allows δ = 0 only"):
        train(adult_design, "dp_sgd_logistic", 1.0, ledger)
    assert ledger.spends() == []
    train(adult_design, "dp_gaussian_nb", 1.0, ledger)  # a pure ε-DP model still trains
    assert ledger.spent_delta == 0


def test_too_little_delta_left_is_refused_in_words(tmp_path, adult_design):
    ledger = _ledger(tmp_path)
    ledger.spend("earlier approximate release", 0.1, delta=8e-6)
    with pytest.raises(BudgetExceededError, match="does not fit in what is left of this dataset's δ budget"):
        train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=5e-6)
    train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=2e-6, seed=0)
    assert ledger.spent_delta == pytest.approx(1e-5)


def test_replace_one_converts_delta_and_says_what_would_fit(tmp_path, adult_design):
    ledger = _ledger(tmp_path, unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError, match="δ budget"):
        train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=1e-5)
    fits = ledger.available_delta(1.0)
    assert fits == pytest.approx(1e-5 / (1 + 2.718281828), rel=1e-3)
    train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=fits * 0.99, seed=0)
    assert ledger.spent == pytest.approx(2.0) and ledger.spent_delta <= 1e-5


def test_a_pure_model_takes_no_delta_and_an_approximate_one_needs_one(tmp_path, adult_design):
    ledger = _ledger(tmp_path)
    with pytest.raises(ValueError, match="pure ε-DP"):
        train(adult_design, "dp_gaussian_nb", 1.0, ledger, delta=1e-6)
    with pytest.raises(ValueError, match="needs a δ above 0"):
        train(adult_design, "dp_sgd_logistic", 1.0, ledger, delta=0.0)
    assert ledger.spends() == []


def test_several_rows_per_person_fit_at_the_per_row_budget_and_are_charged_per_person(tmp_path, adult_frame, adult_schema):
    from dpcore.budget.persons import per_row
    from dpcore.tables.schema import ColumnSpec, Schema

    frame = adult_frame.head(3000).assign(person=[str(i // 2) for i in range(3000)])
    schema = Schema([*adult_schema.columns, ColumnSpec(name="person", role="identifier", kind="categorical")], "person", 2)
    design = Design.from_table(frame, schema, random_state=0)
    ledger = _ledger(tmp_path)
    trained = train(design, "dp_sgd_logistic", 1.0, ledger, delta=1e-5, seed=0)
    row_epsilon, row_delta = per_row(1.0, 1e-5, 2)
    assert (trained.model.epsilon, trained.model.delta) == (pytest.approx(row_epsilon), pytest.approx(row_delta))
    assert ledger.spent == pytest.approx(1.0) and ledger.spent_delta == pytest.approx(1e-5, rel=1e-4)
