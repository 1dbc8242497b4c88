"""Privately estimated bounds: exact privacy check, accuracy on public data, and the ledger charge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.accountant import BudgetLedger
from dpcore.bounds import LOWER_QUANTILE, UPPER_QUANTILE, apply_bounds, estimate_bounds, gap_scores, round_grid
from dpcore.exceptions import BudgetExceededError
from dpcore.schema import ColumnSpec, Schema


def _max_log_ratio(values_d, values_neighbour, quantile, epsilon, sensitivity=1.0) -> float:
    """The largest log density ratio of the two outputs, exactly, on a fine grid of points of the range."""
    points = np.arcsinh(np.linspace(-1.0, 1e6, 2001))
    points = np.concatenate([points, np.arcsinh(np.concatenate([values_d, values_neighbour])) + 1e-9])

    def log_density(values):
        edges, scores = gap_scores(values, quantile, epsilon / sensitivity)
        log_norm = np.logaddexp.reduce(scores)
        gap = np.clip(np.searchsorted(edges, points, side="right") - 1, 0, len(scores) - 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # empty gaps: no point of the range lies in them
            return scores[gap] - np.log(np.diff(edges)[gap]) - log_norm

    inside = (points > np.arcsinh(0.0)) & (points < np.arcsinh(1e6))
    return float(np.max(np.abs(log_density(values_d) - log_density(values_neighbour))[inside]))


@pytest.mark.parametrize("quantile", [LOWER_QUANTILE, 0.5, UPPER_QUANTILE])
def test_exact_privacy_loss_stays_within_epsilon_for_added_or_removed_records(quantile):
    """The output density is exact, so the check is exact: no sampling error."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        values = np.round(rng.lognormal(3, 2, size=rng.integers(1, 300)), 1)
        extra = rng.choice([-5.0, 0.0, 3.0, 2e6, float(np.round(rng.lognormal(3, 2), 1))])
        assert _max_log_ratio(values, np.append(values, extra), quantile, 0.5) <= 0.5 + 1e-9
        assert _max_log_ratio(values, values[1:], quantile, 0.5) <= 0.5 + 1e-9


def test_the_check_has_power_a_halved_sensitivity_is_caught():
    values = np.arange(1.0, 101.0)
    assert _max_log_ratio(values, np.append(values, 0.5), 0.5, 0.5, sensitivity=0.25) > 0.5


def test_bounds_on_california_cover_the_people_and_are_round(california_frame, california_schema, ledger_path):
    ledger = BudgetLedger("ca", total_epsilon=1.0, path=ledger_path)
    found = estimate_bounds(california_frame, california_schema, ["median_income", "population"], 0.05, ledger,
                            random_state=3)
    assert ledger.spent == pytest.approx(0.1)
    for name, (lower, upper) in found.items():
        values = pd.to_numeric(california_frame[name], errors="coerce")
        assert ((values >= lower) & (values <= upper)).mean() > 0.94
        assert upper < 20 * values.quantile(0.995)  # not absurdly wide
        assert lower in round_grid() and upper in round_grid()
    assert ledger.spends()[0].released == "bounds of median_income, population"


def test_nothing_is_returned_when_the_ledger_refuses(california_frame, california_schema, ledger_path):
    ledger = BudgetLedger("ca", total_epsilon=0.05, path=ledger_path)
    with pytest.raises(BudgetExceededError):
        estimate_bounds(california_frame, california_schema, ["median_income", "population"], 0.05, ledger)
    assert ledger.spent == 0


def test_applied_bounds_are_declarations_not_leaks():
    schema = Schema([ColumnSpec("x", lower=3.1, upper=97.3, bounds_from_data=True)])
    apply_bounds(schema, {"x": (0.0, 100.0)}, 0.05)
    assert (schema["x"].lower, schema["x"].upper, schema["x"].bounds_from_data) == (0.0, 100.0, False)
    assert schema.leak_notes() == [] and "privately" in schema["x"].source
