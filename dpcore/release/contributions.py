"""People with several rows in a copy: at most ``k`` rows of each person, chosen before any value is randomised.

When the schema names a privacy-unit column (:attr:`~dpcore.tables.schema.Schema.privacy_unit`), a
release first keeps at most ``rows_per_person`` rows of each person
(:func:`~dpcore.budget.persons.bound_keys`: a uniformly random subset; rows without a unit value are
left out), then randomises each kept row as before, and charges ``k`` times the
per-row ε by group privacy (the argument is in :mod:`dpcore.release`).

* **Which rows** are kept is drawn from the copy's own entropy (its own stream,
  :data:`~dpcore.release.randomness.PERSON_STREAM`), so a seeded copy is reproducible, and from
  the unit column alone: the other columns play no part in the choice.
* **Who is who** is decided by :func:`~dpcore.budget.persons.person_keys`, the same on every path
  (models, private bounds, copies): spaces, case and Unicode forms are folded and a number
  agrees with the text spelling it. So the in-memory table (read by pandas) and a streamed file
  (read chunk by chunk) group the same rows into the same people, and keep the same rows for a
  given seed. Two people whose 64-bit hashes collide would share one bound
  of ``k`` rows: fewer rows kept, never more.
* **The unit column never leaves**: a plan cannot keep or randomise it
  (:func:`~dpcore.release.plan.column_problems`), and no report names it or lists it among the
  dropped columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.budget.fingerprint import MISSING_HASH
from dpcore.budget.persons import bound_keys, check_unit_column, person_keys, rows_left_out, unit_problems
from dpcore.exceptions import DataError
from dpcore.release.randomness import PERSON_STREAM, generator
from dpcore.tables.schema import Schema


@dataclass(frozen=True)
class PersonBound:
    """A schema's privacy unit as a release uses it: the column naming each person, and ``k``."""

    column: str
    rows_per_person: int

    def key(self) -> dict[str, object]:
        """Its part of a stored copy's key (hashed there: another column or ``k`` makes another copy)."""
        return {"column": self.column, "rows_per_person": self.rows_per_person}


def person_bound(schema: Schema) -> PersonBound | None:
    """The schema's privacy unit, checked; None when every row is a person of its own.

    Raises :class:`DataError` with the schema's own sentence when the declaration is wrong (the
    column is not an identifier, ``k`` is not a whole number of at least 1).
    """
    column = schema.privacy_unit
    if column is None:
        return None
    role = schema[column].role if column in schema.names else None
    problems = unit_problems(column, schema.rows_per_person, role, None)
    if problems:
        raise DataError(" ".join(problems))
    return PersonBound(column, int(schema.rows_per_person))


def counted_rows_per_person(schema: Schema) -> int:
    """``k``, the most rows a person counts with in a copy: ``schema.rows_per_person`` with a unit column, else 1.

    A copy costs ``k`` times its per-row ε (see :func:`~dpcore.release.padding.copy_epsilon`).

    >>> from dpcore.tables.schema import ColumnSpec
    >>> counted_rows_per_person(Schema([ColumnSpec("visit", role="identifier", kind="categorical")], "visit", 3))
    3
    """
    bound = person_bound(schema)
    return 1 if bound is None else bound.rows_per_person


def keep_mask(keys: np.ndarray, bound: PersonBound, entropy: int) -> np.ndarray:
    """Which rows to keep: at most ``k`` per person, uniformly at random, from the copy's entropy."""
    return bound_keys(keys, bound.rows_per_person, generator(entropy, PERSON_STREAM))


def bounded(frame: pd.DataFrame, columns: list[str], bound: PersonBound, entropy: int) -> tuple[pd.DataFrame, int]:
    """The kept rows of ``frame`` (only ``columns``, in input order), and how many rows were left out.

    The caller has checked the unit column (:func:`~dpcore.budget.persons.check_unit_column`). The
    count is for the owner's eyes only: it is computed on the raw rows.
    """
    keep = keep_mask(person_keys(frame[bound.column]), bound, entropy)
    return frame.loc[keep, columns].reset_index(drop=True), int(len(keep) - np.count_nonzero(keep))


def scan_units(frames: Iterable[pd.DataFrame], bound: PersonBound) -> np.ndarray:
    """The person keys of a file read chunk by chunk (the first pass of a streamed release).

    Memory: eight bytes per row of the file, then about fifty per row while the mask is drawn.
    """
    parts = []
    for frame in frames:
        if bound.column not in frame.columns:
            check_unit_column(frame, bound.column)  # raises: the column is not in the table
        parts.append(person_keys(frame[bound.column]))
    keys = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    if keys.size and (keys == MISSING_HASH).all():
        check_unit_column(pd.DataFrame({bound.column: [None]}), bound.column)  # raises: the column is empty
    return keys


def kept_rows(frame: pd.DataFrame, schema: Schema) -> int:
    """How many rows a copy of ``frame`` will hold before padding: at most ``k`` per person (owner only).

    The row count to give :func:`~dpcore.release.usefulness.usefulness` when a person can have
    several rows: the buyer's estimates are over the kept rows.
    """
    bound = person_bound(schema)
    if bound is None:
        return len(frame)
    check_unit_column(frame, bound.column)
    return len(frame) - rows_left_out(frame[bound.column], bound.rows_per_person)
