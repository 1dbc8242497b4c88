"""People with several rows: bounding each person's rows, and what a row's guarantee means for a person.

When a table declares a **privacy-unit column** (a patient, customer or employee number) and
a maximum number of rows per person ``k``, every release protects the *person*:

1. :func:`bound_contributions` keeps at most ``k`` rows of each person, a uniformly random
   subset chosen by looking at the unit column only; spellings of one identifier agree
   (:func:`person_keys`), and rows whose unit value is missing are left out.
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

from dpcore.budget.fingerprint import MISSING_HASH, cell_hashes
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.validation import RandomStateLike, check_random_state

#: How a dataset counts people until it declares a privacy-unit column (the ledger's word for it).
ONE_ROW_EACH = "one row per person"


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


def person_keys(units: pd.Series) -> np.ndarray:
    """One key per row naming its person, the same on every path (models, bounds, copies).

    Spellings of one identifier agree: surrounding spaces, letter case and Unicode forms are
    folded, and a number agrees with the text that writes it (``1001``, ``"1001"``, ``1001.0``).
    A missing or blank value gets :data:`~dpcore.budget.fingerprint.MISSING_HASH`.
    """
    text = units.astype("string").str.normalize("NFKC").str.strip().str.casefold()
    return cell_hashes(text.mask(text == ""))


def bound_keys(keys: np.ndarray, rows_per_person: int, random_state: RandomStateLike = None) -> np.ndarray:
    """A mask keeping at most ``rows_per_person`` rows per key, uniformly at random; rows without a person are dropped.

    A row whose person is unknown cannot be counted against anyone's bound, so it is left out
    (a filter on the row itself): pooled, such rows would let one person's unlabelled rows add
    up past the bound, and adding one would change which *other* unlabelled rows are kept.
    """
    k = _check_rows(rows_per_person)
    codes, _ = pd.factorize(keys)
    rng = check_random_state(random_state)
    order = np.lexsort((rng.random(len(codes)), codes))
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    keep = np.zeros(len(codes), dtype=bool)
    keep[order] = (np.arange(len(codes)) - group_start) < k
    return keep & (np.asarray(keys) != MISSING_HASH)


def bound_contributions(units: pd.Series, rows_per_person: int, random_state: RandomStateLike = None) -> np.ndarray:
    """A mask keeping at most ``rows_per_person`` rows per person, chosen uniformly at random.

    Only ``units`` is read, and only to group rows (:func:`person_keys`): which rows of a
    person are kept is a random draw, independent of every other column. Rows without a
    person are left out.

    >>> mask = bound_contributions(pd.Series(["a", "a", " A", "b", None, ""]), 2, random_state=0)
    >>> int(mask[:3].sum()), bool(mask[3]), int(mask[4:].sum())
    (2, True, 0)
    """
    return bound_keys(person_keys(units), rows_per_person, random_state)


def counting(privacy_unit: str | None, rows_per_person: int) -> str:
    """How a table's declarations count people, as the ledger records it for every spend."""
    if privacy_unit is None:
        return ONE_ROW_EACH
    return f"the column '{privacy_unit}', up to {rows_per_person} rows per person"


def check_unit_column(frame: pd.DataFrame, column: str) -> None:
    """A sentence (as :class:`DataError`) when the declared unit column is missing or empty; never a value."""
    if column not in frame.columns:
        raise DataError(
            _(
                "The column '{column}' that identifies each person is not in the table: choose the column that "
                "does, or say that each person has one row."
            ).format(column=column)
        )
    spelled = frame[column].astype("string").str.normalize("NFKC").str.strip()
    if spelled.fillna("").eq("").all():  # every key would be MISSING_HASH: no need to hash them
        raise DataError(
            _(
                "The column '{column}' that identifies each person is empty: choose the column that does, or say "
                "that each person has one row."
            ).format(column=column)
        )


def unit_problems(column: str | None, rows_per_person: object, role: str | None, frame: pd.DataFrame | None) -> list[str]:
    """What is wrong with a privacy-unit declaration (``role`` is the declared role of ``column``), as sentences."""
    if column is None:
        return [] if rows_per_person == 1 else [_("Name the column that identifies each person, or count one row each.")]
    if role != "identifier":
        return [_("The column '{column}' that identifies each person must be declared an identifier.").format(column=column)]
    if isinstance(rows_per_person, bool) or not isinstance(rows_per_person, int) or rows_per_person < 1:
        return [_("The most rows that count for one person must be a whole number of at least 1.")]
    try:
        if frame is not None:
            check_unit_column(frame, column)
    except DataError as error:
        return [str(error)]
    return []


def rows_left_out(units: pd.Series, rows_per_person: int) -> int:
    """How many rows the bound leaves out, those without a person included (owner's eyes only: raw rows)."""
    keys = person_keys(units)
    known = keys[keys != MISSING_HASH]
    counts = pd.Series(known).value_counts().to_numpy()
    return int(len(keys) - np.minimum(counts, _check_rows(rows_per_person)).sum())


def _check_rows(rows_per_person: int) -> int:
    if isinstance(rows_per_person, bool) or int(rows_per_person) != rows_per_person or rows_per_person < 1:
        raise ValueError(f"rows_per_person must be a whole number of at least 1, got {rows_per_person!r}")
    return int(rows_per_person)
