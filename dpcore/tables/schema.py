"""Column roles, kinds, declared bounds and categories, and the normaliser.

Bounds and category lists are *public declarations* by the data owner. The normaliser maps
every numeric column into [0, 1] with them (clipping what falls outside) and every
categorical column to codes over the declared categories, so no model ever reads a domain
from the private data. A schema can be *suggested* from a file, but whatever the
suggestion reads from the data itself (min/max, the list of distinct values) is flagged as a
privacy leak on the column: nothing built on it may leave the owner's screen
(:func:`check_releasable`, one sentence for every artefact: :func:`release_refusal`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpcore.budget.persons import unit_problems
from dpcore.exceptions import DataError
from dpcore.i18n import _, ngettext
from dpcore.tables.cell_shapes import (
    AMOUNTS,
    DATES,
    differ_only_in_case,
    in_natural_order,
    scale_in_name,
    text_shape,
)
from dpcore.tables.matching import match_categories, repeated_numbers

ROLES = ("feature", "target", "identifier", "ignore")
KINDS = ("numeric", "categorical")
MISSING_CATEGORY = "(missing)"
OTHER_CATEGORY = "(other)"

# Words that make a column a direct identifier, matched on the words of its name in any case
# style (CamelCase, snake_case, kebab-case, spaced): FullName, patient_id, E-Mail, "Phone no".
_IDENTIFIER_WORDS = frozenset(
    {
        "id",
        "ids",
        "uuid",
        "guid",
        "name",
        "names",
        "fullname",
        "firstname",
        "lastname",
        "surname",
        "forename",
        "username",
        "email",
        "mail",
        "phone",
        "telephone",
        "tel",
        "mobile",
        "cell",
        "fax",
        "ssn",
        "nin",
        "passport",
        "address",
        "street",
        "zip",
        "zipcode",
        "postcode",
        "postal",
        "iban",
        "account",
        "login",
        "ip",
        "url",
        "license",
        "licence",
        "mrn",
    }
)
_IDENTIFIER_PAIRS = frozenset(
    {
        ("e", "mail"),
        ("social", "security"),
        ("first", "name"),
        ("last", "name"),
        ("full", "name"),
        ("user", "name"),
        ("medical", "record"),
    }
) | frozenset(
    (who, tag)
    for who in ("customer", "client", "patient", "employee", "staff", "member", "record", "policy", "card", "tax")
    for tag in ("number", "no", "nr", "num", "code", "key")
)
# Whole numbers named so are codes: a quality flag's 0, 1, 2, 4 and 9 are not amounts.
_CODE_WORDS = frozenset({"code", "codes", "type", "class", "category", "kind", "flag", "flags", "status"})
ZERO_PADDED = r"[+-]?0\d+"  # a code written with leading zeros ("020"): a category, whose zeros a number would lose
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
MIN_ROWS_FOR_UNIQUE_ID = 20


def name_words(name: str) -> list[str]:
    """The words of a column name, lower-cased: ``"PatientID"`` → ``["patient", "id"]``."""
    return [w.lower() for w in _WORD.findall(str(name))]


def looks_like_identifier(name: str) -> bool:
    """True for names like ``FullName``, ``patient_id``, ``EmailAddress``, ``phone-number``, ``SSN``."""
    words = name_words(name)
    return any(w in _IDENTIFIER_WORDS for w in words) or any(pair in _IDENTIFIER_PAIRS for pair in zip(words, words[1:]))


def unique_per_row(values: pd.Series) -> bool:
    """True when every row has its own value (text, or whole numbers), as record numbers and names do.

    A fractional measurement can be unique per row without identifying anyone, so only text
    and whole numbers count — amounts written as text (``$1,234.56``) and dates are measurements too;
    tables under :data:`MIN_ROWS_FOR_UNIQUE_ID` rows are too small to tell.
    """
    present = values.dropna()
    if len(present) < MIN_ROWS_FOR_UNIQUE_ID or present.nunique() != len(present):
        return False
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.notna().all():
        return bool((numbers == np.round(numbers)).all())
    shape = text_shape(present)
    fractions = shape == AMOUNTS and present.astype("string").str.contains(r"\d\.\d", regex=True).any()
    return not (fractions or shape == DATES)


#: A text column with at most this share of distinct values (and no more than ``max_categories``) is a
#: category whatever its name: ``Street`` (Pave/Grvl) of a housing table, ``Address type`` (home/work).
FEW_DISTINCT_SHARE = 0.05


def few_distinct_text(values: pd.Series, max_categories: int) -> bool:
    """True for text with few distinct values for its rows (a category, not a name or a key)."""
    present = values.dropna()
    if len(present) < MIN_ROWS_FOR_UNIQUE_ID or pd.to_numeric(present, errors="coerce").notna().all():
        return False
    distinct = present.nunique()
    return distinct <= max_categories and distinct <= FEW_DISTINCT_SHARE * len(present)


def looks_like_code(name: str, values: pd.Series, max_categories: int = 50) -> bool:
    """Codes, not numbers: "020", or at most ``max_categories`` whole numbers under a "code", "type", "class" header."""
    present = values.dropna()
    if not len(present) or pd.api.types.is_bool_dtype(present.dtype):
        return False
    if not pd.api.types.is_numeric_dtype(present.dtype):
        return bool(present.astype(str).str.strip().str.fullmatch(ZERO_PADDED).any())
    whole = bool(np.all(present.to_numpy(dtype=float) % 1 == 0))
    return any(word in _CODE_WORDS for word in name_words(name)) and whole and present.nunique() <= max_categories


@dataclass
class ColumnSpec:
    """What the owner declares about one column.

    ``lower``/``upper`` are public bounds for numeric columns; ``categories`` the public list
    of values for categorical ones. ``bounds_from_data`` is True when either was read from
    the private data (a leak, reported everywhere). ``public`` marks a column the owner
    declares non-sensitive (the only kind a release may copy unchanged). ``may_be_missing``
    declares that a value can be absent (true unless a data dictionary says otherwise; it is
    never read from the data): a release then randomises "missing" as a category of its own.
    ``match_numbers`` compares a cell and a declared category that both read as numbers by
    their value, so ``0``, ``0.0``, ``"0"`` and ``00`` are one category (a class column read as
    floats because it has blanks); models and copies map values the same way
    (:func:`~dpcore.tables.matching.match_categories`). ``accept_other`` is the owner's word that many values
    of this column may become "(other)" (:func:`dpcore.tables.categories.other_share_problems` then stays quiet about it).
    """

    name: str
    role: str = "feature"
    kind: str = "numeric"
    lower: float | None = None
    upper: float | None = None
    categories: list[str] = field(default_factory=list)
    fill_value: float | None = None
    source: str = ""
    bounds_from_data: bool = False
    public: bool = False
    may_be_missing: bool = True
    match_numbers: bool = True
    accept_other: bool = False

    @property
    def bounds(self) -> tuple[float, float]:
        """The declared ``(lower, upper)`` of a numeric column; :class:`DataError` if either is missing."""
        if self.lower is None or self.upper is None:
            raise DataError(_("Column '{column}': declare a lower and an upper bound.").format(column=self.name))
        return float(self.lower), float(self.upper)

    @property
    def fill(self) -> float:
        """The declared value for a missing number: by default the middle of the bounds."""
        if self.fill_value is not None:
            return float(self.fill_value)
        lower, upper = self.bounds
        return (lower + upper) / 2.0

    @property
    def levels(self) -> list[str]:
        """Declared categories plus the missing and other codes, in code order."""
        return [*self.categories, MISSING_CATEGORY, OTHER_CATEGORY]

    def problems(self) -> list[str]:
        """Sentences describing what is wrong with this declaration (empty when fine)."""
        out = []
        if self.role not in ROLES:
            out.append(_("Column '{column}': role must be one of {roles}.").format(column=self.name, roles=", ".join(ROLES)))
        if self.kind not in KINDS:
            out.append(_("Column '{column}': kind must be numeric or categorical.").format(column=self.name))
        if self.role in ("identifier", "ignore"):
            return out
        if self.kind == "numeric":
            if self.lower is None or self.upper is None or not np.isfinite([self.lower, self.upper]).all():
                out.append(_("Column '{column}': declare a lower and an upper bound.").format(column=self.name))
            elif self.lower >= self.upper:
                out.append(_("Column '{column}': the lower bound must be below the upper bound.").format(column=self.name))
        elif len(self.categories) < 2:
            out.append(_("Column '{column}': declare at least two categories.").format(column=self.name))
        elif len(set(self.categories)) != len(self.categories):
            out.append(_("Column '{column}': the category list has repeats.").format(column=self.name))
        elif self.match_numbers and repeated_numbers(self.categories):
            out.append(
                _(
                    "Column '{column}': two declared categories are the same number; merge them, or untick 'match "
                    "numbers' to compare them as text."
                ).format(column=self.name)
            )
        return out


_TEXT_FIELDS = ("name", "role", "kind", "source")
_NUMBER_FIELDS = ("lower", "upper", "fill_value")
_FLAG_FIELDS = ("bounds_from_data", "public", "may_be_missing", "match_numbers", "accept_other")


def _checked_fields(declared: dict[str, Any]) -> dict[str, Any]:
    """A column declaration's known fields, each of its type (a number written as text is read as the number), else a
    sentence naming the column and the field (a file edited by hand, or from another program)."""
    fields = {k: v for k, v in declared.items() if k in ColumnSpec.__dataclass_fields__}
    name = fields.get("name")
    for field_name, value in fields.items():
        wrong = (
            (field_name in _TEXT_FIELDS and not isinstance(value, str))
            or (field_name in _FLAG_FIELDS and not isinstance(value, bool))
            or (field_name == "categories" and value is not None and not isinstance(value, list))
        )
        if field_name in _NUMBER_FIELDS and value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                wrong = True
            elif isinstance(value, str):
                try:
                    fields[field_name] = float(value)
                except ValueError:
                    wrong = True
        if wrong:
            raise DataError(
                _("The schema file is not in the expected form: column '{column}' has a '{field}' of the wrong kind.").format(
                    column=name if isinstance(name, str) else "?", field=field_name
                )
            )
    return fields


@dataclass
class Schema:
    """The declarations for a whole table.

    ``privacy_unit`` names the identifier column telling whose row each row is, when a person
    can have several rows; at most ``rows_per_person`` rows of each then count (:mod:`dpcore.budget.persons`).
    """

    columns: list[ColumnSpec]
    privacy_unit: str | None = None
    rows_per_person: int = 1

    # --- lookups -------------------------------------------------------------------
    def __getitem__(self, name: str) -> ColumnSpec:
        for spec in self.columns:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def features(self) -> list[ColumnSpec]:
        return [c for c in self.columns if c.role == "feature"]

    @property
    def target(self) -> ColumnSpec | None:
        targets = [c for c in self.columns if c.role == "target"]
        return targets[0] if targets else None

    @property
    def task(self) -> str | None:
        """``"regression"`` or ``"classification"`` from the target's declared kind."""
        target = self.target
        if target is None:
            return None
        return "regression" if target.kind == "numeric" else "classification"

    def leak_notes(self, columns: Collection[str] | None = None) -> list[str]:
        """One warning sentence per column (of ``columns``, default all) whose domain was read from the private data."""
        return [
            (
                _("Not differentially private: the bounds of '{column}' were read from the data, not declared.")
                if self[name].kind == "numeric"
                else _("Not differentially private: the categories of '{column}' were read from the data, not declared.")
            ).format(column=name)
            for name in self.read_from_data(columns)
        ]

    def read_from_data(self, columns: Collection[str] | None = None) -> list[str]:
        """The used columns (of ``columns``, default all) whose bounds or categories were read from the private data."""
        return [
            c.name
            for c in self.columns
            if c.bounds_from_data and c.role not in ("identifier", "ignore") and (columns is None or c.name in columns)
        ]

    def domain_words(self, columns: Collection[str]) -> str:
        """Where the domain of each of ``columns`` came from, in one sentence for a privacy line.

        Built from the declarations themselves — a column read from the data is named as such,
        a declared one with the source it was declared with (a data dictionary, the owner's
        word, or a private estimate and its ε) — so the line follows what was actually declared.
        """
        leaked = self.read_from_data(columns)
        if leaked:
            return ngettext(
                "Not differentially private: the domain of {names} was read from the data.",
                "Not differentially private: the domains of {names} were read from the data.",
                len(leaked),
            ).format(names=quoted(leaked))
        by_source: dict[str, list[str]] = {}
        for name in columns:
            if name in self.names:
                by_source.setdefault(self[name].source or _("declared"), []).append(name)
        return _("Every bound and category it uses is declared, none read from the data: {columns}.").format(
            columns="; ".join(f"{quoted(names)} — {source}" for source, names in by_source.items())
        )

    # --- checks --------------------------------------------------------------------
    def problems(self, frame: pd.DataFrame | None = None, need_target: bool = False) -> list[str]:
        """Every problem with the schema (and with how it fits ``frame``), as sentences."""
        out = [p for c in self.columns for p in c.problems()]
        if len([c for c in self.columns if c.role == "target"]) > 1:
            out.append(_("Choose only one target column."))
        if need_target and self.target is None:
            out.append(_("Choose a target column (the value the model should predict)."))
        if need_target and not self.features:
            out.append(_("Choose at least one feature column."))
        unit_role = self[self.privacy_unit].role if self.privacy_unit in self.names else None
        out += unit_problems(self.privacy_unit, self.rows_per_person, unit_role, frame)
        if frame is not None:
            for spec in self.columns:
                if spec.name not in frame.columns:
                    out.append(_("Column '{column}' is declared but not in the table.").format(column=spec.name))
                elif spec.role in ("feature", "target") and spec.kind == "numeric":
                    values = frame[spec.name]
                    as_number = pd.to_numeric(values, errors="coerce")
                    if (as_number.isna() & values.notna()).any():
                        out.append(
                            _(
                                "Column '{column}' has text values but is declared numeric: declare it categorical, or fix the file."
                            ).format(column=spec.name)
                        )
        return out

    def check(self, frame: pd.DataFrame | None = None, need_target: bool = False) -> None:
        """Raise :class:`DataError` with every problem if there is one."""
        problems = self.problems(frame, need_target)
        if problems:
            raise DataError(" ".join(problems))

    # --- (de)serialisation -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [asdict(c) for c in self.columns],
            "privacy_unit": self.privacy_unit,
            "rows_per_person": self.rows_per_person,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        """Declarations read back from JSON; a file of another shape or with a field of the wrong type is a sentence."""
        try:
            columns = [ColumnSpec(**_checked_fields(c)) for c in data["columns"]]
            unit, rows_per_person = data.get("privacy_unit"), data.get("rows_per_person", 1)
        except (KeyError, TypeError, AttributeError):
            raise DataError(_("The schema file is not in the expected form (a 'columns' list of column declarations).")) from None
        odd_unit = unit is not None and not isinstance(unit, str)
        if odd_unit or isinstance(rows_per_person, bool) or not isinstance(rows_per_person, int):
            raise DataError(
                _(
                    "The schema file is not in the expected form: its unit of protection is not a column name and a number of rows."
                )
            )
        for c in columns:
            c.categories = [str(v) for v in c.categories or []]
        return cls(columns, unit, max(rows_per_person, 1))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Schema:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError:
            raise DataError(_("The schema file is not valid JSON.")) from None

    def to_frame(self) -> pd.DataFrame:
        """An editable table, one row per column (categories joined by ' | ')."""
        rows = []
        for c in self.columns:
            rows.append(
                {
                    "column": c.name,
                    "role": c.role,
                    "kind": c.kind,
                    "lower": c.lower,
                    "upper": c.upper,
                    "categories": " | ".join(c.categories),
                    "missing → fill": c.fill_value,
                    "public": c.public,
                    "may be missing": c.may_be_missing,
                    "match numbers": c.match_numbers,
                    "read from data (leak)": c.bounds_from_data,
                    "source": c.source,
                }
            )
        return pd.DataFrame(rows)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Schema:
        """Rebuild a schema from the edited table; the leak flag is whatever its column says.

        The flag is never inferred from edits: only the owner clears it, explicitly.
        """
        columns = []
        for row in frame.to_dict("records"):
            name = str(row["column"])
            categories = [v.strip() for v in str(row.get("categories") or "").split("|") if v.strip()]
            spec = ColumnSpec(
                name=name,
                role=str(row.get("role") or "feature"),
                kind=str(row.get("kind") or "numeric"),
                lower=_number_or_none(row.get("lower")),
                upper=_number_or_none(row.get("upper")),
                categories=categories,
                fill_value=_number_or_none(row.get("missing → fill")),
                source=str(row.get("source") or ""),
                public=bool(row.get("public")),
                may_be_missing=bool(row.get("may be missing", True)),
                match_numbers=bool(row.get("match numbers", True)),
            )
            # The leak flag is cleared only by the owner unticking it: editing a bound read from
            # the data (97.3 → 97.4) does not make it a public declaration.
            spec.bounds_from_data = bool(row.get("read from data (leak)"))
            columns.append(spec)
        return cls(columns)


