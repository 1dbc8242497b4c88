"""What each released column does to its values: the per-column mechanisms of a plan.

A plan entry becomes a :class:`Treatment` once checked against the schema (:func:`resolve`):
its mechanism, ε and declared domain. A treatment turns a column of the private table into the
mechanism's inputs (codes over the declared categories or bins, or numbers clipped to the
declared bounds), randomises them with keyed per-row draws (:mod:`~dpcore.release.randomness`)
and writes the released column as an arrow array. Nothing about the domain is read from the
data: a value outside it becomes a uniformly random code, never passed through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, short
from dpcore.mechanisms import CoinRandomizedResponse, KaryRandomizedResponse, Laplace, keyed
from dpcore.release.plan import MAX_BINS, ColumnPlan, ReleasePlan, column_problems
from dpcore.release.randomness import COLUMN_STREAMS
from dpcore.release.report import describe_entry
from dpcore.release.writing import escape_label, keep_array, needs_quotes
from dpcore.tables.matching import match_categories
from dpcore.tables.schema import MISSING_CATEGORY, ColumnSpec, Schema
from dpcore.validation import epsilon_decimal


def laplace_decimals(scale: float) -> int:
    """Decimals kept in a Laplace column: about 1/100 to 1/1000 of the noise scale."""
    return max(0, 2 - math.floor(math.log10(scale)))


@dataclass
class Treatment:
    """One released column: its mechanism and declared domain, resolved from a plan entry and the schema.

    Attributes
    ----------
    index : int
        The entry's position in the plan: the column's keyed randomness stream.
    labels : list of str
        The released values of a randomized-response column, in code order ("(missing)" last
        when missing values are a category of their own).
    categories : list of str
        The declared categories a ``coin`` or ``k-ary`` column's values are matched against.
    match_numbers : bool
        Whether a value matches the category that reads as the same number (the schema's declaration).
    edges : list of float, optional
        A ``bins`` column's bin edges.
    lower, upper, fill : float, optional
        A ``laplace`` column's declared bounds and the value a missing number becomes.
    """

    index: int
    name: str
    mechanism: str
    epsilon: float = 0.0
    labels: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    edges: list[float] | None = None
    lower: float | None = None
    upper: float | None = None
    fill: float | None = None
    missing: str = "random"
    match_numbers: bool = True

    @property
    def header(self) -> str:
        return escape_label(self.name)

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def missing_code(self) -> int:
        return self.k - 1 if self.missing == "category" else -1

    def laplace_domain(self) -> tuple[float, float, float]:
        """A ``laplace`` column's declared ``(lower, upper, fill)``; ValueError for another column."""
        if self.lower is None or self.upper is None or self.fill is None:
            raise ValueError(f"column {self.name!r} has no declared bounds: it is not a laplace column")
        return self.lower, self.upper, self.fill

    def bin_edges(self) -> list[float]:
        """A ``bins`` column's edges; ValueError for another column."""
        if self.edges is None:
            raise ValueError(f"column {self.name!r} has no bin edges: it is not a bins column")
        return self.edges

    @property
    def scale(self) -> float:
        lower, upper, _unused = self.laplace_domain()
        return (upper - lower) / self.epsilon

    def randomiser(self) -> KaryRandomizedResponse | Laplace:
        """The column's mechanism (its randomness is given per row, see :meth:`randomise`)."""
        if self.mechanism == "coin":
            return CoinRandomizedResponse()
        if self.mechanism == "laplace":
            lower, upper, _unused = self.laplace_domain()
            return Laplace(self.epsilon, upper - lower)
        return KaryRandomizedResponse(self.epsilon, self.k)

    def inputs(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """What the mechanism randomises (codes or clipped numbers), and which values were outside the domain."""
        if self.mechanism in ("coin", "k-ary"):
            codes = category_codes(frame[self.name], self.categories, self.missing_code, self.match_numbers)
            return codes, (codes < 0) | (codes == len(self.categories))
        values = numbers(frame[self.name])
        missing = np.isnan(values)
        if self.mechanism == "laplace":
            lower, upper, fill = self.laplace_domain()
            outside = missing | (values < lower) | (values > upper)
            return np.clip(np.where(missing, fill, values), lower, upper), outside
        edges = np.asarray(self.bin_edges())
        codes = np.searchsorted(edges[1:-1], values, side="right").astype(np.int64)
        codes[missing] = self.missing_code
        return codes, missing | (values < edges[0]) | (values > edges[-1])

    def randomise(self, inputs: np.ndarray, rows: np.ndarray, key: bytes, streams: int = COLUMN_STREAMS) -> np.ndarray:
        """Randomise the rows with keys ``rows``: each row's draws are keyed by (``key``, its row key, this column's stream)."""
        stream = streams + self.index
        if self.mechanism == "laplace":
            randomiser = self.randomiser()
            assert isinstance(randomiser, Laplace)
            noisy = randomiser.randomise_keyed(inputs, key, rows, stream)
            return np.round(noisy, laplace_decimals(self.scale))
        randomiser = self.randomiser()
        assert not isinstance(randomiser, Laplace)
        return randomiser.randomise_keyed(inputs, keyed.uniforms(key, rows, stream, 2))

    def column(self, frame: pd.DataFrame, rows: np.ndarray, key: bytes) -> tuple[pa.Array, np.ndarray]:
        """The released column for these rows (an arrow array), and which values were outside the domain (owner-only)."""
        if self.mechanism == "keep":
            return keep_array(frame[self.name]), np.zeros(len(frame), dtype=bool)
        inputs, outside = self.inputs(frame)
        return self.as_array(self.randomise(inputs, rows, key)), outside

    def as_array(self, released: np.ndarray) -> pa.Array:
        """Released numbers, or released codes as a dictionary array of the labels."""
        if self.mechanism == "laplace":
            return pa.array(released)
        labels = pa.array([escape_label(label) for label in self.labels], type=pa.string())
        codes = released.astype(np.int8 if self.k <= 127 else np.int32)
        return pa.DictionaryArray.from_arrays(pa.array(codes), labels)

    def entry(self) -> dict[str, Any]:
        """This column's part of the report: declarations and mechanism parameters only."""
        entry: dict[str, Any] = {"column": self.name, "header": self.header, "mechanism": self.mechanism, "epsilon": self.epsilon}
        if self.mechanism in ("coin", "k-ary", "bins"):
            rr = KaryRandomizedResponse(self.epsilon, self.k)
            entry.update(
                domain=[escape_label(x) for x in self.labels],
                n_categories=self.k,
                keep_probability=rr.keep_probability,
                other_probability=rr.other_probability,
                missing=self.missing,
            )
        if self.mechanism == "bins":
            edges = self.bin_edges()
            entry.update(edges=list(edges), n_bins=len(edges) - 1, lower=edges[0], upper=edges[-1])
        if self.mechanism == "laplace":
            lower, upper, fill = self.laplace_domain()
            entry.update(
                lower=lower,
                upper=upper,
                fill_value=fill,
                scale=self.scale,
                decimals=laplace_decimals(self.scale),
            )
        return entry


def treatment(index: int, entry: ColumnPlan, spec: ColumnSpec) -> Treatment:
    # A Laplace column always fills a missing number with the declared fill value.
    missing = "random" if entry.mechanism == "laplace" else entry.missing
    t = Treatment(index, entry.column, entry.mechanism, epsilon=entry.cost, missing=missing)
    extra = [MISSING_CATEGORY] if entry.missing == "category" else []
    if entry.mechanism in ("coin", "k-ary"):
        t.categories, t.match_numbers = list(spec.categories), spec.match_numbers
        t.labels = list(spec.categories) + extra
    elif entry.mechanism == "bins":
        if entry.edges is not None:
            edges = entry.edges
        elif entry.bins is not None:
            edges = np.linspace(*spec.bounds, entry.bins + 1).tolist()
        else:
            raise DataError(
                _("Column '{column}': the number of bins must be between 2 and {max_bins}.").format(
                    column=entry.column, max_bins=MAX_BINS
                )
            )
        t.edges = [float(e) for e in edges]
        t.labels = [f"[{a:.10g} to {b:.10g})" for a, b in zip(t.edges[:-1], t.edges[1:], strict=True)]
        t.labels[-1] = t.labels[-1][:-1] + "]"
        t.labels += extra
    elif entry.mechanism == "laplace":
        (t.lower, t.upper), t.fill = spec.bounds, spec.fill
    return t


def resolve(plan: ReleasePlan, schema: Schema) -> tuple[list[Treatment], list[str], list[str]]:
    """Check the plan; return its treatments, the dropped columns and the report's warnings.

    The privacy-unit column is not among the dropped columns: no report names it.
    """
    plan.check(schema)
    treatments: list[Treatment] = []
    warnings: list[str] = []
    planned = {c.column for c in plan.columns}
    dropped = [c.column for c in plan.columns if c.mechanism == "drop"] + [n for n in schema.names if n not in planned]
    dropped = [n for n in dropped if n != schema.privacy_unit]
    for index, entry in enumerate(plan.columns):
        if entry.mechanism == "drop":
            continue
        spec = schema[entry.column]
        if entry.mechanism == "keep":
            warnings.append(
                _(
                    "Column '{column}' is copied unchanged because the owner declared it public: it has no privacy protection."
                ).format(column=entry.column)
            )
        else:
            warnings.extend(Schema([spec]).leak_notes())
        t = treatment(index, entry, spec)
        if len({escape_label(x) for x in t.labels}) != len(t.labels):
            raise DataError(
                _("Column '{column}': two of its values would be written the same way in the file.").format(column=entry.column)
            )
        treatments.append(t)
    headers = [t.header for t in treatments]
    if len(set(headers)) != len(headers):
        raise DataError(_("Two released columns would get the same header in the file; rename one of them."))
    if not treatments:
        raise DataError(_("The plan releases no column: choose a mechanism other than drop for at least one."))
    return treatments, dropped, warnings


def numbers(values: pd.Series) -> np.ndarray:
    """A column as float64, NaN where it is missing or not a number."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def category_codes(values: pd.Series, categories: list[str], missing_code: int, match_numbers: bool = True) -> np.ndarray:
    """Codes over the declared categories: -1 for an undeclared value, ``missing_code`` for a missing one.

    Values are matched as the models match them (:func:`~dpcore.tables.matching.match_categories`): text
    as spelled, and with ``match_numbers`` a number with the declared category that reads as the
    same number (39 and "39", 0.0 and "0"), however pandas parsed the column.
    """
    matched, _unused = match_categories(values, categories, match_numbers)
    return np.where(matched == -2, missing_code, matched)


def quoting(treatments: Sequence[Treatment]) -> str:
    """``"none"`` when no cell or header can need quotes (all labels declared), else ``"needed"``."""
    texts = [t.header for t in treatments] + [escape_label(x) for t in treatments for x in t.labels]
    safe = not any(t.mechanism == "keep" for t in treatments) and not any(needs_quotes(x) for x in texts)
    return "none" if safe else "needed"


def describe_plan(plan: ReleasePlan, schema: Schema) -> pd.DataFrame:
    """One row per schema column: what the buyer gets, in plain words, its ε (per value), and any problem.

    When a person can have up to ``k`` rows (the schema's privacy unit), each randomised
    column's sentence also says what its values cost per person: ``k`` × ε.
    """
    rows = []
    planned = {c.column for c in plan.columns}
    entries = list(plan.columns) + [ColumnPlan(n) for n in schema.names if n not in planned]
    k = schema.rows_per_person if schema.privacy_unit is not None and isinstance(schema.rows_per_person, int) else 1
    for index, entry in enumerate(entries):
        problems = column_problems(entry, schema)
        spec = schema[entry.column] if entry.column in schema.names else None
        if problems or spec is None:
            sentence = _("Cannot be released as planned.")
        elif entry.mechanism == "drop" and entry.column == schema.privacy_unit:
            sentence = _(
                "Left out of the copy. It identifies each person: it only decides which rows are kept, at most {k} "
                "of each person's."
            ).format(k=k)
        elif entry.mechanism == "drop":
            reason = {"identifier": _(" It identifies people."), "ignore": _(" It is marked 'ignore' in the schema.")}
            leak = _(" Its domain was read from your data: declare a public one to release it.") if spec.bounds_from_data else ""
            sentence = _("Left out of the copy.") + reason.get(spec.role, leak)
        else:
            sentence = describe_entry(treatment(index, entry, spec).entry())
            if k != 1 and entry.cost > 0:
                sentence += " " + _("A person's up to {k} rows add up: ε = {epsilon} per person for this column.").format(
                    k=k, epsilon=short(float(format(float(epsilon_decimal(entry.cost) * k), ".4g")))
                )
        rows.append(
            {
                "column": entry.column,
                "mechanism": entry.mechanism,
                "ε": entry.cost,
                "what the buyer gets": sentence,
                "problem": " ".join(problems),
            }
        )
    return pd.DataFrame(rows, columns=["column", "mechanism", "ε", N_("what the buyer gets"), N_("problem")])
