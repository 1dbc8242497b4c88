"""Writing the released file: spreadsheet-safe text (OWASP CSV injection) and the CSV writer.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
leading ``'`` so that spreadsheet programs show it instead of running it as a formula;
numbers (negative ones too) are left alone.
"""

from __future__ import annotations

import re
from typing import IO

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from dpcore.budget.fingerprint import NUMBER
from dpcore.i18n import N_

_TRIGGER = r"^[=+\-@\t\r]"
_TRIGGER_RE = re.compile(_TRIGGER)
_NUMBER_RE = re.compile(NUMBER)
ESCAPING_RULE = N_(
    "Text cells that begin with =, +, -, @, a tab or a carriage return are written with a leading "
    "apostrophe (') so spreadsheet programs show them instead of running them as formulas; numbers, "
    "negative ones included, are written unchanged. The domains in this report are spelled as in the file."
)


def escape_label(text: str) -> str:
    """One text value made safe for spreadsheets (a leading ``'`` when it could run as a formula).

    Examples
    --------
    >>> escape_label("=SUM(A1)"), escape_label("-5")
    ("'=SUM(A1)", '-5')
    """
    text = str(text)
    if _TRIGGER_RE.match(text) and not _NUMBER_RE.match(text):
        return "'" + text
    return text


def escape_text_array(values: pa.Array) -> pa.Array:
    """:func:`escape_label` for a whole arrow string array, vectorised; nulls stay null."""
    trigger = pc.fill_null(pc.match_substring_regex(values, _TRIGGER), False)
    if not pc.any(trigger).as_py():
        return values
    number = pc.fill_null(pc.match_substring_regex(values, NUMBER), False)
    escape = pc.and_(trigger, pc.invert(number))
    quote, empty = pa.scalar("'", type=values.type), pa.scalar("", type=values.type)
    return pc.if_else(escape, pc.binary_join_element_wise(quote, values, empty), values)


def keep_array(values: pd.Series) -> pa.Array:
    """A column copied unchanged (declared public): numbers as they are, text escaped."""
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
    if numeric:
        return pa.array(values.to_numpy(), from_pandas=True)
    if not pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_object_dtype(values.dtype):
        values = values.astype("str")
    return escape_text_array(pa.array(values, from_pandas=True))


def needs_quotes(text: str) -> bool:
    return any(ch in text for ch in ',"\r\n')


def write_csv(table: pa.Table, sink: IO[bytes] | pa.NativeFile, header: bool, quoting: str) -> None:
    """Write one chunk of the released table (``quoting``: ``"none"`` when no cell can need quotes).

    Dictionary-encoded columns are cast to plain text first (one ``take`` of each column's few
    labels): the same cells as the CSV writer's own decoding, which on this machine took about
    twice as long as this cast and the writing of plain text together.
    """
    columns = [pc.cast(c, c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    plain = pa.Table.from_arrays(columns, names=table.column_names)
    pcsv.write_csv(plain, sink, pcsv.WriteOptions(include_header=header, quoting_style=quoting))
