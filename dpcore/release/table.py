"""Releasing an in-memory table, and the steps the streaming release shares with it."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from dpcore.accountant import BudgetLedger
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.identity import version_fingerprint
from dpcore.persons import check_unit_column, counting
from dpcore.release import stored
from dpcore.release.columns import Treatment, quoting, resolve
from dpcore.release.contributions import PersonBound, bounded, person_bound
from dpcore.release.estimator import read_release
from dpcore.release.padding import (
    COUNT_EPSILON,
    Protection,
    check_fits,
    check_padding,
    filler_rows,
    noisy_row_count,
    protection_for,
)
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import entropy as make_entropy
from dpcore.release.randomness import shuffled
from dpcore.release.result import ReleaseResult, new_report, owner_notes
from dpcore.release.writing import write_csv
from dpcore.schema import Schema
from dpcore.validation import RandomStateLike


def release_chunk(
    frame: pd.DataFrame, start: int, treatments: Sequence[Treatment], entropy: int, outside: dict[str, int]
) -> pa.Table:
    """The released columns of rows ``start …`` (in input order); counts values outside the domains into ``outside``."""
    arrays = []
    for t in treatments:
        array, count = t.column(frame, start, entropy)
        outside[t.name] = outside.get(t.name, 0) + count
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments])


def check_columns(columns: Iterable[object], treatments: Iterable[Treatment]) -> None:
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        raise DataError(_("Two columns have the same name. Give every column a distinct header."))
    absent = [t.name for t in treatments if t.name not in names]
    if absent:
        raise DataError(_("The plan releases columns that are not in the table: {names}.").format(
            names=", ".join(f"'{n}'" for n in absent)))


def check_ledger_arguments(ledger: object, budget: float | None) -> None:
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError("ledger must be a BudgetLedger (open it with dpcore.datasets.Catalog), or None")
    if ledger is not None and budget is not None:
        raise ValueError("budget cannot be combined with a BudgetLedger: set the total on the ledger itself")


@dataclass(frozen=True)
class Prepared:
    """What both release paths settle before reading a row: the treatments, the person bound and the protection."""

    treatments: list[Treatment]
    dropped: list[str]
    warnings: list[str]
    bound: PersonBound | None
    protection: Protection
    people: str  # how the dataset's spends count people (dpcore.persons.counting)

    @property
    def columns(self) -> list[str]:
        """The input columns the copy randomises (each once)."""
        return list(dict.fromkeys(t.name for t in self.treatments))

    def report(self, seeded: bool) -> dict[str, Any]:
        """The report of a new copy (:func:`~dpcore.release.result.new_report`)."""
        return new_report(self.treatments, self.dropped, self.warnings, seeded, self.protection,
                          persons=self.bound is not None)

    def notes(self, outside: dict[str, int], left_out: int) -> list[str]:
        """The owner-only notes (:func:`~dpcore.release.result.owner_notes`)."""
        return owner_notes(outside, self.treatments, left_out, self.protection.rows_per_person)


def prepare(schema: Schema, plan: ReleasePlan, *, ledger: BudgetLedger | None = None, budget: float | None = None,
            unit: str | None = None, count_epsilon: float = COUNT_EPSILON, frame: pd.DataFrame | None = None) -> Prepared:
    """Resolve the plan, the person bound and the unit of protection, and check them, before any row is released.

    ``frame``: an in-memory table, whose columns are checked before anything is written to the
    ledger (a streamed file's are checked as its first chunk is read). With a ledger, it is made
    to count people as every earlier spend did.
    """
    treatments, dropped, warnings = resolve(plan, schema)
    if frame is not None:
        check_columns(frame.columns, treatments)
    check_ledger_arguments(ledger, budget)
    bound = person_bound(schema)
    if frame is not None and bound is not None:
        check_unit_column(frame, bound.column)
    protection = protection_for(ledger, unit, count_epsilon, 1 if bound is None else bound.rows_per_person)
    check_padding(treatments, protection)
    people = counting(schema.privacy_unit, schema.rows_per_person)
    if ledger is not None:  # every spend of a dataset counts people the same way (checked again in the spend)
        ledger.count_people_as(people)
    return Prepared(treatments, dropped, warnings, bound, protection, people)


def kept(frame: pd.DataFrame, prepared: Prepared, entropy: int) -> tuple[pd.DataFrame, int]:
    """The rows a copy randomises — at most ``k`` per person when the schema names a privacy unit — and how many were left out.

    The unit column was checked by :func:`prepare`.
    """
    if prepared.bound is None:
        return frame, 0
    return bounded(frame, prepared.columns, prepared.bound, entropy)


def release_frame(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, random_state: RandomStateLike = None) -> pd.DataFrame:
    """Randomise an in-memory table by the plan and return the released table — nothing else.

    The bare mechanism, for previews and tests: rows stay in input order (at most ``k`` of each
    person's when the schema names a privacy unit), it neither checks nor charges a budget and
    it stores nothing, so never hand its output to a buyer (use :func:`release_table`, which also
    puts the rows in a random order).
    """
    prepared = prepare(schema, plan, frame=frame)
    treatments = prepared.treatments
    entropy = make_entropy(random_state)[0]
    frame, _unused = kept(frame, prepared, entropy)
    table = release_chunk(frame, 0, treatments, entropy, {})
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
    budget: float | None = None,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
) -> ReleaseResult:
    """Release an in-memory table: randomise it by the plan, within the budget, with its report.

    Parameters
    ----------
    frame : pandas.DataFrame
        The private table (as read by :func:`dpcore.loading.read_csv_bytes`).
    schema : Schema
        The owner's declarations; categories, bounds and bins come only from here. When it
        names a privacy-unit column, at most ``schema.rows_per_person`` (``k``) rows of each
        person are kept before randomising (:mod:`~dpcore.release.contributions`) and the copy
        costs ``k`` times its per-row ε; the report states ε per person, never the column.
    plan : ReleasePlan
        What happens to each column (see :func:`~dpcore.release.plan.default_plan`).
    budget : float, optional
        Without a ledger: the copy's ε (per person) must fit in it.
    ledger : BudgetLedger, optional
        The dataset's budget, where the copy is charged and stored (open it with
        :class:`dpcore.datasets.Catalog`). Without a ledger nothing stops a second,
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
    prepared = prepare(schema, plan, ledger=ledger, budget=budget, unit=unit, count_epsilon=count_epsilon, frame=frame)
    treatments, bound, protection = prepared.treatments, prepared.bound, prepared.protection
    entropy, seeded = make_entropy(random_state)
    key = None
    if ledger is None:
        check_fits(plan, protection, budget, None)
    else:
        version = version_fingerprint(frame, fingerprinted(treatments, bound))
        key = stored.release_key(version, treatments, seeded, entropy, protection, bound)
        found = None if fresh else stored.find(ledger, key)
        if found is not None:
            csv = b"".join(found.csv_parts())
            return ReleaseResult.handed_out_again(found.report, csv=csv, dataset_id=ledger.dataset_id)
        check_fits(plan, protection, None, ledger)
    outside: dict[str, int] = {}
    frame, left_out = kept(frame, prepared, entropy)
    table = release_chunk(frame, 0, treatments, entropy, outside)
    n = len(table)
    if protection.padded:
        rows = noisy_row_count(n, protection.count_epsilon, entropy)
        if rows > n:
            table = pa.concat_tables([table, filler_rows(treatments, rows - n, n, entropy)])
        table = shuffled(table, 0, entropy).slice(0, rows)
    else:
        table = shuffled(table, 0, entropy)
    sink = io.BytesIO()
    write_csv(table, sink, header=True, quoting=quoting(treatments))
    report = prepared.report(seeded)
    charged = 0.0
    if ledger is not None:
        copy = stored.writer(ledger, quoting(treatments))
        try:
            copy.append(table)
        except BaseException:
            copy.discard()
            raise
        charged = protection.cost(plan)
        assert key is not None  # made above with the ledger
        stored.charge_and_store(ledger, copy, key, report, label=label, epsilon=charged, protection=protection,
                                people=prepared.people)
    return ReleaseResult.made(report, epsilon_charged=charged, notes=prepared.notes(outside, left_out), csv=sink.getvalue(),
                              dataset_id=None if ledger is None else ledger.dataset_id)


def fingerprinted(treatments: Sequence[Treatment], bound: PersonBound | None) -> list[str]:
    """The columns a stored copy's key covers: the released ones, and the unit column (it decides which rows are kept)."""
    names = [t.name for t in treatments]
    return names if bound is None else [*names, bound.column]
