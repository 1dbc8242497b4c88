"""Privately estimated bounds: the histogram's sensitivity with a power check, a neighbouring-dataset
test, call recording, accuracy on public data, the ledger charge and the owner-only verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss

import dpcore.tables.bounds as bounds_module
from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import BudgetExceededError
from dpcore.mechanisms import record_mechanism_calls
from dpcore.tables.bounds import (
    DEFAULT_BUDGET_SHARE,
    apply_bounds,
    bounds_from_noisy_counts,
    bounds_verdict,
    bucket_counts,
    bucket_edges,
    epsilon_per_column,
    estimate_bounds,
    is_year_column,
    private_bounds,
)
from dpcore.tables.schema import ColumnSpec, Schema


def _largest_count_change(count, rng, trials=300) -> int:
    """The largest L1 change of ``count(values, edges)`` over random tables and one record added or removed."""
    largest = 0
    for _ in range(trials):
        years = bool(rng.random() < 0.3)
        edges = bucket_edges(years)
        values = np.round(rng.choice([-1, 1]) * rng.lognormal(3, 4, size=rng.integers(1, 200)), 1)
        values[rng.random(values.size) < 0.3] = 0.0  # ties and zeros, as a mostly-zero column has
        values[rng.random(values.size) < 0.1] = np.nan
        extra = rng.choice([-5.0, 0.0, 1e-4, 2.0, 2e6, -1e12, 1e12, np.nan, 1987.0, float(values[0])])
        before = count(values, edges)
        largest = max(largest, int(np.abs(count(np.append(values, extra), edges) - before).sum()))
        largest = max(largest, int(np.abs(count(values[1:], edges) - before).sum()))
    return largest


def test_one_record_moves_one_bucket_count_by_at_most_one():
    """The histogram's L1 sensitivity is 1, as the geometric noise at scale 1/ε assumes: ε-DP."""
    assert _largest_count_change(bucket_counts, np.random.default_rng(7)) == 1


def test_the_sensitivity_check_has_power_a_value_counted_in_two_buckets_is_caught():
    def counted_twice(values, edges):  # each value also counted in the next bucket up: sensitivity 2
        counts = bucket_counts(values, edges)
        return counts + np.roll(counts, 1)

    assert _largest_count_change(counted_twice, np.random.default_rng(7)) == 2


def test_the_bounds_are_edges_chosen_from_the_noisy_counts_alone():
    edges = bucket_edges()
    noisy = np.zeros(edges.size - 1, dtype=np.int64)
    middle = int(np.searchsorted(edges, 100.0))  # the bucket [100, 200)
    noisy[middle] = 10_000
    assert bounds_from_noisy_counts(noisy, edges, 1.0) == (100.0, 200.0)
    noisy[middle + 1] = 2  # 2 ≥ 1.5 scales: the neighbour [200, 500) shows people
    noisy[middle - 3] = 1  # 1 < 1.5 scales, and not adjacent anyway
    assert bounds_from_noisy_counts(noisy, edges, 1.0) == (100.0, 500.0)
    assert bounds_from_noisy_counts(np.zeros_like(noisy), edges, 1.0)[0] == edges[0]  # nothing: the fullest, the first


def _years_release(epsilon):
    def release(values, rng):
        return private_bounds(values, epsilon, rng, years=True)

    return release


_YEAR_OUTCOMES = [[1000, 1930, 1940, 1955, 1970, 2200], [1000, 1990, 2005, 2015, 2030, 2200]]


def test_whole_estimator_on_neighbouring_datasets_stays_within_epsilon():
    """The noisy histogram and its post-processing together, sampled: a year column and it with one record more."""
    rng = np.random.default_rng(3)
    d = np.round(rng.uniform(1950, 1990, 12))
    d_prime = np.append(d, 2150.0)
    estimate = neighbouring_privacy_loss(_years_release(1.0), d, d_prime, 1.0, n_runs=6000, edges=_YEAR_OUTCOMES, seed=1)
    assert_within_epsilon(estimate)


def test_the_neighbouring_test_catches_an_upper_bound_read_from_the_data():
    rng = np.random.default_rng(3)
    d = np.round(rng.uniform(1950, 1990, 12))
    d_prime = np.append(d, 2150.0)

    def leaky(values, rng):
        return private_bounds(values, 1.0, rng, years=True)[0], values.max()

    estimate = neighbouring_privacy_loss(leaky, d, d_prime, 1.0, n_runs=6000, edges=_YEAR_OUTCOMES, seed=1)
    assert_exceeds_epsilon(estimate)


def test_the_calls_do_not_depend_on_the_data(california_frame, california_schema, ledger_path):
    """Call recording: on a table and on it with one row less, the same histograms at the same ε, in the same order."""
    frame = california_frame.assign(year_built=np.arange(len(california_frame)) % 120 + 1890)
    schema = Schema([*california_schema.columns, ColumnSpec("year_built", lower=1890, upper=2009)])
    calls = []
    for table in (frame, frame.iloc[1:]):
        ledger = BudgetLedger(f"ca{len(table)}", total_epsilon=1.0, path=ledger_path)
        with record_mechanism_calls() as recorder:
            estimate_bounds(table, schema, ["median_income", "year_built", "longitude"], 0.03, ledger, random_state=0)
        calls.append([(call.mechanism, call.epsilon, call.sensitivity, call.query.size) for call in recorder.calls])
    assert calls[0] == calls[1]
    sizes = [bucket_edges().size - 1, bucket_edges(years=True).size - 1, bucket_edges().size - 1]
    assert calls[0] == [("geometric", 0.03, 1, size) for size in sizes]


