"""Who acted: the signed-in person kept with every spend, total and event of the ledger's history (format 4)."""

from __future__ import annotations

import sqlite3

import pytest

from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger, Charge
from dpcore.budget.datasets import Catalog
from dpcore.budget.ledger_db import FORMAT, connect
from dpcore.budget.signed_in import SignedIn

ALICE = SignedIn(subject="alice-7f3a", email="alice@example.org")


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_path(request, tmp_path) -> str:
    """A fresh ledger: a SQLite file, then a schema of its own on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_server").fresh_ledger()


def test_every_line_a_signed_in_person_writes_names_them(ledger_path):
    catalog = Catalog(ledger_path, signed_in=ALICE)
    dataset = catalog.create("clinic", total_epsilon=2.0, reason="other people")
    ledger = catalog.ledger(dataset)
    with ledger.charging(Charge("Train DP tree", 0.5, mechanism="Laplace", released="a model")):
        pass
    ledger.set_total(1.5, reason="lowered")
    ledger.set_unit(REPLACE_ONE, confirm=True)

    history = ledger.history()
    assert history["event"].tolist() == ["total set", "created as a separate dataset", "spend", "total set", "unit changed"]
    assert set(history["by"]) == {ALICE.subject} and set(history["by (e-mail)"]) == {ALICE.email}
    (spend,) = ledger.spends()
    assert (spend.subject, spend.email) == (ALICE.subject, ALICE.email)
    assert ledger.history_csv().startswith("when (UTC),event,what,by (e-mail),by,ε".encode())


def test_without_sign_in_the_lines_name_nobody_and_two_people_are_told_apart(ledger_path):
    BudgetLedger("shared", total_epsilon=1.0, path=ledger_path).spend("owner's count", 0.25)
    BudgetLedger("shared", path=ledger_path, signed_in=ALICE).spend("Alice's count", 0.25)
    BudgetLedger("shared", path=ledger_path, signed_in=SignedIn("bob-19c2")).spend("Bob's count", 0.25)
    spends = BudgetLedger("shared", path=ledger_path).spends()
    assert [(s.label, s.subject, s.email) for s in spends] == [
        ("owner's count", "", ""),
        ("Alice's count", ALICE.subject, ALICE.email),
        ("Bob's count", "bob-19c2", ""),
    ]


def test_who_spent_cannot_be_rewritten(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    BudgetLedger("d", total_epsilon=1.0, path=path, signed_in=ALICE).spend("count", 0.1)
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE spends SET email = 'someone@else.example'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE totals SET subject = ''")
    conn.close()


def _third_format_ledger(path) -> None:
    """A ledger as format 3 left it: no ``subject`` or ``email`` columns, with one spend made before sign-in."""
    BudgetLedger("d", total_epsilon=1.0, path=path).spend("before sign-in", 0.25)
    conn = sqlite3.connect(path)
    for table in ("spends", "totals", "events"):
        for action in ("update", "delete"):
            conn.execute(f"DROP TRIGGER {table}_no_{action}")
        for column in ("subject", "email"):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()


def test_a_third_format_ledger_is_upgraded_in_place_and_keeps_its_history(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    _third_format_ledger(path)

    ledger = BudgetLedger("d", path=path, signed_in=ALICE)
    ledger.spend("after sign-in", 0.25)
    assert [(s.label, s.email) for s in ledger.spends()] == [("before sign-in", ""), ("after sign-in", ALICE.email)]
    assert ledger.spent == pytest.approx(0.5)
    with connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 5
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE spends SET subject = 'x'")


def test_a_signed_in_person_needs_the_providers_subject():
    with pytest.raises(ValueError, match="subject"):
        SignedIn(subject=" ", email="alice@example.org")
    with pytest.raises(TypeError, match="email"):
        SignedIn(subject="alice", email=None)  # type: ignore[arg-type]
