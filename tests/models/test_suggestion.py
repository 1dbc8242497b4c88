"""The model a table's size suggests: boosting for labels, the additive model for numbers from ε·rows = 3,000."""

from __future__ import annotations

import pytest

from dpcore.models.registry import get
from dpcore.models.suggestion import ADDITIVE_REGRESSION_FROM, suggested_model


@pytest.mark.parametrize(
    ("task", "rows", "epsilon", "key"),
    [
        ("classification", 100, 0.1, "dp_boosting_clf"),
        ("classification", 1_000_000, 10.0, "dp_boosting_clf"),
        ("regression", 2_999, 1.0, "dp_boosting_reg"),
        ("regression", 3_000, 1.0, "dp_additive_reg"),
        ("regression", 10_000, 0.3, "dp_additive_reg"),
    ],
)
def test_the_suggestion_follows_the_measured_rule(task, rows, epsilon, key):
    suggestion = suggested_model(task, rows, epsilon)
    assert suggestion is not None and suggestion.key == key and get(key).task == task
    assert suggestion.signal == rows * epsilon


def test_no_budget_left_or_no_task_is_handled():
    assert suggested_model("regression", 50_000, 0.0).key == "dp_boosting_reg"
    assert suggested_model("clustering", 50_000, 1.0) is None
    assert ADDITIVE_REGRESSION_FROM == 3_000.0
