"""What a text column's cells look like: amounts written with their signs, dates, answer scales, spellings.

The suggested declarations (:func:`dpcore.tables.schema.suggest_schema`) use these shapes to say why a column is
set aside and what to save instead, and to put categories in the order a reader expects. They look at the owner's
own cells, on the owner's screen: nothing here is released, and no sentence built on them quotes a cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

#: A number as spreadsheets export it with its unit or grouping: ``$1,234.50``, ``12.5 %``, ``€ 30``, ``(1,200)``.
_WRITTEN_NUMBER = re.compile(r"\(?[+-]?\s*[$€£¥₹₫]?\s*[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*(?:%|[$€£¥₹₫])?\)?")
#: A date, or a date and time, as exports write them: ``2023-05-01``, ``2023/5/1 14:30``, ``01/05/2023``, ISO 8601.
_DATE = re.compile(
    r"(?:\d{4}([-/.])\d{1,2}\1\d{1,2}|\d{1,2}([-/.])\d{1,2}\2\d{4}|\d{1,2}/\d{1,2}/\d{2})"  # not a version 1.12.45
    r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[AaPp][Mm])?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
#: The share of a text column's cells (of the first :data:`_SHAPE_SAMPLE` filled ones) that must read so.
WRITTEN_SHARE = 0.95
_SHAPE_SAMPLE = 2000


AMOUNTS, DATES = "amounts", "dates"


def text_shape(values: pd.Series) -> str | None:
    """:data:`AMOUNTS` for numbers written with a currency sign, a percent sign or thousands commas (``$1,234.50``,
    ``15%``), :data:`DATES` for dates or dates and times (``2023-05-01``, ``01/05/2023 14:30``), else None.

    Read from the first :data:`_SHAPE_SAMPLE` filled cells (:data:`WRITTEN_SHARE` of them must read so). Such
    columns are text to every reader (the command line and Spark read them so too): the owner is told what to save
    instead, rather than to declare their many values as categories.
    """
    present = values.dropna()
    if not len(present) or pd.api.types.is_numeric_dtype(present.dtype) or pd.api.types.is_bool_dtype(present.dtype):
        return None
    sample = present.head(_SHAPE_SAMPLE).astype("string").str.strip()
    if sample.str.fullmatch(_WRITTEN_NUMBER).mean() >= WRITTEN_SHARE and sample.str.contains(r"[$€£¥₹₫%,]").any():
        return AMOUNTS
    return DATES if sample.str.fullmatch(_DATE).mean() >= WRITTEN_SHARE else None


#: Answer scales of surveys, in their order (compared without case): their codes then follow the scale, as a tree's
#: ordinal splits and the charts need, not the alphabet ("Agree" before "Disagree").
ANSWER_SCALES = (
    ("strongly disagree", "disagree", "somewhat disagree", "neutral", "neither agree nor disagree", "somewhat agree",
     "agree", "strongly agree"),
    ("very dissatisfied", "dissatisfied", "neutral", "satisfied", "very satisfied"),
    ("never", "rarely", "sometimes", "often", "always"),
    ("very poor", "poor", "fair", "average", "good", "very good", "excellent"),
    ("very low", "low", "medium", "high", "very high"),
    ("very unlikely", "unlikely", "neutral", "likely", "very likely"),
)  # fmt: skip
_FIRST_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")  # "Group-10": 10, not −10


def in_natural_order(values: Iterable[str]) -> list[str]:
    """Categories in the order a reader expects: an answer scale's order; by their first number when every one holds
    a number (``5%`` before ``10%``, ``$40,000-$60,000`` before ``$100,000+``); else alphabetical."""
    distinct = sorted(set(values))
    folded = [v.strip().casefold() for v in distinct]
    for scale in ANSWER_SCALES:
        if set(folded) <= set(scale):
            return [v for _f, v in sorted(zip(folded, distinct, strict=True), key=lambda pair: scale.index(pair[0]))]
    found = [_FIRST_NUMBER.search(v) for v in distinct]
    numbers = [float(m.group().replace(",", "")) for m in found if m is not None]
    if len(numbers) == len(distinct):
        return [v for _n, v in sorted(zip(numbers, distinct, strict=True))]
    return distinct


def differ_only_in_case(categories: Iterable[str]) -> bool:
    """True when two of the values are the same word in other capitals or spacing (``web`` and ``Web``)."""
    values = pd.Series(list(categories), dtype="string")
    return bool(values.str.strip().str.casefold().nunique() < values.nunique())


#: A scale stated in a column's header: "Overall satisfaction (1-10)", "Pain [0–100]", "Rating (1 to 5)".
_SCALE_IN_NAME = re.compile(r"[(\[]\s*(-?\d+(?:\.\d+)?)\s*(?:-|–|—|to)\s*(-?\d+(?:\.\d+)?)\s*[)\]]")


def scale_in_name(name: str) -> tuple[float, float] | None:
    """The bounds a header states, lower below upper, or None.

    A header is the table's structure, not a person's value: a form's scale written there is the public declaration
    the owner would type, where bounds read from the cells (or estimated with ε) could come out as 1 to 20.
    """
    found = _SCALE_IN_NAME.search(name)
    if found is None:
        return None
    lower, upper = float(found.group(1)), float(found.group(2))
    return (lower, upper) if lower < upper else None