def quoted(names: Iterable[str], most: int | None = None) -> str:
    """Column names as the sentences show them: ``'age', 'income'``; past ``most`` of them, "and 3 more"."""
    names = list(names)
    shown = ", ".join(f"'{name}'" for name in names[:most])
    if most is not None and len(names) > most:
        shown += _(" and {count} more").format(count=len(names) - most)
    return shown


def release_refusal(read_from_data: Collection[str]) -> str:
    """The one sentence that refuses to let anything built on a domain read from the data leave the screen.

    Every artefact that can leave the owner's screen — a model file or card, a group map or its
    card, a randomized or synthetic copy — says this same sentence with the same ways out, in
    the app and on the command line. It names columns, never a value.
    """
    names = list(dict.fromkeys(read_from_data))
    return ngettext(
        "Cannot leave this screen: the bounds or categories of {names} were read from your data, so anything built on "
        "them would publish values of real people. You can still use it here, for your eyes only. To release it, "
        "declare them public (a data dictionary, the law or a form's choices make them public knowledge), estimate "
        "them privately for a stated ε, or ignore the column.",
        "Cannot leave this screen: the bounds or categories of {names} were read from your data, so anything built on "
        "them would publish values of real people. You can still use it here, for your eyes only. To release it, "
        "declare them public (a data dictionary, the law or a form's choices make them public knowledge), estimate "
        "them privately for a stated ε, or ignore the columns.",
        len(names),
    ).format(names=quoted(names))


