"""Bulk help with declarations: the columns whose domain was read from the data, and what to do about them."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd

from dpcore.budget.accountant import BudgetLedger
from dpcore.budget.units import ADD_REMOVE, convert
from dpcore.i18n import _, ngettext, short
from dpcore.tables.bounds import apply_bounds, bounds_verdict, estimate_bounds
from dpcore.tables.categories import apply_categories, discover_categories, discoverable_columns, people_needed
from dpcore.tables.dictionary import apply_dictionary, read_dictionary
from dpcore.tables.schema import Schema, quoted
from dpcore.validation import epsilon_decimal
from dpstudio.support.state import Dataset, StudioState, apply_schema


def in_the_datasets_unit(ledger: BudgetLedger, epsilon: float, delta: float = 0.0) -> str:
    """How an add/remove spend of (ε, δ) is booked where the dataset protects changed values (else nothing).

    The buttons state the mechanism's own (ε, δ); a replace-one dataset's ledger books it doubled
    (:func:`dpcore.budget.units.convert`), and the owner should read on the button what the ledger will show.
    """
    if ledger.unit == ADD_REMOVE:
        return ""
    booked_epsilon, booked_delta = convert(epsilon_decimal(epsilon), Decimal(repr(delta)), ADD_REMOVE, ledger.unit)
    if delta:
        return " " + _("(booked as ε = {epsilon}, δ = {delta} in this dataset's unit)").format(
            epsilon=short(float(booked_epsilon)), delta=f"{float(booked_delta):.3g}"
        )
    return " " + _("(booked as ε = {epsilon} in this dataset's unit)").format(epsilon=short(float(booked_epsilon)))


def leaky_columns(schema: Schema) -> list[str]:
    """Used columns whose bounds or categories were read from the data (not differentially private)."""
    return [c.name for c in schema.columns if c.bounds_from_data and c.role not in ("identifier", "ignore")]


def typed_over_the_reading(read: dict[str, tuple], after: Schema) -> list[str]:
    """Number columns still marked as read from the data whose two bounds the owner has both typed over in the grid.

    ``read`` holds each such column's ``(lower, upper)`` as the reading gave them. Typed bounds are the owner's
    declaration, as an unticked *read from data* would say: a walk-through typed −90 to 90 for a latitude and was
    still told it was read from the data, its tick off screen. Both bounds must be new (lower below upper): one bound
    typed leaves the other one read from the data, and the tick on. Categories keep their tick until it is taken off
    or they are declared public: a list edited from the one read (a rare value taken out) is still that list.
    """
    typed = []
    for spec in after.columns:
        if not (spec.bounds_from_data and spec.kind == "numeric" and spec.name in read):
            continue
        lower, upper = read[spec.name]
        complete = spec.lower is not None and spec.upper is not None and spec.lower < spec.upper
        if complete and spec.lower != lower and spec.upper != upper:
            typed.append(spec.name)
    return typed


def take_typed_bounds(dataset: Dataset, declared: Schema) -> list[str]:
    """Unmark, in ``declared`` (the grid's declarations), the bounds the owner typed over (:func:`typed_over_the_reading`).

    The readings compared with are kept on ``dataset`` the first time the grid shows them marked, for one revision of
    the declarations: declarations replaced wholesale (an uploaded schema, a dictionary, a way out) start them again,
    so another schema's bounds still marked as read are never taken for typed ones.
    """
    if dataset.read_domains_revision != dataset.revision:
        dataset.read_domains, dataset.read_domains_revision = {}, dataset.revision
    for spec in dataset.schema.columns:
        if spec.bounds_from_data and spec.kind == "numeric":
            dataset.read_domains.setdefault(spec.name, (spec.lower, spec.upper))
    typed = typed_over_the_reading(dataset.read_domains, declared)
    for name in typed:
        declared[name].bounds_from_data = False
        declared[name].source = _("typed by the owner")
    return typed


def leak_summary(schema: Schema) -> str | None:
    """One sentence for all such columns (instead of one box per column), or None."""
    names = leaky_columns(schema)
    if not names:
        return None
    shown = quoted(names, most=6)
    return ngettext(
        "Not differentially private yet: {count} column has bounds or categories read from your data ({names}). "
        "A model or group map built on it stays on this screen, and a copy leaves it out.",
        "Not differentially private yet: {count} columns have bounds or categories read from your data ({names}). "
        "A model or group map built on them stays on this screen, and a copy leaves them out.",
        len(names),
    ).format(count=len(names), names=shown)


def _replace(state: StudioState, schema: Schema) -> None:
    dataset = state.dataset
    dataset.schema = dataset.base_schema = schema
    dataset.revision += 1  # the declarations table starts again from the new declarations


def estimate_numeric_bounds(state: StudioState, epsilon_per_column: float, names: list[str] | None = None) -> pd.DataFrame:
    """Replace the data-read bounds of every numeric column (of ``names``, default all) by private estimates, charged.

    Returns the owner-only verdict of how well they fit (:func:`dpcore.tables.bounds.bounds_verdict`).
    """
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    columns = [n for n in leaky_columns(schema) if schema[n].kind == "numeric" and (names is None or n in names)]
    bounds = estimate_bounds(state.dataset.frame, schema, columns, epsilon_per_column, state.ledger())
    apply_bounds(schema, bounds, epsilon_per_column)
    _replace(state, schema)
    return bounds_verdict(state.dataset.frame, bounds)


def ignore_columns(state: StudioState, names: list[str]) -> None:
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    for name in names:
        schema[name].role = "ignore"
    _replace(state, schema)


def declare_public(state: StudioState, names: list[str]) -> None:
    """The owner vouches that these domains are public knowledge (a data dictionary, a form's choices)."""
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    for name in names:
        schema[name].bounds_from_data = False
        schema[name].source = _("declared public by the owner")
    _replace(state, schema)


def discover_text_categories(state: StudioState, epsilon_per_column: float, total_delta: float) -> list[str]:
    """Replace the missing or data-read lists of every used text column by privately discovered ones, charged to the ledger."""
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    columns = discoverable_columns(schema)
    found = discover_categories(state.dataset.frame, schema, columns, epsilon_per_column, total_delta, state.ledger())
    apply_categories(
        schema,
        found,
        epsilon_per_column,
        people_needed(epsilon_per_column, total_delta, len(columns), schema.rows_per_person if schema.privacy_unit else 1),
    )
    _replace(state, schema)
    return [name for name, categories in found.items() if len(categories) < 2]


def use_dictionary(state: StudioState, raw: bytes) -> list[str]:
    """Declare what a data dictionary (Frictionless or our own JSON) says; sentences about the fields it could not use."""
    dictionary = read_dictionary(raw)
    if isinstance(dictionary, Schema):
        apply_schema(state.dataset, dictionary)
        return []
    schema, notes = apply_dictionary(state.dataset.schema, dictionary)
    _replace(state, schema)
    return notes


def accept_other(state: StudioState, names: list[str]) -> None:
    """The owner accepts that many values of these columns become "(other)"."""
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    for name in names:
        schema[name].accept_other = True
    _replace(state, schema)
