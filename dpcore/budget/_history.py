"""Private helper of :mod:`dpcore.budget.accountant`: a dataset's history as one table, oldest line first."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

import pandas as pd

from dpcore.budget.slices import Ledger, read_slices
from dpcore.budget.units import convert
from dpcore.exceptions import UnitOfProtectionError
from dpcore.validation import epsilon_decimal


class HistoryLedger(Ledger, Protocol):
    """A ledger that also lists its spends."""

    def spends(self) -> list[Any]: ...


def history_frame(ledger: HistoryLedger) -> pd.DataFrame:
    """Every total set, event, slice granted or revoked and spend, oldest first, each spend also in the dataset's unit,
    with who signed in to make it (a slice's line names the analyst in ``what`` and the owner in ``by``).

    ``by (e-mail)`` is the address the identity provider gave, ``by`` its subject; both empty
    for lines written without sign-in (and for every line of a ledger older than format 4).
    """
    with ledger.connection() as conn:
        unit = ledger._budget(conn)[2]
        totals = conn.execute(
            "SELECT created, total, total_delta, reason, subject, email FROM totals WHERE dataset_id = ? ORDER BY id",
            (ledger.dataset_id,),
        ).fetchall()
        events = conn.execute(
            "SELECT created, event, detail, subject, email FROM events WHERE dataset_id = ? ORDER BY id", (ledger.dataset_id,)
        ).fetchall()
        slices = read_slices(conn, ledger.dataset_id, unit)
        revocations = conn.execute(
            "SELECT created, grant_id, reason, subject, email FROM revocations WHERE dataset_id = ? ORDER BY id",
            (ledger.dataset_id,),
        ).fetchall()
        granters = conn.execute(
            "SELECT id, subject, email FROM grants WHERE dataset_id = ? ORDER BY id", (ledger.dataset_id,)
        ).fetchall()
    by_grant = {s.grant_id: s for s in slices}
    granted_by = {int(gid): (who, mail) for gid, who, mail in granters}
    rows = [
        {
            "when (UTC)": s.granted,
            "event": "slice granted",
            "what": f"to {s.analyst}",
            "ε": float(s.epsilon),
            "δ": float(s.delta),
            "ε in the dataset's unit": float(s.epsilon),
            "δ in the dataset's unit": float(s.delta),
            "by": granted_by[s.grant_id][0],
            "by (e-mail)": granted_by[s.grant_id][1],
        }
        for s in slices
    ]
    rows += [
        {
            "when (UTC)": c,
            "event": "slice revoked",
            "what": f"the slice of {by_grant[int(gid)].analyst} granted {by_grant[int(gid)].granted[:19]}: {reason}",
            "by": who,
            "by (e-mail)": mail,
        }
        for c, gid, reason, who, mail in revocations
    ]
    rows += [
        {"when (UTC)": c, "event": "total set", "what": reason, "ε": float(t), "δ": float(d), "by": who, "by (e-mail)": mail}
        for c, t, d, reason, who, mail in totals
    ]
    rows += [
        {"when (UTC)": c, "event": event, "what": detail, "by": who, "by (e-mail)": mail}
        for c, event, detail, who, mail in events
    ]
    for s in ledger.spends():
        row = {
            "when (UTC)": s.created,
            "event": "spend",
            "what": s.label,
            "ε": s.epsilon,
            "δ": s.delta,
            "neighbours": s.relation,
            "mechanism": s.mechanism,
            "released": s.released,
            "by": s.subject,
            "by (e-mail)": s.email,
        }
        try:
            ce, cd = convert(epsilon_decimal(s.epsilon), Decimal(str(s.delta)), s.relation, unit)
            row |= {"ε in the dataset's unit": float(ce), "δ in the dataset's unit": float(cd)}
        except UnitOfProtectionError:
            row |= {"ε in the dataset's unit": float("inf")}
        rows.append(row)
    columns = [
        "when (UTC)",
        "event",
        "what",
        "by (e-mail)",
        "by",
        "ε",
        "δ",
        "neighbours",
        "mechanism",
        "released",
        "ε in the dataset's unit",
        "δ in the dataset's unit",
    ]
    frame = pd.DataFrame(rows, columns=columns).sort_values("when (UTC)", kind="stable").reset_index(drop=True)
    frame["when (UTC)"] = frame["when (UTC)"].str[:19]  # sorted to the microsecond, shown to the second
    return frame