def check_releasable(read_from_data: Collection[str]) -> None:
    """Raise :class:`DataError` with :func:`release_refusal` when any domain was read from the data.

    The one gate of every release (:func:`dpcore.model_files.model_bytes`,
    :func:`dpcore.model_card.model_card`, :func:`dpcore.clustering.map_csv` and its siblings, the
    copies' :meth:`~dpcore.release.plan.ReleasePlan.problems`): owner-only use of the same object
    stays possible, only what would leave the screen is refused.
    """
    if read_from_data:
        raise DataError(release_refusal(read_from_data))


def _number_or_none(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(number) else number


def suggest_schema(frame: pd.DataFrame, max_categories: int = 50) -> Schema:
    """Guess roles and kinds from names and dtypes, and domains from the data (flagged as leaks).

    Columns named like identifiers in any case style (``FullName``, ``patient_id``,
    ``EmailAddress``, …) and columns whose every row holds its own text or whole number
    (record numbers, names) become identifiers — but not text with few distinct values for its
    rows (:func:`few_distinct_text`: ``Street`` paved or gravel is a category). Text columns with few
    distinct values become categorical, and so do codes (:func:`looks_like_code`: "020", or a "class"
    of whole numbers); other numbers become numeric. Bounds and category lists found this way are marked
    ``bounds_from_data`` until the owner replaces them with public declarations.
    """
    columns = []
    for name in frame.columns:
        values = frame[name]
        spec = ColumnSpec(name=str(name))
        if looks_like_identifier(str(name)) and not few_distinct_text(values, max_categories):
            spec.role, spec.source = "identifier", _("named like an identifier — dropped from every release")
        elif unique_per_row(values):
            spec.role, spec.source = "identifier", _("every row has its own value — treated as an identifier")
        numeric = pd.to_numeric(values, errors="coerce")
        # True/False, with or without gaps: two categories, not a number from 0 to 1
        yes_no = pd.api.types.is_bool_dtype(values.dtype) or (
            values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) == "boolean"
        )
        if (
            not (yes_no or looks_like_code(str(name), values, max_categories))
            and numeric.notna().sum() == values.notna().sum() > 0
        ):
            spec.kind = "numeric"
            finite = numeric[np.isfinite(numeric)]
            stated = scale_in_name(str(name))
            if stated is not None and spec.role != "identifier":  # "Overall satisfaction (1-10)": the form's scale
                spec.lower, spec.upper = stated
                spec.source = _("the scale stated in its name — check that it is the public one")
            elif len(finite) and spec.role != "identifier":  # an identifier's range would only leak its values
                lower, upper = float(finite.min()), float(finite.max())
                spec.lower, spec.upper = lower, upper if upper > lower else lower + 1.0
                spec.bounds_from_data = True
                spec.source = _("read from the data — replace with public bounds")
        else:
            spec.kind = "categorical"
            distinct = values.dropna().astype("string").unique()
            shape = text_shape(values) if spec.role == "feature" else None
            # Dates, or amounts nearly every row its own: never a list of categories, even in a small table.
            measured = shape == DATES or (shape == AMOUNTS and 2 * len(distinct) > int(values.notna().sum()))
            if spec.role == "identifier":
                pass  # dropped from every release: copying its values into the schema would only leak them
            elif spec.role == "feature" and (measured or len(distinct) > max_categories):
                spec.role = "ignore"
                spec.source = _set_aside_source(shape, max_categories)
            elif spec.role == "feature" and split_marker(distinct):
                spec.role = "ignore"
                spec.source = _("a train/test split — ignored: it says which file a row came from, not who the person is")
            else:
                spec.categories = in_natural_order(map(str, distinct))
                spec.bounds_from_data = True
                spec.source = _("categories read from the data — replace with the public list")
                if differ_only_in_case(spec.categories):
                    spec.source = _(
                        "categories read from the data — replace with the public list; some differ only in capitals or "
                        "spaces, and each counts as a category of its own"
                    )
        columns.append(spec)
    return Schema(columns)


