"""The buyer's estimators (dpcore.release.estimator).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from release_testing import COLOURS, Z, adult_table, plan_with, small_frame, small_schema
from scipy import stats

from dpcore import release as R
from dpcore.exceptions import DataError


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
    plan = plan_with(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 1.0},
        score={"mechanism": "laplace", "epsilon": 1.0},
    )
    # Rows must stay aligned with their groups here, so the bare (unshuffled) mechanism is used;
    # the report depends only on the plan and schema.
    table = R.release_frame(frame, small_schema(), plan, random_state=99)
    report = R.release_table(frame.head(10), small_schema(), plan, random_state=99).report
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
    plan = plan_with(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 1.5})
    result = R.release_table(frame, small_schema(), plan, random_state=5)
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


def test_estimate_release_streams_the_file_and_matches_estimate_column():
    frame, schema = adult_table()
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
    result = R.release_table(
        small_frame(50), small_schema(), plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0}), random_state=1
    )
    entry = dict(R.report_entry(result.report, "colour"), domain=["red", "green", "blue", "black", "purple"])
    with pytest.raises(DataError, match="not in its domain"):
        R.estimate_column(result.table["colour"], entry)


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


def test_consistent_estimates_are_a_distribution_when_the_copy_is_noise():
    """The issue's case: at ε = 0.025 and few rows, unbiased shares like −1.15 and 1.68 (here workclass, 1,000 rows)."""
    frame, schema = adult_table()
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
    from dpcore.release.estimator import consistent_shares

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
    plan = plan_with(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 2.0},
        score={"mechanism": "laplace", "epsilon": 2.0},
    )
    result = R.release_table(frame, small_schema(), plan, random_state=12)
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
