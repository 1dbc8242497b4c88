"""A data dictionary in and out: the Frictionless Table Schema and DP Studio's own schema JSON.

A data dictionary is public knowledge (``algorithms.md`` §11): the bounds and category lists it
states cost no ε, and accepting one is a single click. The Frictionless Table Schema
(https://specs.frictionlessdata.io/table-schema/) is read by hand, without the ``frictionless``
package: ``fields[].name``, ``type`` and ``constraints.minimum/maximum/enum/required``, and
``primaryKey`` (its fields become identifiers). Anything else in the file is ignored, and every
refusal is a sentence naming the field, never a cell value.

Export writes the declarations back in the same shape; a column whose domain was read from the
data is written without one, so a downloaded dictionary never carries a value only the data
knew, and a dictionary downloaded and imported again gives the same declarations.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.tables.schema import ColumnSpec, Schema

NUMERIC_TYPES = ("number", "integer")
#: Frictionless types DP Studio can use; others (dates, geo, objects) are refused by name.
TYPES = ("string", "number", "integer", "boolean", "any")


@dataclass
class Dictionary:
    """What a data dictionary declares: one :class:`~dpcore.tables.schema.ColumnSpec` per field it gives a domain, and the rest.

    ``declared`` holds the fields with a domain (bounds or a list), ``identifiers`` the primary
    key, ``without_domain`` the fields it names but gives no bounds or list.
    """

    declared: list[ColumnSpec] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    without_domain: list[str] = field(default_factory=list)


def read_dictionary(text: str | bytes) -> Dictionary | Schema:
    """A Frictionless Table Schema (a ``fields`` list) as a :class:`Dictionary`, or DP Studio's own schema JSON as a Schema."""
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig", "replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise DataError(_("The data dictionary is not valid JSON.")) from None
    if isinstance(data, dict) and "columns" in data:
        return Schema.from_dict(data)
    if not isinstance(data, dict) or not isinstance(data.get("fields"), list):
        raise DataError(
            _(
                "The data dictionary is neither a Frictionless Table Schema (a 'fields' list) nor a schema saved "
                "from DP Studio (a 'columns' list)."
            )
        )
    return _read_fields(data)