def _set_aside_source(shape: str | None, max_categories: int) -> str:
    """Why a text column is set aside, and the way out that fits what it holds (:func:`~dpcore.tables.cell_shapes.text_shape`)."""
    if shape == AMOUNTS:
        return _(
            "numbers written with a currency sign, a percent sign or thousands separators — save them as plain numbers "
            "(1234.5) and upload again to use this column"
        )
    if shape == DATES:
        return _(
            "dates — DP Studio reads numbers and categories: save the year, or the days since a public date, as a "
            "number column to use it"
        )
    return _("more than {count} distinct values — declare categories to use it").format(count=max_categories)


#: The words of a column that says which part of a split a row belongs to (public tables come so).
SPLIT_WORDS = frozenset({"train", "training", "test", "testing", "valid", "validation", "val", "dev", "holdout"})


def split_marker(distinct: Iterable[object]) -> bool:
    """True for a column whose two or more values are all split words (``train``/``test``): a fact about the file."""
    words = {str(value).strip().casefold() for value in distinct}
    return len(words) >= 2 and words <= SPLIT_WORDS


def load_schema(path: str | os.PathLike[str]) -> Schema:
    with open(path, encoding="utf-8") as handle:
        return Schema.from_json(handle.read())


# --- normalisation ---------------------------------------------------------------------


