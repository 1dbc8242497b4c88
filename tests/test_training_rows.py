"""train_rows: the budget rule of train() for rows that live elsewhere (here in memory)."""

from __future__ import annotations

import pytest

from dpcore.accountant import BudgetLedger
from dpcore.backends import LocalRows
from dpcore.backends.tables import design_batch
from dpcore.design import Design
from dpcore.training_rows import train_rows


def test_a_model_that_fits_only_from_arrays_is_refused_before_anything_is_charged(adult_frame, adult_schema, tmp_path):
    X, y, _keep = design_batch(adult_frame.head(500), adult_schema)
    ledger = BudgetLedger("adult", 3.0, path=tmp_path / "ledger.sqlite3")
    with pytest.raises(ValueError, match="cannot be fitted on Spark yet"):
        train_rows(Design.domain(adult_schema), LocalRows(X, y), "dp_sgd_logistic", 1.0, ledger, seed=1)
    assert ledger.spent == 0


def test_scores_come_from_sums_over_the_held_out_rows(adult_frame, adult_schema, tmp_path):
    X, y, _keep = design_batch(adult_frame.head(3000), adult_schema)
    ledger = BudgetLedger("adult", 3.0, path=tmp_path / "ledger.sqlite3")
    trained = train_rows(Design.domain(adult_schema), LocalRows(X, y), "dp_random_forest", 1.0, ledger, seed=1)
    assert ledger.spent == pytest.approx(1.0)
    assert 0.5 < trained.metrics["accuracy"] <= 1 and 0 < trained.details["n_test"] < 3000
