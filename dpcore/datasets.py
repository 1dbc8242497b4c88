"""Named datasets: the population of people a budget protects, recognised from file to file.

A budget belongs to a **dataset** that the owner names ("Clinic patients 2025"), not to the
bytes of one file. Every table opened is a *version* of a dataset: its overlap sketch
(:mod:`dpcore.identity`) is kept in the ledger, and a new table whose rows substantially
overlap a known version (:data:`ATTACH_OVERLAP`) is attached to that dataset by default —
a re-saved, reordered, renamed or extended file spends the same budget. Treating overlapping
people as a *separate* dataset is an explicit act with a stated reason, recorded in the
dataset's history (:meth:`Catalog.open_table` with ``separate=True``).

Ledgers written before datasets existed named each budget by a hash of the whole table;
such a table is still found by that hash, so an upgrade never hands out a fresh budget.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.accountant import ADD_REMOVE, BudgetLedger, check_unit, connect, default_ledger_path
from dpcore.exceptions import DataError
from dpcore.fingerprint import Fingerprint
from dpcore.i18n import _, percent
from dpcore.identity import SketchBuilder, TableSketch, VersionFingerprint, overlaps

#: The share of people in common from which a table is taken to be a version of a known dataset.
#: Low on purpose: attaching wrongly only makes overlapping people share one budget (safe), while
#: missing a match hands them a second one. Two disjoint halves of Adult score 0.13 (identical
#: census records of different people), a re-save 1.0, a 30 % extract of the same people 1.0.
ATTACH_OVERLAP = 0.25
DEFAULT_TOTAL_EPSILON = 1.0

Chunks = Callable[[], Iterable[pd.DataFrame]]


@dataclass(frozen=True)
class DatasetInfo:
    dataset_id: str
    name: str
    unit: str
    created: str


@dataclass(frozen=True)
class Identification:
    """Which dataset a table was opened as, and why (for the page or the command line to say).

    ``overlap`` is the estimated share of people in common with ``matched`` (the best-matching
    known dataset, or None); ``created`` is True when a new dataset was made for the table.
    """

    dataset: DatasetInfo
    created: bool
    overlap: float = 0.0
    matched: DatasetInfo | None = None
    legacy: bool = False

    @property
    def sentence(self) -> str:
        name = self.dataset.name
        if self.legacy:
            return _("This table was used before under the earlier ledger format; it keeps its budget as dataset '{name}'.").format(
                name=name)
        if not self.created:
            return _("This table shares about {share} of its rows with your dataset '{name}' (measured on your "
                     "raw rows, owner only), so it uses that dataset's budget: the people in it are (at least partly) the "
                     "same people.").format(share=percent(self.overlap), name=name)
        if self.matched is not None:
            return _("Recorded as a separate dataset '{name}', although it shares about {share} of its rows "
                     "with '{other}' (owner only).").format(name=name, share=percent(self.overlap), other=self.matched.name)
        return _("A new dataset '{name}' was created for this table, with a budget of its own.").format(name=name)


class Catalog:
    """The datasets in one ledger file.

    Parameters
    ----------
    path : str or Path, optional
        The ledger database (default :func:`~dpcore.accountant.default_ledger_path`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = str(path) if path is not None else str(default_ledger_path())
        if self.path == ":memory:":
            raise ValueError("a catalog needs a ledger file, not ':memory:'")
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)

    def _conn(self) -> sqlite3.Connection:
        return connect(self.path)

    def datasets(self) -> list[DatasetInfo]:
        conn = self._conn()
        try:
            rows = conn.execute("SELECT dataset_id, COALESCE(name, dataset_id), unit, created FROM budgets ORDER BY created").fetchall()
        finally:
            conn.close()
        return [DatasetInfo(*row) for row in rows]

    def find(self, name: str) -> DatasetInfo | None:
        """The dataset called ``name`` (or with that id)."""
        return next((d for d in self.datasets() if name in (d.name, d.dataset_id)), None)

    def ledger(self, dataset: DatasetInfo | str) -> BudgetLedger:
        return BudgetLedger(dataset.dataset_id if isinstance(dataset, DatasetInfo) else dataset, path=self.path)

    def create(self, name: str, *, total_epsilon: float = DEFAULT_TOTAL_EPSILON, total_delta: float | None = None,
               unit: str = ADD_REMOVE, reason: str = "") -> DatasetInfo:
        """A new dataset with a budget of its own; ``name`` must not be taken."""
        name = " ".join(str(name).split())
        if not name:
            raise DataError(_("Give the dataset a name."))
        if self.find(name) is not None:
            raise DataError(_("A dataset called '{name}' already exists: choose another name.").format(name=name))
        dataset_id = "ds-" + uuid.uuid4().hex[:16]
        ledger = BudgetLedger(dataset_id, total_epsilon, self.path, total_delta=total_delta, unit=check_unit(unit), name=name)
        if reason:
            ledger.record_event("created as a separate dataset", reason)
        return self._known(dataset_id)

    def _known(self, dataset_id: str) -> DatasetInfo:
        """The dataset ``dataset_id``, which the ledger holds a budget for (it was created, or has versions)."""
        found = self.find(dataset_id)
        if found is None:
            raise DataError(_("The budget ledger names a dataset it holds no budget for: the ledger file may be damaged."))
        return found

    def _versions(self) -> list[tuple[str, TableSketch]]:
        conn = self._conn()
        try:
            rows = conn.execute("SELECT dataset_id, sketch FROM versions ORDER BY id DESC").fetchall()
        finally:
            conn.close()
        return [(dataset_id, TableSketch.from_bytes(blob)) for dataset_id, blob in rows]

    def _add_version(self, dataset_id: str, fingerprint: str, sketch: TableSketch) -> None:
        conn = self._conn()
        try:
            known = conn.execute("SELECT 1 FROM versions WHERE dataset_id = ? AND fingerprint = ?", (dataset_id, fingerprint))
            if known.fetchone() is None:
                conn.execute("INSERT INTO versions (dataset_id, fingerprint, sketch, created) VALUES (?, ?, ?, ?)",
                             (dataset_id, fingerprint, sketch.to_bytes(), datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")))
        finally:
            conn.close()

    def _has_first_format_budgets(self) -> bool:
        """True when the ledger holds budgets named by the first format's table hash (not ``ds-…``)."""
        conn = self._conn()
        try:
            return conn.execute("SELECT 1 FROM budgets WHERE dataset_id NOT LIKE 'ds-%' LIMIT 1").fetchone() is not None
        finally:
            conn.close()

    def identify(self, chunks: Chunks) -> tuple[list[tuple[DatasetInfo, float]], str | None, TableSketch, str]:
        """Every known dataset the table overlaps (best first, each with its best overlap), with its fingerprints and sketch."""
        builder, legacy, version = None, None, VersionFingerprint()
        old_budgets = self._has_first_format_budgets()
        for chunk in chunks():
            if builder is None:
                builder = SketchBuilder(chunk.columns)
                legacy = Fingerprint(chunk.columns) if old_budgets else None
            builder.add(chunk)
            if legacy is not None:
                legacy.add(chunk)
            version.add(chunk, list(chunk.columns))
        if builder is None:
            raise DataError(_("The table has no rows."))
        sketch = builder.finish()
        known = self._versions()
        scores = overlaps([s for _name, s in known], sketch, chunks()) if known else []
        best: dict[str, float] = {}
        for (dataset_id, _sketch), score in zip(known, scores, strict=True):
            if score > best.get(dataset_id, 0.0):
                best[dataset_id] = score
        ranked = sorted(best.items(), key=lambda item: -item[1])  # stable: ties keep the newest version first
        legacy_id = legacy.hexdigest() if legacy is not None else None
        return [(self._known(d), score) for d, score in ranked], legacy_id, sketch, version.hexdigest()

    def open_table(self, chunks: Chunks, name_hint: str, *, dataset: str | None = None, separate: bool = False,
                   reason: str = "", total_epsilon: float = DEFAULT_TOTAL_EPSILON, unit: str = ADD_REMOVE) -> Identification:
        """Attach a table to its dataset (or create one), and record it as a version of that dataset.

        Parameters
        ----------
        chunks : callable
            Returns the table as an iterable of DataFrame chunks (called up to twice).
        name_hint : str
            The name for a new dataset when none is given (made unique).
        dataset : str, optional
            The dataset to use, by name: created if it does not exist.
        separate : bool
            Allow ``dataset`` to be a different dataset from the one the table overlaps; the
            choice and ``reason`` are recorded in the new dataset's history.
        total_epsilon, unit
            The budget and unit of protection of a dataset created here.

        Raises
        ------
        DataError
            The table overlaps a known dataset other than ``dataset`` and ``separate`` is False.
        """
        found, legacy_id, sketch, fingerprint = self.identify(chunks)
        legacy = self.find(legacy_id) if legacy_id else None
        if legacy is not None:  # a table charged under the first ledger format keeps that budget, whatever else it overlaps
            self._add_version(legacy.dataset_id, fingerprint, sketch)
            return Identification(legacy, created=False, overlap=1.0, legacy=True)
        overlapping = [(d, score) for d, score in found if score >= ATTACH_OVERLAP]
        if len(overlapping) > 1:
            names = _(" and ").join(_("'{name}' (about {share})").format(name=d.name, share=percent(score))
                                    for d, score in overlapping[:3])
            raise DataError(
                _("This table holds people of several datasets: {names}. A release from it would spend only one of "
                  "their budgets, so it is refused: work on each dataset's own table instead.").format(names=names)
            )
        attached, score = overlapping[0] if overlapping else (None, found[0][1] if found else 0.0)
        chosen = self.find(dataset) if dataset else attached
        if attached is not None and (chosen is None or chosen.dataset_id != attached.dataset_id) and not separate:
            raise DataError(
                _("This table shares about {score} of its rows with the dataset '{name}': the same people spend that "
                  "dataset's budget. Use that dataset, or record it as a separate dataset explicitly "
                  "(--separate-dataset on the command line) if these really are different people.").format(score=percent(score), name=attached.name)
            )
        created = chosen is None
        if chosen is None:
            # The history is exportable: it names the overlapping dataset, not how many of its rows were found.
            note = f"overlaps the rows of '{attached.name}'; " + (reason or "no reason given") if attached else ""
            chosen = self.create(dataset or self._unique_name(name_hint), total_epsilon=total_epsilon, unit=unit, reason=note)
        self._add_version(chosen.dataset_id, fingerprint, sketch)
        return Identification(chosen, created=created, overlap=score, matched=attached)

    def separate(self, chunks: Chunks, name: str, reason: str, **budget: Any) -> Identification:
        """Make the table a new dataset although it overlaps a known one (an explicit, recorded act)."""
        if not str(reason).strip():
            raise DataError(_("Say why these are different people: the reason is kept in the dataset's history."))
        return self.open_table(chunks, name, dataset=name, separate=True, reason=str(reason).strip(), **budget)

    def _unique_name(self, hint: str) -> str:
        base = " ".join(str(hint).split()) or "dataset"
        names = {d.name for d in self.datasets()}
        if base not in names:
            return base
        return next(f"{base} ({i})" for i in range(2, 10_000) if f"{base} ({i})" not in names)
