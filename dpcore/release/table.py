"""Releasing an in-memory table, and the steps the streaming release shares with it."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import ArrayLike

from dpcore.budget.accountant import BudgetLedger, Charge
from dpcore.budget.identity import version_fingerprint
from dpcore.budget.persons import check_unit_column, counting, person_keys
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.release import stored
from dpcore.release.columns import Treatment, quoting, resolve
from dpcore.release.contributions import PersonBound, keep_mask, person_bound
from dpcore.release.estimator import read_release
from dpcore.release.padding import (
    COUNT_EPSILON,
    Protection,
    check_padding,
    cut_words,
    filler_rows,
    noisy_row_count,
    protection_for,
    smallest,
)
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import FILLER, REAL, Draws, order_words, positions, secret_order
from dpcore.release.randomness import entropy as make_entropy
from dpcore.release.result import OwnerNote, ReleaseResult, new_report, owner_notes
from dpcore.release.writing import write_csv
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike


def release_chunk(
    frame: pd.DataFrame, rows: np.ndarray, treatments: Sequence[Treatment], key: bytes
) -> tuple[pa.Table, np.ndarray]:
    """The released columns of the rows with keys ``rows`` (in input order), and which values were outside each
    column's domain (``(rows, columns)`` booleans, owner-only: see :func:`add_outside`).

    The one randomising step of every path (in memory, streamed, a Spark task's batch).
    """
    arrays, flags = [], np.zeros((len(frame), len(treatments)), dtype=bool)
    for i, t in enumerate(treatments):
        array, flags[:, i] = t.column(frame, rows, key)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments]), flags


def add_outside(outside: dict[str, int], treatments: Sequence[Treatment], counts: np.ndarray) -> None:
    """Add each column's count of values outside its domain (``flags.sum(axis=0)`` of :func:`release_chunk`) into ``outside``."""
    for t, count in zip(treatments, np.asarray(counts).tolist(), strict=True):
        outside[t.name] = outside.get(t.name, 0) + int(count)


def arranged(
    table: pa.Table, rows: np.ndarray, treatments: Sequence[Treatment], draws: Draws, protection: Protection
) -> pa.Table:
    """The released rows in the secret order, padded with fillers or cut to the noisy row count under add/remove.

    Rows sort by their keyed words (:func:`~dpcore.release.randomness.secret_order`); fillers
    join the order by their own words. A cut keeps the rows with the smallest cut words
    (:func:`~dpcore.release.padding.smallest`), a uniformly random subset drawn apart from the
    order, and then orders them.
    """
    n = len(table)
    words, sources = order_words(draws.key, rows), np.full(n, REAL, dtype=np.int8)
    if protection.padded:
        limit = noisy_row_count(n, protection.count_epsilon, draws.entropy)
        if limit > n:
            fillers, filler_keys, filler_words = filler_rows(treatments, limit - n, draws.key)
            table = pa.concat_tables([table, fillers])
            rows, words = np.concatenate([rows, filler_keys]), np.concatenate([words, filler_words])
            sources = np.concatenate([sources, np.full(limit - n, FILLER, dtype=np.int8)])
        elif limit < n:
            keep = smallest(cut_words(draws.key, rows), rows, limit)
            table, rows, words, sources = table.filter(pa.array(keep)), rows[keep], words[keep], sources[keep]
    return table.take(pa.array(secret_order(words, sources, rows)))


def check_columns(columns: Iterable[object], treatments: Iterable[Treatment]) -> None:
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        raise DataError(_("Two columns have the same name. Give every column a distinct header."))
    absent = [t.name for t in treatments if t.name not in names]
    if absent:
        raise DataError(
            _("The plan releases columns that are not in the table: {names}.").format(names=", ".join(f"'{n}'" for n in absent))
        )


@dataclass(frozen=True)
class Prepared:
    """What both release paths settle before reading a row: the treatments, the person bound and the protection."""

    treatments: list[Treatment]
    dropped: list[str]
    warnings: list[str]
    bound: PersonBound | None
    protection: Protection

    @property
    def columns(self) -> list[str]:
        """The input columns the copy randomises (each once)."""
        return list(dict.fromkeys(t.name for t in self.treatments))

    def report(self, seeded: bool) -> dict[str, Any]:
        """The report of a new copy (:func:`~dpcore.release.result.new_report`)."""
        return new_report(self.treatments, self.dropped, self.warnings, seeded, self.protection, persons=self.bound is not None)

    def charge(self, plan: ReleasePlan, label: str, report: dict[str, Any]) -> Charge:
        """What a new copy by ``plan`` costs the dataset, per person in the copy's unit, and how the ledger lists it."""
        protection, bound = self.protection, self.bound
        k = protection.rows_per_person
        return Charge(
            label,
            protection.cost(plan),
            relation=protection.unit,
            privacy_unit=None if bound is None else bound.column,
            rows_per_person=1 if bound is None else k,
            mechanism="randomized response per value"
            + (" + noisy row count" if protection.padded else "")
            + (f", at most {k} rows per person (group privacy)" if bound is not None else ""),
            released=f"randomized copy: {len(report['columns'])} columns" + (", padded rows" if protection.padded else ""),
            action=N_("Making a copy"),
            undone=N_("made"),
            alternative=N_("Or drop or coarsen columns."),
        )

    def notes(self, outside: dict[str, int], left_out: int) -> list[OwnerNote]:
        """The owner-only notes (:func:`~dpcore.release.result.owner_notes`)."""
        return owner_notes(outside, self.treatments, left_out, self.protection.rows_per_person)


def prepare(
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
    frame: pd.DataFrame | None = None,
) -> Prepared:
    """Resolve the plan, the person bound and the unit of protection, and check them, before any row is released.

    ``frame``: an in-memory table, whose columns are checked before anything is written to the
    ledger (a streamed file's are checked as its first chunk is read). With a ledger, it is made
    to count people as every earlier spend did.
    """
    treatments, dropped, warnings = resolve(plan, schema)
    if frame is not None:
        check_columns(frame.columns, treatments)
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError("ledger must be a BudgetLedger (open it with dpcore.budget.datasets.Catalog), or None")
    bound = person_bound(schema)
    if frame is not None and bound is not None:
        check_unit_column(frame, bound.column)
    protection = protection_for(ledger, unit, count_epsilon, 1 if bound is None else bound.rows_per_person)
    check_padding(treatments, protection)
    if ledger is not None:  # a streamed copy is charged after its rows are read: its people are counted right before
        ledger.count_people_as(counting(schema.privacy_unit, schema.rows_per_person))
    return Prepared(treatments, dropped, warnings, bound, protection)


def kept(frame: pd.DataFrame, rows: np.ndarray, prepared: Prepared, entropy: int) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The rows a copy randomises — at most ``k`` per person when the schema names a privacy unit — their keys,
    and how many were left out.

    The unit column was checked by :func:`prepare`. A kept row keeps its own row key, so its
    draws do not depend on which other rows were left out.
    """
    if prepared.bound is None:
        return frame, rows, 0
    keep = keep_mask(person_keys(frame[prepared.bound.column]), prepared.bound, entropy)
    return frame.loc[keep, prepared.columns].reset_index(drop=True), rows[keep], int(len(keep) - np.count_nonzero(keep))


def table_row_keys(frame: pd.DataFrame, row_keys: ArrayLike | None) -> np.ndarray:
    """The rows' stable keys: ``row_keys`` when given (a table read from files), else the positions ``0 … n−1``."""
    if row_keys is None:
        return positions(0, len(frame))
    keys = np.asarray(row_keys, dtype=np.uint64)
    if keys.shape != (len(frame),) or len(np.unique(keys)) != len(keys):
        raise ValueError("row_keys must hold one distinct key per row of the table")
    return keys


def release_frame(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, random_state: RandomStateLike = None) -> pd.DataFrame:
    """Randomise an in-memory table by the plan and return the released table — nothing else.

    The bare mechanism, for previews and tests: rows stay in input order (at most ``k`` of each
    person's when the schema names a privacy unit), it neither checks nor charges a budget and
    it stores nothing, so never hand its output to a buyer (use :func:`release_table`, which also
    puts the rows in a random order).
    """
    prepared = prepare(schema, plan, frame=frame)
    treatments = prepared.treatments
    draws = Draws.of(make_entropy(random_state)[0])
    frame, rows, _unused = kept(frame, positions(0, len(frame)), prepared, draws.entropy)
    table, _flags = release_chunk(frame, rows, treatments, draws.key)
    sink = io.BytesIO()
    write_csv(table, sink, header=True, quoting=quoting(treatments))
    return read_release(sink.getvalue(), {"columns": [t.entry() for t in treatments]})


def preview_release(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, n_rows: int = 10) -> pd.DataFrame:
    """What the first ``n_rows`` released rows could look like: fresh noise, for the owner's eyes only.

    With a privacy unit, at most ``k`` of each person's rows among those first rows are shown.
    """
    return release_frame(frame.head(n_rows), schema, plan)


def release_table(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
    row_keys: ArrayLike | None = None,
) -> ReleaseResult:
    """Release an in-memory table: randomise it by the plan, within the budget, with its report.

    Parameters
    ----------
    frame : pandas.DataFrame
        The private table (as read by :func:`dpcore.tables.loading.read_csv_bytes`).
    schema : Schema
        The owner's declarations; categories, bounds and bins come only from here. When it
        names a privacy-unit column, at most ``schema.rows_per_person`` (``k``) rows of each
        person are kept before randomising (:mod:`~dpcore.release.contributions`) and the copy
        costs ``k`` times its per-row ε; the report states ε per person, never the column.
    plan : ReleasePlan
        What happens to each column (see :func:`~dpcore.release.plan.default_plan`).
    ledger : BudgetLedger, optional
        The dataset's budget, where the copy is charged and stored (open it with
        :class:`dpcore.budget.datasets.Catalog`; :meth:`~dpcore.budget.accountant.BudgetLedger.in_memory`
        for a trial). Without a ledger nothing is charged and nothing stops a second,
        independent copy: always use one for copies that leave your hands.
    fresh : bool
        Make and charge a new copy even if this table was released with this plan before.
    random_state : None, int or numpy.random.Generator
        ``None`` (operating-system entropy) for every real release; a seed for tests only.
    label : str
        The ledger entry's description.
    unit : {"add/remove", "replace-one"}, optional
        The unit of protection (default: the ledger's; without a ledger, replace-one). Under
        add/remove the copy is padded to a noisy row count (see
        :func:`~dpcore.release.padding.noisy_row_count`).
    count_epsilon : float
        ε of that noisy row count (:data:`~dpcore.release.padding.COUNT_EPSILON`).
    row_keys : array of uint64, optional
        Each row's stable key, which its keyed draws depend on: the positions ``0 … n−1`` by
        default (what a streamed CSV file gets too); a table read from several files passes
        :func:`~dpcore.mechanisms.keyed.file_row_keys`, so it gets the copy the Spark release gives.

    Returns
    -------
    ReleaseResult

    Raises
    ------
    DataError
        The plan does not fit the schema or the table, or a stored copy was changed.
    BudgetExceededError
        The release does not fit in the budget; nothing was charged or stored.
    """
    prepared = prepare(schema, plan, ledger=ledger, unit=unit, count_epsilon=count_epsilon, frame=frame)
    treatments, bound, protection = prepared.treatments, prepared.bound, prepared.protection
    entropy, seeded = make_entropy(random_state)
    rows = table_row_keys(frame, row_keys)
    report = prepared.report(seeded)
    if ledger is None:
        return _randomised(frame, rows, prepared, entropy, report, None)
    version = version_fingerprint(frame, fingerprinted(treatments, bound))
    key = stored.release_key(version, treatments, seeded, entropy, protection, bound)
    found = None if fresh else stored.find(ledger, key)
    if found is not None:
        csv = b"".join(found.csv_parts())
        return ReleaseResult.handed_out_again(found.report, csv=csv, dataset_id=ledger.dataset_id)
    new = stored.NewCopy.start(ledger, prepared.charge(plan, label, report), report, quoting(treatments))
    new.key = key
    with new.charging():
        result = _randomised(frame, rows, prepared, entropy, report, new.writer)
    result.epsilon_charged, result.dataset_id = new.charge.epsilon, ledger.dataset_id
    return result


def _randomised(
    frame: pd.DataFrame,
    rows: np.ndarray,
    prepared: Prepared,
    entropy: int,
    report: dict[str, Any],
    copy: stored.CopyWriter | None,
) -> ReleaseResult:
    """The copy of an in-memory table, its rows also appended to ``copy`` when it is to be stored."""
    treatments = prepared.treatments
    outside: dict[str, int] = {}
    draws = Draws.of(entropy)
    frame, rows, left_out = kept(frame, rows, prepared, entropy)
    released, flags = release_chunk(frame, rows, treatments, draws.key)
    add_outside(outside, treatments, flags.sum(axis=0))
    table = arranged(released, rows, treatments, draws, prepared.protection)
    sink = io.BytesIO()
    write_csv(table, sink, header=True, quoting=quoting(treatments))
    if copy is not None:
        copy.append(table)
    return ReleaseResult.made(report, notes=prepared.notes(outside, left_out), csv=sink.getvalue(), n_rows=len(table))


def fingerprinted(treatments: Sequence[Treatment], bound: PersonBound | None) -> list[str]:
    """The columns a stored copy's key covers: the released ones, and the unit column (it decides which rows are kept)."""
    names = [t.name for t in treatments]
    return names if bound is None else [*names, bound.column]