def _read_fields(data: dict[str, Any]) -> Dictionary:
    out = Dictionary()
    seen: set[str] = set()
    for number, item in enumerate(data["fields"], start=1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise DataError(_("Field {number} of the data dictionary has no name.").format(number=number))
        name = item["name"]
        if name in seen:
            raise DataError(_("The data dictionary names the field '{field}' twice.").format(field=name))
        seen.add(name)
        kind = item.get("type", "string")
        if kind not in TYPES:
            raise DataError(_("Field '{field}': the type must be one of {types}.").format(field=name, types=", ".join(TYPES)))
        constraints = item.get("constraints") or {}
        if not isinstance(constraints, dict):
            raise DataError(_("Field '{field}': 'constraints' must be an object.").format(field=name))
        spec = _field_spec(name, kind, constraints)
        if spec is None:
            out.without_domain.append(name)
        else:
            out.declared.append(spec)
    key = data.get("primaryKey") or []
    out.identifiers = [key] if isinstance(key, str) else [str(k) for k in key if isinstance(k, str)]
    return out


def _field_spec(name: str, kind: str, constraints: dict[str, Any]) -> ColumnSpec | None:
    """The declaration a field's type and constraints give, or None when they give no domain."""
    may_be_missing = not bool(constraints.get("required", False))
    enum = constraints.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or any(isinstance(v, (dict, list)) or v is None for v in enum):
            raise DataError(_("Field '{field}': 'enum' must be a list of values.").format(field=name))
        categories = [_enum_text(v) for v in enum]
        if len(set(categories)) != len(categories):
            raise DataError(_("Field '{field}': the 'enum' list has repeats.").format(field=name))
        # An enum of a number type lists numbers: the table's 0.0 and "00" are its 0 whatever the column was read as.
        return ColumnSpec(
            name,
            kind="categorical",
            categories=categories,
            may_be_missing=may_be_missing,
            match_numbers=kind in NUMERIC_TYPES,
            source=_("from the data dictionary"),
        )
    if kind == "boolean":
        return ColumnSpec(
            name,
            kind="categorical",
            categories=["False", "True"],
            may_be_missing=may_be_missing,
            match_numbers=False,
            source=_("from the data dictionary"),
        )
    low, high = constraints.get("minimum"), constraints.get("maximum")
    if low is None and high is None:
        return None
    if kind not in NUMERIC_TYPES:
        raise DataError(_("Field '{field}': a minimum or maximum needs the type number or integer.").format(field=name))
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and _finite(low) and _finite(high)):
        raise DataError(_("Field '{field}': give both a minimum and a maximum, as numbers.").format(field=name))
    if low >= high:
        raise DataError(_("Field '{field}': the minimum must be below the maximum.").format(field=name))
    return ColumnSpec(
        name,
        kind="numeric",
        lower=float(low),
        upper=float(high),
        may_be_missing=may_be_missing,
        match_numbers=False,
        source=_("from the data dictionary"),
    )


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _enum_text(value: object) -> str:
    """An enum value as a category: whole floats as integers (``0.0`` → ``"0"``), as the table's numbers are matched."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def apply_dictionary(schema: Schema, dictionary: Dictionary) -> tuple[Schema, list[str]]:
    """A copy of ``schema`` with the dictionary's declarations, and a sentence per field it could not use.

    Every declared domain replaces the column's and is no longer marked as read from the data;
    roles are kept, except that the primary key's columns become identifiers. A number type's
    enum turns on matching by number; a text enum leaves the owner's choice as it was.
    """
    result = Schema.from_dict(schema.to_dict())
    notes = []
    for spec in dictionary.declared:
        if spec.name not in result.names:
            notes.append(_("The dictionary's field '{field}' is not a column of this table.").format(field=spec.name))
            continue
        column = result[spec.name]
        column.kind, column.lower, column.upper, column.categories = spec.kind, spec.lower, spec.upper, list(spec.categories)
        column.may_be_missing, column.bounds_from_data, column.source = spec.may_be_missing, False, spec.source
        column.match_numbers = column.match_numbers or spec.match_numbers
        if column.role == "ignore" and not column.problems():
            column.role = "feature"  # ignored only for want of a list, which the dictionary now gives
    for name in dictionary.identifiers:
        if name in result.names:
            result[name].role = "identifier"
    notes += [
        _("The dictionary gives no bounds or list for '{field}': declare it yourself.").format(field=name)
        for name in dictionary.without_domain
        if name in result.names and result[name].role in ("feature", "target")
    ]
    return result, notes


def carry_declarations(read: Schema, earlier: Schema) -> tuple[Schema, list[str]]:
    """``read`` (a table's declarations as its reader suggests them) with the owner's ``earlier`` declarations of
    the same dataset, and the names of the columns whose declarations were carried over.

    A column of both keeps its earlier role and flags; its earlier domain too — bounds or categories
    declared, declared public, or estimated and paid for with ε (a release, reusable at no further
    cost) — unless that domain had been read from the data: a domain read from an older table is
    not the owner's declaration, so the new reading's stands (and stays marked as read). The unit of
    protection carries over when its column is still there. Columns of one side only are left as
    ``read`` has them.
    """
    result = Schema.from_dict(read.to_dict())
    carried = [name for name in result.names if name in earlier.names]
    for name in carried:
        before, column = earlier[name], result[name]
        if before.bounds_from_data:
            column.role, column.public, column.may_be_missing = before.role, before.public, before.may_be_missing
            column.match_numbers, column.accept_other = before.match_numbers, before.accept_other
        else:
            result.columns[result.names.index(name)] = replace(before, categories=list(before.categories))
    if earlier.privacy_unit in result.names:
        result.privacy_unit, result.rows_per_person = earlier.privacy_unit, earlier.rows_per_person
    return result, carried


def to_frictionless(schema: Schema) -> dict[str, Any]:
    """The declarations as a Frictionless Table Schema; a domain read from the data is left out (it is not public)."""
    fields = []
    for spec in schema.columns:
        item: dict[str, Any] = {"name": spec.name, "type": "number" if spec.kind == "numeric" else "string"}
        constraints: dict[str, Any] = {}
        if not spec.may_be_missing:
            constraints["required"] = True
        public_domain = not spec.bounds_from_data and spec.role != "identifier"
        if public_domain and spec.kind == "numeric" and spec.lower is not None and spec.upper is not None:
            constraints.update(minimum=spec.lower, maximum=spec.upper)
        elif public_domain and spec.kind == "categorical" and spec.categories:
            constraints["enum"] = list(spec.categories)
        if constraints:
            item["constraints"] = constraints
        fields.append(item)
    return {"fields": fields}


def frictionless_json(schema: Schema) -> str:
    return json.dumps(to_frictionless(schema), indent=2, ensure_ascii=False)
