"""AIM's private steps: the call-recording audit of every measurement and selection against ρ, and a
neighbouring-dataset test of the selection with a power check.

Statistical tests are seeded; each would fail a correct mechanism with probability at most
``ALPHA`` = 1e-6 on a fresh seed (see tests/privacy_testing.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, estimate_privacy_loss
from synthetic_testing import tiny_plan, tiny_schema, tiny_table

import dpcore.synthetic.aim as aim_module
from dpcore.exceptions import DataError
from dpcore.mechanisms import record_mechanism_calls
from dpcore.synthetic import synthesize_table
from dpcore.synthetic.aim import AimBudget, candidates, measure_and_fit, select_marginal, workload
from dpcore.synthetic.budget import Calibration
from dpcore.synthetic.domain import encode, synthetic_columns


def _cells(frame: pd.DataFrame) -> tuple[np.ndarray, tuple[int, ...]]:
    columns = synthetic_columns(tiny_schema(), tiny_plan())
    return encode(frame, columns, np.random.default_rng(0)), tuple(c.size for c in columns)


def test_the_default_workload_is_every_pair_and_the_targets_triples():
    assert workload(4) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert workload(4, anchor=3)[-3:] == [(0, 1, 3), (0, 2, 3), (1, 2, 3)]
    weights = candidates(workload(3, anchor=2), 3)
    assert weights[(0, 1, 2)] == 3 + 2 + 2 + 2  # shares 3 columns with the triple and 2 with each pair
    assert set(weights) >= {(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)}


def test_a_declared_workload_replaces_the_default_and_its_candidates_are_its_cliques_and_their_subsets():
    assert workload(4, anchor=3, declared=[(2, 0), (3, 1, 0), (0, 2)]) == [(0, 2), (0, 1, 3)]
    assert set(candidates(workload(4, declared=[(0, 1)]), 4)) == {(0,), (1,), (2,), (3,), (0, 1)}


def test_columns_studied_together_are_every_pair_and_each_pair_with_the_target():
    from dpcore.synthetic import studied_together

    assert studied_together(["a", "b", "c"]) == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert studied_together(["a", "b", "y"], target="y") == [["a", "b"], ["a", "y"], ["b", "y"], ["a", "b", "y"]]
    assert studied_together(["a", "b"], target="y") == [["a", "b"], ["a", "b", "y"]]


def test_the_last_round_spends_exactly_what_is_left():
    budget = AimBudget.start(0.5, 3)
    budget.spent = 0.5 * 3 / 4
    budget.last_round()
    assert budget.measure_rho + budget.select_epsilon**2 / 8 == pytest.approx(budget.left)


@pytest.mark.parametrize(
    "unit, time_budget, declared",
    [
        ("add/remove", math.inf, None),
        ("replace-one", math.inf, None),
        ("add/remove", 0.0, None),
        ("add/remove", math.inf, [(0, 2), (1, 2)]),
    ],
    ids=["add-remove", "replace-one", "out-of-time-batch", "declared-workload"],
)
def test_every_measurement_and_selection_stays_within_its_sensitivity_and_the_rounds_add_up_to_rho(unit, time_budget, declared):
    frame = tiny_table(400, seed=1)
    cells, shape = _cells(frame)
    calibration = Calibration(1.0, 1e-6, "gaussian", unit, 1, len(shape))
    settings = {"anchor": 2, "max_rounds": 4, "time_budget": time_budget, "declared": declared}
    with record_mechanism_calls() as recorded:
        measure_and_fit(cells, shape, calibration, np.random.default_rng(5), **settings)
    if unit == "add/remove":  # the neighbour: one row more
        other, _ = _cells(pd.concat([frame, frame.head(1).assign(smoker="yes", age=89.0, sick="no")], ignore_index=True))
    else:  # the neighbour: one row's values changed
        changed = frame.copy()
        changed.loc[0, ["smoker", "age", "sick"]] = ["yes" if frame.loc[0, "smoker"] == "no" else "no", 89.0, "yes"]
        other, _ = _cells(changed)
    with record_mechanism_calls(replay=recorded.calls) as replayed:
        measure_and_fit(other, shape, calibration, np.random.default_rng(5), **settings)
    calls, again = recorded.calls, replayed.calls
    kinds = [c.mechanism for c in calls]
    rounds = kinds.count("exponential")
    assert 1 <= rounds <= 4 * max(aim_module.PICKS_PER_ROUND, aim_module.LAST_BATCH)
    assert kinds.count("gaussian") == len(shape) + rounds
    if not time_budget:  # out of time at once: the last round measures a batch of distinct marginals
        assert rounds > 1
    assert len(calls) == len(again)
    for a, b in zip(calls, again, strict=True):
        assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
        both_out = np.isneginf(a.query) & np.isneginf(b.query)
        assert np.array_equal(np.isneginf(a.query), np.isneginf(b.query))  # the allowed candidates: the model's alone
        with np.errstate(invalid="ignore"):
            diff = np.abs(np.where(both_out, 0.0, a.query - b.query))
        if a.mechanism == "exponential":
            assert diff.max() <= a.sensitivity + 1e-9
        else:
            assert math.sqrt((diff**2).sum()) <= a.sensitivity + 1e-9
    spent = sum(c.epsilon if c.mechanism == "gaussian" else c.epsilon**2 / 8 for c in calls)
    assert spent == pytest.approx(calibration.rho)
    if declared:  # the selection chooses among the declared cliques and their subsets only
        assert {len(c.query) for c in calls if c.mechanism == "exponential"} == {len(candidates(declared, len(shape)))}


def test_aim_refuses_laplace_noise_with_the_way_out():
    with pytest.raises(DataError, match="MST"):
        synthesize_table(tiny_table(200), tiny_schema(), tiny_plan(), epsilon=1.0, noise="laplace", method="aim")


def test_an_aim_copy_has_the_declared_cells_a_noisy_row_count_and_says_aim_in_its_report():
    result = synthesize_table(tiny_table(2000), tiny_schema(), tiny_plan(), epsilon=1.0, random_state=3, method="aim")
    copy = result.table
    assert list(copy.columns) == ["smoker", "age", "sick"]
    assert set(copy["smoker"].astype(str)) <= {"no", "yes"}
    assert result.report["method"].startswith("AIM")
    assert result.report["rows"]["source"] == "noisy count"
    assert result.report["selection"]["rounds"] >= 1


def test_an_aim_copy_on_a_declared_workload_measures_only_within_it_and_its_report_names_it():
    declared = [["smoker", "sick"]]
    result = synthesize_table(
        tiny_table(2000), tiny_schema(), tiny_plan(), epsilon=1.0, random_state=3, method="aim", workload=declared
    )
    assert result.report["selection"]["workload"] == declared
    assert {tuple(m["columns"]) for m in result.report["measured"] if m["kind"] != "one-way"} <= {("smoker", "sick")}
    assert "AIM adapted to the workload the owner declared: smoker × sick." in result.markdown
    default = synthesize_table(tiny_table(500), tiny_schema(), tiny_plan(), epsilon=1.0, random_state=3, method="aim")
    assert default.report["selection"]["workload"] == "default" and "workload the owner declared" not in default.markdown


@pytest.mark.parametrize(
    "workload, method, words",
    [
        ([["smoker", "income"]], "aim", "does not hold: income"),
        ([["smoker"]], "aim", "two or three different columns"),
        ([["smoker", "smoker"]], "aim", "two or three different columns"),
        ([["smoker", "age", "sick", "smoker"]], "aim", "two or three different columns"),
        ([["smoker", "sick"]], "mst", "choose AIM, or leave the workload out"),
    ],
)
def test_a_workload_that_does_not_fit_is_refused_before_anything_is_charged(workload, method, words):
    from dpcore.budget.accountant import BudgetLedger

    ledger = BudgetLedger.in_memory(total_epsilon=3.0)
    with pytest.raises(DataError, match=words):
        synthesize_table(
            tiny_table(200), tiny_schema(), tiny_plan(), epsilon=1.0, method=method, workload=workload, ledger=ledger
        )
    assert ledger.spent == 0


# --- a neighbouring-dataset test of the selection, with a power check ---------------------------------
# Two candidates whose model estimates (fixed: they come from the model, never from the data) leave
# the same error on D; D' adds one row to the second's cell, so its error grows by one. The released
# output is the chosen candidate. Selection ε = 1 (pure DP on its own).

EPSILON = 1.0
RUNS = 20_000
WEIGHTS = {(0,): 1.0, (1,): 1.0}
ESTIMATES = {(0,): np.array([5.0, 5.0]), (1,): np.array([5.0, 5.0])}


def _answers(extra: int) -> dict[tuple[int, ...], np.ndarray]:
    return {(0,): np.array([6.0, 4.0]), (1,): np.array([6.0 + extra, 4.0])}


def _choices(answers, exact_argmax: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if exact_argmax:  # the planted bug: the largest exact error, no noise
        errors = [np.abs(answers[cl] - ESTIMATES[cl]).sum() for cl in WEIGHTS]
        return np.full(RUNS, int(np.argmax(errors)))
    order = list(WEIGHTS)
    return np.array([order.index(select_marginal(WEIGHTS, answers, ESTIMATES, 0.0, EPSILON, 1.0, rng)) for _ in range(RUNS)])


def _loss(exact_argmax: bool = False):
    d = _choices(_answers(0), exact_argmax, 1)
    d_prime = _choices(_answers(1), exact_argmax, 2)
    return estimate_privacy_loss(d, d_prime, EPSILON, n_outcomes=2)


def test_the_selection_is_epsilon_dp_on_neighbours():
    assert_within_epsilon(_loss())


def test_power_choosing_by_the_exact_counts_is_caught():
    assert_exceeds_epsilon(_loss(exact_argmax=True))


def test_the_round_loop_selects_through_the_exponential_mechanism(monkeypatch):
    """The loop's every choice goes through :func:`select_marginal` (the function the neighbouring test checks)."""
    seen = []
    real = aim_module.select_marginal

    def spy(*args, **kwargs):
        seen.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(aim_module, "select_marginal", spy)
    cells, shape = _cells(tiny_table(300))
    calibration = Calibration(1.0, 1e-6, "gaussian", "add/remove", 1, len(shape))
    with record_mechanism_calls() as recorded:
        measure_and_fit(cells, shape, calibration, np.random.default_rng(0), anchor=2, max_rounds=3, time_budget=math.inf)
    assert seen == [c.epsilon for c in recorded.calls if c.mechanism == "exponential"]
