"""The analysts' DP summary: a noisy row count and histograms over declared bins, charged once, sensitivity 1 + c."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import DataError
from dpcore.release.summary import DPSummary, dp_summary
from dpcore.tables.schema import ColumnSpec, Schema

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
    assert ledger.spent == pytest.approx(0.5) and [s.label for s in ledger.spends()] == ["DP summary for analysts (demo seed)"]
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


def test_several_rows_per_person_keep_k_rows_each_and_scale_the_noise_by_k():
    """Two rows per person counted, three columns' parts: the spread is discrete Laplace's at 2·3/ε around the kept rows."""
    people = FRAME.assign(person=[f"p{i // 4}" for i in range(len(FRAME))])  # 50 people with four rows each
    schema = Schema([*SCHEMA.columns, ColumnSpec("person", role="identifier")], privacy_unit="person", rows_per_person=2)
    ledger = BudgetLedger.in_memory(total_epsilon=1.0)
    summary = dp_summary(people, schema, 0.5, ledger, random_state=1)
    assert ledger.spent == pytest.approx(0.5) and "sensitivity 6" in ledger.spends()[0].mechanism
    assert "person" not in summary.columns and "p1" not in str(summary.to_dict())
    draws = np.array(
        [dp_summary(people, schema, 1.0, BudgetLedger.in_memory(1.0), random_state=seed).rows for seed in range(400)]
    )
    alpha = np.exp(-1.0 / 6)
    expected_sd = np.sqrt(2 * alpha) / (1 - alpha)
    assert abs(draws.mean() - 100) < 5 * expected_sd / np.sqrt(len(draws))  # 2 of each person's 4 rows kept
    assert 0.8 * expected_sd < draws.std() < 1.2 * expected_sd


def test_a_summary_per_person_is_charged_per_person_beside_the_datasets_other_spends():
    """The ledger refuses to add spends counted in different units: the summary must say it counted per person."""
    from dpcore.budget.accountant import Charge

    people = FRAME.assign(person=[f"p{i // 4}" for i in range(len(FRAME))])
    schema = Schema([*SCHEMA.columns, ColumnSpec("person", role="identifier")], privacy_unit="person", rows_per_person=2)
    ledger = BudgetLedger.in_memory(total_epsilon=2.0)
    with ledger.charging(Charge("a model per person", 0.5, privacy_unit="person", rows_per_person=2)):
        pass
    dp_summary(people, schema, 0.5, ledger)
    with ledger.charging(Charge("a copy per person", 0.5, privacy_unit="person", rows_per_person=2)):
        pass
    assert ledger.spent == pytest.approx(1.5)
    assert ledger.spends()[1].label == "DP summary for analysts, per person counting up to 2 rows each"


def test_a_missing_person_column_or_no_declared_column_is_refused_in_words():
    ledger = BudgetLedger.in_memory(total_epsilon=1.0)
    per_person = Schema([*SCHEMA.columns, ColumnSpec("person", role="identifier")], privacy_unit="person", rows_per_person=2)
    with pytest.raises(DataError, match="person"):
        dp_summary(FRAME, per_person, 0.5, ledger)
    with pytest.raises(DataError, match="complete declared domain"):
        dp_summary(FRAME, Schema([SCHEMA["note"]]), 0.5, ledger)
    assert ledger.spent == 0
