"""A DP summary of a table for its analysts: a noisy row count and a noisy histogram of each declared column.

Privacy argument
----------------
The released vector is the row count followed, for each used column (feature or target, its
domain declared, none read from the data), by the counts of its bins: the declared categories
plus "(missing)" and "(other)" for a categorical column, and ten equal-width bins over the
declared bounds plus "(missing)" for a numeric one (a value outside the bounds falls in the end
bin). Bins are fixed by the declarations alone, so binning reads nothing from the data, and each
column's bins partition the rows. Adding or removing one row changes the row count by 1 and
exactly one bin of each of the ``c`` columns by 1: the L1 sensitivity of the whole vector is
``1 + c``. Discrete Laplace (two-sided geometric) noise of scale ``(1 + c)/ε`` on every entry
(:class:`~dpcore.mechanisms.Geometric`) makes it ε-DP under add/remove neighbours (pure, δ = 0);
the ledger converts that to the dataset's unit. Clipping negative counts to 0 is
post-processing.

Several rows per person: when the declarations name the column that says whose row each row is
and bound a person to ``k`` rows, at most ``k`` rows of each person are kept, chosen by a secret
random draw that reads only that column (:func:`~dpcore.budget.persons.bound_contributions`;
rows without a person are left out), and the noise scale is ``k(1 + c)/ε``: adding or removing one
person adds or removes at most ``k`` kept rows, each moving the count and one bin of each column
by 1, so the L1 sensitivity per person is ``k(1 + c)``. The count released is then the count of
kept rows, and the guarantee is ε-DP per person under add/remove.

Defaults: ten bins per number, chosen for tables in general (a readable bar chart per column
that leaves each bar many rows on tables of a few thousand rows; wide public bounds only widen
the bins, never change their number).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpcore.budget.accountant import BudgetLedger, Charge
from dpcore.budget.persons import bound_contributions, unit_problems
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.mechanisms import Geometric
from dpcore.tables.schema import MISSING_CATEGORY, ColumnSpec, Schema, category_codes
from dpcore.validation import RandomStateLike, check_random_state

SUMMARY_BINS = 10


@dataclass(frozen=True)
class DPSummary:
    """The released summary: ε spent, the noisy row count, and each column's bins with their noisy counts."""

    epsilon: float
    rows: int
    columns: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "rows": self.rows, "columns": {k: [list(b) for b in v] for k, v in self.columns.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DPSummary:
        columns = {str(k): [(str(label), int(count)) for label, count in v] for k, v in data["columns"].items()}
        return cls(float(data["epsilon"]), int(data["rows"]), columns)


def summary_columns(schema: Schema) -> list[ColumnSpec]:
    """The columns a summary describes: features and the target, their domains declared and complete."""
    return [c for c in schema.columns if c.role in ("feature", "target") and not c.bounds_from_data and not c.problems()]


def _unit_role(schema: Schema) -> str | None:
    return schema[schema.privacy_unit].role if schema.privacy_unit in schema.names else None


def _bins(values: pd.Series, spec: ColumnSpec) -> tuple[list[str], np.ndarray]:
    """The column's bin labels and each row's bin, from the declarations alone."""
    if spec.kind != "numeric":
        return spec.levels, category_codes(values, spec)
    lower, upper = spec.bounds
    edges = np.linspace(lower, upper, SUMMARY_BINS + 1)
    labels = [f"[{a:g}, {b:g})" for a, b in zip(edges[:-1], edges[1:], strict=True)] + [MISSING_CATEGORY]
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    scaled = np.clip((numbers - lower) / (upper - lower), 0.0, 1.0)
    codes = np.minimum((np.nan_to_num(scaled) * SUMMARY_BINS).astype(np.int64), SUMMARY_BINS - 1)
    return labels, np.where(np.isnan(numbers), SUMMARY_BINS, codes)


def dp_summary(
    frame: pd.DataFrame, schema: Schema, epsilon: float, ledger: BudgetLedger, *, random_state: RandomStateLike = None
) -> DPSummary:
    """Charge ``epsilon`` to ``ledger`` and release a noisy row count and histograms of the declared columns.

    Raises
    ------
    DataError
        No column has a complete declared domain, or the column naming each row's person is missing or empty.
    """
    columns = summary_columns(schema)
    if not columns:
        raise DataError(_("No column has a complete declared domain yet: declare the columns on the Data page first."))
    problems = unit_problems(schema.privacy_unit, schema.rows_per_person, _unit_role(schema), frame)
    if problems:
        raise DataError(problems[0])
    rows_each = schema.rows_per_person if schema.privacy_unit else 1
    sensitivity = rows_each * (1 + len(columns))
    charge = Charge(
        "DP summary for analysts",
        epsilon,
        privacy_unit=schema.privacy_unit or None,
        rows_per_person=rows_each,
        seeded=random_state is not None,
        mechanism=f"discrete Laplace on the row count and declared bins, sensitivity {sensitivity}",
        released=f"noisy row count and histograms of {len(columns)} columns",
        action=N_("The DP summary"),
        undone=N_("released"),
    )
    # A seed gives the rows kept and the noise two independent streams (one seed for both would tie the draws).
    keeping, noise = (None, None) if random_state is None else check_random_state(random_state).spawn(2)
    with ledger.charging(charge):
        if schema.privacy_unit:
            frame = frame[bound_contributions(frame[schema.privacy_unit], rows_each, keeping)]
        mechanism = Geometric(epsilon, sensitivity=sensitivity, random_state=noise)
        binned = [_bins(frame[c.name], c) for c in columns]
        exact = [len(frame)] + [int(v) for labels, codes in binned for v in np.bincount(codes, minlength=len(labels))]
        noisy = np.maximum(mechanism.randomise(np.asarray(exact, dtype=np.int64)), 0)
        released: dict[str, list[tuple[str, int]]] = {}
        start = 1
        for spec, (labels, _codes) in zip(columns, binned, strict=True):
            released[spec.name] = [
                (label, int(count)) for label, count in zip(labels, noisy[start : start + len(labels)], strict=True)
            ]
            start += len(labels)
    return DPSummary(float(epsilon), int(noisy[0]), released)
