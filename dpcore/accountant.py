"""The privacy budget ledger, kept in a local SQLite database.

A dataset (identified by :func:`dpcore.release.table_fingerprint`, a hash of its contents) has one total ε. Every release from
it is recorded as a spend with a label. Sequential spends add; a parallel group, whose
parts see disjoint records, costs the largest of its parts. A spend that would pass the
total raises :class:`~dpcore.exceptions.BudgetExceededError` and records nothing.

ε arithmetic is decimal: each amount is rounded *up* to nine decimals (never down) and sums
are exact, so the ledger can neither under-report nor drift. Each spend is one
``BEGIN IMMEDIATE`` transaction, so two browser tabs spending at once cannot both pass the
check: SQLite serialises them and the second sees the first's spend.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pandas as pd

from dpcore.exceptions import BudgetExceededError
from dpcore.validation import check_epsilon, epsilon_decimal

LEDGER_ENV = "DPSTUDIO_LEDGER"

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
"""


def default_ledger_path() -> Path:
    """``$DPSTUDIO_LEDGER`` if set, else a per-user file under the XDG data directory."""
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "dpstudio" / "ledger.sqlite3"


def _decimal(epsilon: float) -> Decimal:
    return epsilon_decimal(check_epsilon(epsilon))


def _fmt(amount: Decimal) -> str:
    """A Decimal ε as plain text without trailing zeros (0.250000000 → 0.25)."""
    text = format(amount, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class Spend:
    label: str
    epsilon: float
    composition: str
    created: str


class BudgetLedger:
    """The budget of one dataset, persisted in SQLite.

    Parameters
    ----------
    dataset_id : str
        Fingerprint of the dataset (see :func:`dpcore.release.table_fingerprint`).
    total_epsilon : float, optional
        The total to create the budget with if it does not exist yet. An existing budget
        keeps its total: reloading never resets what was spent.
    path : str or Path, optional
        The database file; default :func:`default_ledger_path`.

    Examples
    --------
    >>> ledger = BudgetLedger("demo", total_epsilon=1.0, path=":memory:")
    >>> ledger.spend("tree", 0.25)
    >>> ledger.remaining
    0.75
    """

    def __init__(self, dataset_id: str, total_epsilon: float | None = None, path=None):
        self.dataset_id = str(dataset_id)
        self.path = str(path) if path is not None else str(default_ledger_path())
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._memory = None
        else:
            self._memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        with self._connect() as conn:
            conn.executescript(_SCHEMA_SQL)
            if total_epsilon is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO budgets VALUES (?, ?, ?)",
                    (self.dataset_id, str(epsilon_decimal(check_epsilon(total_epsilon, "total_epsilon"))), _now()),
                )

    def _connect(self) -> sqlite3.Connection:
        if self._memory is not None:
            return _Borrowed(self._memory)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        return _Owned(conn)

    # --- reading -------------------------------------------------------------------
    def exists(self) -> bool:
        with self._connect() as conn:
            return conn.execute("SELECT 1 FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone() is not None

    def _total(self, conn) -> Decimal:
        row = conn.execute("SELECT total FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone()
        if row is None:
            raise BudgetExceededError("No privacy budget is set for this dataset yet; set one on the Privacy page.")
        return Decimal(row[0])

    def _spent(self, conn) -> Decimal:
        rows = conn.execute("SELECT epsilon FROM spends WHERE dataset_id = ?", (self.dataset_id,)).fetchall()
        return sum((Decimal(r[0]) for r in rows), Decimal(0))

    @property
    def total(self) -> float:
        with self._connect() as conn:
            return float(self._total(conn))

    @property
    def spent(self) -> float:
        with self._connect() as conn:
            return float(self._spent(conn))

    @property
    def remaining(self) -> float:
        with self._connect() as conn:
            return float(self._total(conn) - self._spent(conn))

    def spends(self) -> list[Spend]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT label, epsilon, composition, created FROM spends WHERE dataset_id = ? ORDER BY id",
                (self.dataset_id,),
            ).fetchall()
        return [Spend(label, float(eps), comp, created) for label, eps, comp, created in rows]

    def to_frame(self) -> pd.DataFrame:
        """The ledger as a table: what was released, its ε, how it composed, and when."""
        frame = pd.DataFrame([s.__dict__ for s in self.spends()], columns=["label", "epsilon", "composition", "created"])
        return frame.rename(columns={"label": "what", "epsilon": "ε", "composition": "composition", "created": "when (UTC)"})

    # --- writing -------------------------------------------------------------------
    def set_total(self, total_epsilon: float) -> None:
        """Create the budget or change its total; never below what is already spent."""
        total = epsilon_decimal(check_epsilon(total_epsilon, "total_epsilon"))
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                spent = self._spent(conn)
                if total < spent:
                    raise BudgetExceededError(
                        f"The total ε cannot be set to {_fmt(total)} because {_fmt(spent)} has already been spent on this dataset."
                    )
                conn.execute(
                    "INSERT INTO budgets VALUES (?, ?, ?) ON CONFLICT(dataset_id) DO UPDATE SET total = excluded.total",
                    (self.dataset_id, str(total), _now()),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def spend(self, label: str, epsilon: float) -> None:
        """Record a sequential spend of ``epsilon``; raise and record nothing if it does not fit."""
        self._record(label, _decimal(epsilon), "sequential")

    def spend_parallel(self, label: str, epsilons) -> None:
        """Record a group of spends on disjoint records: it costs the largest of them."""
        amounts = [_decimal(e) for e in epsilons]
        if not amounts:
            raise ValueError("epsilons must name at least one spend")
        self._record(label, max(amounts), f"parallel over {len(amounts)} disjoint parts")

    def can_spend(self, epsilon: float) -> bool:
        with self._connect() as conn:
            return self._spent(conn) + _decimal(epsilon) <= self._total(conn)

    def _record(self, label: str, amount: Decimal, composition: str, release: tuple | None = None) -> None:
        """Check the spend fits and insert it (and a stored release) in one transaction."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                total, spent = self._total(conn), self._spent(conn)
                if spent + amount > total:
                    raise BudgetExceededError(
                        f"Spending ε = {_fmt(amount)} on '{label}' would exceed the budget: "
                        f"{_fmt(spent)} of {_fmt(total)} is already spent, {_fmt(total - spent)} is left."
                    )
                conn.execute(
                    "INSERT INTO spends (dataset_id, label, epsilon, composition, created) VALUES (?, ?, ?, ?, ?)",
                    (self.dataset_id, label, str(amount), composition, _now()),
                )
                if release is not None:
                    key, payload, report = release
                    conn.execute(
                        "INSERT OR REPLACE INTO releases VALUES (?, ?, ?, ?, ?)",
                        (key, self.dataset_id, sqlite3.Binary(payload), report, _now()),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # --- stored releases (so the same release is never re-randomised for free) --------
    def stored_release(self, key: str):
        with self._connect() as conn:
            row = conn.execute("SELECT payload, report FROM releases WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0], row[1])

    def spend_and_store_release(self, label: str, epsilon: float, key: str, payload: bytes, report: str) -> None:
        """Charge a release and store its output in one transaction (both or neither)."""
        self._record(label, _decimal(epsilon), "sequential", release=(key, payload, report))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


class _Owned:
    """A connection closed when the block ends."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        self.conn.close()


class _Borrowed(_Owned):
    """The shared in-memory connection, left open."""

    def __exit__(self, *exc):
        return None
