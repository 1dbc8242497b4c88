"""One unit of protection: an add/remove copy is padded to a noisy row count (dpcore.release.padding).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from release_testing import adult_table, plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.budget.accountant import ADD_REMOVE, REPLACE_ONE, BudgetLedger
from dpcore.exceptions import DataError, UnitOfProtectionError
from dpcore.release import randomness
from dpcore.tables.schema import ColumnSpec


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


def _cut_copy(n: int, seed: int, monkeypatch=None):  # noqa: ANN001, ANN202
    """The row keys an add/remove copy of ``n`` rows keeps, in its order, and its draws (a seed that cuts rows)."""
    import pyarrow as pa

    from dpcore.release.padding import Protection
    from dpcore.release.table import arranged

    draws = randomness.Draws.of(randomness.entropy(seed)[0])
    rows = np.arange(n, dtype=np.uint64) * np.uint64(7919)  # keys other than the positions
    table = pa.table({"row": rows})
    copy = arranged(table, rows, [], draws, Protection(ADD_REMOVE, 0.05))
    return copy.column("row").to_numpy(), draws, rows


def test_a_cut_keeps_the_rows_of_the_smallest_cut_words_apart_from_the_order(monkeypatch):
    from dpcore.release import padding, table

    n = 400
    seed = next(s for s in range(100) if 0 < R.noisy_row_count(n, 0.05, randomness.entropy(s)[0]) < n - 5)
    limit = R.noisy_row_count(n, 0.05, randomness.entropy(seed)[0])
    kept, draws, rows = _cut_copy(n, seed)
    assert len(kept) == limit
    cuts = padding.cut_words(draws.key, rows)
    assert set(kept.tolist()) == set(rows[np.argsort(cuts)[:limit]].tolist())  # the limit smallest cut words
    order = randomness.order_words(draws.key, kept)
    assert (np.diff(order) > 0).all()  # then ordered by their order words
    first_of_order = rows[np.argsort(randomness.order_words(draws.key, rows))[:limit]]
    assert set(first_of_order.tolist()) != set(kept.tolist())  # not the head of the order, as before
    # Other order words put the rows elsewhere but keep the same rows.
    monkeypatch.setattr(table, "order_words", lambda key, rows, *a: randomness.order_words(key[::-1], rows, *a))
    again, _draws, _rows = _cut_copy(n, seed)
    assert set(again.tolist()) == set(kept.tolist()) and again.tolist() != kept.tolist()


def test_the_census_finds_the_cut_a_sort_finds_ties_and_cells_included():
    from dpcore.release import padding

    rng = np.random.default_rng(4)
    n = 3000
    # Few distinct words, each in a cell of its own and shared by many rows: ties broken by the row key (unsigned).
    words = (rng.integers(0, 6, n).astype(np.int64) << 58) | rng.integers(0, 3, n).astype(np.int64)
    rows = rng.choice(np.arange(2**64 - 10**6, 2**64 - 1, dtype=np.uint64), n, replace=False)
    census = padding.cut_census(words)
    assert census.sum() == n
    for limit in (0, 1, 17, 1499, 2999, n):
        last = padding.last_kept(census, limit, lambda cell: (words[(words >> 47) == cell], rows[(words >> 47) == cell]))
        kept = padding.cut_mask(words, rows, last)
        assert kept.sum() == limit and np.array_equal(kept, padding.smallest(words, rows, limit)), limit
