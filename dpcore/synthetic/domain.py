"""The declared domain a synthetic copy is drawn over: every column's cells, read from the schema, never from the data.

A categorical column's cells are its declared categories; a numeric column's are its declared
bins (the plan's bins or edges, else :data:`~dpcore.release.plan.DEFAULT_BINS` equal-width bins
over the declared bounds). A column that may be missing gets a ``(missing)`` cell of its own,
so the copy keeps the share of missing values. A value outside the declared domain (an
undeclared category, a number outside the bounds goes to its end bin) of a column that cannot
be missing is replaced by a uniformly random cell: a per-record map with its own coin, so one
person's row still moves one cell of every marginal, whatever the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.release.columns import Treatment, treatment
from dpcore.release.plan import DEFAULT_BINS, ColumnPlan, ReleasePlan
from dpcore.release.writing import escape_label
from dpcore.tables.schema import Schema


@dataclass(frozen=True)
class SyntheticColumn:
    """One column of the copy: its name, its cells' labels (as written in the file) and how values become cells."""

    name: str
    labels: tuple[str, ...]
    treatment: Treatment

    @property
    def size(self) -> int:
        return len(self.labels)

    def cells(self, frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        """Each row's cell; a value outside the declared domain gets a uniformly random cell."""
        codes, _outside = self.treatment.inputs(frame)
        codes = np.asarray(codes, dtype=np.int64)
        outside = (codes < 0) | (codes >= self.size)
        if outside.any():
            codes = codes.copy()
            codes[outside] = rng.integers(0, self.size, size=int(outside.sum()))
        return codes

    def entry(self) -> dict[str, object]:
        """This column's part of the report: its declared cells, never a count."""
        t = self.treatment
        entry: dict[str, object] = {
            "column": self.name,
            "header": t.header,
            "cells": list(self.labels),
            "kind": "bins" if t.mechanism == "bins" else "categories",
        }
        if t.mechanism == "bins":
            entry["edges"] = list(t.bin_edges())
        return entry


def synthetic_columns(schema: Schema, plan: ReleasePlan) -> list[SyntheticColumn]:
    """The columns a synthetic copy holds: the plan's released columns, over their declared domains.

    Raises :class:`DataError` when the plan is wrong for the schema, or releases no column.
    """
    plan.check(schema)
    columns = []
    for index, entry in enumerate(plan.columns):
        if entry.mechanism == "drop" or entry.column == schema.privacy_unit:
            continue
        spec = schema[entry.column]
        missing = "category" if spec.may_be_missing else "random"
        if spec.kind == "categorical":
            planned = ColumnPlan(entry.column, "k-ary", epsilon=1.0, missing=missing)
        elif entry.mechanism == "bins":
            planned = ColumnPlan(entry.column, "bins", epsilon=1.0, bins=entry.bins, edges=entry.edges, missing=missing)
        else:
            planned = ColumnPlan(entry.column, "bins", epsilon=1.0, bins=DEFAULT_BINS, missing=missing)
        t = treatment(index, planned, spec)
        labels = tuple(escape_label(x) for x in t.labels)
        if len(set(labels)) != len(labels):
            raise DataError(
                _("Column '{name}': two of its values would be written the same way in the file.").format(name=entry.column)
            )
        columns.append(SyntheticColumn(entry.column, labels, t))
    if not columns:
        raise DataError(_("The plan releases no column: choose a mechanism other than drop for at least one."))
    return columns


def encode(frame: pd.DataFrame, columns: list[SyntheticColumn], rng: np.random.Generator) -> np.ndarray:
    """The table as cells, one column per synthetic column (rows × columns, int64)."""
    absent = [c.name for c in columns if c.name not in frame.columns]
    if absent:
        raise DataError(
            _("The plan releases columns that are not in the table: {names}.").format(names=", ".join(f"'{n}'" for n in absent))
        )
    if not columns:
        return np.empty((len(frame), 0), dtype=np.int64)
    return np.column_stack([c.cells(frame, rng) for c in columns]).astype(np.int64)


def decode(cells: np.ndarray, columns: list[SyntheticColumn]) -> pd.DataFrame:
    """Cells back to the labels the file shows (headers escaped like the randomized copy's)."""
    data = {c.treatment.header: np.asarray(c.labels, dtype=object)[cells[:, i]] for i, c in enumerate(columns)}
    return pd.DataFrame(data)


def copy_cells(copy: pd.DataFrame, columns: list[SyntheticColumn]) -> np.ndarray:
    """A copy's values (as its file writes them) back to cells, or a sentence when the copy is not of ``columns``."""
    codes = []
    for column in columns:
        header = column.treatment.header
        if header not in copy.columns:
            raise DataError(
                _("The copy has no column '{column}': compare it with the plan it was made with.").format(column=column.name)
            )
        positions = pd.Index(column.labels).get_indexer(pd.Index(copy[header].astype(str)))  # -1: a cell not declared
        if (positions < 0).any():
            raise DataError(
                _(
                    "The copy's column '{column}' holds cells the plan does not declare: compare it with the plan it was made with."
                ).format(column=column.name)
            )
        codes.append(positions.astype(np.int64))
    return np.column_stack(codes) if codes else np.empty((len(copy), 0), dtype=np.int64)