def test_bounds_on_california_cover_the_people_and_are_round(california_frame, california_schema, ledger_path):
    ledger = BudgetLedger("ca", total_epsilon=1.0, path=ledger_path)
    names = ["median_income", "population", "longitude", "latitude"]
    found = estimate_bounds(california_frame, california_schema, names, 0.05, ledger, random_state=3)
    assert ledger.spent == pytest.approx(0.2)
    round_numbers = bucket_edges()
    for name, (lower, upper) in found.items():
        values = pd.to_numeric(california_frame[name], errors="coerce").dropna()
        assert ((values >= lower) & (values <= upper)).mean() > 0.95, name
        assert upper - lower < 10 * (values.max() - values.min()), name  # not absurdly wide
        assert lower in round_numbers and upper in round_numbers
    assert found["longitude"][1] < 0  # negative coordinates are not clipped to a range that starts at 0
    assert ledger.spends()[0].released == "bounds of median_income, population, longitude, latitude"


def test_years_get_year_bounds_and_a_mostly_zero_column_starts_at_zero():
    rng = np.random.default_rng(0)
    years = np.clip(np.round(2010 - rng.gamma(1.5, 25, 20_000)), 1872, 2010)
    pool = np.where(rng.random(20_000) < 0.995, 0.0, rng.integers(100, 800, 20_000)).astype(float)
    for seed in range(5):
        lower, upper = private_bounds(years, 0.05, np.random.default_rng(seed), years=True)
        assert np.mean((years < lower) | (years > upper)) <= 0.05 and upper - lower <= 4 * (2010 - 1872)
        assert lower % 25 == 0 and upper % 25 == 0 and 1000 <= lower < upper <= 2200
        assert private_bounds(pool, 0.01, np.random.default_rng(seed))[0] == 0.0


@pytest.mark.parametrize(
    "name, expected",
    [
        ("year_built", True),
        ("YrSold", True),
        ("GarageYrBlt", True),
        ("years_of_education", False),
        ("yearly_income", False),
        ("price", False),
    ],
)
def test_year_columns_are_recognised_by_their_header_only(name, expected):
    assert is_year_column(name) is expected


def test_the_cost_is_a_share_of_what_is_left_split_over_the_columns(ledger_path):
    assert DEFAULT_BUDGET_SHARE == 0.1
    assert epsilon_per_column(1.0, 35) == pytest.approx(0.00285)  # rounded down: 0.1 / 35 = 0.002857…
    assert epsilon_per_column(1.0, 35) * 35 <= 0.1
    assert epsilon_per_column(0.0, 3) == 0.0
    with pytest.raises(ValueError, match="share"):
        epsilon_per_column(1.0, 3, share=1.5)


def test_thirty_five_columns_fit_a_fresh_default_budget(ledger_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.normal(size=500) for i in range(35)})
    schema = Schema([ColumnSpec(name) for name in frame.columns])
    ledger = BudgetLedger("wide", total_epsilon=1.0, path=ledger_path)
    each = epsilon_per_column(ledger.available(), 35)
    found = estimate_bounds(frame, schema, list(frame.columns), each, ledger, random_state=0)
    assert len(found) == 35 and 0 < ledger.spent <= 0.1


def test_nothing_is_read_or_returned_when_the_ledger_refuses(monkeypatch, california_frame, california_schema, ledger_path):
    ledger = BudgetLedger("ca", total_epsilon=0.05, path=ledger_path)
    monkeypatch.setattr(bounds_module, "private_bounds", lambda *a, **k: pytest.fail("data read before the check"))
    with pytest.raises(BudgetExceededError, match="Nothing was estimated or charged"):
        estimate_bounds(california_frame, california_schema, ["median_income", "population"], 0.05, ledger)
    assert ledger.spent == 0


def test_applied_bounds_are_declarations_not_leaks():
    schema = Schema([ColumnSpec("x", lower=3.1, upper=97.3, bounds_from_data=True)])
    apply_bounds(schema, {"x": (0.0, 100.0)}, 0.05)
    assert (schema["x"].lower, schema["x"].upper, schema["x"].bounds_from_data) == (0.0, 100.0, False)
    assert schema.leak_notes() == [] and "privately" in schema["x"].source


def test_the_owner_only_verdict_says_how_much_was_clipped():
    frame = pd.DataFrame({"x": np.arange(100.0), "y": np.r_[np.zeros(99), np.nan]})
    verdict = bounds_verdict(frame, {"x": (10.0, 1000.0), "y": (0.0, 1.0)}).set_index("column")
    assert verdict.loc["x", "clipped below"] == pytest.approx(0.10) and verdict.loc["x", "clipped above"] == 0
    assert verdict.loc["x", "width ÷ true range"] == pytest.approx(990 / 99)
    assert bool(verdict.loc["x", "warning"]) and not bool(verdict.loc["y", "warning"])


def test_a_seeded_estimate_says_so_on_the_ledger_and_an_unseeded_one_does_not(ledger_path):
    """A seed makes the noise replayable, so bounds drawn with one are a demo, as a seeded model is (privacy test 10)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=300)})
    schema = Schema([ColumnSpec("x")])
    ledger = BudgetLedger("seeded bounds", total_epsilon=1.0, path=ledger_path)
    estimate_bounds(frame, schema, ["x"], 0.1, ledger, random_state=0)
    estimate_bounds(frame, schema, ["x"], 0.1, ledger)
    seeded, fresh = ledger.spends()
    assert "demo seed" in seeded.label and "demo seed" not in fresh.label
