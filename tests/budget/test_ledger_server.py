"""The ledger under load and under a kill, on SQLite and on a team's PostgreSQL server (issue 31).

Four processes of eight sessions each charge one dataset at once: the books never pass the total
by a hair, and every refused charge is refused with the sentence. A process killed (SIGKILL) in
the middle of a charge, its spend and the copy it pays for written but not committed, leaves
neither; killed just after, it leaves both.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from contextlib import closing
from decimal import Decimal

import pytest

from dpcore.budget.accountant import LEDGER_ENV, BudgetLedger, Charge
from dpcore.budget.ledger_db import connect
from dpcore.data_home import beside_ledger, default_ledger, mask_password
from dpcore.exceptions import BudgetExceededError, DataError

DATASET = "shared"
#: 1.0 / 0.03 leaves a remainder, so the last charges that fit leave 0.01 no charge can use.
CHARGE_EPSILON = 0.03
PROCESSES, SESSIONS, ATTEMPTS = 4, 8, 2
REFUSAL = "does not fit in what is left of this dataset's budget"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path) -> str:
    """A fresh ledger: a SQLite file, then a schema of its own on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_server").fresh_ledger()


def _charge_from_sessions(path, barrier, results):
    """One app process: ``SESSIONS`` threads (browser sessions), each with its own ledger, charging at once."""
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(SESSIONS)

    def session(i):
        ledger = BudgetLedger(DATASET, path=path)
        start.wait()
        for attempt in range(ATTEMPTS):
            try:
                with ledger.charging(Charge(f"process {os.getpid()} session {i} charge {attempt}", CHARGE_EPSILON)):
                    time.sleep(0.001)  # the work, while other sessions check and charge
                outcome = "ok"
            except BudgetExceededError as refusal:
                outcome = str(refusal)
            with lock:
                outcomes.append(outcome)

    barrier.wait()
    threads = [threading.Thread(target=session, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    results.put(outcomes)


def test_four_processes_of_eight_sessions_never_overspend(ledger_url):
    BudgetLedger(DATASET, total_epsilon=1.0, path=ledger_url)
    # Spawned, not forked: by now other tests may have loaded JAX, whose threads a fork would copy half-way.
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    processes = [context.Process(target=_charge_from_sessions, args=(ledger_url, barrier, results)) for _ in range(PROCESSES)]
    for process in processes:
        process.start()
    outcomes = [outcome for _ in processes for outcome in results.get(timeout=120)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    accepted = outcomes.count("ok")
    refusals = [outcome for outcome in outcomes if outcome != "ok"]
    assert len(outcomes) == PROCESSES * SESSIONS * ATTEMPTS
    assert accepted == 33 and all(REFUSAL in refusal and "Nothing was released or charged" in refusal for refusal in refusals)
    with closing(connect(ledger_url)) as conn:
        recorded = [Decimal(e) for (e,) in conn.execute("SELECT epsilon FROM spends WHERE dataset_id = ?", (DATASET,))]
    assert len(recorded) == accepted and sum(recorded) == Decimal("0.99") <= Decimal(1)


# --- a process killed in the middle of a charge --------------------------------------------------


def _charge_then_wait(path, dataset, go, ready, commit_first):
    """Once ``go`` is set, charge 0.4 and pay for a stored copy in the same transaction, then wait to be killed.

    Without ``commit_first`` the wait is inside the transaction (spend and copy written, not
    committed); with it, just after the charge is committed.
    """
    ledger = BudgetLedger(dataset, path=path)

    def store_copy_and_wait(conn):
        conn.execute(
            "INSERT INTO releases (key, dataset_id, payload, report, created, content) VALUES (?, ?, ?, ?, ?, ?)",
            (f"{dataset}/copy", dataset, b"", "{}", "now", "0" * 64),
        )
        if not commit_first:
            ready.set()
            time.sleep(120)

    go.wait()
    with ledger.charging(Charge("killed copy", 0.4)) as paid:
        paid.alongside = store_copy_and_wait
    ready.set()
    time.sleep(120)


def _books(path, dataset) -> tuple[int, int, float]:
    with closing(connect(path)) as conn:
        spends = conn.execute("SELECT COUNT(*) FROM spends WHERE dataset_id = ?", (dataset,)).fetchone()[0]
        copies = conn.execute("SELECT COUNT(*) FROM releases WHERE dataset_id = ?", (dataset,)).fetchone()[0]
    return spends, copies, BudgetLedger(dataset, path=path).remaining


def test_a_process_killed_during_a_charge_leaves_the_whole_spend_or_none(ledger_url):
    """Two processes, started together: one killed just after its charge, then one killed inside it."""
    context = multiprocessing.get_context("spawn")
    runs = {}
    for dataset, commit_first in (("killed after", True), ("killed inside", False)):
        BudgetLedger(dataset, total_epsilon=1.0, path=ledger_url)
        go, ready = context.Event(), context.Event()
        process = context.Process(target=_charge_then_wait, args=(ledger_url, dataset, go, ready, commit_first))
        process.start()
        runs[dataset] = (process, go, ready)
    try:
        # One after the other: on SQLite the charge held open inside its transaction keeps the whole file's write lock.
        for process, go, ready in runs.values():
            go.set()
            assert ready.wait(timeout=120)
            os.kill(process.pid, signal.SIGKILL)
            process.join(timeout=60)
            assert process.exitcode == -signal.SIGKILL
    finally:
        for process, _, _ in runs.values():
            if process.is_alive():
                process.kill()
    assert _books(ledger_url, "killed after") == (1, 1, pytest.approx(0.6))
    assert _books(ledger_url, "killed inside") == (0, 0, 1.0)
    # The killed processes hold no lock: the rest of each budget is still there to spend, at once.
    BudgetLedger("killed after", path=ledger_url).spend("after the kill", 0.6)
    BudgetLedger("killed inside", path=ledger_url).spend("after the kill", 1.0)
    assert _books(ledger_url, "killed inside") == (1, 0, 0.0)


def test_a_restarted_server_is_reconnected_to_without_a_word(postgres_server):
    url = postgres_server.fresh_ledger()
    ledger = BudgetLedger(DATASET, total_epsilon=1.0, path=url)
    ledger.spend("before the restart", 0.25)  # leaves an idle connection in this process
    postgres_server.restart()
    ledger.spend("after the restart", 0.25)
    assert ledger.spent == 0.5


# --- a password never shows -----------------------------------------------------------------------


def test_a_password_in_the_url_never_shows(monkeypatch):
    url = "postgresql://owner:s3cret-pw@db.example:5432/ledger?sslmode=require"
    assert mask_password(url) == "postgresql://owner:***@db.example:5432/ledger?sslmode=require"
    assert "s3cret" not in mask_password("postgresql://owner@db/ledger?password=s3cret-pw&port=1")
    assert "s3cret" not in str(beside_ledger(url))
    monkeypatch.setenv(LEDGER_ENV, url)
    assert default_ledger() == url
    unreachable = "postgresql://owner:s3cret-pw@127.0.0.1:9/ledger?connect_timeout=2"
    with pytest.raises(DataError, match="could not be reached") as refused:
        BudgetLedger(DATASET, path=unreachable).exists()
    assert "s3cret" not in str(refused.value) and "owner:***@127.0.0.1" in str(refused.value)


def test_the_command_line_takes_a_server_ledger(postgres_server, capsys):
    from dpcore.cli import main

    url = postgres_server.fresh_ledger()
    BudgetLedger("ds-clinic", total_epsilon=2.0, path=url, name="Clinic").spend("count", 0.5)
    assert main(["datasets", "--ledger", url]) == 0
    assert "Clinic: (ε = 0.5, δ = 0) spent of (ε = 2" in capsys.readouterr().out


# --- the same upgrade path ------------------------------------------------------------------------


def test_a_first_format_ledger_on_the_server_is_upgraded_like_the_file(postgres_server):
    import psycopg

    url = postgres_server.fresh_ledger()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            b"""
            CREATE TABLE budgets (dataset_id TEXT PRIMARY KEY, total TEXT NOT NULL, created TEXT NOT NULL);
            CREATE TABLE spends (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, dataset_id TEXT NOT NULL,
                                 label TEXT NOT NULL, epsilon TEXT NOT NULL, composition TEXT NOT NULL, created TEXT NOT NULL);
            CREATE TABLE releases (key TEXT PRIMARY KEY, dataset_id TEXT NOT NULL, payload BYTEA NOT NULL,
                                   report TEXT NOT NULL, created TEXT NOT NULL);
            INSERT INTO budgets VALUES ('abc', '2', '2026-01-01 00:00:00');
            INSERT INTO spends (dataset_id, label, epsilon, composition, created) VALUES
                ('abc', 'Export: randomized copy', '0.5', 'sequential', '2026-01-01 00:00:00'),
                ('abc', 'Train DP tree', '0.25', 'sequential', '2026-01-01 00:00:01');
            """
        )
    ledger = BudgetLedger("abc", path=url)
    assert [s.relation for s in ledger.spends()] == ["replace-one", "add/remove"]
    assert ledger.unit == "replace-one" and ledger.spent == pytest.approx(1.0)
    with closing(connect(url)) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute("UPDATE spends SET epsilon = '0'")


def test_who_acted_is_append_only_on_the_server_and_after_its_upgrade_from_the_third_format(postgres_server):
    """Format 4's subject and e-mail columns: a third-format server ledger gains them, and the triggers cover them."""
    import psycopg

    from dpcore.budget.signed_in import SignedIn

    alice = SignedIn(subject="alice-7f3a", email="alice@example.org")
    url = postgres_server.fresh_ledger()
    BudgetLedger("d", total_epsilon=1.0, path=url).spend("before sign-in", 0.25)
    with psycopg.connect(url, autocommit=True) as conn:  # back to what the third format left
        for table in ("spends", "totals", "events"):
            conn.execute(f"DROP TRIGGER {table}_append_only ON {table}")
            conn.execute(f"ALTER TABLE {table} DROP COLUMN subject, DROP COLUMN email")
        conn.execute("UPDATE ledger_format SET format = 3")

    ledger = BudgetLedger("d", path=url, signed_in=alice)
    ledger.spend("after sign-in", 0.25)
    ledger.set_total(2.0, reason="more for the season", confirm_raise=True)
    ledger.record_event("bounds declared", "age 0-120")
    assert [(s.label, s.subject, s.email) for s in ledger.spends()] == [
        ("before sign-in", "", ""),
        ("after sign-in", alice.subject, alice.email),
    ]
    for statement in (
        "UPDATE spends SET subject = 'mallory', email = 'mallory@example.org'",
        "UPDATE totals SET subject = ''",
        "UPDATE events SET email = 'someone@else.example'",
        "DELETE FROM spends WHERE subject = 'alice-7f3a'",
        "TRUNCATE events",
    ):
        with closing(connect(url)) as conn, pytest.raises(psycopg.Error, match="append-only"):
            conn.execute(statement)
    assert [s.subject for s in BudgetLedger("d", path=url).spends()] == ["", alice.subject]
