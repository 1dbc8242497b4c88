"""Private helpers of :mod:`dpcore.budget.accountant`: the ledger database's file, tables and upgrades.

The ledger is one SQLite file (by default per user, see :func:`dpcore.data_home.default_ledger_path`). Its
format is numbered in ``PRAGMA user_version``; :func:`connect` brings an older file up to date
in one transaction, so an upgrade interrupted half-way leaves the old format intact.

* Format 1 named each budget by a hash of the whole table and kept no unit of protection.
* Format 2 added datasets' names and units, δ, and the spends' neighbour relation and
  mechanism; spends, totals, events and versions became append-only (triggers refuse to
  update or delete them).
* Format 3 keeps released copies as Parquet files beside the database instead of blobs in it:
  a ``releases`` row names its copy by ``content`` (the SHA-256 of the file). Rows written
  before keep their blob in ``payload`` with no ``content``, until :mod:`dpcore.release.stored`
  moves it out.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime

from dpcore.budget.units import ADD_REMOVE, REPLACE_ONE

FORMAT = 3

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS budgets (
    dataset_id TEXT PRIMARY KEY,
    total TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL REFERENCES budgets(dataset_id),
    label TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    composition TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    key TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL,
    payload BLOB NOT NULL,
    report TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL,
    total TEXT NOT NULL,
    total_delta TEXT NOT NULL,
    reason TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    sketch BLOB NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL,
    event TEXT NOT NULL,
    detail TEXT NOT NULL,
    created TEXT NOT NULL
);
"""
# Columns added since the first ledger format, with their defaults for old rows.
_ADDED_COLUMNS = {
    "budgets": {"name": "TEXT", "unit": f"TEXT NOT NULL DEFAULT '{ADD_REMOVE}'", "total_delta": "TEXT NOT NULL DEFAULT '0'"},
    "spends": {
        "delta": "TEXT NOT NULL DEFAULT '0'",
        "relation": f"TEXT NOT NULL DEFAULT '{ADD_REMOVE}'",
        "mechanism": "TEXT NOT NULL DEFAULT ''",
        "released": "TEXT NOT NULL DEFAULT ''",
    },
    "releases": {"content": "TEXT"},
}
_APPEND_ONLY = ("spends", "totals", "events", "versions")


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A connection with the ledger's tables (created or upgraded in place); close it when done."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    if conn.execute("PRAGMA user_version").fetchone()[0] < FORMAT:
        _upgrade(conn)
    return conn


def _upgrade(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring an older ledger up to date, in one transaction (all or nothing)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] >= FORMAT:  # another process got here first
            conn.execute("COMMIT")
            return
        for statement in _SCHEMA_SQL.split(";"):
            if statement.strip():
                conn.execute(statement)
        for table, columns in _ADDED_COLUMNS.items():
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            for column, kind in columns.items():
                if column not in present:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    if (table, column) == ("spends", "relation"):
                        _relabel_first_format_copies(conn)
        for table in _APPEND_ONLY:
            for action in ("UPDATE", "DELETE"):
                conn.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'the ledger''s history is append-only'); END"
                )
        conn.execute(f"PRAGMA user_version = {FORMAT}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _relabel_first_format_copies(conn: sqlite3.Connection) -> None:
    """The first format charged randomized copies as add/remove spends; they meet only replace-one.

    A copy is found by its label or by the stored release written in the same transaction (same
    dataset, same second); its dataset moves to the replace-one unit, the only one it meets.
    """
    conn.execute(
        f"UPDATE spends SET relation = '{REPLACE_ONE}' WHERE label LIKE '%randomi%' OR EXISTS "
        "(SELECT 1 FROM releases r WHERE r.dataset_id = spends.dataset_id AND r.created = spends.created)"
    )
    conn.execute(
        f"UPDATE budgets SET unit = '{REPLACE_ONE}' WHERE dataset_id IN "
        f"(SELECT dataset_id FROM spends WHERE relation = '{REPLACE_ONE}')"
    )


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class Owned:
    """A connection closed when the block ends."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


class Borrowed(Owned):
    """The shared in-memory connection, left open."""

    def __exit__(self, *exc: object) -> None:
        return None
