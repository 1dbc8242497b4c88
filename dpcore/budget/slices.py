"""Owners and analysts of a dataset: slices of its budget, kept in the ledger beside the spends they cap.

The person who created a dataset (its ``totals`` line "budget created" names them) is its
**owner**; a dataset created without sign-in is everyone's (the app on one machine). An owner
**grants** an analyst — named by e-mail, or by the identity provider's subject — a **slice**
(ε_a, δ_a) of the dataset's total, in the dataset's unit of protection, and may **revoke** it.
Grants and revocations are append-only lines of the ledger (format 5), each naming who made it.

A slice is a cap on a subset of the spends, never a second budget: basic composition over every
spend stays the only arithmetic. Each spend made under a slice carries its ``grant_id``, and the
ledger keeps, in the same serialised transaction as every check-and-charge
(:meth:`~dpcore.budget.accountant.BudgetLedger.charging`),

    Σ spent + Σ_{live slices a} max(0, ε_a − spent_a) ≤ total  (and the same for δ),

so an owner can never promise more than exists, an analyst spends only inside their slice, and the
owner's own spends use what no live slice reserves. Revoking a slice stops its further spends at
once; what it spent stays spent (the releases are out), and its unspent part returns to the owner.

This module holds the plain values, the reading of the two tables and the owner's acts
(:class:`~dpcore.budget.accountant.BudgetLedger` offers them as methods); the check of a spend
against a slice runs inside the ledger's one spend path, ``BudgetLedger._fits``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Protocol

from dpcore.budget.ledger_db import LedgerConnection, now
from dpcore.budget.signed_in import SignedIn
from dpcore.budget.units import convert, delta_decimal, fmt
from dpcore.exceptions import BudgetExceededError
from dpcore.i18n import _
from dpcore.validation import check_epsilon, epsilon_decimal


class Ledger(Protocol):
    """What the functions below use of a :class:`~dpcore.budget.accountant.BudgetLedger` (which offers them as methods)."""

    dataset_id: str
    signed_in: SignedIn | None

    def connection(self) -> Any: ...

    def _transaction(self) -> Any: ...

    def _budget(self, conn: LedgerConnection) -> tuple[Decimal, Decimal, str]: ...

    def _spent(self, conn: LedgerConnection, unit: str | None = None) -> tuple[Decimal, Decimal]: ...

    def _by(self) -> tuple[str, str]: ...


#: The two roles a person can hold on a dataset.
OWNER, ANALYST = "owner", "analyst"
#: The history line binding a grant made by e-mail to the subject who first spent under it (detail: "grant <id>").
CLAIMED_EVENT = "slice claimed"
#: The history line making its subject the owner of a dataset created without sign-in; the first one holds.
OWNER_CLAIMED_EVENT = "owner claimed"
#: History lines only this module writes, each inside the check that allows it (never through ``record_event``).
RESERVED_EVENTS = (CLAIMED_EVENT, OWNER_CLAIMED_EVENT)


@dataclass(frozen=True)
class Slice:
    """One grant of a slice of a dataset's budget to an analyst, and what was spent under it.

    Attributes
    ----------
    grant_id : int
        The grant's line in the ledger; spends made under the slice carry it.
    email, subject : str
        The analyst, as the owner named them (either may be empty, not both).
    epsilon, delta : Decimal
        The slice, in the dataset's unit of protection.
    spent, spent_delta : Decimal
        What the analyst spent under this grant, converted to the dataset's unit.
    granted : str
        When (UTC).
    granted_by : str
        The owner's e-mail (or subject) who granted it.
    revoked : str
        When it was revoked (UTC), empty while it is live.
    claimed_by : str
        For a grant by e-mail: the subject of the person who first spent under it (a "slice
        claimed" line of the history), after which it is theirs alone, whoever holds the address.
    """

    grant_id: int
    email: str
    subject: str
    epsilon: Decimal
    delta: Decimal
    spent: Decimal
    spent_delta: Decimal
    granted: str
    granted_by: str
    revoked: str = ""
    claimed_by: str = ""

    @property
    def live(self) -> bool:
        return not self.revoked

    @property
    def left(self) -> Decimal:
        """The ε the analyst may still spend (0 once revoked)."""
        return max(self.epsilon - self.spent, Decimal(0)) if self.live else Decimal(0)

    @property
    def left_delta(self) -> Decimal:
        return max(self.delta - self.spent_delta, Decimal(0)) if self.live else Decimal(0)

    @property
    def analyst(self) -> str:
        """The analyst as a reader knows them: their e-mail, else their subject."""
        return self.email or self.subject

    def names(self, person: SignedIn | None) -> bool:
        """Whether this grant is ``person``'s: their subject; or, for a grant made by e-mail, the subject that claimed
        it, else (unclaimed) their e-mail, case aside, when their provider verified it."""
        if person is None:
            return False
        if self.subject:
            return self.subject == person.subject
        if self.claimed_by:
            return self.claimed_by == person.subject
        return person.email_verified and bool(self.email) and self.email.strip().lower() == person.email.strip().lower()

    def same_analyst(self, subject: str, email: str) -> bool:
        """Whether a grant to ``subject`` or ``email`` names the person this one names (to keep one live slice each)."""
        if subject:
            return subject in (self.subject, self.claimed_by)
        return bool(self.email) and self.email.strip().lower() == email.strip().lower()


def read_slices(conn: LedgerConnection, dataset_id: str, unit: str) -> list[Slice]:
    """Every grant of the dataset, oldest first, with what was spent under it (in ``unit``) and whether it was revoked."""
    grants = conn.execute(
        "SELECT g.id, g.analyst_email, g.analyst_subject, g.epsilon, g.delta, g.created, g.email, g.subject, "
        "(SELECT MIN(r.created) FROM revocations r WHERE r.grant_id = g.id) FROM grants g WHERE g.dataset_id = ? ORDER BY g.id",
        (dataset_id,),
    ).fetchall()
    if not grants:
        return []
    spent: dict[int, tuple[Decimal, Decimal]] = {}
    rows = conn.execute(
        "SELECT grant_id, epsilon, delta, relation FROM spends WHERE dataset_id = ? AND grant_id IS NOT NULL", (dataset_id,)
    ).fetchall()
    for grant_id, epsilon, delta, relation in rows:
        ce, cd = convert(Decimal(epsilon), Decimal(delta), relation, unit)
        before = spent.get(int(grant_id), (Decimal(0), Decimal(0)))
        spent[int(grant_id)] = (before[0] + ce, before[1] + cd)
    claimed: dict[int, str] = {}
    for detail, subject in conn.execute(
        "SELECT detail, subject FROM events WHERE dataset_id = ? AND event = ? ORDER BY id", (dataset_id, CLAIMED_EVENT)
    ).fetchall():
        number = str(detail).removeprefix("grant ")
        if number.isdigit():
            claimed.setdefault(int(number), str(subject))  # the first claim holds: the lines are append-only
    return [
        Slice(
            int(gid),
            email,
            subject,
            Decimal(eps),
            Decimal(delta),
            *spent.get(int(gid), (Decimal(0), Decimal(0))),
            granted=created,
            granted_by=by_email or by_subject,
            revoked=revoked or "",
            claimed_by=claimed.get(int(gid), ""),
        )
        for gid, email, subject, eps, delta, created, by_email, by_subject, revoked in grants
    ]


def holder(slices: list[Slice], person: SignedIn | None) -> Slice | None:
    """``person``'s latest grant on the dataset (live or revoked), or None when they hold none."""
    return next((s for s in reversed(slices) if s.names(person)), None)


def reserved(slices: list[Slice], *, besides: Slice | None = None) -> tuple[Decimal, Decimal]:
    """What the live slices (other than ``besides``) hold back from everyone else: their unspent (ε, δ)."""
    others = [s for s in slices if s.live and (besides is None or s.grant_id != besides.grant_id)]
    return sum((s.left for s in others), Decimal(0)), sum((s.left_delta for s in others), Decimal(0))


def creator(conn: LedgerConnection, dataset_id: str) -> str | None:
    """The dataset's owner: the subject who created its budget, or who claimed it when it was created without sign-in
    (:func:`claim_ownership`); '' when nobody did, None when the dataset has no budget."""
    row = conn.execute("SELECT subject FROM totals WHERE dataset_id = ? ORDER BY id LIMIT 1", (dataset_id,)).fetchone()
    if row is None:
        return None
    if row[0]:
        return str(row[0])
    claimed = conn.execute(
        "SELECT subject FROM events WHERE dataset_id = ? AND event = ? ORDER BY id LIMIT 1", (dataset_id, OWNER_CLAIMED_EVENT)
    ).fetchone()
    return str(claimed[0] or "") if claimed is not None else ""


def unowned(ledger: Ledger) -> bool:
    """Whether the dataset was created without sign-in and nobody has claimed it: everyone's, where people sign in."""
    with ledger.connection() as conn:
        return creator(conn, ledger.dataset_id) == ""


def may_claim(person: SignedIn | None, allowed: Collection[str]) -> bool:
    """Whether the server's list ``allowed`` (e-mail addresses, or issuer-qualified subjects) names ``person``.

    An e-mail names them only when their provider verified it, as for a grant.
    """
    if person is None:
        return False
    names = {" ".join(str(name).split()) for name in allowed} - {""}
    email = person.email.strip().casefold()
    return person.subject in names or (person.email_verified and bool(email) and email in {n.casefold() for n in names})


def claim_ownership(ledger: Ledger, allowed: Collection[str]) -> None:
    """Make the signed-in person the owner of a dataset created without sign-in, when the server names them.

    Until then such a dataset is everyone's (:func:`role`); the claim is one append-only line of
    its history (:data:`OWNER_CLAIMED_EVENT`, naming the claimer), written in the dataset's
    serialised transaction only while nobody owns it, so two people claiming at once leave one
    owner. Slices granted before stay live; the claimer owns them from then on.

    Raises
    ------
    BudgetExceededError
        Nobody signed in, the server does not name the person, or the dataset already has an owner.
    """
    if not may_claim(ledger.signed_in, allowed):
        raise BudgetExceededError(
            _(
                "This server does not name you among the people who may claim datasets created before sign-in: ask "
                "its administrator. Nothing was claimed."
            )
        )
    with ledger._transaction() as conn:
        if creator(conn, ledger.dataset_id) != "":
            raise BudgetExceededError(_("This dataset already has an owner: nothing was claimed."))
        conn.execute(
            "INSERT INTO events (dataset_id, event, detail, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
            (
                ledger.dataset_id,
                OWNER_CLAIMED_EVENT,
                "created before sign-in; claimed by a person the server names",
                now(),
                *ledger._by(),
            ),
        )


def role(ledger: Ledger) -> str | None:
    """The acting person's role on this dataset: :data:`OWNER`, :data:`ANALYST` (a live slice), or None.

    The owner is whoever created the dataset (or claimed it, :func:`claim_ownership`); a dataset
    created without sign-in and not claimed, and every dataset where nobody signs in, is everyone's — except a person granted a slice of it, who is
    its analyst while the slice is live. A person whose slice was revoked, or who holds none on
    another's dataset, is neither.
    """
    with ledger.connection() as conn:
        return _role(ledger, conn)


def _role(ledger: Ledger, conn: LedgerConnection) -> str | None:
    person = ledger.signed_in
    made_by = creator(conn, ledger.dataset_id)
    if person is None or made_by == person.subject:
        return OWNER
    mine = holder(read_slices(conn, ledger.dataset_id, ledger._budget(conn)[2]), person)
    if mine is not None:
        return ANALYST if mine.live else None
    return OWNER if made_by in (None, "") else None


def must_own(ledger: Ledger, conn: LedgerConnection, refusal: str | None = None) -> None:
    """Refuse, with ``refusal`` (else the sentence about slices), unless the person acting owns the dataset.

    Every act that changes what was promised or who may spend it — setting the total or the unit,
    recording an event in the history, granting, revoking — is the owner's alone: an analyst spends
    inside a slice, and a signed-in person with no role on the dataset does nothing to it.
    """
    if _role(ledger, conn) != OWNER:
        raise BudgetExceededError(
            refusal or _("Only the dataset's owner can grant or revoke slices of its budget; ask the owner.")
        )


def must_own_budget(ledger: Ledger, conn: LedgerConnection) -> None:
    """:func:`must_own` for the total, the unit and the history."""
    must_own(ledger, conn, _("Only the dataset's owner can change its budget, its unit or its history; ask the owner."))


def must_have_role(ledger: Ledger, conn: LedgerConnection, words: dict[str, str]) -> None:
    """A signed-in person who is neither the owner nor an analyst of the dataset spends nothing of it."""
    if (
        ledger.signed_in is not None
        and _role(ledger, conn) is None
        and holder(read_slices(conn, ledger.dataset_id, ledger._budget(conn)[2]), ledger.signed_in) is None
    ):
        raise BudgetExceededError(
            _(
                "You hold no slice of this dataset's budget, so nothing can be released from it: ask the dataset's "
                "owner for a slice. Nothing was {undone} or charged."
            ).format(**words)
        )


def grant(ledger: Ledger, analyst: str, epsilon: float, delta: float = 0.0) -> Slice:
    """Grant ``analyst`` (an e-mail address, or a provider's subject) a slice (ε, δ) of the total, in the dataset's unit.

    Only the owner may grant. The slice must fit in what no spend and no other live slice
    already holds: Σ spent + Σ unspent parts of live slices + this slice ≤ the total. A person
    holds at most one live slice per dataset (a change is a revocation and a new grant).

    Raises
    ------
    BudgetExceededError
        Not the owner, the slice does not fit, or the analyst already holds a live slice.
    ValueError
        No analyst named, or a bad ε or δ.
    """
    name = " ".join(str(analyst).split())
    if not name:
        raise ValueError("name the analyst by e-mail address or subject")
    slice_epsilon = epsilon_decimal(check_epsilon(epsilon))
    slice_delta = delta_decimal(delta)
    email, subject = (name, "") if "@" in name else ("", name)
    with ledger._transaction() as conn:
        must_own(ledger, conn)
        total, total_delta, unit = ledger._budget(conn)
        me = ledger.signed_in
        if me is not None and (subject == me.subject or (email and email.lower() == me.email.strip().lower())):
            raise BudgetExceededError(_("You own this dataset: your own spends need no slice."))
        slices = read_slices(conn, ledger.dataset_id, unit)
        if any(s.live and s.same_analyst(subject, email) for s in slices):
            raise BudgetExceededError(
                _("{analyst} already holds a slice of this dataset's budget: revoke it first, then grant the new one.").format(
                    analyst=name
                )
            )
        spent, spent_delta = ledger._spent(conn, unit)
        held, held_delta = reserved(slices)
        free, free_delta = total - spent - held, total_delta - spent_delta - held_delta
        if slice_epsilon > free or slice_delta > free_delta:
            raise BudgetExceededError(
                _(
                    "A slice of ε = {epsilon}, δ = {delta} does not fit: what no spend or other slice holds is "
                    "ε = {free}, δ = {free_delta}. Grant a smaller slice, revoke another, or raise the total."
                ).format(
                    epsilon=fmt(slice_epsilon),
                    delta=fmt(slice_delta),
                    free=fmt(max(free, Decimal(0))),
                    free_delta=fmt(max(free_delta, Decimal(0))),
                )
            )
        conn.execute(
            "INSERT INTO grants (dataset_id, analyst_subject, analyst_email, epsilon, delta, created, subject, email) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (ledger.dataset_id, subject, email, str(slice_epsilon), str(slice_delta), now(), *ledger._by()),
        )
        return read_slices(conn, ledger.dataset_id, unit)[-1]


def revoke(ledger: Ledger, grant_id: int, reason: str = "") -> None:
    """Revoke a slice: its further spends are refused at once; what it spent stays spent, its unspent part returns.

    Only the owner may revoke; a slice is revoked once.
    """
    with ledger._transaction() as conn:
        must_own(ledger, conn)
        unit = ledger._budget(conn)[2]
        found = next((s for s in read_slices(conn, ledger.dataset_id, unit) if s.grant_id == int(grant_id)), None)
        if found is None or not found.live:
            raise BudgetExceededError(_("That slice is not a live slice of this dataset: nothing was revoked."))
        conn.execute(
            "INSERT INTO revocations (dataset_id, grant_id, reason, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
            (ledger.dataset_id, found.grant_id, reason or "revoked by the owner", now(), *ledger._by()),
        )


def claim(ledger: Ledger, conn: LedgerConnection, mine: Slice) -> None:
    """Inside the spend's transaction: bind an unclaimed grant made by e-mail to the subject spending under it.

    From then on the grant names that subject only, so an address that changes hands (a recycled
    mailbox, a provider that lets a user set any e-mail) does not pass the slice to its next holder.
    """
    if mine.live and not mine.subject and not mine.claimed_by and ledger.signed_in is not None:
        conn.execute(
            "INSERT INTO events (dataset_id, event, detail, created, subject, email) VALUES (?, ?, ?, ?, ?, ?)",
            (ledger.dataset_id, CLAIMED_EVENT, f"grant {mine.grant_id}", now(), *ledger._by()),
        )


def refuse_two_live_slices(slices: list[Slice], person: SignedIn | None, words: dict[str, str]) -> None:
    """A person named by two live grants (one by e-mail, one by subject, made before either was used) spends under
    neither until the owner revokes one: each slice would otherwise hold back budget the other could not see."""
    if sum(1 for s in slices if s.live and s.names(person)) > 1:
        raise BudgetExceededError(
            _(
                "You hold two live slices of this dataset's budget (one granted by e-mail, one by subject): ask the "
                "dataset's owner to revoke one. Nothing was {undone} or charged."
            ).format(**words)
        )


def refuse_past_slice(mine: Slice, epsilon: Decimal, delta: Decimal, asked: float, words: dict[str, str]) -> None:
    """An analyst's charge (``asked``, converted to the dataset's unit: ``epsilon``, ``delta``) must fit in their live
    slice, else the sentence naming the owner."""
    if not mine.live:
        raise BudgetExceededError(
            _(
                "The dataset's owner has revoked your slice of its budget, so nothing more can be released from it. "
                "Ask the owner for a new slice. Nothing was {undone} or charged."
            ).format(**words)
        )
    if epsilon > mine.left or delta > mine.left_delta:
        left = mine.left * epsilon_decimal(asked) / epsilon
        raise BudgetExceededError(
            _(
                "{action} at ε = {epsilon} does not fit in what is left of your slice of this dataset's budget "
                "(at most ε = {left}, δ = {left_delta}). Choose a smaller ε, or ask the dataset's owner for a larger "
                "slice. Nothing was {undone} or charged."
            ).format(
                epsilon=f"{asked:g}",
                left=fmt(left.quantize(Decimal("1e-9"), ROUND_FLOOR)),
                left_delta=fmt(mine.left_delta),
                **words,
            )
        )
