"""Tests of the randomized-response table release (dpcore.release).

Statistical tests are seeded and calibrated: each states its false-alarm rate α under a
correct implementation (normal or chi-square tails), never a single draw with an ad-hoc
tolerance. With α = 1e-6 per check the whole file raises a false alarm less than once in
ten thousand runs.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import release as R
from dpcore.accountant import ADD_REMOVE, REPLACE_ONE, BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError, UnitOfProtectionError
from dpcore.loading import read_csv_path
from dpcore.mechanisms import COIN_EPSILON, record_mechanism_calls
from dpcore.schema import ColumnSpec, Schema, load_schema

ALPHA = 1e-6
Z = stats.norm.isf(ALPHA / 2)  # two-sided normal quantile for α = 1e-6 (≈ 4.89)
ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "sample_data" / "adult.csv"
ADULT_SCHEMA = ROOT / "sample_data" / "adult.schema.json"
COLOURS = ["red", "green", "blue", "black", "white"]


def _schema(**extra) -> Schema:
    columns = [
        ColumnSpec("id", role="identifier", kind="categorical"),
        ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
        ColumnSpec("colour", kind="categorical", categories=COLOURS),
        ColumnSpec("score", kind="numeric", lower=0, upper=100),
    ]
    return Schema(columns + list(extra.values()))


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": [f"P{i:07d}" for i in range(n)],
            "smoker": np.where(rng.random(n) < 0.3, "yes", "no"),
            "colour": np.array(COLOURS)[rng.integers(0, len(COLOURS), n)],
            "score": np.round(rng.uniform(0, 100, n), 1),
        }
    )


def _plan(**mechanisms) -> R.ReleasePlan:
    plan = R.ReleasePlan([R.ColumnPlan("id")])
    for name, spec in mechanisms.items():
        plan.columns.append(R.ColumnPlan(name, **spec))
    return plan


@pytest.fixture(scope="module")
def adult():
    frame, _ = read_csv_path(ADULT)
    return frame, load_schema(ADULT_SCHEMA)


# --- keep rates and the shape of the noise -------------------------------------------------------------


def test_keep_rate_matches_the_mechanism():
    n = 200_000
    frame = _frame(n)
    plan = _plan(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 1.0})
    released = R.release_frame(frame, _schema(), plan, random_state=20240501)
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
    report = R.release_table(_frame(100), _schema(), _plan(smoker={"mechanism": "coin"}), random_state=1).report
    assert R.report_entry(report, "smoker")["keep_probability"] == pytest.approx(0.75)


def test_mechanisms_are_the_dpcore_classes():
    plan = _plan(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 0.5},
        score={"mechanism": "laplace", "epsilon": 2.0},
    )
    with record_mechanism_calls() as recorder:
        R.release_frame(_frame(500), _schema(), plan, random_state=3)
    seen = {(call.mechanism, call.epsilon, call.sensitivity) for call in recorder.calls}
    assert seen == {("coin_randomized_response", COIN_EPSILON, 1.0), ("randomized_response", 0.5, 1.0), ("laplace", 2.0, 100.0)}


# --- the buyer's estimator -----------------------------------------------------------------------------


def _group_codes(values: pd.Series, entry: dict, groups: int, n: int) -> np.ndarray:
    """Released counts per group of ``n`` consecutive rows: a (groups, k) array."""
    codes = pd.Index(entry["domain"]).get_indexer(values.to_numpy())
    return np.bincount(
        np.repeat(np.arange(groups), n) * entry["n_categories"] + codes, minlength=groups * entry["n_categories"]
    ).reshape(groups, -1)


def _check_unbiased_and_covering(estimates: list[pd.DataFrame], truth: np.ndarray, label: str) -> None:
    values, errors, lower, upper = (
        np.stack([e[c].to_numpy() for e in estimates]) for c in ("estimate", "std_error", "ci_lower", "ci_upper")
    )
    covered = (lower <= truth) & (truth <= upper)
    groups = len(estimates)
    # Unbiased: the mean over releases is within Z standard errors of the truth (α = 1e-6 per cell).
    assert np.all(np.abs(values.mean(axis=0) - truth) <= Z * values.std(axis=0, ddof=1) / math.sqrt(groups)), label
    # The reported standard error is the actual spread of the estimates: the sample standard deviation of
    # g normal estimates has a relative standard error of 1/sqrt(2(g - 1)), hence the Z-based tolerance.
    assert np.allclose(errors.mean(axis=0), values.std(axis=0, ddof=1), rtol=Z / math.sqrt(2 * (groups - 1))), label
    # 95% intervals cover about 95% of the time: binomial tolerance for α = 1e-6 per cell.
    assert np.all(np.abs(covered.mean(axis=0) - 0.95) <= Z * math.sqrt(0.95 * 0.05 / groups)), (label, covered.mean(axis=0))


def test_estimator_is_unbiased_and_intervals_cover():
    """1,000 releases of the same 1,000 records (one seeded release of 1,000,000 rows cut into groups:
    records are randomised independently, so every group is a release of its own)."""
    groups, n = 1000, 1000
    shares = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "id": "x",
            "smoker": np.tile(np.where(np.arange(n) < 0.3 * n, "yes", "no"), groups),
            "colour": np.tile(np.repeat(COLOURS, (shares * n).astype(int)), groups),
            "score": np.tile(rng.uniform(0, 100, n).round(1), groups),
        }
    )
    plan = _plan(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 1.0},
        score={"mechanism": "laplace", "epsilon": 1.0},
    )
    # Rows must stay aligned with their groups here, so the bare (unshuffled) mechanism is used;
    # the report depends only on the plan and schema.
    table = R.release_frame(frame, _schema(), plan, random_state=99)
    report = R.release_table(frame.head(10), _schema(), plan, random_state=99).report
    for column, truth in (("colour", shares), ("smoker", np.array([0.7, 0.3]))):
        entry = R.report_entry(report, column)
        counts = _group_codes(table[column], entry, groups, n)
        estimates = [R.estimate_counts(c, entry) for c in counts]
        _check_unbiased_and_covering(estimates, truth, column)
    # The counts route and the column route agree.
    entry = R.report_entry(report, "colour")
    first = _group_codes(table["colour"][:n], entry, 1, n)[0]
    pd.testing.assert_frame_equal(R.estimate_column(table["colour"][:n], entry), R.estimate_counts(first, entry))
    # Laplace: the mean of each group's released values, with the exact noise standard error b·√2/√n.
    entry = R.report_entry(report, "score")
    scores = table["score"].to_numpy().reshape(groups, n)
    single = R.estimate_column(pd.Series(scores[0]), entry)
    assert single["estimate"].iloc[0] == pytest.approx(scores[0].mean())
    std_error = single["std_error"].iloc[0]
    assert std_error == pytest.approx(math.sqrt(2) * 100 / math.sqrt(n))
    means, truth = scores.mean(axis=1), frame["score"][:n].mean()
    assert abs(means.mean() - truth) <= Z * std_error / math.sqrt(groups)
    assert means.std(ddof=1) == pytest.approx(std_error, rel=Z / math.sqrt(2 * (groups - 1)))
    z95 = stats.norm.isf(0.025)
    assert abs((np.abs(means - truth) <= z95 * std_error).mean() - 0.95) <= Z * math.sqrt(0.95 * 0.05 / groups)


def test_joint_estimator_is_unbiased():
    groups, n = 1000, 600
    rng = np.random.default_rng(11)
    smoker = np.where(np.arange(n) < 200, "yes", "no")
    colour = np.where(np.arange(n) % 3 == 0, "red", np.where(np.arange(n) < 200, "green", "blue"))
    frame = pd.DataFrame(
        {"id": "x", "smoker": np.tile(smoker, groups), "colour": np.tile(colour, groups), "score": rng.uniform(0, 1)}
    )
    plan = _plan(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 1.5})
    result = R.release_table(frame, _schema(), plan, random_state=5)
    table, report = result.table, result.report
    a, b = R.report_entry(report, "smoker"), R.report_entry(report, "colour")
    truth = (
        pd.crosstab(pd.Categorical(smoker, ["no", "yes"]), pd.Categorical(colour, COLOURS), dropna=False).to_numpy().ravel() / n
    )
    codes_a = pd.Index(a["domain"]).get_indexer(table["smoker"].to_numpy())
    codes_b = pd.Index(b["domain"]).get_indexer(table["colour"].to_numpy())
    cells = np.repeat(np.arange(groups), n) * 10 + codes_a * 5 + codes_b
    counts = np.bincount(cells, minlength=groups * 10).reshape(groups, 2, 5)
    runs = [R.estimate_joint_counts(c, a, b) for c in counts]
    _check_unbiased_and_covering(runs, truth, "joint")
    first = R.estimate_joint(table["smoker"][:n], a, table["colour"][:n], b)
    assert list(first.columns[:2]) == ["smoker", "colour"] and len(first) == 10
    pd.testing.assert_frame_equal(first, runs[0])
    assert R.estimate_joint(table["smoker"], a, table["colour"], b)["estimate"].sum() == pytest.approx(1.0)


def test_estimate_release_streams_the_file_and_matches_estimate_column(adult):
    frame, schema = adult
    plan = R.default_plan(schema)
    result = R.release_table(frame.head(3000), schema, plan, random_state=4)
    streamed = R.estimate_release(result.csv, result.report, chunksize=700)
    assert set(streamed) == {e["header"] for e in result.report["columns"]}
    for header, table in streamed.items():
        direct = R.estimate_column(result.table[header], R.report_entry(result.report, header))
        pd.testing.assert_frame_equal(table, direct)
    check = R.estimate_vs_truth(frame.head(3000), schema, plan, result.table, "sex")
    assert list(check.columns) == ["category", "truth", "estimate", "std_error", "ci_lower", "ci_upper", "covered"]


def test_estimator_refuses_a_mismatched_report():
    result = R.release_table(_frame(50), _schema(), _plan(colour={"mechanism": "k-ary", "epsilon": 1.0}), random_state=1)
    entry = dict(R.report_entry(result.report, "colour"), domain=["red", "green", "blue", "black", "purple"])
    with pytest.raises(DataError, match="not in its domain"):
        R.estimate_column(result.table["colour"], entry)


# --- the released file -------------------------------------------------------------------------------------


def test_formula_cells_are_escaped_and_numbers_untouched():
    schema = Schema(
        [
            ColumnSpec("=note", kind="categorical", public=True),
            ColumnSpec("balance", kind="numeric", lower=-10, upper=10, public=True),
            ColumnSpec("tag", kind="categorical", categories=["=cmd()", "-5", "@home", "ok"]),
        ]
    )
    texts = ["=SUM(A1:A9)", "+cmd", "-5", "-2.5e3", "@home", "\tx", "\rcarriage", "plain", "-x", "a=b"]
    frame = pd.DataFrame({"=note": texts, "balance": np.arange(-5, 5), "tag": ["=cmd()", "-5", "@home", "ok", "ok"] * 2})
    plan = R.ReleasePlan(
        [R.ColumnPlan("=note", "keep"), R.ColumnPlan("balance", "keep"), R.ColumnPlan("tag", "k-ary", epsilon=50.0)]
    )
    result = R.release_table(frame, schema, plan, random_state=0)
    table = result.table
    assert list(table.columns) == ["'=note", "balance", "tag"]
    assert sorted(table["'=note"].tolist()) == sorted([
        "'=SUM(A1:A9)",
        "'+cmd",
        "-5",
        "-2.5e3",
        "'@home",
        "'\tx",
        "'\rcarriage",
        "plain",
        "'-x",
        "a=b",
    ])
    assert sorted(table["balance"].tolist()) == sorted(str(v) for v in range(-5, 5))
    assert R.report_entry(result.report, "tag")["domain"] == ["'=cmd()", "-5", "'@home", "ok"]
    assert set(table["tag"]) <= {"'=cmd()", "-5", "'@home", "ok"}
    assert any("declared it public" in w for w in result.report["warnings"])
    # The file round-trips through a plain CSV reader.
    assert len(pd.read_csv(io.BytesIO(result.csv))) == 10


def test_only_planned_columns_and_no_raw_value_anywhere(adult):
    frame, schema = adult
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
    everything = result.csv.decode() + json.dumps(result.report) + result.markdown + " ".join(result.notes)
    for secret in ("SENTINEL", "87654", "77516"):
        assert secret not in everything
    assert "name" in result.report["dropped_columns"]


def test_unseen_categories_become_uniform_never_passed_through():
    n = 40_000
    frame = _frame(n)
    frame["colour"] = "Martian"
    result = R.release_table(frame, _schema(), _plan(colour={"mechanism": "k-ary", "epsilon": 3.0}), random_state=2)
    counts = result.table["colour"].value_counts().reindex(COLOURS).to_numpy()
    assert counts.sum() == n
    assert stats.chisquare(counts).pvalue > ALPHA  # uniform over the declared categories, α = 1e-6
    assert any("not among the declared categories" in note for note in result.notes)


def test_missing_values(adult):
    n = 30_000
    frame = _frame(n)
    frame.loc[: n // 2 - 1, "colour"] = np.nan
    frame.loc[: n // 2 - 1, "score"] = np.nan
    schema = _schema()
    # missing = random: uniform over the declared categories; a Laplace column uses the declared fill (50).
    plan = _plan(colour={"mechanism": "k-ary", "epsilon": 8.0}, score={"mechanism": "laplace", "epsilon": 1.0})
    table = R.release_table(frame, schema, plan, random_state=3).table
    assert stats.chisquare(table["colour"][: n // 2].value_counts().reindex(COLOURS).to_numpy()).pvalue > ALPHA
    scores = table["score"][: n // 2].to_numpy()
    assert abs(scores.mean() - 50) <= Z * math.sqrt(2 * 100**2 / (n // 2))
    # missing = category: randomised as a category of its own, and its share is estimated.
    plan = _plan(
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
    frame, schema = adult
    assert "?" not in R.release_frame(frame.head(3000), schema, R.default_plan(schema), random_state=1).to_numpy()


def test_bins_follow_declared_edges():
    frame = pd.DataFrame({"id": "x", "smoker": "no", "colour": "red", "score": [-5.0, 0, 24.9, 25, 99.9, 100, 250]})
    plan = _plan(score={"mechanism": "bins", "epsilon": 60.0, "edges": [0, 25, 50, 100]})
    result = R.release_table(frame, _schema(), plan, random_state=0)
    assert sorted(result.table["score"].tolist()) == [
        "[0 to 25)",
        "[0 to 25)",
        "[0 to 25)",
        "[25 to 50)",
        "[50 to 100]",
        "[50 to 100]",
        "[50 to 100]",
    ]


def test_row_order_does_not_survive_into_the_copy(tmp_path, monkeypatch):
    """A file sorted by a sensitive column must not give each row's value away by its position."""
    n = 4000
    frame = pd.DataFrame({"id": "x", "smoker": np.where(np.arange(n) < n // 2, "no", "yes"), "colour": "red", "score": 1.0})
    plan = _plan(smoker={"mechanism": "k-ary", "epsilon": 0.5})
    released = R.release_table(frame, _schema(), plan, random_state=5).table["smoker"]
    first_half_yes = (released[: n // 2] == "yes").mean()
    second_half_yes = (released[n // 2 :] == "yes").mean()
    # In input order the halves would differ by p − q ≈ 0.24; shuffled they differ by sampling noise only.
    assert abs(first_half_yes - second_half_yes) < 0.06
    # The streaming release shuffles the same way, across several buckets.
    monkeypatch.setattr(R, "SHUFFLE_BUCKET_BYTES", 20_000)
    source = tmp_path / "sorted.csv"
    frame.to_csv(source, index=False)
    streamed = R.release_csv(source, tmp_path / "out.csv", _schema(), plan, random_state=5, chunksize=700)
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, _schema(), plan, random_state=5).csv
    assert streamed.per_record_epsilon == 0.5


# --- reading files, streaming ------------------------------------------------------------------------------


def test_streaming_equals_in_memory_for_a_seed(adult, tmp_path, monkeypatch):
    monkeypatch.setattr(R, "BLOCK_ROWS", 1000)  # several generator blocks in a small file
    frame, schema = adult
    source = tmp_path / "adult_part.csv"
    frame.head(5000).to_csv(source, index=False)
    subset, _ = read_csv_path(source)
    plan = R.default_plan(schema)
    plan["capital-gain"].mechanism, plan["capital-gain"].bins = "laplace", None
    plan["race"].missing = "category"
    expected = R.release_table(subset, schema, plan, random_state=2024).csv
    for chunksize in (333, 1000, 4096, 100_000):
        R.release_csv(source, tmp_path / f"out{chunksize}.csv", schema, plan, random_state=2024, chunksize=chunksize)
        assert (tmp_path / f"out{chunksize}.csv").read_bytes() == expected, chunksize
    other = R.release_table(subset, schema, plan, random_state=2025).csv
    assert other != expected


def test_without_a_seed_copies_differ():
    frame, plan = _frame(300), _plan(colour={"mechanism": "k-ary", "epsilon": 1.0})
    first = R.release_table(frame, _schema(), plan)
    assert not first.seeded and not first.report["seeded"]
    assert first.csv != R.release_table(frame, _schema(), plan).csv
    seeded = R.release_table(frame, _schema(), plan, random_state=1)
    assert seeded.report["seeded"] and "TEST RELEASE" in seeded.markdown


def test_non_utf8_input(tmp_path):
    schema = Schema(
        [
            ColumnSpec("city", kind="categorical", categories=["Café", "Zürich", "Köln"]),
            ColumnSpec("n", kind="numeric", lower=0, upper=10),
        ]
    )
    text = "city;n\n" + "".join(f"{c};{i % 10}\n" for i, c in enumerate(["Café", "Zürich", "Köln"] * 200))
    source = tmp_path / "latin.csv"
    source.write_bytes(text.encode("latin-1"))
    plan = R.default_plan(schema)
    result = R.release_csv(source, tmp_path / "out.csv", schema, plan, random_state=6)
    frame, facts = read_csv_path(source)
    assert facts["encoding"] == "latin-1"
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, schema, plan, random_state=6).csv
    assert not any("declared categories" in note for note in result.notes)
    assert set(R.read_release(tmp_path / "out.csv")["city"]) <= {"Café", "Zürich", "Köln", "(missing)"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (b"smoker,colour\n", "no data rows"),
        (b"PK\x03\x04\x00\x00binary", "binary"),
        (b"smoker,colour\nno,red\nSECRET-CELL,blue,extra\n", "different number of fields"),
    ],
)
def test_unreadable_files_raise_sentences(tmp_path, content, message):
    source = tmp_path / "in.csv"
    source.write_bytes(content)
    schema = Schema(
        [
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
            ColumnSpec("colour", kind="categorical", categories=COLOURS),
        ]
    )
    with pytest.raises(DataError, match=message) as caught:
        R.release_csv(source, tmp_path / "out.csv", schema, R.default_plan(schema), random_state=1)
    assert "SECRET" not in str(caught.value)
    assert not (tmp_path / "out.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.csv"]


def test_planned_column_missing_from_the_file(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("smoker,other\nno,1\n")
    with pytest.raises(DataError, match="'colour'"):
        R.release_csv(source, tmp_path / "out.csv", _schema(), _plan(colour={"mechanism": "k-ary", "epsilon": 1.0}))


# --- budgets and repeated exports ------------------------------------------------------------------------


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
    plan = _plan(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 2.0})
    assert plan.per_record_epsilon == pytest.approx(2.0 + COIN_EPSILON, abs=1e-8)
    with pytest.raises(BudgetExceededError, match="costs ε"):
        R.release_table(_frame(20), _schema(), plan, budget=3.0)
    with pytest.raises(BudgetExceededError):
        plan.check_budget(3.0)
    book = BudgetLedger("d", total_epsilon=3.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_table(_frame(20), _schema(), plan, ledger=book)
    assert book.spent == 0
    source = tmp_path / "in.csv"
    _frame(20).to_csv(source, index=False)
    small = BudgetLedger("e", total_epsilon=1.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_csv(source, tmp_path / "out.csv", _schema(), plan, ledger=small)
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(TypeError, match="BudgetLedger"):
        R.release_table(_frame(20), _schema(), plan, ledger=tmp_path / "l.sqlite3")


# --- one unit of protection: a copy for an add/remove dataset is padded to a noisy row count ----------


def test_an_add_remove_copy_is_padded_and_charged_for_its_row_count(adult, tmp_path):
    frame, schema = adult
    frame = frame.head(3000)
    plan = R.ReleasePlan([R.ColumnPlan("sex", "coin"), R.ColumnPlan("workclass", "k-ary", 1.0, missing="category")])
    book = BudgetLedger("padded", total_epsilon=5.0, path=tmp_path / "l.sqlite3")
    result = R.release_table(frame, schema, plan, ledger=book, random_state=3)
    assert result.epsilon_charged == pytest.approx(plan.per_record_epsilon + R.COUNT_EPSILON, abs=1e-8)
    (spend,) = book.spends()
    assert spend.relation == ADD_REMOVE and "noisy row count" in spend.mechanism
    protection = R._Protection(ADD_REMOVE, R.COUNT_EPSILON)
    assert len(result.table) == R.noisy_row_count(3000, protection, R._entropy(3)[0])
    assert result.report["unit_of_protection"]["padded"] and "padding" in result.report["privacy"]
    assert "filler rows" in result.markdown
    # The streamed release pads the same way for the same seed.
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    R.release_csv(source, tmp_path / "out.csv", schema, plan, unit=ADD_REMOVE, random_state=3, chunksize=700)
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, schema, plan, unit=ADD_REMOVE, random_state=3).csv


def test_padding_adds_and_drops_rows_around_the_true_count():
    protection = R._Protection(ADD_REMOVE, 0.5)
    counts = np.array([R.noisy_row_count(1000, protection, seed) for seed in range(400)])
    assert (counts > 1000).any() and (counts < 1000).any()
    assert abs(np.median(counts) - 1000) <= 2
    frame, schema = _frame(60), _schema()
    plan = _plan(colour={"mechanism": "k-ary", "epsilon": 1.0})
    sizes = {
        len(R.release_table(frame, schema, plan, unit=ADD_REMOVE, count_epsilon=0.5, random_state=s).table) for s in range(30)
    }
    assert min(sizes) < 60 < max(sizes)


def test_a_kept_column_cannot_go_into_a_padded_copy():
    schema = _schema(pub=ColumnSpec("pub", kind="categorical", categories=["a", "b"], public=True))
    frame = _frame(30).assign(pub="a")
    plan = R.ReleasePlan([R.ColumnPlan("pub", "keep"), R.ColumnPlan("smoker", "coin")])
    with pytest.raises(DataError, match="filler rows"):
        R.release_table(frame, schema, plan, unit=ADD_REMOVE)
    assert len(R.release_table(frame, schema, plan, unit=REPLACE_ONE).table) == 30


def test_an_unpadded_copy_is_refused_by_an_add_remove_ledger(tmp_path):
    book = BudgetLedger("ar", total_epsilon=5.0, path=tmp_path / "l.sqlite3")
    with pytest.raises(UnitOfProtectionError):
        R.release_table(_frame(30), _schema(), _plan(smoker={"mechanism": "coin"}), ledger=book, unit=REPLACE_ONE)
    assert book.spends() == []


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


def test_data_read_domains_are_dropped_by_default_and_refused_until_declared_public():
    schema = Schema([
        ColumnSpec("FullName", kind="categorical", categories=[f"person {i}" for i in range(30)], bounds_from_data=True),
        ColumnSpec("score", kind="numeric", lower=0, upper=10, bounds_from_data=True),
        ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False),
    ])
    plan = R.default_plan(schema)
    assert [(c.column, c.mechanism) for c in plan.columns] == [("FullName", "drop"), ("score", "drop"), ("smoker", "coin")]
    forced = R.ReleasePlan([R.ColumnPlan("FullName", "k-ary", 1.0), R.ColumnPlan("score", "bins", 1.0, bins=4)])
    problems = forced.problems(schema)
    assert len(problems) == 2 and all("read from your data" in p for p in problems)
    schema["score"].bounds_from_data = False  # the owner confirms the bounds are public
    assert R.ReleasePlan([R.ColumnPlan("score", "bins", 1.0, bins=4)]).problems(schema) == []


def test_default_plan_for_adult(adult):
    _, schema = adult
    plan = R.default_plan(schema)
    mechanisms = {c.column: c.mechanism for c in plan.columns}
    assert mechanisms["fnlwgt"] == "drop" and mechanisms["sex"] == "coin" and mechanisms["income"] == "coin"
    assert mechanisms["age"] == "bins" and plan["age"].bins == 8 and mechanisms["workclass"] == "k-ary"
    eps = plan.epsilon_by_column()
    assert "fnlwgt" not in eps and eps["sex"] == COIN_EPSILON and eps["age"] == 1.0
    assert plan.per_record_epsilon == pytest.approx(11 + 2 * math.log(3) + 1, abs=1e-8)  # 12 k-ary/bins columns
    assert R.ReleasePlan.from_json(plan.to_json()) == plan
    assert R.ReleasePlan.from_frame(plan.to_frame()) == plan
    described = R.describe_plan(plan, schema)
    assert len(described) == len(schema.columns) and (described["problem"] == "").all()
    assert "probability 3/4" in described.set_index("column").loc["sex", "what the buyer gets"]


def test_plan_problems():
    schema = _schema(
        pub=ColumnSpec("pub", kind="categorical", public=True),
        three=ColumnSpec("three", kind="categorical", categories=["a", "b", "c"]),
    )
    bad = R.ReleasePlan(
        [
            R.ColumnPlan("id", "keep"),
            R.ColumnPlan("smoker", "keep"),
            R.ColumnPlan("colour", "k-ary"),
            R.ColumnPlan("score", "k-ary", epsilon=1.0),
            R.ColumnPlan("three", "coin"),
            R.ColumnPlan("nope", "coin"),
            R.ColumnPlan("pub", "shuffle"),
            R.ColumnPlan("colour", "drop"),
        ]
    )
    text = " ".join(bad.problems(schema))
    for fragment in (
        "'id' is an identifier",
        "'smoker' can only be kept",
        "'colour': give a finite ε",
        "'score' is numeric",
        "the coin needs exactly two",
        "'nope' is in the plan but not in the schema",
        "must be one of",
        "more than once",
    ):
        assert fragment in text
    with pytest.raises(DataError):
        R.release_frame(_frame(5), schema, bad)
    with pytest.raises(DataError, match="releases no column"):
        R.release_frame(_frame(5), schema, R.ReleasePlan([R.ColumnPlan("id")]))
    with pytest.raises(DataError, match="must be a number"):
        R.ReleasePlan.from_dict({"columns": [{"column": "score", "mechanism": "bins", "epsilon": "lots"}]})
    with pytest.raises(DataError, match="not valid JSON"):
        R.ReleasePlan.from_json("{oops")
    assert R.ReleasePlan([R.ColumnPlan("pub", "keep")]).problems(schema) == []


def test_report_is_complete_and_holds_no_data(adult):
    frame, schema = adult
    schema = Schema([ColumnSpec(**{**c.__dict__}) for c in schema.columns])
    schema["age"].bounds_from_data = True
    plan = R.default_plan(schema)
    assert plan["age"].mechanism == "drop"  # a data-read domain is never released by default
    plan["age"].mechanism, plan["age"].epsilon, plan["age"].bins = "bins", 1.0, 8
    with pytest.raises(DataError, match="read from your data"):
        R.release_table(frame.head(100), schema, plan)
    plan["age"].mechanism = "drop"
    plan["hours-per-week"].mechanism, plan["hours-per-week"].bins = "laplace", None
    result = R.release_table(frame.head(1000), schema, plan, random_state=1)
    report = json.loads(json.dumps(result.report))
    assert report["format"] == "dpcore-release-report/1"
    assert report["per_record_epsilon"] == pytest.approx(plan.per_record_epsilon)
    assert report["unit_of_protection"]["unit"] == "replace-one" and "does not hide **whether**" in result.markdown
    for entry in report["columns"]:
        assert {"column", "header", "mechanism", "epsilon", "estimator", "description"} <= set(entry)
        if entry["mechanism"] == "laplace":
            assert entry["scale"] == pytest.approx(98.0) and "mean" in entry["estimator"]
        else:
            assert {"domain", "keep_probability", "other_probability", "n_categories"} <= set(entry)
            assert "pi_j = (lambda_j - q) / (p - q)" in entry["estimator"]["frequency"]
    assert "fingerprint" not in json.dumps(report) and result.dataset_id is None
    assert "rows" not in report


# --- consistent estimates and the usefulness verdict ----------------------------------------------------


def _log_likelihood(counts: np.ndarray, shares: np.ndarray, p: float, q: float) -> float:
    return float(np.sum(counts * np.log((p - q) * shares + q)))


def _em(counts: np.ndarray, p: float, q: float, iterations: int = 200_000) -> np.ndarray:
    """The plain EM / iterative Bayesian update π ← π ⊙ Mᵀ(λ̂ / M π), run to convergence from uniform."""
    k = counts.size
    matrix = np.full((k, k), q)
    np.fill_diagonal(matrix, p)
    observed, shares = counts / counts.sum(), np.full(k, 1.0 / k)
    for _ in range(iterations):
        new = shares * (matrix.T @ (observed / (matrix @ shares)))
        if np.abs(new - shares).max() < 1e-13:
            break
        shares = new
    return new


def test_consistent_estimates_are_a_distribution_when_the_copy_is_noise(adult):
    """The issue's case: at ε = 0.025 and few rows, unbiased shares like −1.15 and 1.68 (here workclass, 1,000 rows)."""
    frame, schema = adult
    plan = R.ReleasePlan([R.ColumnPlan("workclass", "k-ary", epsilon=0.025, missing="category")])
    result = R.release_table(frame.head(1000), schema, plan, random_state=3)
    entry = R.report_entry(result.report, "workclass")
    estimate = R.estimate_column(result.table["workclass"], entry)
    assert list(estimate.columns) == ["category", "estimate", "std_error", "ci_lower", "ci_upper", "consistent"]
    assert estimate["estimate"].min() < 0 and estimate["estimate"].max() > 1
    consistent = estimate["consistent"].to_numpy()
    assert np.all((consistent >= 0) & (consistent <= 1)) and consistent.sum() == pytest.approx(1.0)
    # The streaming route gives the same table, new column included.
    streamed = R.estimate_release(result.csv, result.report)["workclass"]
    pd.testing.assert_frame_equal(streamed, estimate)
    # It is the maximum of the likelihood: at least as likely as EM run to convergence and as the projection.
    counts = np.bincount(pd.Index(entry["domain"]).get_indexer(result.table["workclass"]), minlength=9).astype(float)
    p, q = entry["keep_probability"], entry["other_probability"]
    best = _log_likelihood(counts, consistent, p, q)
    assert best >= _log_likelihood(counts, _em(counts, p, q), p, q) - 1e-9
    # The owner's copy has no buyer-side 'consistent' in the owner-only truth table.
    check = R.estimate_vs_truth(frame.head(1000), schema, plan, result.table, "workclass")
    assert "consistent" not in check.columns


@pytest.mark.parametrize("seed", range(6))
def test_consistent_shares_are_the_em_fixed_point(seed):
    from dpcore._release_report import consistent_shares

    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 9))
    epsilon = float(rng.choice([0.3, 0.7, 1.5]))
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    q = (1 - p) / (k - 1)
    truth = rng.dirichlet(np.full(k, 0.5))
    counts = rng.multinomial(int(rng.integers(50, 2000)), (p - q) * truth + q).astype(float)
    mle = consistent_shares(counts, p, q)
    assert np.all(mle >= 0) and mle.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(mle, _em(counts, p, q), atol=1e-5)
    # Karush–Kuhn–Tucker: the gradient is equal on the shares above 0 and no larger on those at 0.
    gradient = (p - q) * counts / ((p - q) * mle + q)
    level = gradient[mle > 1e-12].mean()
    np.testing.assert_allclose(gradient[mle > 1e-12], level, rtol=1e-9)
    assert np.all(gradient[mle <= 1e-12] <= level * (1 + 1e-9))
    # Interior unbiased estimates are returned unchanged; no rows: uniform.
    unbiased = (counts / counts.sum() - q) / (p - q)
    if unbiased.min() >= 0:
        np.testing.assert_allclose(mle, unbiased, atol=1e-12)
    np.testing.assert_allclose(consistent_shares(np.zeros(k), p, q), np.full(k, 1 / k))


def test_consistent_is_close_to_unbiased_at_large_n_and_epsilon():
    n = 100_000
    shares = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    frame = pd.DataFrame(
        {
            "id": "x",
            "smoker": np.where(np.arange(n) < 0.3 * n, "yes", "no"),
            "colour": np.repeat(COLOURS, (shares * n).astype(int)),
            "score": np.linspace(0, 100, n),
        }
    )
    plan = _plan(
        smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 2.0}, score={"mechanism": "laplace", "epsilon": 2.0}
    )
    result = R.release_table(frame, _schema(), plan, random_state=12)
    estimates = R.estimate_release(result.csv, result.report)
    for column in ("smoker", "colour"):
        table = estimates[column]
        assert np.abs(table["consistent"] - table["estimate"]).max() <= 0.01, column
        assert table["consistent"].sum() == pytest.approx(1.0) and table["consistent"].min() >= 0
    # A Laplace mean: the consistent estimate is the mean kept within the declared bounds.
    score = estimates["score"]
    assert score["consistent"].iloc[0] == pytest.approx(min(max(score["estimate"].iloc[0], 0.0), 100.0))
    assert "**consistent** shares" in result.markdown and "maximum-likelihood" in result.markdown
    assert "consistent" in R.report_entry(result.report, "colour")["estimator"]


def test_usefulness_verdicts():
    schema = Schema(
        [
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False),
            ColumnSpec("score", kind="numeric", lower=0, upper=100),
            ColumnSpec("id", role="identifier", kind="categorical"),
        ]
    )
    noisy = R.ReleasePlan([R.ColumnPlan("smoker", "k-ary", epsilon=0.025, missing="random"), R.ColumnPlan("id")])
    table = R.usefulness(noisy, schema, 1000)
    assert list(table.columns) == ["column", "epsilon", "typical_error", "verdict", "rating"]
    assert table["column"].tolist() == ["smoker"] and table["rating"].tolist() == ["noise"]
    p = math.exp(0.025) / (math.exp(0.025) + 1)
    q = 1 - p
    assert table["typical_error"].iloc[0] == pytest.approx(math.sqrt((0.5 * p * (1 - p) + 0.5 * q * (1 - q)) / 1000) / (p - q))
    verdict = table["verdict"].iloc[0]
    assert "mostly noise" in verdict and "'smoker'" in verdict and "pure noise (its error exceeds ±1)" in verdict
    assert "mostly noise for 'smoker'" in R.usefulness_summary(table)

    useful = R.ReleasePlan([R.ColumnPlan("smoker", "k-ary", epsilon=2.0), R.ColumnPlan("score", "laplace", epsilon=2.0)])
    table = R.usefulness(useful, schema, 30_000)
    assert table["rating"].tolist() == ["useful", "useful"]
    assert table["verdict"].iloc[0].startswith("Useful") and "±0.0025" in table["verdict"].iloc[0]
    assert table["typical_error"].iloc[1] == pytest.approx(math.sqrt(2) * 50 / math.sqrt(30_000))
    assert R.usefulness_summary(table).startswith("Useful")

    mixed = R.ReleasePlan([R.ColumnPlan("smoker", "coin"), R.ColumnPlan("score", "laplace", epsilon=0.05)])
    table = R.usefulness(mixed, schema, 1000)
    assert table["rating"].tolist() == ["useful", "noise"] and "narrow its declared bounds" in table["verdict"].iloc[1]
    summary = R.usefulness_summary(table)
    assert summary.count(".") == 1 and "mostly noise for 'score'" in summary and "useful for the other column" in summary
    assert R.usefulness_summary(R.usefulness(R.ReleasePlan([R.ColumnPlan("id")]), schema, 10)).startswith("The plan randomises no")
    with pytest.raises(ValueError, match="n_rows"):
        R.usefulness(useful, schema, 0)


def test_copy_epsilon_counts_the_row_count_only_where_it_is_hidden():
    plan = _plan(smoker={"mechanism": "coin"})
    assert R.copy_epsilon(plan, REPLACE_ONE) == pytest.approx(plan.per_record_epsilon)
    assert R.copy_epsilon(plan, ADD_REMOVE) == pytest.approx(plan.per_record_epsilon + R.COUNT_EPSILON)
    assert R.count_epsilon_for(REPLACE_ONE) == 0 and R.count_epsilon_for(ADD_REMOVE) == R.COUNT_EPSILON
