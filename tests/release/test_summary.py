"""The analysts' DP summary: a noisy row count and histograms over declared bins, charged once, sensitivity 1 + c."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import DataError
from dpcore.release.summary import DPSummary, dp_summary
from dpcore.tables.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "role": "feature", "kind": "numeric", "lower": 0, "upper": 100},
            {"name": "city", "role": "target", "kind": "categorical", "categories": ["Hanoi", "Hue"]},
            {"name": "note", "role": "feature", "kind": "numeric", "bounds_from_data": True, "lower": 0, "upper": 9},
        ]
    }
)
FRAME = pd.DataFrame({"age": [5, 15, 99, 987653, None] * 40, "city": ["Hanoi", "Hue", "Hue", "Qzxv-7731", None] * 40, "note": 1})


def test_a_summary_is_charged_once_and_bins_only_declared_domains():
    ledger = BudgetLedger.in_memory(total_epsilon=1.0)
    summary = dp_summary(FRAME, SCHEMA, 0.5, ledger, random_state=1)
    assert ledger.spent == pytest.approx(0.5) and [s.label for s in ledger.spends()] == ["DP summary for analysts"]
    assert set(summary.columns) == {"age", "city"}  # a domain read from the data is left out
    assert [label for label, _count in summary.columns["city"]] == ["Hanoi", "Hue", "(missing)", "(other)"]
    assert len(summary.columns["age"]) == 11 and summary.columns["age"][-1][0] == "(missing)"
    assert "987653" not in str(summary.to_dict()) and "Qzxv" not in str(summary.to_dict())
    assert DPSummary.from_dict(summary.to_dict()) == summary
    assert all(count >= 0 for bins in summary.columns.values() for _label, count in bins)


def test_the_noise_is_scaled_to_one_plus_the_number_of_columns():
    """Three released parts (row count, two histograms): the noise's spread is that of discrete Laplace at 3/ε.

    400 seeded draws: the mean within 5 standard errors and the spread within 20 % (3.6 standard errors of
    the spread's estimate for Laplace's kurtosis) would fail on a fresh seed with probability about 1e-3.
    """
    draws = np.array([dp_summary(FRAME, SCHEMA, 1.0, BudgetLedger.in_memory(1.0), random_state=seed).rows for seed in range(400)])
    alpha = np.exp(-1.0 / 3)
    expected_sd = np.sqrt(2 * alpha) / (1 - alpha)
    assert abs(draws.mean() - len(FRAME)) < 5 * expected_sd / np.sqrt(len(draws))
    assert 0.8 * expected_sd < draws.std() < 1.2 * expected_sd


def test_a_table_counting_several_rows_per_person_or_without_declared_columns_is_refused_in_words():
    ledger = BudgetLedger.in_memory(total_epsilon=1.0)
    per_person = Schema(SCHEMA.columns, privacy_unit="city", rows_per_person=2)
    with pytest.raises(DataError, match="one person"):
        dp_summary(FRAME, per_person, 0.5, ledger)
    with pytest.raises(DataError, match="complete declared domain"):
        dp_summary(FRAME, Schema([SCHEMA["note"]]), 0.5, ledger)
    assert ledger.spent == 0
