"""Private helpers of :mod:`dpcore.budget.accountant`: the ledger database's connection, tables and upgrades.

The ledger is one SQLite file (by default per user, see :func:`dpcore.data_home.default_ledger`),
or, for a team server with several app processes, a PostgreSQL database named by a
``postgresql://`` URL. Both hold the same tables with the same append-only triggers and are
upgraded by the same steps; the few differences of SQL are in :class:`Dialect`, and
:func:`connect` returns a connection with the same ``execute`` (``?`` placeholders) and one
:meth:`~SQLiteConnection.begin` that serialises writers: SQLite's ``BEGIN IMMEDIATE`` (one writer
at a time for the whole file), or on PostgreSQL a transaction holding
``pg_advisory_xact_lock`` on a key derived from the dataset, so two processes checking and
charging one dataset run one after the other, and different datasets do not wait for each other.

The format is numbered (SQLite's ``PRAGMA user_version``, PostgreSQL's ``ledger_format`` table);
:func:`connect` brings an older ledger up to date in one transaction, so an upgrade interrupted
half-way leaves the old format intact.

* Format 1 named each budget by a hash of the whole table and kept no unit of protection.
* Format 2 added datasets' names and units, δ, and the spends' neighbour relation and
  mechanism; spends, totals, events and versions became append-only (triggers refuse to
  update or delete them).
* Format 3 keeps released copies as Parquet files beside the database instead of blobs in it:
  a ``releases`` row names its copy by ``content`` (the SHA-256 of the file). Rows written
  before keep their blob in ``payload`` with no ``content``, until :mod:`dpcore.release.stored`
  moves it out.
* Format 4 keeps who acted: every spend, total and event carries the signed-in person's
  ``subject`` and ``email`` (empty for lines written without sign-in, and for older lines).
* Format 5 keeps analysts' slices (:mod:`dpcore.budget.slices`): append-only ``grants`` and
  ``revocations``, each naming the owner who made it, and a spend made under a slice carries its
  ``grant_id`` (empty for the owner's spends, and for older lines).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from dpcore.budget.units import ADD_REMOVE, REPLACE_ONE
from dpcore.data_home import is_server_ledger, mask_password
from dpcore.exceptions import DataError
from dpcore.i18n import _

FORMAT = 5

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS budgets (
    dataset_id TEXT PRIMARY KEY,
    total TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id {serial},
    dataset_id TEXT NOT NULL REFERENCES budgets(dataset_id),
    label TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    composition TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    key TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL,
    payload {blob} NOT NULL,
    report TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (
    id {serial},
    dataset_id TEXT NOT NULL,
    total TEXT NOT NULL,
    total_delta TEXT NOT NULL,
    reason TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id {serial},
    dataset_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    sketch {blob} NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id {serial},
    dataset_id TEXT NOT NULL,
    event TEXT NOT NULL,
    detail TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS grants (
    id {serial},
    dataset_id TEXT NOT NULL,
    analyst_subject TEXT NOT NULL,
    analyst_email TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    created TEXT NOT NULL,
    subject TEXT NOT NULL DEFAULT '',
    email TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS revocations (
    id {serial},
    dataset_id TEXT NOT NULL,
    grant_id BIGINT NOT NULL,
    reason TEXT NOT NULL,
    created TEXT NOT NULL,
    subject TEXT NOT NULL DEFAULT '',
    email TEXT NOT NULL DEFAULT ''
);
"""
# Who acted (format 4): the signed-in person's OpenID Connect subject and e-mail, empty without sign-in.
_WHO = {"subject": "TEXT NOT NULL DEFAULT ''", "email": "TEXT NOT NULL DEFAULT ''"}
# Columns added since the first ledger format, with their defaults for old rows.
_ADDED_COLUMNS = {
    "budgets": {"name": "TEXT", "unit": f"TEXT NOT NULL DEFAULT '{ADD_REMOVE}'", "total_delta": "TEXT NOT NULL DEFAULT '0'"},
    "spends": {
        "delta": "TEXT NOT NULL DEFAULT '0'",
        "relation": f"TEXT NOT NULL DEFAULT '{ADD_REMOVE}'",
        "mechanism": "TEXT NOT NULL DEFAULT ''",
        "released": "TEXT NOT NULL DEFAULT ''",
        **_WHO,
        # The slice a spend was made under (format 5): empty for the owner's spends.
        "grant_id": "BIGINT",
    },
    "releases": {"content": "TEXT"},
    "totals": _WHO,
    "events": _WHO,
}
_APPEND_ONLY = ("spends", "totals", "events", "versions", "grants", "revocations")
APPEND_ONLY_MESSAGE = "the ledger's history is append-only"


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Any: ...


class LedgerConnection(Protocol):
    """What the accountant and the stored copies use of a ledger connection, on either database."""

    dialect: Dialect

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def begin(self, key: str) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class Dialect:
    """SQLite's SQL for what the two databases say differently; :class:`PostgresDialect` overrides it."""

    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    blob = "BLOB"

    def format(self, conn: LedgerConnection) -> int:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def set_format(self, conn: LedgerConnection) -> None:
        conn.execute(f"PRAGMA user_version = {FORMAT}")

    def columns(self, conn: LedgerConnection, table: str) -> set[str]:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}

    def append_only(self, conn: LedgerConnection, table: str) -> None:
        message = APPEND_ONLY_MESSAGE.replace("'", "''")
        for action in ("UPDATE", "DELETE"):
            conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )


