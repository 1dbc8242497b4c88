"""The privacy budget ledger, kept in a local SQLite database or on a team's PostgreSQL server.

A **dataset** (a population of people, named by the owner; see :mod:`dpcore.budget.datasets`) has
one total (ε, δ) and one **unit of protection**, ``"add/remove"`` or ``"replace-one"``
(:mod:`dpcore.budget.units`). Every spend is recorded as it was made — (ε, δ, neighbour relation,
mechanism, what was released) — and converted to the dataset's unit before it is added
(:func:`~dpcore.budget.units.convert`: unchanged, doubled by group privacy from add/remove to
replace-one, refused the other way round).

Converted spends compose by **basic composition**: Σε and Σδ. A parallel group, whose parts
see disjoint records, costs the largest part. A spend that would pass either total raises
:class:`~dpcore.exceptions.BudgetExceededError` and records nothing.

**One way to spend.** Work on the data states what it will spend as a :class:`Charge` and runs
inside ``with ledger.charging(charge):`` — checked before the work (a refusal names the way
out), charged once when the block ends without an error, nothing charged if it raises; the
unit conversion and how people are counted happen inside. A trial or a test that should not
touch the owner's books uses :meth:`BudgetLedger.in_memory`.

Amounts are decimal, each rounded *up* to nine decimals, so the books neither under-report
nor drift. Each spend is one writing transaction that re-checks and records it (SQLite's
``BEGIN IMMEDIATE``, or PostgreSQL's advisory lock on the dataset: two tabs or two app processes
spending at once cannot both pass the check); what a spend pays for (a stored copy, see
:mod:`dpcore.release.stored`) can be written in that same transaction. Spends, totals and
events are **append-only**: database triggers refuse to update or delete them, so the history
shown to the owner is the history that happened. **Slices**: an owner may grant an analyst a
slice of the total (:meth:`BudgetLedger.grant`, :mod:`dpcore.budget.slices`); the same
check-and-charge then caps the analyst's spends by their slice and keeps every live slice's unspent
part out of everyone else's reach, so slices and the owner's spends compose into the total. Raising a total is a deliberate act
(``confirm_raise=True``) and is recorded. The two databases, their connections and upgrades are
in :mod:`dpcore.budget.ledger_db`; nothing here knows which one it talks to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path

import pandas as pd

from dpcore.budget import slices as budget_slices
from dpcore.budget._history import history_frame
from dpcore.budget.ledger_db import Borrowed, LedgerConnection, Owned, connect, now
from dpcore.budget.persons import ONE_ROW_EACH, counting
from dpcore.budget.signed_in import SignedIn
from dpcore.budget.slices import ANALYST, OWNER, Slice, holder, read_slices, refuse_past_slice, reserved
from dpcore.budget.units import ADD_REMOVE, REPLACE_ONE, UNITS, check_unit, convert, delta_decimal, fmt, total_decimal
from dpcore.data_home import LEDGER_ENV, default_ledger, default_ledger_path, is_server_ledger
from dpcore.exceptions import BudgetExceededError, BudgetRaiseError, UnitOfProtectionError
from dpcore.i18n import N_, _, amount
from dpcore.validation import check_delta, check_epsilon, epsilon_decimal

COUNTING_EVENT = "people counted as"
#: The history's column names stay English (its CSV); the Privacy page shows them translated (``_(name)``).
HISTORY_HEADERS = (
    N_("when (UTC)"),
    N_("event"),
    N_("what"),
    N_("neighbours"),
    N_("mechanism"),
    N_("released"),
    N_("ε in the dataset's unit"),
    N_("δ in the dataset's unit"),
    N_("by"),
    N_("by (e-mail)"),
    # and the events it records
    N_("total set"),
    N_("spend"),
    N_("unit changed"),
    N_("people counted as"),
    N_("slice granted"),
    N_("slice revoked"),
    N_("slice claimed"),
    N_("owner claimed"),
)

__all__ = [
    "ADD_REMOVE",
    "ANALYST",
    "DEFAULT_TOTAL_DELTA",
    "OWNER",
    "LEDGER_ENV",
    "REPLACE_ONE",
    "UNITS",
    "BudgetLedger",
    "Charge",
    "Payment",
    "Slice",
    "Spend",
    "check_unit",
    "connect",
    "convert",
    "default_ledger",
    "default_ledger_path",
    "is_server_ledger",
    "fmt",
]

DEFAULT_TOTAL_DELTA = 1e-5


@dataclass(frozen=True)
class Spend:
    label: str
    epsilon: float
    composition: str
    created: str
    delta: float = 0.0
    relation: str = ADD_REMOVE
    mechanism: str = ""
    released: str = ""
    subject: str = ""
    email: str = ""


@dataclass(frozen=True)
class Charge:
    """What one piece of work will spend, as :meth:`BudgetLedger.charging` checks and records it.

    Validated once, here: a bad ε, δ, relation or row count is refused before the ledger is read.

    Parameters
    ----------
    title : str
        What the work releases, the start of its ledger line ("Train DP tree"); kept in English,
        like the history's CSV.
    epsilon, delta : float
        The work's guarantee per person, under ``relation``; the ledger converts it to the
        dataset's unit (:func:`~dpcore.budget.units.convert`).
    relation : {"add/remove", "replace-one"}
        The neighbours the work's guarantee compares.
    privacy_unit : str, optional
        The declared privacy-unit column, and ``rows_per_person`` its bound ``k``: how the
        spend counts people (:func:`~dpcore.budget.persons.counting`), which every spend of a dataset
        must share. The ledger line says "per person counting up to k rows each" when k > 1.
    seeded : bool
        A demo seed made the work reproducible; the ledger line says so.
    mechanism, released : str
        How the work randomised, and what it released, for the history.
    action, undone : str
        The work's words in a refusal (``N_`` strings: "Training", "trained").
    alternative : str, optional
        An ``N_`` sentence naming a way out besides a smaller amount or a larger budget.
    """

    title: str
    epsilon: float
    delta: float = 0.0
    relation: str = ADD_REMOVE
    privacy_unit: str | None = None
    rows_per_person: int = 1
    seeded: bool = False
    mechanism: str = ""
    released: str = ""
    action: str = N_("This release")
    undone: str = N_("released")
    alternative: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_unit(self.relation)
        if isinstance(self.rows_per_person, bool) or not isinstance(self.rows_per_person, int) or self.rows_per_person < 1:
            raise ValueError(f"rows_per_person must be a whole number of at least 1, got {self.rows_per_person!r}")

    @property
    def people(self) -> str:
        """How the spend counts people, as the ledger records it."""
        return counting(self.privacy_unit, self.rows_per_person)

    @property
    def label(self) -> str:
        """The ledger line: what was released, whether a demo seed made it, and how people were counted."""
        label = self.title + (" (demo seed)" if self.seeded else "")
        per_person = self.privacy_unit is not None and self.rows_per_person > 1
        return label + (f", per person counting up to {self.rows_per_person} rows each" if per_person else "")


@dataclass
class Payment:
    """The open bill of a ``with ledger.charging(charge)`` block, which the work inside may complete.

    Attributes
    ----------
    charge : Charge
    delta : float
        The δ recorded: the charge's, unless the work sets what it turned out to spend (a
        model's δ is known once it is fitted). Checked again when the block ends.
    released : str
        What was released, as the history lists it: the charge's, unless the work says more
        (a synthetic copy's row count is drawn while it is made).
    alongside : callable, optional
        Called with the open connection after the spend is inserted and before it is
        committed: what it writes (the copy the spend paid for) is committed with the spend,
        or rolled back with it.
    """

    charge: Charge
    delta: float
    released: str
    alongside: Callable[[LedgerConnection], object] | None = None


class BudgetLedger:
    """The budget of one dataset, persisted in the ledger database (a SQLite file or a PostgreSQL server).

    Parameters
    ----------
    dataset_id : str
        The dataset's id (see :class:`dpcore.budget.datasets.Catalog`).
    total_epsilon : float, optional
        The total ε to create the budget with if it does not exist yet. An existing budget
        keeps its total: reloading never resets what was spent.
    path : str or Path, optional
        The database file, or a ``postgresql://`` URL; default :func:`default_ledger`.
    total_delta : float, optional
        The total δ for a new budget (default :data:`DEFAULT_TOTAL_DELTA`).
    unit : str, optional
        The unit of protection for a new budget (default ``"add/remove"``).
    name : str, optional
        The dataset's name for a new budget.
    signed_in : SignedIn, optional
        Who acts through this ledger (the app's sign-in): kept with every spend, total and event
        it writes. None where nobody signs in (the app on one machine, the command line).

    Examples
    --------
    >>> ledger = BudgetLedger.in_memory(total_epsilon=1.0)
    >>> with ledger.charging(Charge("Train a tree", 0.25)):
    ...     pass  # the work; an exception here charges nothing
    >>> ledger.remaining
    0.75
    """

    def __init__(
        self,
        dataset_id: str,
        total_epsilon: float | None = None,
        path: str | os.PathLike[str] | None = None,
        *,
        total_delta: float | None = None,
        unit: str | None = None,
        name: str | None = None,
        signed_in: SignedIn | None = None,
    ) -> None:
        self.dataset_id = str(dataset_id)
        self.signed_in = signed_in
        self.path = str(path) if path is not None else default_ledger()
        if is_server_ledger(self.path):
            self._memory = None
        elif self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._memory = None
        else:
            self._memory = connect(":memory:")
        if total_epsilon is not None:
            total = total_decimal(total_epsilon)
            delta = delta_decimal(DEFAULT_TOTAL_DELTA if total_delta is None else total_delta, up=False)
            with self._transaction() as conn:
                if conn.execute("SELECT 1 FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone() is None:
                    conn.execute(
                        "INSERT INTO budgets (dataset_id, total, created, name, unit, total_delta) VALUES (?, ?, ?, ?, ?, ?)",
                        (self.dataset_id, str(total), now(), name, check_unit(unit or ADD_REMOVE), str(delta)),
                    )
                    conn.execute(
                        "INSERT INTO totals (dataset_id, total, total_delta, reason, created, subject, email) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self.dataset_id, str(total), str(delta), "budget created", now(), *self._by()),
                    )

    @classmethod
    def in_memory(
        cls,
        total_epsilon: float,
        *,
        total_delta: float | None = None,
        unit: str | None = None,
        dataset_id: str = "in memory",
    ) -> BudgetLedger:
        """A budget kept for this process only: for tests, benchmarks and one-off work that is never released.

        It refuses and charges like any ledger, but forgets everything when the process ends, so
        nothing stops a second run from spending the same people again: a copy or model that
        leaves the owner's hands is charged to the dataset's ledger file.
        """
        return cls(dataset_id, total_epsilon, ":memory:", total_delta=total_delta, unit=unit)

    def _by(self) -> tuple[str, str]:
        """Who acts, as the history's ``subject`` and ``email`` columns keep it (empty when nobody signed in)."""
        return (self.signed_in.subject, self.signed_in.email) if self.signed_in is not None else ("", "")

    def connection(self) -> Owned:
        """The ledger's database connection, for a ``with`` block (closed after it, unless in memory)."""
        if self._memory is not None:
            return Borrowed(self._memory)
        return Owned(connect(self.path))

    @contextmanager
    def _transaction(self) -> Iterator[LedgerConnection]:
        """The connection inside one writing transaction that holds this dataset's turn: committed at the end,
        rolled back on any error."""
        with self.connection() as conn:
            conn.begin(self.dataset_id)
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    # --- reading -------------------------------------------------------------------
    def exists(self) -> bool:
        with self.connection() as conn:
            return conn.execute("SELECT 1 FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone() is not None

    def _budget(self, conn: LedgerConnection) -> tuple[Decimal, Decimal, str]:
        row = conn.execute("SELECT total, total_delta, unit FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone()
        if row is None:
            raise BudgetExceededError(_("No privacy budget is set for this dataset yet; set one on the Privacy page."))
        return Decimal(row[0]), Decimal(row[1]), row[2]

    def _spent(self, conn: LedgerConnection, unit: str | None = None) -> tuple[Decimal, Decimal]:
        unit = unit or self._budget(conn)[2]
        rows = conn.execute("SELECT epsilon, delta, relation FROM spends WHERE dataset_id = ?", (self.dataset_id,)).fetchall()
        eps, delta = Decimal(0), Decimal(0)
        for e, d, relation in rows:
            ce, cd = convert(Decimal(e), Decimal(d), relation, unit)
            eps, delta = eps + ce, delta + cd
        return eps, delta

    @property
    def unit(self) -> str:
        with self.connection() as conn:
            return self._budget(conn)[2]

    @property
    def name(self) -> str:
        with self.connection() as conn:
            row = conn.execute("SELECT name FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone()
        return row[0] if row and row[0] else self.dataset_id

    @property
    def total(self) -> float:
        with self.connection() as conn:
            return float(self._budget(conn)[0])

    @property
    def total_delta(self) -> float:
        with self.connection() as conn:
            return float(self._budget(conn)[1])

    @property
    def spent(self) -> float:
        """ε spent so far, every spend converted to the dataset's unit."""
        with self.connection() as conn:
            return float(self._spent(conn)[0])

    @property
    def spent_delta(self) -> float:
        with self.connection() as conn:
            return float(self._spent(conn)[1])

    @property
    def remaining(self) -> float:
        """The ε the person acting may still spend, in the dataset's unit.

        What is left of the total, less what other people's live slices hold back; for an
        analyst, at most what is left of their slice (0 once it is revoked).
        """
        with self.connection() as conn:
            return float(self._left(conn)[0])

    def _left(self, conn: LedgerConnection) -> tuple[Decimal, Decimal]:
        """(ε, δ) the person acting may still spend: the total's rest less others' reservations, capped by their own slice."""
        total, total_delta, unit = self._budget(conn)
        spent, spent_delta = self._spent(conn, unit)
        slices = read_slices(conn, self.dataset_id, unit)
        mine = holder(slices, self.signed_in)
        held, held_delta = reserved(slices, besides=mine)
        left, left_delta = total - spent - held, total_delta - spent_delta - held_delta
        if mine is not None:
            left, left_delta = min(left, mine.left), min(left_delta, mine.left_delta)
        return max(left, Decimal(0)), max(left_delta, Decimal(0))

    # --- roles and slices (dpcore.budget.slices) -------------------------------------
    def role(self) -> str | None:
        """The acting person's role on this dataset: :data:`OWNER`, :data:`ANALYST` (a live slice), or None."""
        return budget_slices.role(self)

    def slices(self) -> list[Slice]:
        """Every slice granted on this dataset, oldest first, with what was spent under it and whether it was revoked."""
        with self.connection() as conn:
            return read_slices(conn, self.dataset_id, self._budget(conn)[2])

    def my_slice(self) -> Slice | None:
        """The acting person's latest slice of this dataset (live or revoked), or None."""
        return holder(self.slices(), self.signed_in)

    def claim_ownership(self, allowed: Collection[str]) -> None:
        """Become the owner of a dataset created without sign-in (:func:`dpcore.budget.slices.claim_ownership`)."""
        budget_slices.claim_ownership(self, allowed)

    def grant(self, analyst: str, epsilon: float, delta: float = 0.0) -> Slice:
        """Grant ``analyst`` (an e-mail address or a subject) a slice of the total (:func:`dpcore.budget.slices.grant`)."""
        return budget_slices.grant(self, analyst, epsilon, delta)

    def revoke(self, grant_id: int, reason: str = "") -> None:
        """Revoke a slice: no further spends; what it spent stays spent (:func:`dpcore.budget.slices.revoke`)."""
        budget_slices.revoke(self, grant_id, reason)

    def cost(self, epsilon: float, relation: str = ADD_REMOVE) -> float:
        """What a release of ``epsilon`` under ``relation`` costs in the dataset's unit (ε only)."""
        return float(convert(epsilon_decimal(check_epsilon(epsilon)), Decimal(0), relation, self.unit)[0])

    def available(self, relation: str = ADD_REMOVE) -> float:
        """The largest ε a release under ``relation`` may still have: what is left, divided by its conversion factor."""
        return max(self.remaining, 0.0) / self.cost(1.0, relation)

    def available_delta(self, epsilon: float, relation: str = ADD_REMOVE) -> float:
        """The largest δ a release of ``epsilon`` under ``relation`` may still have: the δ left, divided by how
        much a δ grows when it is converted to the dataset's unit at that ε (1, or 1 + e^ε for add/remove
        → replace-one)."""
        probe = Decimal("1e-6")
        with self.connection() as conn:
            unit = self._budget(conn)[2]
            left = self._left(conn)[1]
        growth = convert(epsilon_decimal(check_epsilon(epsilon)), probe, relation, unit)[1] / probe
        return float(left / growth)

    def spends(self) -> list[Spend]:
        with self.connection() as conn:
            rows = conn.execute(
                "SELECT label, epsilon, composition, created, delta, relation, mechanism, released, subject, email FROM spends "
                "WHERE dataset_id = ? ORDER BY id",
                (self.dataset_id,),
            ).fetchall()
        return [Spend(r[0], float(r[1]), r[2], r[3], float(r[4]), r[5], r[6], r[7], r[8], r[9]) for r in rows]

    def to_frame(self) -> pd.DataFrame:
        """The spends as a table: what was released, its ε, how it composed, and when."""
        frame = pd.DataFrame([s.__dict__ for s in self.spends()], columns=["label", "epsilon", "composition", "created"])
        return frame.rename(columns={"label": "what", "epsilon": "ε", "created": "when (UTC)"})

    def history(self) -> pd.DataFrame:
        """Every total set, event, slice granted or revoked and spend, oldest first, with who made it (:mod:`._history`)."""
        return history_frame(self)

    def history_csv(self) -> bytes:
        return self.history().to_csv(index=False).encode("utf-8")

    def summary(self) -> str:
        """The composed (ε, δ) in the dataset's unit, in one sentence."""
        with self.connection() as conn:
            total, total_delta, unit = self._budget(conn)
            eps, delta = self._spent(conn, unit)
        return _(
            "(ε = {epsilon}, δ = {delta}) spent of (ε = {total}, δ = {total_delta}), per person, where {unit} — spends "
            "added by basic composition"
        ).format(
            epsilon=amount(fmt(eps)),
            delta=amount(fmt(delta)),
            total=amount(fmt(total)),
            total_delta=amount(fmt(total_delta)),
            unit=_(UNITS[unit]),
        )

    # --- writing -------------------------------------------------------------------
    def set_total(
        self, total_epsilon: float, total_delta: float | None = None, *, confirm_raise: bool = False, reason: str = ""
    ) -> None:
        """Create the budget or change its total; never below what is spent, never up without ``confirm_raise``."""
        total = total_decimal(total_epsilon)
        with self._transaction() as conn:
            row = conn.execute("SELECT total, total_delta, unit FROM budgets WHERE dataset_id = ?", (self.dataset_id,)).fetchone()
            old_delta = Decimal(row[1]) if row else delta_decimal(DEFAULT_TOTAL_DELTA, up=False)
            delta = old_delta if total_delta is None else delta_decimal(total_delta, up=False)
            if row is not None:
                budget_slices.must_own_budget(self, conn)
                spent, spent_delta = self._spent(conn, row[2])
                held, held_delta = reserved(read_slices(conn, self.dataset_id, row[2]))
                if total < spent + held or delta < spent_delta + held_delta:
                    if held or held_delta:
                        raise BudgetExceededError(
                            _(
                                "The total cannot be set to ε = {total}, δ = {delta}: ε = {spent}, δ = {spent_delta} is spent "
                                "and live slices hold ε = {held}, δ = {held_delta} more. Revoke a slice first, or keep a "
                                "larger total."
                            ).format(
                                total=fmt(total),
                                delta=fmt(delta),
                                spent=fmt(spent),
                                spent_delta=fmt(spent_delta),
                                held=fmt(held),
                                held_delta=fmt(held_delta),
                            )
                        )
                    raise BudgetExceededError(
                        _(
                            "The total cannot be set to ε = {total}, δ = {delta} because ε = {spent}, δ = {spent_delta} has "
                            "already been spent on this dataset."
                        ).format(total=fmt(total), delta=fmt(delta), spent=fmt(spent), spent_delta=fmt(spent_delta))
                    )
                if (total > Decimal(row[0]) or delta > old_delta) and not confirm_raise:
                    raise BudgetRaiseError(
                        _(
                            "Raising a dataset's total weakens the promise made to the people in it; "
                            "confirm it explicitly (the Privacy page's typed confirmation, or --raise-budget)."
                        )
                    )
                conn.execute(
                    "UPDATE budgets SET total = ?, total_delta = ? WHERE dataset_id = ?",
                    (str(total), str(delta), self.dataset_id),
                )
            else:
                conn.execute(
                    "INSERT INTO budgets (dataset_id, total, created, unit, total_delta) VALUES (?, ?, ?, ?, ?)",
                    (self.dataset_id, str(total), now(), ADD_REMOVE, str(delta)),
                )
            conn.execute(
                "INSERT INTO totals (dataset_id, total, total_delta, reason, created, subject, email) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.dataset_id, str(total), str(delta), reason or ("raised" if row else "budget created"), now(), *self._by()),
            )

    def set_unit(self, unit: str, *, confirm: bool = False) -> None:
        """Change the unit of protection; refused if a recorded spend cannot be converted or would not fit.

        Once something was spent, a change rewrites what was promised for it (an add/remove spend
        costs half as much when the unit becomes add/remove again), so, like a raise, it needs
        ``confirm=True``.
        """
        check_unit(unit)
        with self._transaction() as conn:
            total, total_delta, old = self._budget(conn)
            budget_slices.must_own_budget(self, conn)
            if (
                unit != old
                and not confirm
                and conn.execute("SELECT 1 FROM spends WHERE dataset_id = ? LIMIT 1", (self.dataset_id,)).fetchone()
            ):
                raise BudgetRaiseError(
                    _(
                        "Changing the unit of protection after a release changes what was promised for it; "
                        "confirm it explicitly (the Privacy page's typed confirmation)."
                    )
                )
            if unit != old:
                spent, spent_delta = self._spent(conn, unit)
                held, held_delta = reserved(read_slices(conn, self.dataset_id, unit))  # live slices keep their room
                spent, spent_delta = spent + held, spent_delta + held_delta
                if spent > total or spent_delta > total_delta:
                    raise BudgetExceededError(
                        _(
                            "In the new unit the spends so far come to ε = {spent}, δ = {spent_delta}, "
                            "more than the total ε = {total}, δ = {total_delta}."
                        ).format(spent=fmt(spent), spent_delta=fmt(spent_delta), total=fmt(total), total_delta=fmt(total_delta))
                    )
                conn.execute("UPDATE budgets SET unit = ? WHERE dataset_id = ?", (unit, self.dataset_id))
                conn.execute(
                    "INSERT INTO events (dataset_id, event, detail, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
                    (self.dataset_id, "unit changed", f"from '{old}' to '{unit}'", now(), *self._by()),
                )

    def counting(self) -> str:
        """How this dataset's spends count people (:func:`dpcore.budget.persons.counting`); one row each until declared."""
        with self.connection() as conn:
            return self._counting(conn)

    def _counting(self, conn: LedgerConnection) -> str:
        row = conn.execute(
            "SELECT detail FROM events WHERE dataset_id = ? AND event = ? ORDER BY id DESC LIMIT 1",
            (self.dataset_id, COUNTING_EVENT),
        ).fetchone()
        return str(row[0]) if row else ONE_ROW_EACH

    def count_people_as(self, counting: str) -> None:
        """Make sure the next spend counts people as every earlier spend did (or is the first), else refuse.

        Spends add up only if they count the same people the same way: ε per row and ε per person
        of up to k rows are different amounts of privacy for a person with several rows.
        :meth:`charging` checks it before and after the work; this is for work that reads the
        data before it knows whether it will be charged (a streamed copy may turn out to be
        stored already).
        """
        with self._transaction() as conn:
            budget_slices.must_have_role(self, conn, {"undone": _("released")})
            self._count_people_as(conn, counting)

    def _count_people_as(self, conn: LedgerConnection, counting: str) -> None:
        recorded = self._counting(conn)
        if counting == recorded:
            return
        if conn.execute("SELECT 1 FROM spends WHERE dataset_id = ? LIMIT 1", (self.dataset_id,)).fetchone():
            raise UnitOfProtectionError(
                _(
                    "This dataset's earlier spends count people as '{recorded}', but the declarations now count them as "
                    "'{counting}'. Adding the two would understate what a person has lost, so nothing was spent. Go back "
                    "to the earlier declaration on the Data page, or keep the new one as a separate dataset."
                ).format(recorded=recorded, counting=counting)
            )
        conn.execute(
            "INSERT INTO events (dataset_id, event, detail, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
            (self.dataset_id, COUNTING_EVENT, counting, now(), *self._by()),
        )

    def record_event(self, event: str, detail: str) -> None:
        """Add a line to the dataset's history; the owner's alone, and never a line that gives a role (slices.py writes those)."""
        if event in budget_slices.RESERVED_EVENTS:
            raise ValueError(f"{event!r} is written by dpcore.budget.slices only")
        with self._transaction() as conn:
            budget_slices.must_own_budget(self, conn)
            conn.execute(
                "INSERT INTO events (dataset_id, event, detail, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
                (self.dataset_id, event, detail, now(), *self._by()),
            )

    @contextmanager
    def charging(self, charge: Charge) -> Iterator[Payment]:
        """Check ``charge`` fits before the work in the block, and record it once when the block ends without an error.

        Every spend goes through here. Before the block: people are counted as in every
        earlier spend, the charge is converted to the dataset's unit, and it must fit in what is
        left, else a sentence naming the way out is raised and the block never runs. If the
        block raises, nothing is charged. When it ends, the spend is checked again and written
        in one writing transaction (with what ``payment.alongside`` writes), so two
        processes spending at once cannot both pass. Nothing made inside the block may leave it
        before the block ends (no ``yield`` there, except in a context manager that wraps the
        charge for its own caller): what left early would stay uncharged if the block then failed.

        Raises
        ------
        BudgetExceededError
            The charge does not fit (before the work), or no longer fits (after it).
        UnitOfProtectionError
            People are counted differently from earlier spends, or the charge's relation cannot
            be converted to the dataset's unit.
        """
        with self._transaction() as conn:
            self._fits(conn, charge)
        payment = Payment(charge, charge.delta, charge.released)
        yield payment
        # Never less δ than was checked: a fit that forgot to record its δ must not be charged 0.
        final = replace(charge, delta=max(charge.delta, payment.delta), released=payment.released)
        self._record(final, "sequential", payment.alongside)

    def spend(
        self,
        label: str,
        epsilon: float,
        *,
        delta: float = 0.0,
        relation: str = ADD_REMOVE,
        mechanism: str = "",
        released: str = "",
    ) -> None:
        """Record a sequential spend of one row per person with no work to wait for (:meth:`charging` with an empty block)."""
        with self.charging(Charge(label, epsilon, delta, relation, mechanism=mechanism, released=released)):
            pass

    def spend_parallel(self, label: str, epsilons: Iterable[float], *, relation: str = ADD_REMOVE, mechanism: str = "") -> None:
        """Record a group of spends on disjoint records: it costs the largest of them."""
        amounts = [check_epsilon(e) for e in epsilons]
        if not amounts:
            raise ValueError("epsilons must name at least one spend")
        charge = Charge(label, max(amounts), relation=relation, mechanism=mechanism)
        self._record(charge, f"parallel over {len(amounts)} disjoint parts")

    def _fits(self, conn: LedgerConnection, charge: Charge) -> Slice | None:
        """Inside a transaction: people are counted as before, and ``charge`` fits in what is left; the spender's slice.

        Else the sentence of the first thing that stops it, naming the way out. What is left is
        stated in the charge's own relation, the amount the owner can type. An analyst's charge
        must also fit in their live slice, and nobody's may reach into what other live slices
        hold (:mod:`dpcore.budget.slices`).
        """
        words = {"action": _(charge.action), "undone": _(charge.undone)}
        budget_slices.must_have_role(self, conn, words)
        self._count_people_as(conn, charge.people)
        total, total_delta, unit = self._budget(conn)
        spent, spent_delta = self._spent(conn, unit)
        delta = delta_decimal(charge.delta)
        epsilon, converted_delta = convert(epsilon_decimal(charge.epsilon), delta, charge.relation, unit)
        alternative = " " + _(charge.alternative) if charge.alternative else ""
        slices = read_slices(conn, self.dataset_id, unit)
        mine = holder(slices, self.signed_in)
        if mine is not None:
            budget_slices.refuse_two_live_slices(slices, self.signed_in, words)
            refuse_past_slice(mine, epsilon, converted_delta, charge.epsilon, words)
            budget_slices.claim(self, conn, mine)
        # Others' live slices hold back their unspent part: Σ spent + Σ reserved ≤ total stays true.
        held, held_delta = reserved(slices, besides=mine)
        spent, spent_delta = spent + held, spent_delta + held_delta
        if held and mine is None:
            alternative = " " + _("Analysts' slices hold ε = {held} of what is left.").format(held=fmt(held)) + alternative
        if mine is not None and (spent + epsilon > total or spent_delta + converted_delta > total_delta):
            raise BudgetExceededError(
                _(
                    "{action} at ε = {epsilon} does not fit in what is left of the dataset's whole budget, although it "
                    "fits in your slice. Ask the dataset's owner. Nothing was {undone} or charged."
                ).format(epsilon=f"{charge.epsilon:g}", **words)
            )
        if delta > 0 and total_delta == 0:
            raise BudgetExceededError(
                _(
                    "{action} needs a δ above 0, but this dataset's budget allows δ = 0 only (pure ε-DP). Give the dataset "
                    "a δ on the Privacy page.{alternative} Nothing was {undone} or charged."
                ).format(alternative=alternative, **words)
            )
        if spent + epsilon > total:
            left = max(total - spent, Decimal(0)) * epsilon_decimal(charge.epsilon) / epsilon
            raise BudgetExceededError(
                _(
                    "{action} at ε = {epsilon} does not fit in what is left of this dataset's budget (at most ε = {left}). "
                    "Choose a smaller ε, or raise the total on the Privacy page.{alternative} Nothing was {undone} or charged."
                ).format(
                    epsilon=f"{charge.epsilon:g}",
                    left=fmt(left.quantize(Decimal("1e-9"), ROUND_FLOOR)),
                    alternative=alternative,
                    **words,
                )
            )
        if spent_delta + converted_delta > total_delta:
            left = max(total_delta - spent_delta, Decimal(0)) * delta / converted_delta
            raise BudgetExceededError(
                _(
                    "δ = {delta} does not fit in what is left of this dataset's δ budget (at most δ = {left} at ε = "
                    "{epsilon}). Choose a smaller δ.{alternative} Nothing was {undone} or charged."
                ).format(
                    delta=f"{float(delta):g}",
                    left=f"{float(left):.3g}",
                    epsilon=f"{charge.epsilon:g}",
                    alternative=alternative,
                    **words,
                )
            )
        return mine

    def _record(
        self,
        charge: Charge,
        composition: str,
        alongside: Callable[[LedgerConnection], object] | None = None,
    ) -> None:
        """Check ``charge`` still fits and insert it (and what ``alongside`` writes) in one transaction."""
        with self._transaction() as conn:
            mine = self._fits(conn, charge)
            conn.execute(
                "INSERT INTO spends (dataset_id, label, epsilon, composition, created, delta, relation, mechanism, released, "
                "subject, email, grant_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.dataset_id,
                    charge.label,
                    str(epsilon_decimal(charge.epsilon)),
                    composition,
                    now(),
                    str(delta_decimal(charge.delta)),
                    charge.relation,
                    charge.mechanism,
                    charge.released,
                    *self._by(),
                    mine.grant_id if mine is not None else None,
                ),
            )
            if alongside is not None:
                alongside(conn)


#: A page's default ε spends this share of what is left, so the owner's next action is offered as much again:
#: k actions at their defaults leave 2⁻ᵏ of the budget instead of the first one taking it all. Chosen for tables in
#: general, wide ones and small remaining budgets alike: it reads nothing from the data, only the ledger.
SHARE_OF_LEFT = 0.5
#: Below this ε for one action, a noisy count is off by about ±28 people (Laplace, standard deviation √2/ε) and a
#: table of a few thousand rows learns mostly noise from it: the page says so before its controls.
LITTLE_EPSILON = 0.05
#: Less than this left and nothing more can be released (the pages' inputs go down to 0.001).
SPENT_EPSILON = 0.001


def default_epsilon(available: float, cap: float | None = None, share: float = SHARE_OF_LEFT) -> float:
    """The ε a page offers for one action: ``share`` of what is ``available``, at most ``cap``.

    Rounded down to two significant digits, so the offer reads plainly and never exceeds the share;
    0 when nothing is left. Every page's default ε goes through here (Train, Groups, the copies, private
    bounds), so each leaves room for the others.

    Examples
    --------
    >>> default_epsilon(3.5), default_epsilon(3.5, cap=1.0), default_epsilon(0.048)
    (1.7, 1.0, 0.024)
    """
    wanted = max(float(available), 0.0) * share
    if cap is not None:
        wanted = min(wanted, float(cap))
    if wanted <= 0:
        return 0.0
    step = Decimal(1).scaleb(int(Decimal(repr(wanted)).adjusted()) - 1)
    return float(Decimal(repr(wanted)).quantize(step, rounding=ROUND_FLOOR))
