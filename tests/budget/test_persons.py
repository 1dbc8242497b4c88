"""People with several rows: the contribution bound, group privacy, and a person-level neighbouring test."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, chi_square_pvalue, neighbouring_privacy_loss

from dpcore.budget.accountant import BudgetLedger
from dpcore.budget.persons import bound_contributions, per_person, per_row, rows_left_out
from dpcore.exceptions import DataError
from dpcore.model_card import model_card
from dpcore.models.registry import get
from dpcore.tables.design import Design
from dpcore.tables.schema import ColumnSpec, Schema
from dpcore.training import person_delta, train

K = 3


def _schema(unit: str | None = "person", k: int = K) -> Schema:
    return Schema(
        [
            ColumnSpec("person", role="identifier", kind="categorical"),
            ColumnSpec("x", lower=0, upper=1),
            ColumnSpec("y", role="target", lower=0, upper=1),
        ],
        privacy_unit=unit,
        rows_per_person=k if unit else 1,
    )


def _visits(n_people: int = 20, rows_each: int = 2, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_people * rows_each
    return pd.DataFrame({"person": [f"p{i // rows_each}" for i in range(n)], "x": rng.random(n), "y": 0.2 * rng.random(n)})


def test_at_most_k_rows_per_person_each_row_equally_likely():
    # 3,000 people with five rows each, drawn in one call (each person's draw is their own): as many
    # draws of a five-row person as 3,000 calls on one such person would give, for one call's work.
    people = 3000
    units = pd.Series([f"a{i}" for i in range(people) for _ in range(5)] + ["b"] * 2 + [None] * 4)
    kept = bound_contributions(units, 2, random_state=0)
    five_rows = kept[: 5 * people].reshape(people, 5)
    assert (five_rows.sum(axis=1) == 2).all() and kept[-6:-4].all() and not kept[-4:].any()
    # Each of a person's five rows is kept 2 times in 5: a uniform subset, whatever the other columns hold.
    counts = five_rows.sum(axis=0)
    assert chi_square_pvalue(counts, np.full(5, 1 / 5)) > 1e-4
    assert rows_left_out(units, 2) == 3 * people + 4  # rows without a person are left out, never pooled


def test_spellings_of_one_identifier_are_one_person_on_every_path():
    from dpcore.budget.persons import person_keys

    units = pd.Series(["A7", " a7 ", "Ａ7", 1001, "1001", 1001.0, "", None], dtype=object)
    keys = person_keys(units)
    assert len(set(keys[:3].tolist())) == 1 and len(set(keys[3:6].tolist())) == 1 and keys[6] == keys[7]
    assert bound_contributions(units, 1, random_state=0).sum() == 2


def test_group_privacy_both_ways():
    for k in (1, 2, 5):
        epsilon, delta = per_person(*per_row(1.3, 1e-5, k), k)
        assert epsilon == pytest.approx(1.3) and delta == pytest.approx(1e-5)
    assert per_person(0.5, 1e-6, 3) == pytest.approx((1.5, 3 * np.exp(1.0) * 1e-6))
    with pytest.raises(ValueError):
        per_row(1.0, 0.0, 0)


# Sized by power: the planted five-looks release is caught at 1,500 runs a side for seeds 1-3 (loss 0.37 against a
# tolerance of 0.33); 2,500 leaves a margin of about a third of the tolerance.
RUNS = 2500


def _release(schema: Schema):
    spec = get("dp_mean")

    def run(frame: pd.DataFrame, rng: np.random.Generator) -> float:
        seed = int(rng.integers(2**31))
        design = Design.from_table(frame, schema, random_state=seed)
        model = spec.make(design.context(1.0, random_state=seed + 1)).fit(design.X, design.y)
        return float(model.predict(design.X[:1])[0])

    return run


def _neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    d = _visits()
    newcomer = pd.DataFrame({"person": ["new"] * 5, "x": [0.5] * 5, "y": [1.0] * 5})  # five visits at the extreme
    return d, pd.concat([d, newcomer], ignore_index=True)


def test_adding_a_person_with_several_rows_stays_within_the_per_person_epsilon():
    d, d_prime = _neighbours()
    estimate = neighbouring_privacy_loss(
        _release(_schema()), d, d_prime, epsilon=1.0, n_runs=RUNS, edges=np.linspace(0, 1, 11), seed=1
    )
    assert_within_epsilon(estimate)


def test_the_test_catches_a_release_that_ignores_the_unit_column():
    d, d_prime = _neighbours()
    planted = _release(_schema(unit=None))  # each row counted as a person: the newcomer gets five looks
    estimate = neighbouring_privacy_loss(planted, d, d_prime, epsilon=1.0, n_runs=RUNS, edges=np.linspace(0, 1, 11), seed=1)
    assert_exceeds_epsilon(estimate)


def test_the_unit_column_is_never_a_feature_and_a_missing_one_is_said_in_words():
    frame = _visits(rows_each=4)
    design = Design.from_table(frame, _schema(), random_state=0)
    assert design.feature_names == ["x"] and design.rows_per_person == K
    assert design.rows_over_bound == 20 and len(design.y) == 20 * K
    with pytest.raises(DataError, match="identifies each person is not in the table"):
        Design.from_table(frame.drop(columns="person"), _schema())
    with pytest.raises(DataError, match="identifies each person is empty"):
        Design.from_table(frame.assign(person=None), _schema())
    wrong_role = _schema()
    wrong_role["person"].role = "feature"
    assert any("must be declared an identifier" in p for p in wrong_role.problems(frame))


def test_a_schema_file_keeps_the_unit_and_older_files_mean_one_row_each():
    schema = _schema()
    again = Schema.from_json(schema.to_json())
    assert (again.privacy_unit, again.rows_per_person) == ("person", K)
    older = Schema.from_dict({"columns": schema.to_dict()["columns"]})
    assert (older.privacy_unit, older.rows_per_person) == (None, 1)


def test_training_charges_per_person_and_the_card_says_so(tmp_path):
    ledger = BudgetLedger("visits", total_epsilon=2.0, path=tmp_path / "ledger.sqlite3")
    design = Design.from_table(_visits(n_people=200, rows_each=4), _schema(), random_state=0)
    trained = train(design, "dp_tree", 1.0, ledger, seed=0)
    assert ledger.spent == pytest.approx(1.0)
    assert trained.model.epsilon == pytest.approx(1.0 / K)  # fitted at ε/k per row
    card = model_card(trained, _schema())
    assert f"counting up to {K} rows each" in card and "person" not in design.feature_names
    [spend] = ledger.spends()
    assert f"up to {K} rows each" in spend.label


def test_approximate_models_get_a_per_row_delta_whose_group_delta_is_the_declared_one():
    context = replace(Design.from_table(_visits(), _schema(), random_state=0).context(1.0), delta=1e-5)
    row = context.per_row()
    assert row.epsilon == pytest.approx(1 / K) and per_person(row.epsilon, row.delta, K)[1] == pytest.approx(1e-5)


def test_a_models_person_delta_is_its_row_delta_grown_by_group_privacy():
    model = SimpleNamespace(delta_spent_=1e-6)  # what the fit recorded, not the hyper-parameter
    assert person_delta(model, 1.0, 1) == 1e-6 and person_delta(SimpleNamespace(), 1.0, K) == 0.0
    assert person_delta(model, 1.0, K) == per_person(1.0 / K, 1e-6, K)[1]


def test_private_bounds_are_charged_per_person(tmp_path):
    from dpcore.tables.bounds import estimate_bounds

    ledger = BudgetLedger("visits", total_epsilon=2.0, path=tmp_path / "ledger.sqlite3")
    found = estimate_bounds(_visits(n_people=300, rows_each=4), _schema(), ["x"], 0.5, ledger, (0, 10), random_state=0)
    assert 0 <= found["x"][0] < found["x"][1] <= 10
    [spend] = ledger.spends()
    assert spend.epsilon == pytest.approx(0.5) and f"up to {K} rows each" in spend.label


def test_spends_that_count_people_differently_are_never_added_together(tmp_path):
    from dpcore.exceptions import UnitOfProtectionError

    ledger = BudgetLedger("visits", total_epsilon=5.0, path=tmp_path / "ledger.sqlite3")
    frame = _visits(n_people=100, rows_each=4)
    train(Design.from_table(frame, _schema(unit=None), random_state=0), "dp_tree", 1.0, ledger, seed=0)
    with pytest.raises(UnitOfProtectionError, match="nothing was spent"):
        train(Design.from_table(frame, _schema(), random_state=0), "dp_tree", 1.0, ledger, seed=0)
    assert ledger.spent == pytest.approx(1.0)
    fresh = BudgetLedger("visits per person", total_epsilon=5.0, path=tmp_path / "ledger.sqlite3")
    train(Design.from_table(frame, _schema(), random_state=0), "dp_tree", 1.0, fresh, seed=0)
    with pytest.raises(UnitOfProtectionError):
        train(Design.from_table(frame, _schema(k=2), random_state=0), "dp_tree", 1.0, fresh, seed=0)
    assert "up to 3 rows per person" in fresh.counting()


def test_holdout_rows_are_chosen_by_person():
    design = Design.from_table(_visits(n_people=200, rows_each=3), _schema(), random_state=0)
    from dpcore.training import holdout_split

    fit_rows, test_rows = holdout_split(len(design.y), np.random.default_rng(0), 0.2, design.groups)
    assert design.groups is not None
    assert not set(design.groups[fit_rows]) & set(design.groups[test_rows])
