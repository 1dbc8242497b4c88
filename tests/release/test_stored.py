"""Budgets and repeated exports: stored copies (dpcore.release.stored)."""

from __future__ import annotations

import pytest
from release_testing import plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.accountant import REPLACE_ONE, BudgetLedger
from dpcore.exceptions import BudgetExceededError
from dpcore.mechanisms import COIN_EPSILON


def test_same_table_same_plan_gives_the_same_copy(adult, tmp_path):
    frame, schema = adult
    frame = frame.head(4000)
    plan = R.default_plan(schema)
    book = BudgetLedger("adult", total_epsilon=30.0, path=tmp_path / "ledger.sqlite3", unit=REPLACE_ONE)
    first = R.release_table(frame, schema, plan, ledger=book)
    assert first.epsilon_charged == pytest.approx(plan.per_record_epsilon) and book.spent == pytest.approx(
        plan.per_record_epsilon
    )
    # The same rows in another order, re-read from a file: the same copy, nothing charged.
    source = tmp_path / "shuffled.csv"
    frame.sample(frac=1.0, random_state=1).to_csv(source, index=False, sep=";")
    again = R.release_csv(source, tmp_path / "again.csv", schema, plan, ledger=book)
    assert again.reused and again.epsilon_charged == 0 and (tmp_path / "again.csv").read_bytes() == first.csv
    assert again.report == first.report and book.spent == pytest.approx(plan.per_record_epsilon)
    # A fresh copy is different and charged again.
    fresh = R.release_table(frame, schema, plan, ledger=book, fresh=True)
    assert not fresh.reused and fresh.csv != first.csv and book.spent == pytest.approx(2 * plan.per_record_epsilon)
    # A third copy does not fit: refused, nothing charged, the stored copy unchanged.
    with pytest.raises(BudgetExceededError):
        R.release_table(frame, schema, plan, ledger=book, fresh=True)
    assert book.spent == pytest.approx(2 * plan.per_record_epsilon)
    assert R.release_table(frame, schema, plan, ledger=book).csv == fresh.csv
    # Another plan is another release, charged on the same dataset budget.
    smaller = R.ReleasePlan([R.ColumnPlan("sex", "coin")])
    R.release_table(frame, schema, smaller, ledger=book)
    assert book.spent == pytest.approx(2 * plan.per_record_epsilon + COIN_EPSILON, abs=1e-8)
    assert {s.relation for s in book.spends()} == {REPLACE_ONE}


def test_overspend_is_refused(tmp_path):
    plan = plan_with(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 2.0})
    assert plan.per_record_epsilon == pytest.approx(2.0 + COIN_EPSILON, abs=1e-8)
    with pytest.raises(BudgetExceededError, match="costs ε"):
        R.release_table(small_frame(20), small_schema(), plan, budget=3.0)
    with pytest.raises(BudgetExceededError):
        plan.check_budget(3.0)
    book = BudgetLedger("d", total_epsilon=3.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_table(small_frame(20), small_schema(), plan, ledger=book)
    assert book.spent == 0
    source = tmp_path / "in.csv"
    small_frame(20).to_csv(source, index=False)
    small = BudgetLedger("e", total_epsilon=1.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_csv(source, tmp_path / "out.csv", small_schema(), plan, ledger=small)
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(TypeError, match="BudgetLedger"):
        R.release_table(small_frame(20), small_schema(), plan, ledger=tmp_path / "l.sqlite3")