class PostgresDialect(Dialect):
    serial = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    blob = "BYTEA"

    def format(self, conn: LedgerConnection) -> int:
        if conn.execute("SELECT to_regclass('ledger_format')").fetchone()[0] is None:
            return 0
        row = conn.execute("SELECT max(format) FROM ledger_format").fetchone()
        return int(row[0] or 0)

    def set_format(self, conn: LedgerConnection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS ledger_format (format INTEGER NOT NULL)")
        conn.execute("DELETE FROM ledger_format")
        conn.execute(f"INSERT INTO ledger_format (format) VALUES ({FORMAT})")

    def columns(self, conn: LedgerConnection, table: str) -> set[str]:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
            (table,),
        )
        return {row[0] for row in rows}

    def append_only(self, conn: LedgerConnection, table: str) -> None:
        message = APPEND_ONLY_MESSAGE.replace("'", "''")
        conn.execute(
            "CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$"
        )
        conn.execute(
            f"CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_append_only()"
        )
        # Row triggers do not fire on TRUNCATE; a statement trigger refuses it too.
        conn.execute(
            f"CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only()"
        )


class SQLiteConnection(sqlite3.Connection):
    """A SQLite ledger connection (autocommit outside :meth:`begin`)."""

    dialect = Dialect()

    def begin(self, key: str) -> None:
        """Start the one writing transaction the whole file allows at a time (``key`` needs no lock of its own)."""
        self.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        self.execute("ROLLBACK")


class PostgresConnection:
    """A PostgreSQL ledger connection: ``?`` placeholders as in SQLite, autocommit outside :meth:`begin`.

    Closing one hands it back to this process's few idle connections to the same server, so a
    charge (two short transactions) does not pay for two new server processes; one left inside a
    transaction or broken is really closed.
    """

    dialect: Dialect = PostgresDialect()

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self._conn: Any = _reused(url)
        if self._conn is not None:
            return
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=30)
        except psycopg.OperationalError as error:
            reason = mask_password(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__)
            raise DataError(
                _(
                    "The budget ledger at {ledger} could not be reached ({reason}). Check that the server is running "
                    "and that DPSTUDIO_LEDGER names it; nothing was read or charged."
                ).format(ledger=mask_password(url), reason=reason)
            ) from None

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        if parameters:
            sql = sql.replace("%", "%%").replace("?", "%s")
            return self._conn.execute(sql.encode(), parameters)
        return self._conn.execute(sql.encode())

    def begin(self, key: str) -> None:
        """Start a transaction that holds ``key``'s lock until it ends: writers of one dataset take turns."""
        self._conn.execute(b"BEGIN")
        self._conn.execute(b"SELECT pg_advisory_xact_lock(%s)", (lock_key(key),))

    def commit(self) -> None:
        self._conn.execute(b"COMMIT")

    def rollback(self) -> None:
        self._conn.execute(b"ROLLBACK")

    def close(self) -> None:
        from psycopg.pq import TransactionStatus

        conn, self._conn = self._conn, None
        if conn is None:
            return
        with _IDLE_LOCK:
            idle = _IDLE.setdefault((os.getpid(), self.url), [])
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE and len(idle) < _MAX_IDLE:
                idle.append(conn)
                return
        conn.close()


def _reused(url: str) -> Any:
    """An idle connection to ``url`` that still answers (a server restarted since drops them all), or None."""
    import psycopg

    while True:
        with _IDLE_LOCK:
            idle = _IDLE.get((os.getpid(), url))
            if not idle:
                return None
            conn = idle.pop()
        try:
            conn.execute(b"SELECT 1")
            return conn
        except psycopg.Error:
            conn.close()


#: Idle server connections by (process, URL): a forked child never reuses its parent's.
_IDLE: dict[tuple[int, str], list[Any]] = {}
_IDLE_LOCK = threading.Lock()
#: As many as a busy app process has sessions charging at once; the rest are closed.
_MAX_IDLE = 8


def lock_key(key: str) -> int:
    """A signed 64-bit advisory-lock key for ``key`` (a dataset id), the same in every process."""
    return int.from_bytes(hashlib.sha256(("dpstudio ledger " + key).encode()).digest()[:8], "big", signed=True)


#: The lock key of an upgrade (no dataset's id starts with a space).
UPGRADE_KEY = " upgrade"


def connect(location: str | os.PathLike[str]) -> LedgerConnection:
    """A connection to the ledger at ``location`` (a file, ``:memory:`` or a ``postgresql://`` URL) with its
    tables created or upgraded in place; close it when done."""
    conn: LedgerConnection
    if is_server_ledger(location):
        conn = PostgresConnection(str(location))
    else:
        conn = sqlite3.connect(location, timeout=30, isolation_level=None, factory=SQLiteConnection)
    try:
        if conn.dialect.format(conn) < FORMAT:
            _upgrade(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _upgrade(conn: LedgerConnection) -> None:
    """Create the tables, or bring an older ledger up to date, in one transaction (all or nothing)."""
    dialect = conn.dialect
    conn.begin(UPGRADE_KEY)
    try:
        if dialect.format(conn) >= FORMAT:  # another process got here first
            conn.commit()
            return
        for statement in _SCHEMA_SQL.format(serial=dialect.serial, blob=dialect.blob).split(";"):
            if statement.strip():
                conn.execute(statement)
        for table, columns in _ADDED_COLUMNS.items():
            present = dialect.columns(conn, table)
            for column, kind in columns.items():
                if column not in present:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    if (table, column) == ("spends", "relation"):
                        _relabel_first_format_copies(conn)
        for table in _APPEND_ONLY:
            dialect.append_only(conn, table)
        dialect.set_format(conn)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _relabel_first_format_copies(conn: LedgerConnection) -> None:
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

    def __init__(self, conn: LedgerConnection) -> None:
        self.conn = conn

    def __enter__(self) -> LedgerConnection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


class Borrowed(Owned):
    """The shared in-memory connection, left open."""

    def __exit__(self, *exc: object) -> None:
        return None
