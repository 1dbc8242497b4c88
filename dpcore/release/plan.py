"""The release plan: what happens to each column of a table, checked against the schema.

A :class:`ReleasePlan` holds one :class:`ColumnPlan` per column. The plan reads nothing from
the data: categories, bounds and bins come from the owner's schema, and a column whose domain
was read from the data is refused with the sentence every artefact uses
(:func:`~dpcore.tables.schema.release_refusal`): releasing it would publish values of real people.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms import COIN_EPSILON
from dpcore.tables.schema import Schema, release_refusal
from dpcore.validation import epsilon_decimal

MECHANISMS = ("drop", "keep", "coin", "k-ary", "bins", "laplace")
RANDOMISED = ("coin", "k-ary", "bins", "laplace")
MISSING_POLICIES = ("random", "category")
DEFAULT_EPSILON = 1.0
DEFAULT_BINS = 8
MAX_BINS = 10_000
PLAN_FORMAT = "dpcore-release-plan/1"


@dataclass
class ColumnPlan:
    """What happens to one column.

    Parameters
    ----------
    column : str
        The column's name in the schema.
    mechanism : str
        One of :data:`MECHANISMS`.
    epsilon : float, optional
        ε of one value, for ``k-ary``, ``bins`` and ``laplace`` (the coin's is always ln 3).
    bins : int, optional
        Number of equal-width bins over the declared bounds (``bins`` only).
    edges : list of float, optional
        Public bin edges instead of ``bins`` (increasing; values outside go to the end bins).
    missing : {"random", "category"}
        For randomized-response columns: a missing value is replaced by a uniformly random
        category like an undeclared one (``"random"``), or randomised as a ``"(missing)"``
        category of its own (``"category"``).
    """

    column: str
    mechanism: str = "drop"
    epsilon: float | None = None
    bins: int | None = None
    edges: list[float] | None = None
    missing: str = "random"

    @property
    def cost(self) -> float:
        """ε this column adds to every record (0 for ``drop`` and ``keep``)."""
        if self.mechanism == "coin":
            return COIN_EPSILON
        if self.mechanism in RANDOMISED and self.epsilon is not None:
            return float(self.epsilon)
        return 0.0


@dataclass
class ReleasePlan:
    """One :class:`ColumnPlan` per column, in the order of the released file.

    Schema columns the plan does not name are dropped.
    """

    columns: list[ColumnPlan] = field(default_factory=list)

    def __getitem__(self, name: str) -> ColumnPlan:
        for entry in self.columns:
            if entry.column == name:
                return entry
        raise KeyError(name)

    @property
    def released_columns(self) -> list[str]:
        return [c.column for c in self.columns if c.mechanism != "drop"]

    @property
    def randomised_columns(self) -> list[str]:
        """The columns whose values are randomized (the buyer can debias these)."""
        return [c.column for c in self.columns if c.mechanism in RANDOMISED]

    def epsilon_by_column(self) -> dict[str, float]:
        """ε per released column (0 for kept public columns)."""
        return {c.column: c.cost for c in self.columns if c.mechanism != "drop"}

    @property
    def per_record_epsilon(self) -> float:
        """Σ ε over the randomised columns (sequential composition), each part rounded up."""
        parts = (epsilon_decimal(c.cost) for c in self.columns if c.mechanism in RANDOMISED and c.cost > 0)
        return float(sum(parts, Decimal(0)))

    def problems(self, schema: Schema) -> list[str]:
        """Every problem with the plan for ``schema``, as sentences (empty when fine)."""
        names = [c.column for c in self.columns]
        repeats = sorted({n for n in names if names.count(n) > 1})
        # The columns whose domain was read from the data share one sentence (the same as every other artefact's).
        found = [(entry.column, column_problems(entry, schema)) for entry in self.columns]
        refused = [name for name, said in found if said == [release_refusal([name])]]
        problems = [p for name, said in found if name not in refused for p in said]
        return (
            problems
            + ([release_refusal(refused)] if refused else [])
            + [_("Column '{n}' appears more than once in the plan.").format(n=n) for n in repeats]
        )

    def check(self, schema: Schema) -> None:
        """Raise :class:`DataError` with every problem if there is one."""
        problems = self.problems(schema)
        if problems:
            raise DataError(" ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "columns": [asdict(c) for c in self.columns]}

    @classmethod
    def from_dict(cls, data: object) -> ReleasePlan:
        if not isinstance(data, dict) or not isinstance(data.get("columns"), list):
            raise DataError(_("The plan is not in the expected form (a 'columns' list with one entry per column)."))
        columns = []
        for item in data["columns"]:
            if not isinstance(item, dict) or not isinstance(item.get("column"), str):
                raise DataError(_("Every entry of the plan needs a 'column' name and a 'mechanism'."))
            name = item["column"]
            edges = item.get("edges")
            if edges is not None and not isinstance(edges, list):
                raise DataError(_("The bin edges of '{name}' must be a list of numbers.").format(name=name))
            columns.append(
                ColumnPlan(
                    name,
                    str(item.get("mechanism") or "drop"),
                    epsilon=_number(item.get("epsilon"), f"the ε of '{name}'"),
                    bins=_whole(item.get("bins"), _("the number of bins of '{name}'").format(name=name)),
                    edges=None if edges is None else [_edge(e, name) for e in edges],
                    missing=str(item.get("missing") or "random"),
                )
            )
        return cls(columns)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleasePlan:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise DataError(_("The plan file is not valid JSON.")) from None
        return cls.from_dict(data)

    def to_frame(self) -> pd.DataFrame:
        """An editable table, one row per column (``edges`` joined by ' | ')."""
        rows = [
            {
                "column": c.column,
                "mechanism": c.mechanism,
                "epsilon": c.cost if c.mechanism == "coin" else c.epsilon,
                "bins": c.bins,
                "edges": " | ".join(f"{e:g}" for e in c.edges) if c.edges else "",
                "missing": c.missing,
            }
            for c in self.columns
        ]
        return pd.DataFrame(rows, columns=["column", "mechanism", "epsilon", "bins", "edges", "missing"])

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> ReleasePlan:
        """Rebuild a plan from the edited table (the coin's ε is fixed whatever its cell says)."""
        columns = []
        for row in frame.to_dict("records"):
            name = str(row.get("column"))
            mechanism = str(row.get("mechanism") or "drop")
            text = row.get("edges")
            edges = [_edge(e, name) for e in text.split("|")] if isinstance(text, str) and text.strip() else None
            epsilon = None if mechanism == "coin" else _number(row.get("epsilon"), f"the ε of '{name}'")
            bins = _whole(row.get("bins"), _("the number of bins of '{name}'").format(name=name))
            columns.append(ColumnPlan(name, mechanism, epsilon, bins, edges, str(row.get("missing") or "random")))
        return cls(columns)


def _number(value: Any, what: str) -> float | None:
    """``value`` as a float, None when blank; a value float() refuses is a :class:`DataError`."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise DataError(_("{what} must be a number.").format(what=what[:1].upper() + what[1:])) from None


def _edge(value: object, name: str) -> float:
    """A bin edge: a number (a blank edge is refused like text, not left as a hole in the list)."""
    number = _number(value, _("a bin edge of '{name}'").format(name=name))
    if number is None:
        raise DataError(_("A bin edge of '{name}' must be a number.").format(name=name))
    return number


def _whole(value: object, what: str) -> int | None:
    number = _number(value, what)
    if number is None:
        return None
    if not math.isfinite(number) or number != int(number):
        raise DataError(_("{what} must be a whole number.").format(what=what[:1].upper() + what[1:]))
    return int(number)


def column_problems(entry: ColumnPlan, schema: Schema) -> list[str]:
    name, mechanism = entry.column, entry.mechanism
    if mechanism not in MECHANISMS:
        return [_("Column '{name}': the mechanism must be one of {join}.").format(name=name, join=", ".join(MECHANISMS))]
    if name not in schema.names:
        return [_("Column '{name}' is in the plan but not in the schema.").format(name=name)]
    spec = schema[name]
    if mechanism == "drop":
        return []
    if name == schema.privacy_unit:
        return [
            _(
                "Column '{name}' identifies each person (the privacy unit): it only decides which rows are kept and "
                "is never copied or randomised. Set it to drop."
            ).format(name=name)
        ]
    if spec.role == "identifier":
        return [
            _("Column '{name}' is an identifier: identifiers are always dropped (change its role if it is not one).").format(
                name=name
            )
        ]
    if mechanism == "keep":
        return (
            []
            if spec.public
            else [_("Column '{name}' can only be kept unchanged if the schema declares it public.").format(name=name)]
        )
    if spec.bounds_from_data:
        return [release_refusal([name])]
    out = []
    if entry.missing not in MISSING_POLICIES:
        out.append(_("Column '{name}': missing must be one of {join}.").format(name=name, join=", ".join(MISSING_POLICIES)))
    if mechanism != "coin" and (entry.epsilon is None or not math.isfinite(entry.epsilon) or entry.epsilon <= 0):
        out.append(_("Column '{name}': give a finite ε greater than 0.").format(name=name))
    if mechanism in ("coin", "k-ary"):
        if spec.kind != "categorical":
            return out + [_("Column '{name}' is numeric: use bins or laplace for it.").format(name=name)]
        if len(spec.categories) < 2 or len(set(spec.categories)) != len(spec.categories):
            return out + [_("Column '{name}': declare at least two distinct categories.").format(name=name)]
        if mechanism == "coin" and (len(spec.categories) != 2 or entry.missing != "random"):
            out.append(
                _("Column '{name}': the coin needs exactly two categories and missing = random; use k-ary.").format(name=name)
            )
        return out
    if spec.kind != "numeric":
        return out + [_("Column '{name}' is categorical: use coin or k-ary for it.").format(name=name)]
    if spec.lower is None or spec.upper is None or not np.isfinite([spec.lower, spec.upper]).all() or spec.lower >= spec.upper:
        return out + [_("Column '{name}': declare finite bounds with the lower below the upper.").format(name=name)]
    if mechanism == "bins" and entry.edges is not None:
        edges = np.asarray(entry.edges, dtype=float)
        if not 3 <= edges.size <= MAX_BINS + 1 or not np.isfinite(edges).all() or np.any(np.diff(edges) <= 0):
            out.append(_("Column '{name}': bin edges must be at least three increasing finite numbers.").format(name=name))
    elif mechanism == "bins" and (entry.bins is None or not 2 <= entry.bins <= MAX_BINS):
        out.append(
            _("Column '{name}': the number of bins must be between 2 and {max_bins}.").format(name=name, max_bins=MAX_BINS)
        )
    return out


def default_plan(
    schema: Schema, epsilon: float = DEFAULT_EPSILON, n_bins: int = DEFAULT_BINS, budget: float | None = None
) -> ReleasePlan:
    """The plan a careful owner would start from.

    Identifiers and ignored columns are dropped, and so is every column whose categories or
    bounds were read from the data (releasing them would publish real values); columns declared
    public are kept (with a warning in the report); two-category columns that cannot be missing
    get the coin (ε = ln 3); other categorical columns k-ary randomized response at ``epsilon``;
    numeric columns ``n_bins`` equal-width bins over their declared bounds, then k-ary randomized
    response at ``epsilon``. A column that may be missing (the schema's ``may_be_missing``,
    true unless declared otherwise) randomises "missing" as a category of its own, so the
    buyer's estimates are unbiased for the real table rather than for an imputed mixture. A
    column whose declaration is incomplete (no bounds, fewer than two categories) is dropped.

    With a ``budget`` (what the copy may spend, per person), the budget is shared equally
    between the randomized columns instead, rounded down so the plan fits; two-category columns
    then get k-ary randomized response at that share unless it affords the coin. When the schema
    names a privacy-unit column, a person's up to ``rows_per_person`` rows add up, so each row
    gets ``budget / rows_per_person`` to share.

    The app and the command line pass half of what is left
    (:func:`~dpcore.budget.accountant.default_epsilon`), not all of it: one click never spends the whole
    budget. Chosen on tables in general, wide ones and small remaining budgets alike, it reads
    nothing from the data: a default aimed at "useful" would need the row count, and the plan's
    ε is published in the buyer's report. When half still leaves most columns mostly noise (a wide
    table, a small budget), the owner's verdict (:func:`~dpcore.release.usefulness.mostly_noise`)
    says so, suggests dropping columns or a synthetic copy, and asks for a typed confirmation.
    """
    usable = [
        spec
        for spec in schema.columns
        if spec.role not in ("identifier", "ignore")
        and not spec.public
        and not spec.problems()
        and not spec.bounds_from_data
        and spec.name != schema.privacy_unit
    ]
    if budget is not None and usable:
        k = schema.rows_per_person
        rows = k if schema.privacy_unit is not None and isinstance(k, int) and not isinstance(k, bool) and k > 1 else 1
        share = float(budget) / rows / len(usable)
        epsilon = math.floor(share * 1000) / 1000 or share
    columns = []
    for spec in schema.columns:
        entry = ColumnPlan(spec.name)
        missing = "category" if spec.may_be_missing else "random"
        if spec.role in ("identifier", "ignore") or (spec.bounds_from_data and not spec.public):
            pass
        elif spec.public:
            entry.mechanism = "keep"
        elif spec.kind == "categorical":
            coin = len(spec.categories) == 2 and missing == "random" and (budget is None or COIN_EPSILON <= epsilon)
            entry.mechanism, entry.epsilon = ("coin", None) if coin else ("k-ary", float(epsilon))
            entry.missing = "random" if coin else missing
        else:
            entry.mechanism, entry.epsilon, entry.bins, entry.missing = "bins", float(epsilon), int(n_bins), missing
        columns.append(entry if not column_problems(entry, schema) else ColumnPlan(spec.name))
    return ReleasePlan(columns)