def normalise_numeric(values: pd.Series, spec: ColumnSpec) -> np.ndarray:
    """Numbers → [0, 1] by the declared bounds; missing → the declared fill; outside → clipped."""
    lower, upper = spec.bounds
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    numbers = np.where(np.isnan(numbers), spec.fill, numbers)
    scaled = (numbers - lower) / (upper - lower)
    return np.clip(scaled, 0.0, 1.0)


def category_codes(values: pd.Series, spec: ColumnSpec) -> np.ndarray:
    """Codes over ``spec.levels``: declared categories, then missing, then other (unseen)."""
    k = len(spec.categories)
    matched, _unused = match_categories(values, spec.categories, spec.match_numbers)
    return np.where(matched == -2, k, np.where(matched == -1, k + 1, matched)).astype(np.int64)


def out_of_bounds_share(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Per used column, the share of values outside the declared domain (owner-only view)."""
    rows = []
    for spec in schema.columns:
        if spec.role in ("identifier", "ignore") or spec.name not in frame.columns or spec.problems():
            continue
        values = frame[spec.name]
        missing = float(values.isna().mean()) if len(values) else 0.0
        if spec.kind == "numeric":
            numbers = pd.to_numeric(values, errors="coerce")
            outside = float(((numbers < spec.lower) | (numbers > spec.upper)).mean()) if len(values) else 0.0
            note = _("clipped to the bounds")
        else:
            codes = category_codes(values, spec)
            outside = float((codes == len(spec.categories) + 1).mean()) if len(values) else 0.0
            note = _("mapped to {other}").format(other=OTHER_CATEGORY)
        rows.append({"column": spec.name, "outside the declared domain": outside, "what happens": note, "missing": missing})
    return pd.DataFrame(rows, columns=["column", "outside the declared domain", "what happens", "missing"])


@dataclass
class Normaliser:
    """Turns a table into what the models see, using only the schema's declarations.

    ``encoding`` is how categorical *features* become numbers: ``"onehot"`` (one 0/1 column
    per level) or ``"ordinal"`` (the code scaled into [0, 1]). The target is returned
    separately: in original units clipped to the declared bounds for regression (the
    models scale it with ``target_bounds``), as declared labels for classification
    (rows whose label is missing or undeclared are dropped — a per-record filter that does
    not change anyone else's contribution).
    """

    schema: Schema
    encoding: str = "ordinal"

    def preview(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Every used column in [0, 1] (categoricals as scaled codes), for display."""
        out = {}
        for spec in self.schema.columns:
            if spec.role in ("identifier", "ignore") or spec.name not in frame.columns:
                continue
            if spec.kind == "numeric":
                out[spec.name] = normalise_numeric(frame[spec.name], spec)
            else:
                out[spec.name] = category_codes(frame[spec.name], spec) / (len(spec.levels) - 1)
        return pd.DataFrame(out, index=frame.index)

    def feature_names(self) -> list[str]:
        names: list[str] = []
        for spec in self.schema.features:
            if spec.kind == "categorical" and self.encoding == "onehot":
                names.extend(f"{spec.name} = {level}" for level in spec.levels)
            else:
                names.append(spec.name)
        return names

    def categorical_levels(self) -> dict[int, int]:
        """``{model column: number of levels}`` for ordinal-coded categorical features."""
        if self.encoding != "ordinal":
            return {}
        return {i: len(spec.levels) for i, spec in enumerate(self.schema.features) if spec.kind == "categorical"}

    def feature_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each model column's bounds in original units (categoricals: [0, 1])."""
        lower: list[float | None] = []
        upper: list[float | None] = []
        for spec in self.schema.features:
            if spec.kind == "numeric":
                lower.append(spec.lower)
                upper.append(spec.upper)
            else:
                width = len(spec.levels) if self.encoding == "onehot" else 1
                lower.extend([0.0] * width)
                upper.extend([1.0] * width)
        return np.array(lower, dtype=float), np.array(upper, dtype=float)

    def features(self, frame: pd.DataFrame, scaled: bool = False) -> np.ndarray:
        """The feature matrix: numeric columns in original units (clipped), or in [0,1] if ``scaled``."""
        blocks = []
        for spec in self.schema.features:
            if spec.kind == "numeric":
                unit = normalise_numeric(frame[spec.name], spec)
                lower, upper = spec.bounds
                blocks.append((unit if scaled else lower + unit * (upper - lower))[:, None])
            else:
                codes = category_codes(frame[spec.name], spec)
                if self.encoding == "onehot":
                    blocks.append(np.eye(len(spec.levels))[codes])
                else:
                    blocks.append((codes / (len(spec.levels) - 1))[:, None])
        if not blocks:
            return np.empty((len(frame), 0))
        return np.hstack(blocks).astype(float)

    def target(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """``(y, keep)``: the target for rows ``keep`` (a boolean mask of usable rows)."""
        spec = self.schema.target
        if spec is None:
            raise DataError(_("Choose a target column (the value the model should predict)."))
        values = frame[spec.name]
        if spec.kind == "numeric":
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            keep = np.isfinite(numbers)
            return np.clip(numbers[keep], spec.lower, spec.upper), keep
        matched, _unused = match_categories(values, spec.categories, spec.match_numbers)
        keep = matched >= 0
        return np.asarray(spec.categories, dtype=object)[matched[keep]].astype(str), keep

    def design(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Features and target of the usable rows."""
        y, keep = self.target(frame)
        return self.features(frame)[keep], y
