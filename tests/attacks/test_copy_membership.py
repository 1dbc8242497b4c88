"""Membership inference against a synthetic copy: the control is caught, the copy stays within its ceiling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks.copy_membership import _distances, attack_copy, cell_gaps
from dpcore.attacks.summary import above_ceiling, html_report
from dpcore.exceptions import DataError
from dpcore.release import default_plan
from dpcore.synthetic.domain import synthetic_columns
from dpcore.tables.schema import ColumnSpec, Schema


def test_a_distance_is_the_mean_gap_in_bins_and_categories():
    schema = Schema([ColumnSpec("age", lower=0, upper=100), ColumnSpec("job", kind="categorical", categories=["a", "b", "c"])])
    gaps = cell_gaps(synthetic_columns(schema, default_plan(schema)))
    assert np.isfinite(gaps[0]) and np.isinf(gaps[1])  # bins step by 1/(bins − 1); categories differ or not
    rows = np.array([[0, 0], [int(round(1 / gaps[0])), 2]])
    distance = _distances(rows[:1], rows, gaps)
    assert distance.tolist() == [[0.0, 1.0]]  # the far end of the bins and another category: the whole distance


def test_the_control_is_caught_the_copy_stays_within_what_epsilon_allows_and_people_are_one_member_or_not(
    adult_frame, adult_schema
):
    """One copy (each costs seconds of compiling): a table whose 900 people have two rows each.

    The page's browser test attacks a table without a privacy unit, row by row.
    """
    frame = pd.concat([adult_frame.iloc[:900]] * 2, ignore_index=True).assign(person=lambda f: f.index % 900)
    schema = Schema([*adult_schema.columns, ColumnSpec("person", role="identifier")], privacy_unit="person", rows_per_person=2)
    result = attack_copy(frame, schema, default_plan(schema), 1.0, random_state=0)
    control, copy = result.models
    assert not control.private and copy.private and copy.epsilon == 1.0
    assert control.curve("distance to the closest record").auc > 0.75  # the rows themselves give their people away
    assert not above_ceiling(copy)
    assert result.unit == "person" and result.n_members + result.n_non_members < 900
    page = html_report(table_name="t", copy_membership=result)
    assert "Can a buyer of a synthetic copy tell who was in the table?" in page and "<svg" in page


def test_a_table_too_small_to_split_three_ways_gets_a_sentence(adult_frame, adult_schema):
    with pytest.raises(DataError, match="too small to attack a copy"):
        attack_copy(adult_frame.iloc[:40], adult_schema, default_plan(adult_schema), 1.0, random_state=0)
