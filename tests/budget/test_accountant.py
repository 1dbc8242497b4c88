"""The SQLite privacy-budget ledger: composition, refusal, rounding, persistence, concurrency."""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dpcore.budget.accountant import ADD_REMOVE, LEDGER_ENV, REPLACE_ONE, BudgetLedger, Charge, convert, default_ledger_path
from dpcore.exceptions import BudgetExceededError, BudgetRaiseError, DPCoreError, UnitOfProtectionError


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_path(request, tmp_path) -> str:
    """A fresh ledger for one test: a SQLite file, then a schema of its own on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_server").fresh_ledger()


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
    with pytest.raises(BudgetExceededError, match="does not fit") as caught:
        ledger.spend("too much", 0.5)
    assert isinstance(caught.value, DPCoreError)
    assert "ε = 0.5" in str(caught.value) and "at most ε = 0.25" in str(caught.value)
    with pytest.raises(BudgetExceededError):
        ledger.spend_parallel("too much in parallel", [0.1, 0.3])
    assert ledger.spent == 0.75
    assert [s.label for s in ledger.spends()] == ["first"]
    assert ledger.available() == 0.25


def test_spending_without_a_budget_is_refused(ledger_path):
    ledger = BudgetLedger("no-budget-yet", path=ledger_path)
    assert not ledger.exists()
    with pytest.raises(BudgetExceededError, match="No privacy budget"):
        ledger.spend("x", 0.1)
    ledger.set_total(2.0)
    assert ledger.exists() and ledger.total == 2.0


def test_what_a_spend_pays_for_is_written_in_its_transaction(ledger):
    """A refused spend writes nothing alongside; a failure alongside records no spend; else both are kept."""

    def paid_for(conn):
        conn.execute("INSERT INTO events (dataset_id, event, detail, created) VALUES ('dataset-a', 'paid for', '', '')")

    def disk_full(conn):
        paid_for(conn)
        raise OSError("disk full")

    def events():
        return ledger.history()["event"].tolist().count("paid for")

    def spend(epsilon, alongside):
        with ledger.charging(Charge("export", epsilon)) as paid:
            paid.alongside = alongside

    with pytest.raises(BudgetExceededError):
        spend(1.5, paid_for)
    with pytest.raises(OSError):
        spend(0.6, disk_full)
    assert ledger.spends() == [] and events() == 0
    spend(0.6, paid_for)
    assert ledger.spent == 0.6 and events() == 1


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
    with pytest.raises(BudgetRaiseError, match="confirm"):
        ledger.set_total(3.0)
    assert ledger.total == 0.6
    ledger.set_total(3.0, confirm_raise=True, reason="the board approved ε = 3")
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

    def slow_spent(self, conn, unit=None):
        spent = read_spent(self, conn, unit)
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


def test_four_processes_cannot_overspend(tmp_path):
    # On SQLite only: test_ledger_server.py runs four processes of eight sessions each on both databases.
    ledger_path = tmp_path / "ledger.sqlite3"
    BudgetLedger("shared", total_epsilon=1.0, path=ledger_path)
    # Spawned, not forked: by now other tests have loaded JAX, whose threads a fork would copy half-way.
    context = multiprocessing.get_context("spawn")
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


# --- one unit of protection, (ε, δ) on the books (issue: a budget that is a promise) ----------


def test_a_replace_one_copy_cannot_be_charged_to_an_add_remove_dataset(ledger):
    with pytest.raises(UnitOfProtectionError, match="noisy row count"):
        ledger.spend("randomized copy", 0.5, relation=REPLACE_ONE)
    assert ledger.spent == 0 and ledger.spends() == []
    with pytest.raises(UnitOfProtectionError):
        ledger.cost(0.1, REPLACE_ONE)


def test_a_model_and_a_copy_compose_in_the_replace_one_unit(ledger_path):
    ledger = BudgetLedger("mixed", total_epsilon=3.0, path=ledger_path, unit=REPLACE_ONE)
    ledger.spend("Train DP Gaussian NB", 0.5)  # add/remove ε = 0.5 → replace-one ε = 1
    ledger.spend("randomized copy", 1.5, relation=REPLACE_ONE, mechanism="k-ary randomized response")
    assert ledger.spent == pytest.approx(2.5)
    with pytest.raises(BudgetExceededError, match="at most ε = 0.25"):  # 0.5 left, in add/remove ε
        ledger.spend("another model", 0.3)  # would cost 0.6 in the dataset's unit
    history = ledger.history()
    spends = history[history["event"] == "spend"]
    assert spends["ε in the dataset's unit"].tolist() == [1.0, 1.5]
    assert spends["neighbours"].tolist() == [ADD_REMOVE, REPLACE_ONE]


def test_group_privacy_conversion_of_delta():
    import math
    from decimal import Decimal

    eps, delta = convert(Decimal("0.5"), Decimal("0.00001"), ADD_REMOVE, REPLACE_ONE)
    assert eps == Decimal("1.0")
    assert float(delta) >= (1 + math.exp(0.5)) * 1e-5
    assert convert(Decimal("0.5"), Decimal("0"), REPLACE_ONE, REPLACE_ONE) == (Decimal("0.5"), Decimal("0"))


def test_delta_is_on_the_books_and_refused_past_its_total(ledger_path):
    ledger = BudgetLedger("approx", total_epsilon=2.0, path=ledger_path, total_delta=1e-5)
    ledger.spend("Train DP boosting (approximate)", 0.5, delta=1e-5)
    assert ledger.spent_delta == pytest.approx(1e-5)
    with pytest.raises(BudgetExceededError, match="δ"):
        ledger.spend("a second approximate model", 0.5, delta=1e-5)
    ledger.spend("a pure model still fits", 0.5)
    assert "δ = 1e-05" in ledger.summary()


def test_changing_the_unit_converts_every_spend_or_refuses(ledger_path):
    ledger = BudgetLedger("units", total_epsilon=1.0, path=ledger_path)
    ledger.spend("model", 0.4)
    with pytest.raises(BudgetRaiseError, match="confirm"):
        ledger.set_unit(REPLACE_ONE)  # after a release, a change of unit is a deliberate act
    ledger.set_unit(REPLACE_ONE, confirm=True)
    assert ledger.spent == pytest.approx(0.8)
    ledger.spend("copy", 0.2, relation=REPLACE_ONE)
    with pytest.raises(UnitOfProtectionError):
        ledger.set_unit(ADD_REMOVE, confirm=True)  # the copy has no add/remove guarantee
    assert ledger.unit == REPLACE_ONE
    assert "unit changed" in ledger.history()["event"].tolist()


def test_the_history_is_append_only(ledger_path):
    import sqlite3

    import psycopg

    from dpcore.budget.ledger_db import connect

    ledger = BudgetLedger("history", total_epsilon=1.0, path=ledger_path)
    ledger.spend("model", 0.4)
    ledger.set_total(2.0, confirm_raise=True, reason="approved")
    conn = connect(ledger_path)
    for statement in ("DELETE FROM spends", "UPDATE spends SET epsilon = '0'", "DELETE FROM totals"):
        with pytest.raises((sqlite3.DatabaseError, psycopg.Error), match="append-only"):
            conn.execute(statement)
    conn.close()
    history = ledger.history()
    assert history["event"].tolist() == ["total set", "spend", "total set"]
    assert history["what"].tolist()[-1] == "approved"
    assert ledger.history_csv().startswith(b"when (UTC),event,what")


FIRST_FORMAT = """
    CREATE TABLE budgets (dataset_id TEXT PRIMARY KEY, total TEXT NOT NULL, created TEXT NOT NULL);
    CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT NOT NULL, label TEXT NOT NULL,
                         epsilon TEXT NOT NULL, composition TEXT NOT NULL, created TEXT NOT NULL);
    CREATE TABLE releases (key TEXT PRIMARY KEY, dataset_id TEXT NOT NULL, payload BLOB NOT NULL, report TEXT NOT NULL,
                           created TEXT NOT NULL);
    INSERT INTO budgets VALUES ('abc', '2', '2026-01-01 00:00:00');
