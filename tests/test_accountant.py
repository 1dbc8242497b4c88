"""The SQLite privacy-budget ledger: composition, refusal, rounding, persistence, concurrency."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from dpcore.accountant import LEDGER_ENV, BudgetLedger, default_ledger_path
from dpcore.exceptions import BudgetExceededError, DPCoreError


@pytest.fixture
def ledger(ledger_path) -> BudgetLedger:
    return BudgetLedger("dataset-a", total_epsilon=1.0, path=ledger_path)


# --- composition ---------------------------------------------------------------------------


def test_sequential_spends_add(ledger):
    ledger.spend("mean of income", 0.25)
    ledger.spend("tree", 0.5)
    assert ledger.spent == 0.75
    assert ledger.remaining == 0.25
    assert [(s.label, s.epsilon, s.composition) for s in ledger.spends()] == [
        ("mean of income", 0.25, "sequential"),
        ("tree", 0.5, "sequential"),
    ]


def test_a_parallel_group_costs_its_largest_part(ledger):
    ledger.spend_parallel("leaf counts", [0.2, 0.5, 0.3])
    assert ledger.spent == 0.5
    (spend,) = ledger.spends()
    assert spend.epsilon == 0.5
    assert spend.composition == "parallel over 3 disjoint parts"
    ledger.spend("then a sequential one", 0.5)
    assert ledger.remaining == 0.0


def test_a_parallel_group_needs_at_least_one_part(ledger):
    with pytest.raises(ValueError, match="epsilons"):
        ledger.spend_parallel("nothing", [])


@pytest.mark.parametrize(
    ("epsilon", "error"),
    [
        (0, ValueError),
        (-0.1, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ("0.1", TypeError),
        (True, TypeError),
    ],
)
def test_bad_spend_amounts_are_refused_by_name(ledger, epsilon, error):
    with pytest.raises(error, match="epsilon"):
        ledger.spend("bad", epsilon)
    with pytest.raises(error, match="epsilon"):
        ledger.spend_parallel("bad", [0.1, epsilon])
    assert ledger.spends() == []


def test_bad_total_is_refused_by_name(ledger_path):
    with pytest.raises(ValueError, match="total_epsilon"):
        BudgetLedger("x", total_epsilon=0.0, path=ledger_path)
    with pytest.raises(TypeError, match="total_epsilon"):
        BudgetLedger("x", total_epsilon="1", path=ledger_path)


# --- refusal -----------------------------------------------------------------------------------


def test_overspending_raises_and_records_nothing(ledger):
    ledger.spend("first", 0.75)
    with pytest.raises(BudgetExceededError, match="exceed the budget") as caught:
        ledger.spend("too much", 0.5)
    assert isinstance(caught.value, DPCoreError)
    assert "0.75" in str(caught.value) and "0.25" in str(caught.value)
    with pytest.raises(BudgetExceededError):
        ledger.spend_parallel("too much in parallel", [0.1, 0.3])
    assert ledger.spent == 0.75
    assert [s.label for s in ledger.spends()] == ["first"]
    assert not ledger.can_spend(0.3)
    assert ledger.can_spend(0.25)


def test_spending_without_a_budget_is_refused(ledger_path):
    ledger = BudgetLedger("no-budget-yet", path=ledger_path)
    assert not ledger.exists()
    with pytest.raises(BudgetExceededError, match="No privacy budget"):
        ledger.spend("x", 0.1)
    ledger.set_total(2.0)
    assert ledger.exists() and ledger.total == 2.0


def test_a_failed_release_stores_nothing_and_a_paid_one_is_kept(ledger):
    assert ledger.stored_release("release-1") is None
    with pytest.raises(BudgetExceededError):
        ledger.spend_and_store_release("export", 1.5, "release-1", b"payload", "{}")
    assert ledger.stored_release("release-1") is None and ledger.spends() == []
    ledger.spend_and_store_release("export", 0.6, "release-1", b"a,b\n1,2\n", '{"epsilon": 0.6}')
    assert ledger.stored_release("release-1") == (b"a,b\n1,2\n", '{"epsilon": 0.6}')
    assert ledger.spent == 0.6


# --- rounding ----------------------------------------------------------------------------------


def test_decimal_sums_fit_a_budget_exactly(ledger):
    for amount in (0.1, 0.2, 0.7):
        ledger.spend(f"ε = {amount}", amount)
    assert ledger.spent == 1.0 and ledger.remaining == 0.0
    with pytest.raises(BudgetExceededError):
        ledger.spend("one more nano-ε", 1e-9)


def test_three_tenths_fit_where_a_float_sum_would_not(ledger_path):
    # In floats 0.1 + 0.1 + 0.1 == 0.30000000000000004 > 0.3; the ledger's decimal sum is exactly 0.3.
    assert 0.1 + 0.1 + 0.1 > 0.3
    ledger = BudgetLedger("three-tenths", total_epsilon=0.3, path=ledger_path)
    for i in range(3):
        ledger.spend(f"tenth {i}", 0.1)
    assert ledger.remaining == 0.0


def test_ten_tenths_fit_a_budget_of_one(ledger):
    for i in range(10):
        ledger.spend(f"tenth {i}", 0.1)
    assert ledger.spent == 1.0


def test_amounts_are_rounded_up_never_down(ledger):
    ledger.spend("a third", 1 / 3)
    assert ledger.spends()[0].epsilon == 0.333333334 >= 1 / 3
    ledger.spend("another third", 1 / 3)
    # 3 × 0.333333334 > 1: rounding up means the third third no longer fits.
    with pytest.raises(BudgetExceededError):
        ledger.spend("the last third", 1 / 3)
    ledger.spend("tiny", 1e-12)
    assert ledger.spends()[-1].epsilon == 1e-9


# --- persistence -------------------------------------------------------------------------------


def test_a_restart_does_not_reset_the_budget(ledger_path):
    first = BudgetLedger("dataset-a", total_epsilon=1.0, path=ledger_path)
    first.spend("before the restart", 0.4)
    del first
    # A new object (as after an app restart), even one asking for a bigger total, sees the old state.
    second = BudgetLedger("dataset-a", total_epsilon=5.0, path=ledger_path)
    assert second.total == 1.0
    assert second.spent == 0.4
    assert [s.label for s in second.spends()] == ["before the restart"]
    with pytest.raises(BudgetExceededError):
        second.spend("too much after the restart", 0.7)


def test_datasets_have_separate_budgets(ledger_path):
    a = BudgetLedger("a", total_epsilon=1.0, path=ledger_path)
    b = BudgetLedger("b", total_epsilon=2.0, path=ledger_path)
    a.spend("x", 1.0)
    b.spend("y", 0.5)
    assert (a.spent, b.spent, b.remaining) == (1.0, 0.5, 1.5)


def test_set_total_never_goes_below_what_is_spent(ledger):
    ledger.spend("x", 0.6)
    with pytest.raises(BudgetExceededError, match="already been spent"):
        ledger.set_total(0.5)
    assert ledger.total == 1.0
    ledger.set_total(0.6)
    assert ledger.remaining == 0.0
    ledger.set_total(3.0)
    assert ledger.total == 3.0 and ledger.spent == 0.6
    with pytest.raises(ValueError, match="total_epsilon"):
        ledger.set_total(-1.0)


def test_to_frame_lists_every_spend(ledger):
    ledger.spend("a", 0.1)
    ledger.spend_parallel("b", [0.2, 0.1])
    frame = ledger.to_frame()
    assert list(frame.columns) == ["what", "ε", "composition", "when (UTC)"]
    assert frame["what"].tolist() == ["a", "b"] and frame["ε"].tolist() == [0.1, 0.2]


def test_default_path_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "custom.sqlite3"))
    assert default_ledger_path() == tmp_path / "custom.sqlite3"
    monkeypatch.delenv(LEDGER_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_ledger_path() == tmp_path / "xdg" / "dpstudio" / "ledger.sqlite3"
    ledger = BudgetLedger("env", total_epsilon=1.0)
    assert Path(ledger.path).exists()


# --- concurrency -------------------------------------------------------------------------------


def test_twenty_threads_cannot_overspend(ledger_path, monkeypatch):
    BudgetLedger("shared", total_epsilon=1.0, path=ledger_path)
    # Widen the race window between reading what is spent and recording the new spend: without
    # the ledger's locking transaction, most of the 20 threads would then pass the check.
    read_spent = BudgetLedger._spent

    def slow_spent(self, conn):
        spent = read_spent(self, conn)
        time.sleep(0.005)
        return spent

    monkeypatch.setattr(BudgetLedger, "_spent", slow_spent)
    ledgers = [BudgetLedger("shared", path=ledger_path) for _ in range(20)]  # one per browser tab
    start = threading.Barrier(len(ledgers))
    outcomes: list[str] = []
    lock = threading.Lock()

    def spend(ledger, i):
        start.wait()
        try:
            ledger.spend(f"thread {i}", 0.1)
            result = "ok"
        except BudgetExceededError:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=spend, args=(ledger, i)) for i, ledger in enumerate(ledgers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["ok"] * 10 + ["refused"] * 10
    check = BudgetLedger("shared", path=ledger_path)
    assert check.spent == 1.0 and len(check.spends()) == 10


def _spend_in_process(path, attempts, barrier, results):
    ledger = BudgetLedger("shared", path=path)
    barrier.wait()
    ok = 0
    for i in range(attempts):
        try:
            ledger.spend(f"process {os.getpid()} spend {i}", 0.1)
            ok += 1
        except BudgetExceededError:
            pass
    results.put(ok)


def test_four_processes_cannot_overspend(ledger_path):
    BudgetLedger("shared", total_epsilon=1.0, path=ledger_path)
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(4), context.Queue()
    processes = [context.Process(target=_spend_in_process, args=(str(ledger_path), 5, barrier, results)) for _ in range(4)]
    for process in processes:
        process.start()
    successes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert sum(successes) == 10
    check = BudgetLedger("shared", path=ledger_path)
    assert check.spent == 1.0 and len(check.spends()) == 10


# --- dataset fingerprint -----------------------------------------------------------------------
