"""train_rows: the budget rule of train() for rows that live elsewhere (here in memory)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.backends import LocalRows
from dpcore.backends.tables import design_batch
from dpcore.budget.accountant import BudgetLedger
from dpcore.tables.design import Design
from dpcore.training import HOLDOUT_SHARE
from dpcore.training_rows import holdout_parts, train_rows


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
    # The same held-out rows (the keyed draw of seed 1), scored directly: the sums give exactly this.
    _fit_part, held = holdout_parts(LocalRows(X, y), HOLDOUT_SHARE, 1)
    n_test, correct = held.aggregate(lambda b: np.array([len(b), np.sum(trained.model.predict(b.X) == b.y)]))
    assert trained.details["n_test"] == n_test and 0 < n_test < 3000
    assert trained.metrics["accuracy"] == pytest.approx(correct / n_test)