"""


def _first_format_ledger(path, rows: str):
    """A ledger file as the first format wrote it, with ``rows`` (SQL inserts) in it."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.executescript(FIRST_FORMAT + rows)
    conn.commit()
    conn.close()
    return path


def test_an_old_ledger_is_upgraded_and_its_copies_count_as_replace_one(tmp_path):
    path = _first_format_ledger(
        tmp_path / "old.sqlite3",
        """
        INSERT INTO spends VALUES (1, 'abc', 'Export: randomized copy', '0.5', 'sequential', '2026-01-01 00:00:00');
        INSERT INTO spends VALUES (2, 'abc', 'Train DP tree', '0.25', 'sequential', '2026-01-01 00:00:01');
    """,
    )
    ledger = BudgetLedger("abc", path=path)
    assert [s.relation for s in ledger.spends()] == [REPLACE_ONE, ADD_REMOVE]
    # The old copy has no add/remove guarantee, so its dataset moves to the unit it does meet.
    assert ledger.unit == REPLACE_ONE
    assert ledger.spent == pytest.approx(1.0)
    with pytest.raises(UnitOfProtectionError):
        ledger.set_unit(ADD_REMOVE, confirm=True)


def test_an_add_remove_model_is_not_epsilon_dp_under_replace_one_so_the_conversion_is_needed():
    """privacy-tests.md row 18: a noisy class-count histogram (as in DP Naive Bayes), ε-DP under add/remove.

    Replacing one record moves a count from one class to the other, so the event "class a leads
    by at least 4" has probability ratio near e^(2ε) between replace-one neighbours: above e^ε,
    which the ledger's factor-two conversion covers. Seeded; the Clopper-Pearson bounds hold at
    a false-alarm rate under 1e-6.
    """
    from scipy import stats

    from dpcore.mechanisms import count_mechanism

    epsilon, draws = 1.0, 400_000
    rng = np.random.default_rng(18)
    mechanism = count_mechanism("geometric", epsilon, random_state=rng)

    def event_count(a: int, b: int) -> int:
        noisy = mechanism.randomise(np.tile([a, b], (draws, 1)))
        return int(np.count_nonzero(noisy[:, 0] - noisy[:, 1] >= 4))

    hits_d, hits_neighbour = event_count(50, 50), event_count(49, 51)  # one record's class replaced
    alpha = 1e-6
    low_d = stats.beta.ppf(alpha / 2, hits_d, draws - hits_d + 1)
    high_neighbour = stats.beta.ppf(1 - alpha / 2, hits_neighbour + 1, draws - hits_neighbour)
    assert low_d / high_neighbour > math.exp(epsilon)
    assert low_d / high_neighbour <= math.exp(2 * epsilon)


