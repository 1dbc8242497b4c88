"""One unit of protection: an add/remove copy is padded to a noisy row count (dpcore.release.padding).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from release_testing import adult_table, plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.accountant import ADD_REMOVE, REPLACE_ONE, BudgetLedger
from dpcore.exceptions import DataError, UnitOfProtectionError
from dpcore.release import randomness
from dpcore.schema import ColumnSpec


def test_an_add_remove_copy_is_padded_and_charged_for_its_row_count(tmp_path):
    frame, schema = adult_table()
    frame = frame.head(3000)
    plan = R.ReleasePlan([R.ColumnPlan("sex", "coin"), R.ColumnPlan("workclass", "k-ary", 1.0, missing="category")])
    book = BudgetLedger("padded", total_epsilon=5.0, path=tmp_path / "l.sqlite3")
    result = R.release_table(frame, schema, plan, ledger=book, random_state=3)
    assert result.epsilon_charged == pytest.approx(plan.per_record_epsilon + R.COUNT_EPSILON, abs=1e-8)
    (spend,) = book.spends()
    assert spend.relation == ADD_REMOVE and "noisy row count" in spend.mechanism
    assert len(result.table) == R.noisy_row_count(3000, R.COUNT_EPSILON, randomness.entropy(3)[0])
    assert result.report["unit_of_protection"]["padded"] and "padding" in result.report["privacy"]
    assert "filler rows" in result.markdown
    # The streamed release pads the same way for the same seed.
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    R.release_csv(source, tmp_path / "out.csv", schema, plan, unit=ADD_REMOVE, random_state=3, chunksize=700)
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, schema, plan, unit=ADD_REMOVE, random_state=3).csv


def test_padding_adds_and_drops_rows_around_the_true_count():
    counts = np.array([R.noisy_row_count(1000, 0.5, seed) for seed in range(400)])
    assert (counts > 1000).any() and (counts < 1000).any()
    assert abs(np.median(counts) - 1000) <= 2
    frame, schema = small_frame(60), small_schema()
    plan = plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0})
    sizes = {
        len(R.release_table(frame, schema, plan, unit=ADD_REMOVE, count_epsilon=0.5, random_state=s).table) for s in range(30)
    }
    assert min(sizes) < 60 < max(sizes)


def test_a_kept_column_cannot_go_into_a_padded_copy():
    schema = small_schema(pub=ColumnSpec("pub", kind="categorical", categories=["a", "b"], public=True))
    frame = small_frame(30).assign(pub="a")
    plan = R.ReleasePlan([R.ColumnPlan("pub", "keep"), R.ColumnPlan("smoker", "coin")])
    with pytest.raises(DataError, match="filler rows"):
        R.release_table(frame, schema, plan, unit=ADD_REMOVE)
    assert len(R.release_table(frame, schema, plan, unit=REPLACE_ONE).table) == 30


def test_an_unpadded_copy_is_refused_by_an_add_remove_ledger(tmp_path):
    book = BudgetLedger("ar", total_epsilon=5.0, path=tmp_path / "l.sqlite3")
    with pytest.raises(UnitOfProtectionError):
        R.release_table(small_frame(30), small_schema(), plan_with(smoker={"mechanism": "coin"}), ledger=book, unit=REPLACE_ONE)
    assert book.spends() == []


def test_copy_epsilon_counts_the_row_count_only_where_it_is_hidden():
    plan = plan_with(smoker={"mechanism": "coin"})
    assert R.copy_epsilon(plan, REPLACE_ONE) == pytest.approx(plan.per_record_epsilon)
    assert R.copy_epsilon(plan, ADD_REMOVE) == pytest.approx(plan.per_record_epsilon + R.COUNT_EPSILON)
    assert R.count_epsilon_for(REPLACE_ONE) == 0 and R.count_epsilon_for(ADD_REMOVE) == R.COUNT_EPSILON
