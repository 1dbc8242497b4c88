"""A synthetic copy end to end (Private-PGM fits a tiny table): convergence, the ledger's charge and refusal, the report."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from synthetic_testing import tiny_plan, tiny_schema, tiny_table

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.synthetic import (
    copy_for_models,
    read_synthetic,
    synthesize_table,
    synthetic_columns,
    synthetic_shares,
    utility_preview,
)
from dpcore.synthetic.domain import copy_cells, encode
from dpcore.synthetic.measure import marginal

pytest.importorskip("mbi")


def _two_way_error(frame: pd.DataFrame, copy: pd.DataFrame) -> float:
    columns = synthetic_columns(tiny_schema(), tiny_plan())
    shape = tuple(c.size for c in columns)
    truth, cells = encode(frame, columns, np.random.default_rng(0)), copy_cells(copy, columns)
    errors = []
    for pair in itertools.combinations(range(len(shape)), 2):
        p, q = marginal(truth, shape, pair), marginal(cells, shape, pair)
        errors.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(errors))


def test_the_copy_s_marginals_converge_to_the_truth_as_epsilon_grows():
    frame = tiny_table(3000, seed=2)
    errors = [
        _two_way_error(frame, synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=eps, random_state=4).table)
        for eps in (0.05, 1.0, 50.0)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03


def test_the_ledger_is_checked_first_and_charged_with_epsilon_delta_and_unit():
    frame = tiny_table(500)
    ledger = BudgetLedger("tiny", total_epsilon=1.5, path=":memory:")
    result = synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=1.0, delta=1e-6, ledger=ledger, random_state=1)
    assert (result.epsilon_charged, result.delta_charged) == (1.0, 1e-6)
    spend = ledger.spends()[-1]
    assert (spend.epsilon, spend.delta, spend.relation) == (1.0, 1e-6, "add/remove")
    assert "synthetic copy" in spend.released and "demo seed" in spend.label
    with pytest.raises(BudgetExceededError, match="Nothing was measured or charged"):
        synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=1.0, ledger=ledger)
    assert len(ledger.spends()) == 1 and ledger.spent == 1.0


def test_a_delta_beyond_the_ledger_s_total_delta_is_refused():
    ledger = BudgetLedger("tiny", total_epsilon=10, path=":memory:", total_delta=1e-6)
    with pytest.raises(BudgetExceededError):
        synthesize_table(tiny_table(100), tiny_schema(), tiny_plan(), epsilon=1.0, delta=1e-5, ledger=ledger)
    assert ledger.spends() == []


def test_report_row_count_and_seed_warning():
    frame = tiny_table(800)
    result = synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=2.0, public_rows=123, random_state=3)
    report = result.report
    assert len(result.table) == 123 and report["rows"] == {"count": 123, "source": "declared public size"}
    assert report["seeded"] and "must not be sold" in result.markdown
    assert [m["kind"] for m in report["measured"]].count("one-way") == 3
    assert {tuple(m["columns"]) for m in report["measured"] if m["kind"] == "two-way"} >= {("smoker", "sick"), ("age", "sick")}
    assert "What you cannot trust" in result.markdown
    copy = read_synthetic(result.csv, report)
    assert list(copy["age"].cat.categories) == report["columns"][1]["cells"]
    shares = synthetic_shares(copy, report, "smoker")
    assert shares["estimate"].sum() == pytest.approx(1.0)
    noisy = synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=2.0, random_state=3)
    assert noisy.report["rows"]["source"] == "noisy count" and abs(len(noisy.table) - 800) < 100


def test_a_copy_for_models_puts_numbers_at_their_bins_midpoints_and_fits_the_declarations():
    from dpcore.tables.design import Design

    result = synthesize_table(tiny_table(600), tiny_schema(), tiny_plan(), epsilon=2.0, public_rows=200, random_state=4)
    frame = copy_for_models(result.table, result.report)
    assert list(frame.columns) == ["smoker", "age", "sick"] and len(frame) == 200
    assert set(frame["age"]) <= {15.0, 45.0, 75.0}  # three bins over the declared 0–90: read from the report, not the rows
    assert set(frame["smoker"]) <= {"no", "yes"}
    design = Design.from_table(frame, tiny_schema())
    assert design.task == "classification" and len(design.y) == 200


def test_a_copy_to_learn_from_keeps_the_declarations_of_its_columns_and_a_mismatched_report_gets_a_sentence():
    from dpcore.synthetic import copy_to_learn_from
    from dpcore.tables.schema import ColumnSpec, Schema

    result = synthesize_table(tiny_table(600), tiny_schema(), tiny_plan(), epsilon=2.0, public_rows=200, random_state=4)
    owners = Schema([*tiny_schema().columns, ColumnSpec("person", role="identifier")])
    frame, schema = copy_to_learn_from(result.table, result.report, owners)
    assert schema.names == ["smoker", "age", "sick"] and list(frame.columns) == schema.names
    with pytest.raises(DataError, match="make the copy again"):  # a copy edited after it was made
        copy_to_learn_from(result.table.drop(columns=["age"]), result.report, owners)


def test_laplace_noise_has_no_delta_and_bad_arguments_get_sentences():
    frame = tiny_table(300)
    with pytest.raises(DataError, match="δ is 0"):
        synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=1.0, noise="laplace", delta=1e-6)
    with pytest.raises(DataError, match="whole number"):
        synthesize_table(frame, tiny_schema(), tiny_plan(), epsilon=1.0, public_rows=0)
    with pytest.raises(DataError, match="not in the table"):
        synthesize_table(frame.drop(columns="age"), tiny_schema(), tiny_plan(), epsilon=1.0)


def test_the_utility_preview_compares_both_copies_for_the_owner():
    frame = tiny_table(2000, seed=5)
    preview = utility_preview(frame, tiny_schema(), tiny_plan(), 3.0, random_state=2)
    values = preview.set_index(["copy", "measure"])["value"]
    assert values[("synthetic copy", "two-way TV")] < values[("randomized copy", "two-way TV")]
    assert 0.5 < values[("real rows (reference)", "accuracy")] <= 1


def test_a_person_with_several_rows_counts_k_rows_and_the_report_says_so():
    from dpcore.tables.schema import ColumnSpec

    schema = tiny_schema()
    schema.columns.insert(0, ColumnSpec("patient", role="identifier", kind="categorical"))
    schema.privacy_unit, schema.rows_per_person = "patient", 2
    frame = tiny_table(600).assign(patient=[f"p{i // 3}" for i in range(600)])  # three rows each: one is left out
    result = synthesize_table(frame, schema, tiny_plan(schema), epsilon=2.0, public_rows=50, random_state=6)
    assert result.report["privacy_unit"] == {"rows_per_person": 2}
    assert result.report["sensitivity"]["l2"] == 2.0
    assert "patient" not in result.csv.decode("utf-8").splitlines()[0]
    assert any("200 rows were left out" in note and "Owner only" in note for note in result.notes)


def test_a_first_copy_predicts_its_set_up_from_the_reference_machine_and_a_second_from_the_first(tmp_path):
    from dpcore.progress import CostMemory

    frame, costs = tiny_table(500), CostMemory(tmp_path / "costs.json")
    first: list = []
    synthesize_table(
        frame,
        tiny_schema(),
        tiny_plan(),
        epsilon=1.0,
        random_state=1,
        costs=costs,
        progress=lambda share, left, what: first.append((share, left, what)),
    )
    setting_up = [left for _share, left, what in first if what.startswith("Setting up the model")]
    assert setting_up[0] is not None  # FIRST_SET_UP's figure: the bar never says "measuring…" for the model
    assert first[-1][1] == pytest.approx(0.0) and first[-1][0] == pytest.approx(1.0)
    assert all(a[0] <= b[0] for a, b in zip(first, first[1:], strict=False))
    assert costs.recall("synthetic copy: set-up per unit") is not None
    second: list = []
    synthesize_table(
        frame,
        tiny_schema(),
        tiny_plan(),
        epsilon=1.0,
        random_state=2,
        costs=costs,
        progress=lambda share, left, what: second.append((share, left, what)),
    )
    setting_up = [left for _share, left, what in second if what.startswith("Setting up the model")]
    assert setting_up[0] is not None  # remembered from the first copy


def test_the_preview_says_no_time_before_its_copy_is_planned():
    from dpcore.synthetic import utility_preview

    seen: list = []
    utility_preview(
        tiny_table(500),
        tiny_schema(),
        tiny_plan(),
        1.0,
        random_state=0,
        progress=lambda share, left, what: seen.append((share, left, what)),
    )
    simulated = [left for _share, left, what in seen if what == "Simulated the randomized copy."]
    assert simulated == [None]  # only the training was measured then: a figure would leave the copy out
    comparing = [left for _share, left, what in seen if what.startswith("Comparing")]
    assert comparing and None not in comparing  # a pair's cost was measured on a few pairs before the copy
    assert seen[-1][1] == pytest.approx(0.0) and seen[-1][0] == pytest.approx(1.0)


def test_the_copies_errors_are_each_copy_s_own_and_every_pair_is_counted_as_alone(monkeypatch):
    from dpcore.synthetic import measure, preview

    rng = np.random.default_rng(3)
    shape = (3, 4, 2, 5, 2, 3, 2, 4, 3, 2, 2, 3)
    truth = np.column_stack([rng.integers(0, k, 400) for k in shape])
    other = np.column_stack([rng.integers(0, k, 400) for k in shape])
    monkeypatch.setattr(measure, "CELLS_PER_COUNT", 1000)  # two columns a count: chunks, and a last one alone
    for first in range(len(shape)):
        for n, table in enumerate(measure.pair_counts(truth, shape, first)):
            np.testing.assert_array_equal(table.ravel(), marginal(truth, shape, (first, first + 1 + n)))
    uneven = (30, 2, 2, 30, 2, 3)  # a chunk is also cut where its tables would pass the cells counted at once
    rows = np.column_stack([rng.integers(0, k, 30) for k in uneven])
    for first in range(len(uneven)):
        for n, table in enumerate(measure.pair_counts(rows, uneven, first)):
            np.testing.assert_array_equal(table.ravel(), marginal(rows, uneven, (first, first + 1 + n)))
    ticks: list[int] = []
    found = preview.marginal_errors(truth, [(truth, None), (other, None), (truth, [50.0] * len(shape))], shape, tick=ticks.append)
    same, elsewhere, sure = found
    assert same == (0.0, 0.0) and sure == pytest.approx((0.0, 0.0), abs=1e-9)  # ε = 50 keeps every value
    pairs = list(itertools.combinations(range(len(shape)), 2))
    one = np.mean([preview.tv(preview.shares(truth, shape, (i,)), preview.shares(other, shape, (i,))) for i in range(len(shape))])
    two = np.mean([preview.tv(preview.shares(truth, shape, pair), preview.shares(other, shape, pair)) for pair in pairs])
    assert elsewhere == pytest.approx((one, two)) and two > one > 0
    assert ticks == list(range(len(shape) - 1, 0, -1))


def test_the_preview_simulates_the_synthetic_copy_with_the_chosen_method(monkeypatch):
    from dpcore.synthetic import preview as preview_module

    methods: list[str] = []
    made = preview_module.synthesize_table

    def recording(*args, **kwargs):
        methods.append(kwargs["method"])
        return made(*args, **kwargs)

    monkeypatch.setattr(preview_module, "synthesize_table", recording)
    table = preview_module.utility_preview(tiny_table(400), tiny_schema(), tiny_plan(), 3.0, method="aim", random_state=1)
    assert methods == ["aim"] and set(table["copy"]) >= {"randomized copy", "synthetic copy"}
