"""The outcome of a release: the copy's report, the owner's notes, and :class:`ReleaseResult`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.budget.accountant import UNITS
from dpcore.i18n import N_, _, integer
from dpcore.release.columns import Treatment
from dpcore.release.estimator import read_release
from dpcore.release.padding import Protection
from dpcore.release.report import build_report, report_markdown
from dpcore.validation import epsilon_decimal

#: The end of every note that counts the private table: for the owner, never for the buyer.
OWNER_ONLY = N_("(Owner only: a count of the private table.)")
REUSED_NOTE = N_("This table was released with this plan before: the same copy is handed out again, at no cost.")


@dataclass
class ReleaseResult:
    """The outcome of a release.

    Attributes
    ----------
    report : dict
        The machine-readable privacy report; give it to the buyer with the copy.
    markdown : str
        The same report for people.
    per_record_epsilon : float
        ε of every record (row) in this copy; a person with several rows has
        :attr:`per_person_epsilon`.
    epsilon_charged : float
        ε charged to the ledger by this call (0 when a stored copy was handed out again).
    reused : bool
        True when the stored copy of an earlier release was returned instead of a new one.
    seeded : bool
        True when a fixed seed made the noise reproducible: never sell such a copy.
    notes : list of OwnerNote
        Remarks for the owner only (they may count values of the private data).
    csv : bytes or None
        The released file, for in-memory releases.
    path : Path or None
        Where the released file was written, for file releases.
    dataset_id : str or None
        The ledger's id of the dataset (owner-only; never put it in a report).
    n_rows : int or None
        Rows in the new copy (the noisy row count when padded; None for a copy handed out again).
    """

    report: dict[str, Any]
    markdown: str
    per_record_epsilon: float
    epsilon_charged: float = 0.0
    reused: bool = False
    seeded: bool = False
    notes: Sequence[object] = field(default_factory=list)
    csv: bytes | None = None
    path: Path | None = None
    dataset_id: str | None = None
    n_rows: int | None = None

    @classmethod
    def made(cls, report: dict[str, Any], **fields: Any) -> ReleaseResult:
        """The result of a new copy with this report."""
        return cls(report, report_markdown(report), report["per_record_epsilon"], seeded=report["seeded"], **fields)

    @classmethod
    def handed_out_again(cls, report: dict[str, Any], **fields: Any) -> ReleaseResult:
        """The result of a stored copy handed out again (at no cost, with the report it was made with)."""
        return cls.made(report, reused=True, notes=[_(REUSED_NOTE)], **fields)

    @property
    def per_person_epsilon(self) -> float:
        """ε per person in the dataset's unit: a person's up to ``k`` rows, the noisy row count included when padded."""
        unit = self.report.get("unit_of_protection") or {}
        return float(unit.get("epsilon", self.per_record_epsilon))

    @property
    def table(self) -> pd.DataFrame:
        """The released table as the buyer reads it (read whole into memory: mind large files)."""
        source = self.csv if self.csv is not None else self.path
        if source is None:
            raise ValueError("this result holds neither the released file's bytes nor its path")
        return read_release(source, self.report)


def new_report(
    treatments: Sequence[Treatment],
    dropped: list[str],
    warnings: list[str],
    seeded: bool,
    protection: Protection,
    persons: bool = False,
) -> dict[str, Any]:
    """The report of a new copy: the plan's declarations and mechanisms, never the data.

    ``persons``: the schema names a privacy-unit column, so a person has up to
    ``protection.rows_per_person`` rows; the report then states ε per person (never the column).
    """
    per_record = float(sum((epsilon_decimal(t.epsilon) for t in treatments if t.epsilon > 0), Decimal(0)))
    if seeded:
        # English in the JSON report; the buyer's Markdown and the app translate it where they show it.
        warnings = [*warnings, N_("Reproducible seed: this copy is for tests only and must not be sold or shared.")]
    total = float(protection.row_epsilon(per_record))
    unit_of_persons = None
    if persons:
        unit_of_persons = {
            "rows_per_person": protection.rows_per_person,
            "per_row_epsilon": total,
            "per_person_epsilon": float(protection.person_epsilon(per_record)),
        }
        total = unit_of_persons["per_person_epsilon"]
    return build_report(
        [t.entry() for t in treatments],
        dropped=dropped,
        per_record_epsilon=per_record,
        warnings=warnings,
        seeded=seeded,
        release_id=uuid.uuid4().hex,
        created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        protection={
            "unit": protection.unit,
            "unit_sentence": UNITS[protection.unit],
            "epsilon": total,
            "row_count_epsilon": protection.count_epsilon,
            "padded": protection.padded,
        },
        persons=unit_of_persons,
    )


LEFT_OUT = N_("{left_out} rows were left out of the copy: at most {rows_per_person} rows of each person are kept.")
REPLACED = N_("{count} values of '{name}' were missing or not among the declared categories; each was replaced at random.")
NOT_DECLARED = N_("{count} values of '{name}' were missing or not among the declared categories.")
OUTSIDE = N_("{count} values of '{name}' were missing, not numbers, or outside the declared bounds.")


@dataclass(frozen=True)
class OwnerNote:
    """One owner-only note, put into words when it is shown.

    A release is kept (in the workspace, on the Export page) while its owner may switch the
    page's language, so the note keeps its sentence and its numbers, not a translation.
    """

    message: str
    count: int
    name: str = ""
    rows_per_person: int = 1

    def __str__(self) -> str:
        sentence = _(self.message).format(
            count=integer(self.count), left_out=integer(self.count), name=self.name, rows_per_person=self.rows_per_person
        )
        return sentence + " " + _(OWNER_ONLY)


def owner_notes(
    outside: dict[str, int], treatments: Iterable[Treatment], left_out: int = 0, rows_per_person: int = 1
) -> list[OwnerNote]:
    """How many values of each column were outside its declared domain, and how many rows the bound left out.

    Owner-only: these are counts of the private data, and every note says so (:data:`OWNER_ONLY`).
    """
    notes = [OwnerNote(LEFT_OUT, left_out, rows_per_person=rows_per_person)] if left_out else []
    for t in treatments:
        count = outside.get(t.name, 0)
        if count and t.mechanism in ("coin", "k-ary"):
            notes.append(OwnerNote(REPLACED if t.missing == "random" else NOT_DECLARED, count, t.name))
        elif count:
            notes.append(OwnerNote(OUTSIDE, count, t.name))
    return notes
