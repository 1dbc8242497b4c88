"""Named datasets: the population of people a budget protects, recognised from file to file.

A budget belongs to a **dataset** that the owner names ("Clinic patients 2025"), not to the
bytes of one file. Every table opened is a *version* of a dataset: its overlap sketch
(:mod:`dpcore.budget.identity`) is kept in the ledger, and a new table whose rows substantially
overlap a known version (:data:`ATTACH_OVERLAP`) is attached to that dataset by default —
a re-saved, reordered, renamed or extended file spends the same budget. Treating overlapping
people as a *separate* dataset is an explicit act with a stated reason, recorded in the
dataset's history (:meth:`Catalog.open_table` with ``separate=True``); a refusal names that way
out, and the choice holds: the same rows open as the dataset they were last recorded in.

Ledgers written before datasets existed named each budget by a hash of the whole table;
such a table is still found by that hash, so an upgrade never hands out a fresh budget.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.budget.accountant import ADD_REMOVE, BudgetLedger, check_unit, connect, default_ledger, is_server_ledger
from dpcore.budget.fingerprint import Fingerprint
from dpcore.budget.identity import (
    HashedColumn,
    HashSpill,
    SketchBuilder,
    TableSketch,
    VersionFingerprint,
    hash_column,
    overlaps_of_hashes,
)
from dpcore.budget.ledger_db import LedgerConnection
from dpcore.budget.signed_in import SignedIn
from dpcore.exceptions import DataError
from dpcore.i18n import _, percent

#: The share of people in common from which a table is taken to be a version of a known dataset.
#: Low on purpose: attaching wrongly only makes overlapping people share one budget (safe), while
#: missing a match hands them a second one. Two disjoint halves of Adult score 0.13 (identical
#: census records of different people), a re-save 1.0, a 30 % extract of the same people 1.0;
#: unrelated tables that share only row numbers and a train/test column 0 (benchmarks/identity.py).
ATTACH_OVERLAP = 0.25
DEFAULT_TOTAL_EPSILON = 1.0

Chunks = Callable[[], Iterable[pd.DataFrame]]


@dataclass(frozen=True)
class DatasetInfo:
    dataset_id: str
    name: str
    unit: str
    created: str


class OverlapRefused(DataError):
    """A table refused because its people belong to another dataset, or to several.

    The way out is :meth:`Catalog.separate` (a separate dataset with a reason, recorded), which
    the Data page offers beside the refusal and the command line names after it.
    """


@dataclass(frozen=True)
class TableMatch:
    """What :meth:`Catalog.identify` found: overlapping datasets (best first), where this very table was recorded."""

    ranked: list[tuple[DatasetInfo, float]]
    owner: DatasetInfo | None
    legacy_id: str | None
    sketch: TableSketch
    fingerprint: str


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
            return _(
                "This table was used before under the earlier ledger format; it keeps its budget as dataset '{name}'."
            ).format(name=name)
        if not self.created:
            return _(
                "This table shares about {share} of its rows with your dataset '{name}' (measured on your "
                "raw rows, owner only), so it uses that dataset's budget: the people in it are (at least partly) the "
                "same people."
            ).format(share=percent(self.overlap), name=name)
        if self.matched is not None and self.overlap == 0:
            return _(
                "Recorded as a separate dataset '{name}' with a budget of its own; the table was opened before as '{other}'."
            ).format(name=name, other=self.matched.name)
        if self.matched is not None:
            return _(
                "Recorded as a separate dataset '{name}', although it shares about {share} of its rows "
                "with '{other}' (owner only)."
            ).format(name=name, share=percent(self.overlap), other=self.matched.name)
        return _("A new dataset '{name}' was created for this table, with a budget of its own.").format(name=name)


class Catalog:
    """The datasets in one ledger.

    Parameters
    ----------
    path : str or Path, optional
        The ledger database, a file or a ``postgresql://`` URL (default
        :func:`~dpcore.budget.accountant.default_ledger`).
    signed_in : SignedIn, optional
        Who acts: every ledger the catalog opens records them with what it writes.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, signed_in: SignedIn | None = None) -> None:
        self.path = str(path) if path is not None else default_ledger()
        self.signed_in = signed_in
        if self.path == ":memory:":
            raise ValueError("a catalog needs a ledger file, not ':memory:'")
        if not is_server_ledger(self.path):
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)

    def _conn(self) -> LedgerConnection:
        return connect(self.path)

    def datasets(self) -> list[DatasetInfo]:
        conn = self._conn()
        try:
            rows = conn.execute(
                "SELECT dataset_id, COALESCE(name, dataset_id), unit, created FROM budgets ORDER BY created"
            ).fetchall()
        finally:
            conn.close()
        return [DatasetInfo(*row) for row in rows]

    def granted_to(self, person: SignedIn | None) -> list[DatasetInfo]:
        """The datasets on which ``person`` holds a live analyst's slice (:mod:`dpcore.budget.slices`), latest grant first."""
        if person is None:
            return []
        conn = self._conn()
        try:
            granted = [row[0] for row in conn.execute("SELECT DISTINCT dataset_id FROM grants").fetchall()]
        finally:
            conn.close()
        found = []
        for dataset_id in granted:
            mine = BudgetLedger(dataset_id, path=self.path, signed_in=person).my_slice()
            if mine is not None and mine.live:
                found.append((mine.granted, self._known(dataset_id)))
        return [dataset for _when, dataset in sorted(found, key=lambda item: item[0], reverse=True)]

    def find(self, name: str) -> DatasetInfo | None:
        """The dataset called ``name`` (or with that id)."""
        return next((d for d in self.datasets() if name in (d.name, d.dataset_id)), None)

    def ledger(self, dataset: DatasetInfo | str) -> BudgetLedger:
        dataset_id = dataset.dataset_id if isinstance(dataset, DatasetInfo) else dataset
        return BudgetLedger(dataset_id, path=self.path, signed_in=self.signed_in)

    def create(
        self,
        name: str,
        *,
        total_epsilon: float = DEFAULT_TOTAL_EPSILON,
        total_delta: float | None = None,
        unit: str = ADD_REMOVE,
        reason: str = "",
    ) -> DatasetInfo:
        """A new dataset with a budget of its own; ``name`` must not be taken."""
        name = " ".join(str(name).split())
        if not name:
            raise DataError(_("Give the dataset a name."))
        if self.find(name) is not None:
            raise DataError(_("A dataset called '{name}' already exists: choose another name.").format(name=name))
        dataset_id = "ds-" + uuid.uuid4().hex[:16]
        ledger = BudgetLedger(
            dataset_id,
            total_epsilon,
            self.path,
            total_delta=total_delta,
            unit=check_unit(unit),
            name=name,
            signed_in=self.signed_in,
        )
        if reason:
            ledger.record_event("created as a separate dataset", reason)
        return self._known(dataset_id)

    def _known(self, dataset_id: str) -> DatasetInfo:
        """The dataset ``dataset_id``, which the ledger holds a budget for (it was created, or has versions)."""
        found = self.find(dataset_id)
        if found is None:
            raise DataError(_("The budget ledger names a dataset it holds no budget for: the ledger file may be damaged."))
        return found

    def _versions(self) -> list[tuple[str, str, TableSketch]]:
        """Every version ``(dataset, fingerprint, sketch)``, newest first."""
        conn = self._conn()
        try:
            rows = conn.execute("SELECT dataset_id, fingerprint, sketch FROM versions ORDER BY id DESC").fetchall()
        finally:
            conn.close()
        return [(dataset_id, fingerprint, TableSketch.from_bytes(blob)) for dataset_id, fingerprint, blob in rows]

    def _add_version(self, dataset_id: str, fingerprint: str, sketch: TableSketch) -> None:
        conn = self._conn()
        try:
            known = conn.execute("SELECT 1 FROM versions WHERE dataset_id = ? AND fingerprint = ?", (dataset_id, fingerprint))
            if known.fetchone() is None:
                conn.execute(
                    "INSERT INTO versions (dataset_id, fingerprint, sketch, created) VALUES (?, ?, ?, ?)",
                    (dataset_id, fingerprint, sketch.to_bytes(), datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")),
                )
        finally:
            conn.close()

    def _has_first_format_budgets(self) -> bool:
        """True when the ledger holds budgets named by the first format's table hash (not ``ds-…``)."""
        conn = self._conn()
        try:
            return conn.execute("SELECT 1 FROM budgets WHERE dataset_id NOT LIKE 'ds-%' LIMIT 1").fetchone() is not None
        finally:
            conn.close()

    def identify(self, chunks: Chunks) -> TableMatch:
        """Every known dataset the table overlaps, and the dataset this very table was last recorded in.

        The table is read once (see :class:`TableReading`, which a release feeds from its own read).
        """
        with TableReading(self) as reading:
            for chunk in chunks():
                reading.add(chunk)
            return reading.match()

    def open_table(
        self,
        chunks: Chunks,
        name_hint: str,
        *,
        dataset: str | None = None,
        separate: bool = False,
        reason: str = "",
        total_epsilon: float = DEFAULT_TOTAL_EPSILON,
        unit: str = ADD_REMOVE,
    ) -> Identification:
        """Attach a table to its dataset (or create one), and record it as a version of that dataset.

        A table opened before stays with the dataset it was last recorded in. Otherwise it is
        attached to the known dataset whose people it shares (:data:`ATTACH_OVERLAP`), or a new
        dataset is created; a table whose people belong to several datasets, or to another
        dataset than ``dataset``, is refused unless ``separate``.

        Parameters
        ----------
        chunks : callable
            Returns the table as an iterable of DataFrame chunks (called up to twice).
        name_hint : str
            The name for a new dataset when none is given (made unique).
        dataset : str, optional
            The dataset to use, by name: created if it does not exist.
        separate : bool
            Make ``dataset`` (or a new dataset named after ``name_hint``) the table's dataset
            although its people overlap others; the choice, the datasets it overlaps and
            ``reason`` are recorded in the new dataset's history (or, when ``dataset`` names an
            existing dataset, in that dataset's).
        total_epsilon, unit
            The budget and unit of protection of a dataset created here.

        Raises
        ------
        OverlapRefused
            The table overlaps several known datasets, or one other than ``dataset``, and
            ``separate`` is False. Its sentence names the way out.
        """
        return self.open_match(
            self.identify(chunks),
            name_hint,
            dataset=dataset,
            separate=separate,
            reason=reason,
            total_epsilon=total_epsilon,
            unit=unit,
        )

    def open_match(
        self,
        match: TableMatch,
        name_hint: str,
        *,
        dataset: str | None = None,
        separate: bool = False,
        reason: str = "",
        total_epsilon: float = DEFAULT_TOTAL_EPSILON,
        unit: str = ADD_REMOVE,
    ) -> Identification:
        """:meth:`open_table` of a table already identified (``match``: :meth:`identify`, or a :class:`TableReading`)."""
        legacy = self.find(match.legacy_id) if match.legacy_id else None
        if legacy is not None:  # a table charged under the first ledger format keeps that budget, whatever else it overlaps
            self._add_version(legacy.dataset_id, match.fingerprint, match.sketch)
            return Identification(legacy, created=False, overlap=1.0, legacy=True)
        overlapping = [(d, score) for d, score in match.ranked if score >= ATTACH_OVERLAP]
        if separate:
            return self._open_separate(match, overlapping, dataset or self._unique_name(name_hint), reason, total_epsilon, unit)
        if match.owner is not None:  # opened before: the owner's choice then (attached or made separate) holds
            overlapping = [(match.owner, 1.0)]
        if len(overlapping) > 1:
            names = _(" and ").join(
                _("'{name}' (about {share})").format(name=d.name, share=percent(score)) for d, score in overlapping[:3]
            )
            raise OverlapRefused(
                _(
                    "This table holds people of several datasets: {names}. A release from it would spend only one of "
                    "their budgets, so it is refused. If its people are in fact others, make it a separate dataset and "
                    "say why: the reason is kept in the new dataset's history."
                ).format(names=names)
            )
        attached, score = overlapping[0] if overlapping else (None, match.ranked[0][1] if match.ranked else 0.0)
        chosen = self.find(dataset) if dataset else attached
        if attached is not None and (chosen is None or chosen.dataset_id != attached.dataset_id):
            raise OverlapRefused(
                _(
                    "This table shares about {score} of its rows with the dataset '{name}': the same people spend that "
                    "dataset's budget. Use that dataset, or, if these really are different people, make it a separate "
                    "dataset and say why."
                ).format(score=percent(score), name=attached.name)
            )
        created = chosen is None
        if chosen is None:
            chosen = self.create(dataset or self._unique_name(name_hint), total_epsilon=total_epsilon, unit=unit)
        self._add_version(chosen.dataset_id, match.fingerprint, match.sketch)
        return Identification(chosen, created=created, overlap=score, matched=attached)

    def _open_separate(
        self,
        match: TableMatch,
        overlapping: list[tuple[DatasetInfo, float]],
        name: str,
        reason: str,
        total_epsilon: float,
        unit: str,
    ) -> Identification:
        """The table as the dataset ``name`` whatever it overlaps: the explicit, recorded act of :meth:`separate`."""
        others = [d for d, _score in overlapping]
        if match.owner is not None and all(d.dataset_id != match.owner.dataset_id for d in others):
            others.append(match.owner)  # where it was recorded before, although no other version of it is there
        chosen = self.find(name)
        others = [d for d in others if chosen is None or d.dataset_id != chosen.dataset_id]
        # The history is exportable: it names the overlapping datasets, not how many of their rows were found.
        note = "overlaps the rows of " + " and ".join(f"'{d.name}'" for d in others) + "; " if others else ""
        note += reason or "no reason given"
        scores = {d.dataset_id: s for d, s in match.ranked} | ({match.owner.dataset_id: 1.0} if match.owner else {})
        if chosen is not None:  # an existing dataset named: the table joins it, and the choice is recorded there
            if others:
                self.ledger(chosen).record_event("a table overlapping other datasets recorded here", note)
            self._add_version(chosen.dataset_id, match.fingerprint, match.sketch)
            return Identification(chosen, created=False, overlap=scores.get(chosen.dataset_id, 0.0), matched=chosen)
        chosen = self.create(name, total_epsilon=total_epsilon, unit=unit, reason=note)
        self._add_version(chosen.dataset_id, match.fingerprint, match.sketch)
        matched = others[0] if others else None
        overlap = {d.dataset_id: s for d, s in match.ranked}.get(matched.dataset_id, 0.0) if matched else 0.0
        return Identification(chosen, created=True, overlap=overlap, matched=matched)

    def separate(self, chunks: Chunks, name: str, reason: str, **budget: Any) -> Identification:
        """Make the table a new dataset although it overlaps known ones (an explicit act, recorded with ``reason``).

        From then on this table opens as the new dataset, even where it was attached before.
        """
        if not str(reason).strip():
            raise DataError(_("Say why these are different people: the reason is kept in the dataset's history."))
        return self.open_table(chunks, name, dataset=name, separate=True, reason=str(reason).strip(), **budget)

    def _unique_name(self, hint: str) -> str:
        base = " ".join(str(hint).split()) or "dataset"
        names = {d.name for d in self.datasets()}
        if base not in names:
            return base
        return next(f"{base} ({i})" for i in range(2, 10_000) if f"{base} ({i})" not in names)


class TableReading:
    """A table identified as it is read, chunk by chunk: :meth:`Catalog.identify`'s one read, which a release shares.

    Each chunk's cells are hashed once for the overlap sketch, the version fingerprint and,
    when other tables are known, a spill of the cell hashes kept on disk for the overlaps to
    look rows up in (:class:`~dpcore.budget.identity.HashSpill`), so the table is parsed once. A
    version superseded by a newer version of the same rows in another dataset (a table made a
    separate dataset after it was attached) is no longer evidence, and neither is the very table
    being opened: its earlier versions say where it was recorded (``owner``), not whose people it
    shares. Close it (or use it as a context manager) to remove the spill.

    Parameters
    ----------
    catalog : Catalog
        The ledger whose datasets the table is matched against (its versions are read once, now).
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._old_budgets = catalog._has_first_format_budgets()
        self._versions = catalog._versions()
        self._builder: SketchBuilder | None = None
        self._legacy: Fingerprint | None = None
        self._version = VersionFingerprint()
        # Rows are looked up in a second pass when other tables are known: their hashes are kept, not parsed again.
        self._spill = HashSpill() if self._versions else None

    def add(self, chunk: pd.DataFrame) -> list[HashedColumn]:
        """Hash one chunk of the table into the identification; returns its columns' hashes, to share."""
        if self._builder is None:
            self._builder = SketchBuilder(chunk.columns)
            self._legacy = Fingerprint(chunk.columns) if self._old_budgets else None
        hashed = [hash_column(chunk[c]) for c in self._builder.columns]
        _hashes, keys = self._builder.add(chunk, hashed)
        if self._legacy is not None:
            self._legacy.add(chunk)
        if self._spill is not None:
            self._spill.add(hashed)
        self._version.add_keys(keys, len(chunk))
        return hashed

    def match(self) -> TableMatch:
        """What the chunks added so far match in the catalog (the table is whole); the spill is removed."""
        try:
            if self._builder is None:
                raise DataError(_("The table has no rows."))
            sketch, fingerprint = self._builder.finish(), self._version.hexdigest()
            latest: dict[str, tuple[str, TableSketch]] = {}
            for dataset_id, version_fingerprint, known_sketch in self._versions:  # newest first
                latest.setdefault(version_fingerprint, (dataset_id, known_sketch))
            owner = latest.pop(fingerprint, None)
            known = list(latest.values())
            spill = self._spill
            scores = overlaps_of_hashes([s for _id, s in known], sketch, spill) if known and spill is not None else []
        finally:
            self.close()
        best: dict[str, float] = {}
        for (dataset_id, _sketch), score in zip(known, scores, strict=True):
            if score > best.get(dataset_id, 0.0):
                best[dataset_id] = score
        ranked = sorted(best.items(), key=lambda item: -item[1])  # stable: ties keep the newest version first
        known_dataset = self.catalog._known
        return TableMatch(
            [(known_dataset(d), score) for d, score in ranked],
            known_dataset(owner[0]) if owner else None,
            self._legacy.hexdigest() if self._legacy is not None else None,
            sketch,
            fingerprint,
        )

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def __enter__(self) -> TableReading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
