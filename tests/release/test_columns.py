"""What each released column does to its values (dpcore.release.columns).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from release_testing import ALPHA, COLOURS, Z, adult_table, plan_with, small_frame, small_schema
from scipy import stats

from dpcore import release as R
from dpcore.mechanisms import COIN_EPSILON, record_mechanism_calls
from dpcore.tables.schema import ColumnSpec, Schema


def test_keep_rate_matches_the_mechanism():
    n = 200_000
    frame = small_frame(n)
    plan = plan_with(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 1.0})
    released = R.release_frame(frame, small_schema(), plan, random_state=20240501)
    for column, k, eps in (("smoker", 2, COIN_EPSILON), ("colour", 5, 1.0)):
        p = math.exp(eps) / (math.exp(eps) + k - 1)
        kept = (released[column] == frame[column]).mean()
        # α = 1e-6: the binomial keep count is within Z standard errors of n·p.
        assert abs(kept - p) <= Z * math.sqrt(p * (1 - p) / n), (column, kept, p)
    # A changed value is uniform over the k − 1 others: chi-square on (released − true) mod k, α = 1e-6.
    codes = {c: i for i, c in enumerate(COLOURS)}
    true, out = frame["colour"].map(codes).to_numpy(), released["colour"].map(codes).to_numpy()
    shift = (out - true)[out != true] % 5
    counts = np.bincount(shift, minlength=5)[1:]
    assert stats.chisquare(counts).pvalue > ALPHA


def test_coin_keep_rate_is_three_quarters():
    entry = R.ReleasePlan([R.ColumnPlan("smoker", "coin")]).columns[0]
    assert entry.cost == pytest.approx(math.log(3))
    report = R.release_table(small_frame(100), small_schema(), plan_with(smoker={"mechanism": "coin"}), random_state=1).report
    assert R.report_entry(report, "smoker")["keep_probability"] == pytest.approx(0.75)


def test_mechanisms_are_the_dpcore_classes():
    plan = plan_with(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 0.5},
        score={"mechanism": "laplace", "epsilon": 2.0},
    )
    with record_mechanism_calls() as recorder:
        R.release_frame(small_frame(500), small_schema(), plan, random_state=3)
    seen = {(call.mechanism, call.epsilon, call.sensitivity) for call in recorder.calls}
    assert seen == {("coin_randomized_response", COIN_EPSILON, 1.0), ("randomized_response", 0.5, 1.0), ("laplace", 2.0, 100.0)}


def test_only_planned_columns_and_no_raw_value_anywhere():
    frame, schema = adult_table()
    frame = frame.head(2000).copy()
    frame.loc[5, "workclass"] = "SENTINEL-WORKCLASS-9911"
    frame.loc[6, "native-country"] = "SENTINEL-COUNTRY-9912"
    frame["capital-gain"] = frame["capital-gain"].astype(float)
    frame.loc[7, "capital-gain"] = 87654.3219
    frame["name"] = [f"SENTINEL-NAME-{i}" for i in range(len(frame))]
    schema = Schema([*schema.columns, ColumnSpec("name", role="identifier", kind="categorical")])
    plan = R.default_plan(schema)
    assert plan["name"].mechanism == "drop" and plan["fnlwgt"].mechanism == "drop"
    result = R.release_table(frame, schema, plan, random_state=8)
    assert "name" not in result.table.columns and "fnlwgt" not in result.table.columns
    assert list(result.table.columns) == plan.released_columns
    everything = result.csv.decode() + json.dumps(result.report) + result.markdown + " ".join(map(str, result.notes))
    for secret in ("SENTINEL", "87654", "77516"):
        assert secret not in everything
    assert "name" in result.report["dropped_columns"]


def test_unseen_categories_become_uniform_never_passed_through():
    n = 40_000
    frame = small_frame(n)
    frame["colour"] = "Martian"
    result = R.release_table(frame, small_schema(), plan_with(colour={"mechanism": "k-ary", "epsilon": 3.0}), random_state=2)
    counts = result.table["colour"].value_counts().reindex(COLOURS).to_numpy()
    assert counts.sum() == n
    assert stats.chisquare(counts).pvalue > ALPHA  # uniform over the declared categories, α = 1e-6
    assert any("not among the declared categories" in str(note) for note in result.notes)
    # A note counts the private table: each says it is for the owner only.
    assert result.notes and all(str(note).endswith("(Owner only: a count of the private table.)") for note in result.notes)


def test_missing_values():
    n = 30_000
    frame = small_frame(n)
    frame.loc[: n // 2 - 1, "colour"] = np.nan
    frame.loc[: n // 2 - 1, "score"] = np.nan
    schema = small_schema()
    # missing = random: uniform over the declared categories; a Laplace column uses the declared fill (50).
    plan = plan_with(colour={"mechanism": "k-ary", "epsilon": 8.0}, score={"mechanism": "laplace", "epsilon": 1.0})
    table = R.release_table(frame, schema, plan, random_state=3).table
    assert stats.chisquare(table["colour"][: n // 2].value_counts().reindex(COLOURS).to_numpy()).pvalue > ALPHA
    scores = table["score"][: n // 2].to_numpy()
    assert abs(scores.mean() - 50) <= Z * math.sqrt(2 * 100**2 / (n // 2))
    # missing = category: randomised as a category of its own, and its share is estimated.
    plan = plan_with(
        colour={"mechanism": "k-ary", "epsilon": 2.0, "missing": "category"},
        score={"mechanism": "bins", "epsilon": 2.0, "bins": 4, "missing": "category"},
    )
    result = R.release_table(frame, schema, plan, random_state=4)
    for column in ("colour", "score"):
        entry = R.report_entry(result.report, column)
        assert entry["domain"][-1] == "(missing)"
        estimate = R.estimate_column(result.table[column], entry).set_index("category")
        assert abs(estimate.loc["(missing)", "estimate"] - 0.5) <= Z * estimate.loc["(missing)", "std_error"]
    # Adult's '?' cells are missing values and never appear in a copy.
    frame, schema = adult_table()
    assert "?" not in R.release_frame(frame.head(3000), schema, R.default_plan(schema), random_state=1).to_numpy()


def test_bins_follow_declared_edges():
    frame = pd.DataFrame({"id": "x", "smoker": "no", "colour": "red", "score": [-5.0, 0, 24.9, 25, 99.9, 100, 250]})
    plan = plan_with(score={"mechanism": "bins", "epsilon": 60.0, "edges": [0, 25, 50, 100]})
    result = R.release_table(frame, small_schema(), plan, random_state=0)
    assert sorted(result.table["score"].tolist()) == [
        "[0 to 25)",
        "[0 to 25)",
        "[0 to 25)",
        "[25 to 50)",
        "[50 to 100]",
        "[50 to 100]",
        "[50 to 100]",
    ]


def test_missing_values_are_their_own_category_so_estimates_are_unbiased():
    """The issue's Federal-gov case: a uniform imputation biases every share; '(missing)' does not."""
    rng = np.random.default_rng(5)
    n = 200_000
    truth = rng.choice(np.array(["Federal-gov", "Private", "Self-emp", None], dtype=object), size=n, p=[0.03, 0.8, 0.1, 0.07])
    frame = pd.DataFrame({"workclass": truth})
    schema = Schema([ColumnSpec("workclass", kind="categorical", categories=["Federal-gov", "Private", "Self-emp"])])
    plan = R.default_plan(schema, epsilon=2.0)
    assert plan["workclass"].missing == "category"
    released = R.release_table(frame, schema, plan, random_state=9)
    entry = R.report_entry(released.report, "workclass")
    estimate = R.estimate_column(released.table["workclass"], entry).set_index("category")
    for category, share in {"Federal-gov": 0.03, "Private": 0.8, "(missing)": 0.07}.items():
        assert estimate.loc[category, "ci_lower"] - 0.003 <= share <= estimate.loc[category, "ci_upper"] + 0.003
    assert "a missing value counting as '(missing)'" in entry["estimates_of"]
    # The old default (missing → a random category) estimates a mixture instead: Federal-gov comes out too high.
    plan["workclass"].missing = "random"
    mixed = R.release_table(frame, schema, plan, random_state=9)
    mixed_entry = R.report_entry(mixed.report, "workclass")
    biased = R.estimate_column(mixed.table["workclass"], mixed_entry).set_index("category")
    assert biased.loc["Federal-gov", "ci_lower"] > 0.03 + 0.01
    assert "not the share among known values" in mixed_entry["estimates_of"]


def test_an_owner_note_is_put_into_words_in_the_language_it_is_shown_in():
    """A kept release's notes follow the page's language, switched after the release."""
    import pickle

    from dpcore.i18n import language
    from dpcore.release.result import NOT_DECLARED, OwnerNote

    note = pickle.loads(pickle.dumps(OwnerNote(NOT_DECLARED, 1234, "workclass")))
    assert str(note).startswith("1,234 values of 'workclass' were missing")
    with language("vi"):
        assert str(note).startswith("1.234 giá trị của 'workclass' bị thiếu") and "Owner only" not in str(note)