def test_totals_round_down_and_tiny_deltas_keep_their_digits(ledger_path):
    ledger = BudgetLedger("tiny", total_epsilon=0.1234567891234, path=ledger_path, total_delta=1e-10)
    assert ledger.total <= 0.1234567891234 and ledger.total_delta == pytest.approx(1e-10)
    with pytest.raises(BudgetExceededError):
        ledger.spend("just over the δ total", 0.01, delta=1.1e-10)
    ledger.spend("within", 0.01, delta=9e-11)
    assert ledger.spent_delta == pytest.approx(9e-11)


def test_a_first_format_copy_is_found_by_its_stored_release_whatever_its_label(tmp_path):
    path = _first_format_ledger(
        tmp_path / "old.sqlite3",
        """
        INSERT INTO spends VALUES (1, 'abc', 'copy for Acme Ltd', '0.5', 'sequential', '2026-01-01 00:00:05');
        INSERT INTO releases VALUES ('k', 'abc', x'00', '{}', '2026-01-01 00:00:05');
    """,
    )
    ledger = BudgetLedger("abc", path=path)
    assert [s.relation for s in ledger.spends()] == [REPLACE_ONE] and ledger.unit == REPLACE_ONE


def test_cost_and_available_speak_in_the_datasets_unit(ledger_path):
    ledger = BudgetLedger("units-cost", total_epsilon=1.0, path=ledger_path, unit=REPLACE_ONE)
    assert ledger.cost(0.3) == pytest.approx(0.6) and ledger.cost(0.3, REPLACE_ONE) == pytest.approx(0.3)
    ledger.spend("model", 0.2)  # 0.4 in the unit
    assert ledger.available() == pytest.approx(0.3) and ledger.available(REPLACE_ONE) == pytest.approx(0.6)


