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

This module holds the plain values and the reading of the two tables; the checks live in
:class:`~dpcore.budget.accountant.BudgetLedger`, inside its one spend path.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dpcore.budget.ledger_db import LedgerConnection
from dpcore.budget.signed_in import SignedIn
from dpcore.budget.units import convert

#: The two roles a person can hold on a dataset.
OWNER, ANALYST = "owner", "analyst"


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
        """Whether this grant is ``person``'s: their subject, or (a grant made by e-mail) their e-mail, case aside."""
        if person is None:
            return False
        if self.subject:
            return self.subject == person.subject
        return bool(self.email) and self.email.strip().lower() == person.email.strip().lower()


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
    """The subject who created the dataset's budget ('' when it was created without sign-in), None when it has none."""
    row = conn.execute("SELECT subject FROM totals WHERE dataset_id = ? ORDER BY id LIMIT 1", (dataset_id,)).fetchone()
    return None if row is None else str(row[0] or "")
