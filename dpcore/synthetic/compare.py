"""The owner's look at a synthetic copy beside the real rows: each column's shares and every pair's error.

Owner-only, and free: it reads the real rows, so nothing in it may leave the owner's screen,
and it is not a release, so nothing is charged. It answers the question a buyer will ask
before paying — does the copy look like the table? — on the copy actually made, where the
utility preview (:mod:`~dpcore.synthetic.preview`) simulates one beforehand.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.release.plan import ReleasePlan
from dpcore.synthetic.domain import encode, synthetic_columns
from dpcore.synthetic.measure import marginal
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike, check_random_state


@dataclass(frozen=True)
class CopyComparison:
    """A synthetic copy beside the real rows it was made from (owner-only).

    Attributes
    ----------
    shares : pandas.DataFrame
        One row per (column, cell): ``column``, ``cell`` (the label the copy's file shows),
        ``position`` (the cell's place in the declared order), ``real`` and ``copy``, each the
        cell's share of its column's rows.
    pairs : pandas.DataFrame
        One row per pair of columns: ``first``, ``second`` and ``error``, the total-variation
        distance between the pair's real and copied two-way shares (0: the same, 1: disjoint).
    """

    shares: pd.DataFrame
    pairs: pd.DataFrame

    @property
    def one_way_error(self) -> float:
        """The mean total-variation distance of the single columns."""
        gaps = (self.shares["real"] - self.shares["copy"]).abs().groupby(self.shares["column"], sort=False).sum()
        return float(0.5 * gaps.mean())

    @property
    def two_way_error(self) -> float:
        """The mean of :attr:`pairs`' errors (NaN for a copy of one column)."""
        return float(self.pairs["error"].mean()) if len(self.pairs) else float("nan")


def _copy_cells(copy: pd.DataFrame, schema: Schema, plan: ReleasePlan) -> tuple[list[str], list[tuple[str, ...]], np.ndarray]:
    columns = synthetic_columns(schema, plan)
    codes = []
    for column in columns:
        header = column.treatment.header
        if header not in copy.columns:
            raise DataError(
                _("The copy has no column '{column}': compare it with the plan it was made with.").format(column=column.name)
            )
        positions = copy[header].astype(str).map({label: i for i, label in enumerate(column.labels)})
        if positions.isna().any():
            raise DataError(
                _(
                    "The copy's column '{column}' holds cells the plan does not declare: compare it with the plan it was made with."
                ).format(column=column.name)
            )
        codes.append(positions.to_numpy(dtype=np.int64))
    cells = np.column_stack(codes) if codes else np.empty((len(copy), 0), dtype=np.int64)
    return [c.name for c in columns], [c.labels for c in columns], cells


def compare_copy(
    frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, copy: pd.DataFrame, random_state: RandomStateLike = None
) -> CopyComparison:
    """Each column's shares and every pair's error, real rows against the copy made with ``plan`` (owner-only).

    The real rows are put in the copy's cells exactly as the copy's measurements put them (the
    declared categories and bins; a value outside the declared domain goes to a random cell,
    drawn from ``random_state``), so the two are compared cell by cell. Every pair of columns is
    counted (for 80 columns, 3,160 pairs: a bincount of the rows each).
    """
    names, labels, copied = _copy_cells(copy, schema, plan)
    columns = synthetic_columns(schema, plan)
    real = encode(frame, columns, check_random_state(random_state))
    shape = tuple(len(cells) for cells in labels)

    def shares(cells: np.ndarray, clique: tuple[int, ...]) -> np.ndarray:
        counts = marginal(cells, shape, clique)
        return counts / max(counts.sum(), 1.0)

    one_way = [
        pd.DataFrame(
            {
                "column": name,
                "cell": list(cells),
                "position": np.arange(len(cells)),
                "real": shares(real, (i,)),
                "copy": shares(copied, (i,)),
            }
        )
        for i, (name, cells) in enumerate(zip(names, labels, strict=True))
    ]
    pairs = [
        (names[i], names[j], 0.5 * float(np.abs(shares(real, (i, j)) - shares(copied, (i, j))).sum()))
        for i, j in itertools.combinations(range(len(names)), 2)
    ]
    return CopyComparison(
        pd.concat(one_way, ignore_index=True)
        if one_way
        else pd.DataFrame(columns=["column", "cell", "position", "real", "copy"]),
        pd.DataFrame(pairs, columns=["first", "second", "error"]),
    )