def test_a_spend_checks_how_people_are_counted_in_its_own_transaction(ledger_path):
    """The early check can pass in one tab while another tab spends with other declarations first."""
    ledger = BudgetLedger("counting", total_epsilon=1.0, path=ledger_path)
    other_tab = BudgetLedger("counting", path=ledger_path)
    with pytest.raises(UnitOfProtectionError, match="nothing was spent"):
        with ledger.charging(Charge("per row", 0.1)):  # the early check passes: nothing is spent yet
            with other_tab.charging(Charge("per person", 0.1, privacy_unit="person", rows_per_person=3)):
                pass
    assert [s.label for s in ledger.spends()] == ["per person, per person counting up to 3 rows each"]


def test_a_default_epsilon_leaves_half_of_what_is_left_and_respects_its_cap():
    """Issue 28 item 4: every page's default ε is a stated share of what is left, so no default spends it all."""
    from dpcore.budget.accountant import SHARE_OF_LEFT, default_epsilon

    assert SHARE_OF_LEFT == 0.5
    assert default_epsilon(3.5) == 1.7 and default_epsilon(3.5, cap=0.25) == 0.25
    assert default_epsilon(0.048) == 0.024 and default_epsilon(0.0) == 0.0 and default_epsilon(-1.0) == 0.0
    for left in (1e-4, 0.003, 0.37, 1.0, 7.77, 250.0):
        offered = default_epsilon(left)
        assert 0.45 * left <= offered <= 0.5 * left  # rounded down to two significant digits, never past the share


# --- one way to spend: a charge and the block that pays for it (issue 29) ------------------------


def test_a_charge_is_recorded_once_when_its_block_succeeds(ledger):
    charge = Charge("Train a tree", 0.25, mechanism="DPTree", released="a trained model")
    with ledger.charging(charge) as paid:
        assert ledger.spends() == []  # nothing is written while the work runs
        assert paid.charge is charge
    (spend,) = ledger.spends()
    assert (spend.label, spend.epsilon, spend.mechanism, spend.released) == ("Train a tree", 0.25, "DPTree", "a trained model")
    assert ledger.remaining == 0.75


def test_nothing_is_charged_when_the_work_fails(ledger):
    with pytest.raises(RuntimeError, match="the fit broke"):
        with ledger.charging(Charge("Train a tree", 0.25)):
            raise RuntimeError("the fit broke")
    assert ledger.spends() == [] and ledger.spent == 0


def test_a_charge_that_does_not_fit_is_refused_before_the_work(ledger):
    work_done = []
    with pytest.raises(BudgetExceededError) as refused:
        with ledger.charging(Charge("Train a tree", 1.5, action="Training", undone="trained")):
            work_done.append(True)
    assert work_done == [] and ledger.spends() == []
    sentence = str(refused.value)
    assert "Training at ε = 1.5" in sentence and "at most ε = 1" in sentence
    assert "Privacy page" in sentence and "Nothing was trained or charged" in sentence  # the way out, and what happened


def test_a_refusal_names_the_callers_other_way_out(ledger):
    charge = Charge("bounds", 2.0, action="Estimating these bounds", undone="estimated", alternative="Or declare them.")
    with pytest.raises(BudgetExceededError, match="Or declare them. Nothing was estimated or charged"):
        with ledger.charging(charge):
            pass


def test_a_charge_is_validated_once_when_it_is_made():
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon"):
            Charge("x", bad)
    with pytest.raises(TypeError, match="epsilon"):
        Charge("x", "0.5")
    with pytest.raises(ValueError, match="delta"):
        Charge("x", 0.5, delta=1.0)
    with pytest.raises(ValueError, match="unit"):
        Charge("x", 0.5, relation="replace-two")
    with pytest.raises(ValueError, match="rows_per_person"):
        Charge("x", 0.5, rows_per_person=0)


