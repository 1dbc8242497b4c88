"""How a copy meets its dataset's unit of protection, and what it costs.

Under replace-one neighbours a copy's row count is public and it costs the plan's
per-record ε. Under add/remove the row count would tell whether a person is in the table, so
the copy is padded to a noisy row count (filler rows added, or random rows cut) and costs
``count_epsilon`` more. When a person can have up to ``k`` rows (a privacy-unit column), the
copy costs ``k`` times that per person, by group privacy; the privacy argument is in
:mod:`dpcore.release`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa

from dpcore.budget.accountant import ADD_REMOVE, REPLACE_ONE, BudgetLedger, check_unit
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms import Geometric, keyed
from dpcore.release.columns import Treatment
from dpcore.release.contributions import counted_rows_per_person
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import (
    CUT_STREAM,
    FILLER_INPUT_STREAMS,
    FILLER_ORDER_STREAM,
    FILLER_STREAMS,
    PAD_STREAM,
    generator,
    order_words,
)
from dpcore.tables.schema import Schema
from dpcore.validation import epsilon_decimal

#: ε of the noisy row count that pads a copy for the add/remove unit. Chosen for tables in
#: general: about ±14 filler or dropped rows (the geometric noise's standard deviation), which
#: moves a share by under 0.1 % from 20,000 rows up, at a tenth of a typical ε = 1 budget.
COUNT_EPSILON = 0.1
#: The cut's census cells are the cut words' top ``CUT_BITS`` bits (:func:`cut_census`).
CUT_BITS = 16
#: The last pair of a cut that keeps no row (every cut word is at least 0).
KEEP_NONE = (-1, 0)


@dataclass(frozen=True)
class Protection:
    """How a copy meets its dataset's unit: the unit, the noisy row count's ε when padded, and ``k``.

    ``rows_per_person`` is the most rows one person has in the copy (1 unless the schema names a
    privacy-unit column): everything a row costs is multiplied by it (group privacy).
    """

    unit: str
    count_epsilon: float = 0.0
    rows_per_person: int = 1

    @property
    def padded(self) -> bool:
        return self.count_epsilon > 0

    def row_epsilon(self, per_record_epsilon: float) -> Decimal:
        """ε per row in the unit: the records' ε, plus the noisy row count's when padded (each part rounded up)."""
        parts = [epsilon_decimal(per_record_epsilon)] + ([epsilon_decimal(self.count_epsilon)] if self.padded else [])
        return sum(parts, Decimal(0))

    def person_epsilon(self, per_record_epsilon: float) -> Decimal:
        """ε per person in the unit: ``k`` × :meth:`row_epsilon` (group privacy)."""
        return self.row_epsilon(per_record_epsilon) * self.rows_per_person

    def cost(self, plan: ReleasePlan) -> float:
        """What a copy by ``plan`` costs per person in the unit (what is checked, charged and reported)."""
        return float(self.person_epsilon(plan.per_record_epsilon))


def protection_for(ledger: BudgetLedger | None, unit: str | None, count_epsilon: float, rows_per_person: int = 1) -> Protection:
    """The protection of a copy in ``unit`` (default: the ledger's, or replace-one without one), ``k`` rows per person."""
    if unit is None:
        unit = ledger.unit if isinstance(ledger, BudgetLedger) else REPLACE_ONE
    check_unit(unit)
    if isinstance(rows_per_person, bool) or not isinstance(rows_per_person, (int, np.integer)) or rows_per_person < 1:
        raise ValueError(f"rows_per_person must be a whole number >= 1, got {rows_per_person!r}")
    if unit == ADD_REMOVE:
        if not (isinstance(count_epsilon, (int, float)) and math.isfinite(count_epsilon) and count_epsilon > 0):
            raise ValueError(f"count_epsilon must be a finite number > 0, got {count_epsilon!r}")
        return Protection(unit, float(count_epsilon), int(rows_per_person))
    return Protection(unit, rows_per_person=int(rows_per_person))


def copy_epsilon(plan: ReleasePlan, unit: str, count_epsilon: float = COUNT_EPSILON, rows_per_person: int = 1) -> float:
    """What a copy by ``plan`` costs per person in a dataset of ``unit`` (the row count's ε included when padded).

    With ``rows_per_person`` = k > 1 (a privacy-unit column, see
    :func:`~dpcore.release.contributions.counted_rows_per_person`) this is ``k`` times the
    per-row cost: a person's up to ``k`` rows add up.
    """
    return protection_for(None, unit, count_epsilon, rows_per_person).cost(plan)


def count_epsilon_for(unit: str, count_epsilon: float = COUNT_EPSILON, rows_per_person: int = 1) -> float:
    """The ε per person a copy spends on its noisy row count in a dataset of ``unit`` (0 where the count is public).

    ``k`` × ``count_epsilon`` with ``rows_per_person`` = k: a person's rows each move the count by one.
    """
    protection = protection_for(None, unit, count_epsilon, rows_per_person)
    if protection.rows_per_person == 1:
        return protection.count_epsilon
    return float(epsilon_decimal(protection.count_epsilon) * protection.rows_per_person)


def copy_costs(plan: ReleasePlan | None, unit: str, schema: Schema) -> tuple[float, float]:
    """``(copy ε, row-count ε)`` per person for a copy of a table with ``schema``'s declarations (0 for a missing plan).

    The person bound comes from the schema (:func:`~dpcore.release.contributions.counted_rows_per_person`).
    """
    k = counted_rows_per_person(schema)
    return (0.0 if plan is None else copy_epsilon(plan, unit, rows_per_person=k)), count_epsilon_for(unit, rows_per_person=k)


def columns_budget(ledger: BudgetLedger, schema: Schema) -> float:
    """What is left of the dataset's budget for a copy's columns, once its noisy row count is paid for."""
    return ledger.remaining - copy_costs(None, ledger.unit, schema)[1]


def check_padding(treatments: Iterable[Treatment], protection: Protection) -> None:
    if protection.padded and any(t.mechanism == "keep" for t in treatments):
        raise DataError(
            _(
                "A column copied unchanged would tell the filler rows of an add/remove copy from the real ones. Drop "
                "the kept columns, or declare the dataset's unit 'one person's values may change'."
            )
        )


def noisy_row_count(n: int, count_epsilon: float, entropy: int) -> int:
    """``n`` plus two-sided geometric noise of ε = ``count_epsilon`` (sensitivity 1), at least 0."""
    noise = Geometric(count_epsilon, 1, random_state=generator(entropy, PAD_STREAM))
    return max(int(noise.randomise(np.array([n]))[0]), 0)


def filler_rows(treatments: Sequence[Treatment], count: int, key: bytes) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """``count`` filler rows, their keys (``0 … count−1``) and their keyed order words.

    Each column's mechanism is applied to an input drawn uniformly from its domain: an
    out-of-domain code makes randomized response draw a uniform category; a Laplace column gets
    a uniform number within its declared bounds. Every draw is keyed by the filler's index in
    streams of the fillers' own, so the fillers are the same on every backend.
    """
    index = np.arange(count, dtype=np.uint64)
    arrays = []
    for t in treatments:
        if t.mechanism == "laplace":
            lower, upper, _unused = t.laplace_domain()
            inputs = lower + (upper - lower) * keyed.uniforms(key, index, FILLER_INPUT_STREAMS + t.index)[:, 0]
        else:
            inputs = np.full(count, -1, dtype=np.int64)
        arrays.append(t.as_array(t.randomise(inputs, index, key, FILLER_STREAMS)))
    table = pa.Table.from_arrays(arrays, names=[t.header for t in treatments])
    return table, index, order_words(key, index, FILLER_ORDER_STREAM)


# --- the cut: which real rows a copy cut to its noisy row count keeps ---------------------------------
#
# A cut keeps the ``limit`` rows with the smallest (cut word, row key) pairs: a uniformly random
# subset, drawn apart from the order words, so which rows are kept says nothing about where they
# go in the order (nor, on Spark, about which parts are full), whatever the true row count.


def cut_words(key: bytes, rows: np.ndarray) -> np.ndarray:
    """Each real row's keyed 63-bit cut word (non-negative ``int64``), in a stream of its own."""
    return order_words(key, rows, CUT_STREAM)


def smallest(words: np.ndarray, rows: np.ndarray, limit: int) -> np.ndarray:
    """Which of the rows a cut to ``limit`` rows keeps: those with the smallest ``(word, row key)`` (a boolean mask)."""
    keep = np.zeros(len(words), dtype=bool)
    keep[np.lexsort((np.asarray(rows, dtype=np.uint64), words))[:limit]] = True
    return keep


def census_cell(words: np.ndarray) -> np.ndarray:
    """Each cut word's census cell: its top :data:`CUT_BITS` bits."""
    return np.asarray(words) >> (63 - CUT_BITS)


def cut_census(words: np.ndarray) -> np.ndarray:
    """How many cut words fall in each census cell (:func:`census_cell`); census add up over parts."""
    return np.bincount(census_cell(words), minlength=1 << CUT_BITS).astype(np.int64)


def in_cell(words: np.ndarray, rows: np.ndarray, cell: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut words and row keys of the rows in one census cell (for :func:`last_kept`'s ``cell_rows``)."""
    inside = census_cell(words) == cell
    return words[inside], np.asarray(rows)[inside]


def boundary_cell(census: np.ndarray, limit: int) -> tuple[int, int]:
    """The census cell of the ``limit``-th smallest cut word (``limit`` ≥ 1), and how many of its rows the cut keeps."""
    below = np.cumsum(census)
    cell = int(np.searchsorted(below, limit, side="left"))
    return cell, limit - (int(below[cell - 1]) if cell else 0)


def last_kept(census: np.ndarray, limit: int, cell_rows: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> tuple[int, int]:
    """The largest ``(cut word, row key)`` a cut to ``limit`` rows keeps (:data:`KEEP_NONE` for none).

    For rows that cannot all be held at once: ``census`` is the :func:`cut_census` of every row,
    and ``cell_rows(cell)`` returns the cut words and row keys of the rows in one cell, so only
    that cell's rows (about ``n·2^-CUT_BITS``) are ever gathered. :func:`cut_mask` with the
    result keeps exactly the rows :func:`smallest` keeps.
    """
    if limit <= 0:
        return KEEP_NONE
    cell, keep = boundary_cell(census, limit)
    words, rows = cell_rows(cell)
    rows = np.asarray(rows, dtype=np.uint64)
    last = np.lexsort((rows, words))[keep - 1]
    return int(words[last]), int(rows[last])


def cut_mask(words: np.ndarray, rows: np.ndarray, last: tuple[int, int]) -> np.ndarray:
    """Which rows a cut keeps: those whose ``(cut word, row key)`` is at most ``last`` (:func:`last_kept`)."""
    word, row = last
    return (words < word) | ((words == word) & (np.asarray(rows, dtype=np.uint64) <= np.uint64(row)))
