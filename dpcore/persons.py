"""People with several rows: bounding each person's rows, and what a row's guarantee means for a person.

When a table declares a **privacy-unit column** (a patient, customer or employee number) and
a maximum number of rows per person ``k``, every release protects the *person*:

1. :func:`bound_contributions` keeps at most ``k`` rows of each person, a uniformly random
   subset chosen by looking at the unit column only (rows whose unit value is missing count as
   one person, so they cannot add up to more than ``k`` rows either).
2. A mechanism that is (ε, δ)-DP when one **row** is added or removed is, by group privacy,
   ``(k·ε, k·e^((k−1)·ε)·δ)``-DP when one **person** — at most ``k`` rows after step 1 — is added
   or removed (Dwork & Roth 2014, Theorem 2.2 and its (ε, δ) form). :func:`per_person` states
   that, and :func:`per_row` inverts it: to spend ``ε`` per person, a model is fitted at
   ``ε/k`` per row, which is the same as scaling every count, sum and score sensitivity by ``k``.

The unit column itself is an identifier: it is never a feature, never in a copy or a report.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.exceptions import DataError
from dpcore.validation import RandomStateLike, check_random_state


def per_person(epsilon: float, delta: float, rows_per_person: int) -> tuple[float, float]:
    """The (ε, δ) for adding or removing one person of at most ``rows_per_person`` rows.

    >>> per_person(0.25, 0.0, 4)
    (1.0, 0.0)
    """
    k = _check_rows(rows_per_person)
    return k * epsilon, k * math.exp((k - 1) * epsilon) * delta


def per_row(epsilon: float, delta: float, rows_per_person: int) -> tuple[float, float]:
    """The per-row (ε, δ) whose :func:`per_person` guarantee is ``(epsilon, delta)``.

    >>> per_row(1.0, 0.0, 4)
    (0.25, 0.0)
    """
    k = _check_rows(rows_per_person)
    row_epsilon = epsilon / k
    return row_epsilon, delta / (k * math.exp((k - 1) * row_epsilon))


def bound_contributions(units: pd.Series, rows_per_person: int, random_state: RandomStateLike = None) -> np.ndarray:
    """A mask keeping at most ``rows_per_person`` rows per person, chosen uniformly at random.

    Only ``units`` is read, and only to group rows: which rows of a person are kept is a
    random draw, independent of every other column. Missing unit values form one group.

    >>> mask = bound_contributions(pd.Series(["a", "a", "a", "b", None, None]), 2, random_state=0)
    >>> int(mask[:3].sum()), bool(mask[3]), int(mask[4:].sum())
    (2, True, 2)
    """
    k = _check_rows(rows_per_person)
    codes, _ = pd.factorize(units, use_na_sentinel=True)  # missing → -1: one group of its own
    rng = check_random_state(random_state)
    order = np.lexsort((rng.random(len(codes)), codes))
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    keep = np.zeros(len(codes), dtype=bool)
    keep[order] = (np.arange(len(codes)) - group_start) < k
    return keep


def check_unit_column(frame: pd.DataFrame, column: str) -> None:
    """A sentence (as :class:`DataError`) when the declared unit column is missing or empty; never a value."""
    if column not in frame.columns:
        raise DataError(f"The column '{column}' that identifies each person is not in the table: choose the column that "
                        "does, or say that each person has one row.")
    if frame[column].isna().all() or (frame[column].astype("string").str.strip() == "").all():
        raise DataError(f"The column '{column}' that identifies each person is empty: choose the column that does, or say "
                        "that each person has one row.")


def unit_problems(column: str | None, rows_per_person: object, role: str | None, frame: pd.DataFrame | None) -> list[str]:
    """What is wrong with a privacy-unit declaration (``role`` is the declared role of ``column``), as sentences."""
    if column is None:
        return [] if rows_per_person == 1 else ["Name the column that identifies each person, or count one row each."]
    if role != "identifier":
        return [f"The column '{column}' that identifies each person must be declared an identifier."]
    if isinstance(rows_per_person, bool) or not isinstance(rows_per_person, int) or rows_per_person < 1:
        return ["The most rows that count for one person must be a whole number of at least 1."]
    try:
        if frame is not None:
            check_unit_column(frame, column)
    except DataError as error:
        return [str(error)]
    return []


def rows_left_out(units: pd.Series, rows_per_person: int) -> int:
    """How many rows the bound leaves out (for the owner's eyes only: it is computed on the raw rows)."""
    counts = units.value_counts(dropna=False).to_numpy()
    return int(np.maximum(counts - _check_rows(rows_per_person), 0).sum())


def _check_rows(rows_per_person: int) -> int:
    if isinstance(rows_per_person, bool) or int(rows_per_person) != rows_per_person or rows_per_person < 1:
        raise ValueError(f"rows_per_person must be a whole number of at least 1, got {rows_per_person!r}")
    return int(rows_per_person)