def test_delta_is_checked_before_and_may_be_raised_by_the_work_never_lowered(ledger_path):
    ledger = BudgetLedger("delta", total_epsilon=2.0, path=ledger_path, total_delta=1e-5)
    with pytest.raises(BudgetExceededError, match="δ budget"):
        with ledger.charging(Charge("approximate model", 0.5, delta=2e-5)):
            pass
    with ledger.charging(Charge("approximate model", 0.5, delta=1e-6)) as paid:
        paid.delta = 2e-6  # what the fitted model turned out to spend: more than checked, so that is charged
    assert ledger.spent_delta == pytest.approx(2e-6)
    with ledger.charging(Charge("approximate model", 0.5, delta=1e-6)) as paid:
        paid.delta = 0.0  # a fit that forgot to record its δ is charged what was checked, never less
    assert ledger.spent_delta == pytest.approx(3e-6)
    pure = BudgetLedger("pure", total_epsilon=2.0, path=ledger_path, total_delta=0.0)
    with pytest.raises(BudgetExceededError, match="allows δ = 0 only"):
        with pure.charging(Charge("approximate model", 0.5, delta=1e-6)):
            pass


def test_a_charge_is_converted_to_the_datasets_unit_inside(ledger_path):
    ledger = BudgetLedger("units", total_epsilon=1.0, path=ledger_path, unit=REPLACE_ONE)
    with ledger.charging(Charge("model", 0.25)):  # add/remove: doubled under replace-one
        pass
    assert ledger.spent == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError, match="at most ε = 0.25"):  # what is left, in the charge's own relation
        with ledger.charging(Charge("model", 0.3)):
            pass
    add_remove = BudgetLedger("add-remove", total_epsilon=1.0, path=ledger_path)
    with pytest.raises(UnitOfProtectionError, match="noisy row count"):
        with add_remove.charging(Charge("copy", 0.1, relation=REPLACE_ONE)):
            pass


def test_people_are_counted_inside_and_the_label_says_how(ledger):
    with ledger.charging(Charge("Find groups", 0.2, privacy_unit="patient", rows_per_person=3, seeded=True)):
        pass
    assert ledger.spends()[0].label == "Find groups (demo seed), per person counting up to 3 rows each"
    assert ledger.counting() == "the column 'patient', up to 3 rows per person"
    with pytest.raises(UnitOfProtectionError, match="count people as"):
        with ledger.charging(Charge("per row", 0.1)):
            pass
    assert len(ledger.spends()) == 1


def test_an_in_memory_ledger_refuses_and_charges_like_a_file():
    ledger = BudgetLedger.in_memory(1.0, unit=REPLACE_ONE)
    assert (ledger.total, ledger.unit, ledger.path) == (1.0, REPLACE_ONE, ":memory:")
    with ledger.charging(Charge("copy", 0.75, relation=REPLACE_ONE)):
        pass
    with pytest.raises(BudgetExceededError):
        with ledger.charging(Charge("copy", 0.5, relation=REPLACE_ONE)):
            pass
    assert ledger.remaining == pytest.approx(0.25)
    assert BudgetLedger.in_memory(1.0).spent == 0  # each is its own budget


def test_nothing_leaves_a_charging_block_before_it_ends():
    """A ``yield`` inside ``with ….charging(…)`` hands work out before the charge is written: a caller that then
    closes the generator, or an error after it, would keep the output uncharged. Only a context manager that wraps
    the charge for its own caller (``NewCopy.charging``) may yield there."""
    import ast
    from pathlib import Path

    import dpcore

    offenders = []
    for path in Path(dpcore.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            wraps = any("contextmanager" in ast.unparse(d) for d in function.decorator_list)
            for block in ast.walk(function):
                charging = isinstance(block, ast.With) and any("charging(" in ast.unparse(i.context_expr) for i in block.items)
                if charging and not wraps and any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(block)):
                    offenders.append(f"{path.name}:{block.lineno}")
    assert not offenders, "yield inside a charging block: " + ", ".join(offenders)
