"""Model internals in the owner's units: split rules with category names, values with thousands separators."""

from __future__ import annotations

import math

from dpcore.i18n import N_, _, decimal, integer
from dpcore.tables.schema import Schema

#: What the schema's task, role and kind values mean to a reader (the values themselves stay English in files).
TASKS = {"regression": N_("regression"), "classification": N_("classification")}


def task_name(task: str | None) -> str:
    return _(TASKS[task]) if task in TASKS else str(task)


def number(value: float) -> str:
    """1,234,567 · 12.3 · 0.0123 — never 2.91e+05, never a bare 0 for a small value (1.234.567 · 12,3 in Vietnamese)."""
    if value is None or not math.isfinite(value):
        return "?"
    if abs(value) >= 100:
        return integer(value)
    if value == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return decimal(float(f"{value:.3g}"), digits, group=False)


def _categories(names: list[str]) -> str:
    if len(names) <= 3:
        return _(" or ").join(names)
    return _("one of {count}: {names}, …").format(count=len(names), names=", ".join(names[:3]))


def split_text(feature: str, threshold: float, schema: Schema) -> str:
    """The rule that sends a row left, in words: ``ocean_proximity is INLAND or ISLAND``, ``age ≤ 37``.

    Ordinal-coded categories are the declared categories in code order scaled into [0, 1], so
    ``code ≤ t`` means the first ``⌊t·(L − 1)⌋ + 1`` levels; a one-hot column ``name = level``
    goes left when the row is not that level.
    """
    if " = " in feature and feature.split(" = ", 1)[0] in schema.names:
        name, level = feature.split(" = ", 1)
        return _("{column} is not {level}").format(column=name, level=level)
    if feature in schema.names and schema[feature].kind == "categorical":
        levels = schema[feature].levels
        count = int(math.floor(threshold * (len(levels) - 1) + 1e-9)) + 1
        return _("{column} is {categories}").format(column=feature, categories=_categories(levels[: max(count, 0)]))
    return f"{feature} ≤ {number(threshold)}"


def subset_text(feature: str, codes: list[int], schema: Schema) -> str:
    """A boosting round's categorical split: the categories that go left, by name."""
    if feature in schema.names and schema[feature].kind == "categorical":
        levels = schema[feature].levels
        return _("{column} is {categories}").format(
            column=feature, categories=_categories([levels[c] for c in codes if c < len(levels)])
        )
    return _("{column} in a random subset").format(column=feature)


def branches_text(feature: str) -> str:
    """A boosting round's split that gives every declared category of ``feature`` its own branch."""
    return _("{column}: one branch per category").format(column=feature)


def leaf_text(value, unit: str = "") -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {number(v)}" for k, v in value.items())
    return number(value) + (f" {unit}" if unit else "")
