"""The owner's look at a synthetic copy beside the table: shares per column, errors per pair, and clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_testing import tiny_plan, tiny_schema, tiny_table

from dpcore.exceptions import DataError
from dpcore.progress import CostMemory, TimeLeft
from dpcore.synthetic.compare import COMPARISON_COSTS, compare_copy, comparison_stages, remember_comparison_costs
from dpcore.synthetic.domain import decode, encode, synthetic_columns


def _as_copy(frame):
    """The table itself written as a copy's file writes it (cell labels, escaped headers)."""
    columns = synthetic_columns(tiny_schema(), tiny_plan())
    return decode(encode(frame, columns, np.random.default_rng(0)), columns)


def test_a_copy_that_is_the_table_is_at_distance_zero_and_every_share_adds_up():
    frame = tiny_table(500)
    comparison = compare_copy(frame, tiny_schema(), tiny_plan(), _as_copy(frame), random_state=0)
    assert comparison.one_way_error == pytest.approx(0.0) and comparison.two_way_error == pytest.approx(0.0)
    assert comparison.shares.groupby("column")["real"].sum().to_numpy() == pytest.approx(1.0)
    assert list(comparison.pairs[["first", "second"]].itertuples(index=False, name=None)) == [
        ("smoker", "age"),
        ("smoker", "sick"),
        ("age", "sick"),
    ]
    assert list(comparison.shares.query("column == 'age'")["position"]) == [0, 1, 2]  # declared order, empty cells too


def test_a_copy_that_broke_a_relation_shows_it_in_that_pair_only():
    frame = tiny_table(3000)
    copy = _as_copy(frame)
    copy["sick"] = copy["sick"].sample(frac=1.0, random_state=1).to_numpy()  # same shares, no link to smoking
    comparison = compare_copy(frame, tiny_schema(), tiny_plan(), copy, random_state=0)
    errors = comparison.pairs.set_index(["first", "second"])["error"]
    assert comparison.one_way_error == pytest.approx(0.0)
    assert errors[("smoker", "age")] == pytest.approx(0.0)
    assert errors[("smoker", "sick")] > 0.1 and errors[("age", "sick")] > 0.1


def test_a_copy_of_another_plan_is_a_sentence_without_its_cells():
    frame = tiny_table(200)
    with pytest.raises(DataError, match="has no column 'sick'"):
        compare_copy(frame, tiny_schema(), tiny_plan(), _as_copy(frame).drop(columns="sick"))
    odd = _as_copy(frame)
    odd.loc[0, "smoker"] = "secret-value-42"
    with pytest.raises(DataError, match="holds cells the plan does not declare") as refused:
        compare_copy(frame, tiny_schema(), tiny_plan(), odd)
    assert "secret-value-42" not in str(refused.value)


def test_a_copy_holding_the_target_is_trained_on_and_tested_on_real_rows():
    frame = tiny_table(2000)
    accuracy = compare_copy(frame, tiny_schema(), tiny_plan(), _as_copy(frame), random_state=0).accuracy
    assert list(accuracy["trained on"]) == ["synthetic copy", "real rows (reference)", "most common class"]
    on_copy, on_real, guess = accuracy["accuracy"]
    assert on_copy == pytest.approx(on_real, abs=0.03) and on_real > guess  # a copy that is the table learns as well
    no_target = tiny_plan()
    no_target["sick"].mechanism = "drop"
    assert compare_copy(frame, tiny_schema(), no_target, _as_copy(frame).drop(columns="sick")).accuracy.empty


def test_the_comparison_ticks_one_bar_to_its_end_with_a_time_left_from_its_first_figure(tmp_path):
    frame = tiny_table(1000)
    now, said = [0.0], []

    def clock():
        now[0] += 0.01  # every look at the clock is 10 ms of work
        return now[0]

    costs = CostMemory(tmp_path / "costs.json")
    work = TimeLeft(
        comparison_stages(frame, tiny_schema(), tiny_plan(), costs), lambda share, left, what: said.append((share, left)), clock
    )
    compare_copy(frame, tiny_schema(), tiny_plan(), _as_copy(frame), random_state=0, work=work)
    assert all(left is not None for _share, left in said)  # predicted before it is measured: never "measuring…"
    assert said[-1] == (1.0, 0.0)
    assert [s.done for s in work.stages] == [s.units for s in work.stages] and work.stage("training").done > 0
    remember_comparison_costs(work, costs)
    again = comparison_stages(frame, tiny_schema(), tiny_plan(), costs)
    kept = [costs.recall_stage(COMPARISON_COSTS, stage) for stage in again]
    assert None not in kept and [stage.prior for stage in again] == kept  # the last comparison's, not the reference's
