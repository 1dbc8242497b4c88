"""Bulk help with declarations: the columns whose domain was read from the data, and what to do about them."""

from __future__ import annotations

import pandas as pd

from dpcore.bounds import apply_bounds, bounds_verdict, estimate_bounds
from dpcore.i18n import _, ngettext
from dpcore.schema import Schema
from dpstudio.support.state import StudioState


def leaky_columns(schema: Schema) -> list[str]:
    """Used columns whose bounds or categories were read from the data (not differentially private)."""
    return [c.name for c in schema.columns if c.bounds_from_data and c.role not in ("identifier", "ignore")]


def leak_summary(schema: Schema) -> str | None:
    """One sentence for all such columns (instead of one box per column), or None."""
    names = leaky_columns(schema)
    if not names:
        return None
    shown = ", ".join(f"'{n}'" for n in names[:6])
    if len(names) > 6:
        shown += _(" and {count} more").format(count=len(names) - 6)
    return ngettext("Not differentially private yet: {count} column has bounds or categories read from your data ({names}). "
                    "A model trained on it is not DP, and a copy leaves it out.",
                    "Not differentially private yet: {count} columns have bounds or categories read from your data ({names}). "
                    "A model trained on them is not DP, and a copy leaves them out.", len(names)).format(count=len(names), names=shown)


def _replace(state: StudioState, schema: Schema) -> None:
    dataset = state.dataset
    dataset.schema = dataset.base_schema = schema
    dataset.revision += 1  # the declarations table starts again from the new declarations


def estimate_numeric_bounds(state: StudioState, epsilon_per_column: float) -> pd.DataFrame:
    """Replace the data-read bounds of every numeric column by private estimates, charged to the ledger.

    Returns the owner-only verdict of how well they fit (:func:`dpcore.bounds.bounds_verdict`).
    """
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    columns = [n for n in leaky_columns(schema) if schema[n].kind == "numeric"]
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
