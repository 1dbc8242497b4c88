"""Reading an owner's table safely: CSV or Excel, header and decimal-comma detection, size guards.

Every failure raises :class:`~dpcore.exceptions.DataError` with a sentence that says what to
do. Messages never quote the file's contents: pandas' and openpyxl's own messages can contain
cell values, so they are never passed on. Column names may be mentioned; cell values never.

Text is read by the rules of :mod:`dpcore.tables.csv_reading` (encodings, delimiters, and one list of
missing-value markers), so a table read whole here and streamed by the command line means the
same: the same cells are missing, and it spends the same budget.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import PurePath
from typing import Any

import pandas as pd

from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer
from dpcore.tables.csv_reading import DELIMITERS, MISSING_VALUES, decode, sniff_delimiter
from dpcore.tables.schema import ZERO_PADDED

__all__ = [
    "DELIMITERS",
    "MAX_COLUMNS",
    "MAX_ROWS",
    "MISSING_VALUES",
    "comma_number_columns",
    "decode",
    "first_row_is_data",
    "read_csv_bytes",
    "read_csv_path",
    "read_excel_bytes",
    "read_table_bytes",
    "sniff_delimiter",
]

MAX_ROWS = 2_000_000
MAX_COLUMNS = 500
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
# Only the one list marks a cell missing: pandas' own defaults differ from version to version.
# (Any: pandas' stubs type each keyword of read_csv/read_excel, which a dict of mixed values cannot match.)
_MARKERS: dict[str, Any] = {"na_values": MISSING_VALUES, "keep_default_na": False}
_SAMPLE_ROWS = 1000  # rows that header detection looks at: enough to see categories recur, cheap
_NUMERIC_SHARE = 0.95  # a column is "numbers" when this share of its filled cells below row 1 are numbers
# A number as European spreadsheets write it: optional thousands groups (one separator: dot, space,
# no-break space or narrow no-break space) and an optional decimal comma: 1,5  1.234,5  12 345,25.
_COMMA_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:([. \u00a0\u202f])\d{3})(?:\1\d{3})*|\d+)(?:,\d+)?")
_THOUSANDS = r"[. \u00a0\u202f]"
# A cheap look over the whole text for a field that starts that way, before any column is read twice.
_PADDED_FIELD = re.compile(r'(?:^|[,;\t])[ "]*[+-]?0\d', re.MULTILINE)
_SEPARATOR = r"[,. \u00a0\u202f]"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # old .xls files, and password-protected .xlsx files
_EXCEL_SUFFIXES = (".xlsx", ".xlsm")
_OLD_EXCEL = ".xls"
_REFUSED = {
    ".xls": N_(
        "This is an old Excel workbook (.xls), which DP Studio does not read. Open it in your spreadsheet program and save it as .xlsx or CSV."
    ),
    ".ods": N_("This is an OpenDocument spreadsheet (.ods), which DP Studio does not read. Save it as .xlsx or CSV."),
    ".numbers": N_("This is an Apple Numbers file, which DP Studio does not read. Export it as .xlsx or CSV."),
    ".zip": N_("This is a compressed archive. Unpack it and upload the CSV or .xlsx file inside."),
    ".gz": N_("This is a compressed file. Unpack it and upload the CSV or .xlsx file inside."),
    ".json": N_("JSON files are not read here. Save the table as CSV (or .xlsx) and upload that."),
}
_BAD_WORKBOOK = N_(
    "The workbook could not be read: it may be damaged or not really an .xlsx file. "
    "Open it in your spreadsheet program, save it again as .xlsx or CSV, and upload that."
)


def _is_number(values: pd.Series) -> pd.Series:
    """Which cells read as a number, written with a decimal point or a decimal comma."""
    text = values.astype("string").str.strip()
    return (pd.to_numeric(text, errors="coerce").notna() | text.str.fullmatch(_COMMA_NUMBER)).fillna(False).astype(bool)


def first_row_is_data(sample: pd.DataFrame) -> bool:
    """Guess whether the first row of a table read without a header holds data rather than names.

    Parameters
    ----------
    sample : pandas.DataFrame
        The first rows of the table, read without a header (row 0 is the candidate header).

    Returns
    -------
    bool
        True when the first row looks like data. A name is recognised by not being a number
        above a column of numbers ("age" above 39, 50, ...), which settles it. Data is recognised
        by numbers above numbers and by categories that recur below ("Private" in a column of
        work classes). When neither is clear (free text, unique names) the answer is False, so
        the first row stays the header, as before.
    """
    if len(sample) < 2 or sample.shape[1] < 2:
        return False
    sample = sample.astype("string").apply(lambda col: col.str.strip())
    first, below = sample.iloc[0], sample.iloc[1:]
    filled = below.notna()
    numeric = ((below.apply(_is_number) & filled).sum() / filled.sum()).fillna(0) >= _NUMERIC_SHARE
    present = first.notna()
    if (numeric & present & ~_is_number(first)).any():
        return False
    text = present & ~numeric & filled.any()
    if not text.any():  # every column is numbers: a row of numbers above them is data
        return bool((numeric & present).any())
    # A name seldom reappears as a value in its own column; a category value usually does.
    recurs = below.eq(first).fillna(False).any()
    return 2 * int((recurs & text).sum()) >= int(text.sum())


def comma_number_columns(frame: pd.DataFrame) -> list[str]:
    """Names of text columns whose every filled cell is a number in the European style (``1.234,5``)."""
    found = []
    for name in frame.columns:  # a loop over columns, not rows: each test is vectorised
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            continue
        values = column.dropna().astype("string")
        # A separator is required, so text digits such as postcodes ("0150") keep their zeros.
        if len(values) and values.str.fullmatch(_COMMA_NUMBER).all() and values.str.contains(_SEPARATOR).any():
            found.append(name)
    return found


def _comma_numbers_to_float(column: pd.Series) -> pd.Series:
    """Convert a column that :func:`comma_number_columns` accepted: drop thousands separators, comma to point."""
    text = column.astype("string").str.replace(_THOUSANDS, "", regex=True).str.replace(",", ".", regex=False)
    return pd.to_numeric(text).astype(float)


def _finish(
    frame: pd.DataFrame,
    info: dict[str, Any],
    names: list[str] | None,
    max_rows: int,
    max_columns: int,
    decimal: str | None,
    suspect: bool,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The checks and clean-up shared by CSV and Excel: guards, column names, decimal commas."""
    if frame.shape[1] < 2:
        raise DataError(
            _(
                "Only one column was found. The file may use a delimiter other than comma, semicolon or tab, or it "
                "is not a table: save it as CSV with one of those delimiters."
            )
        )
    if len(frame) == 0:
        raise DataError(_("The file has a header but no data rows."))
    if len(frame) > max_rows:
        raise DataError(
            _(
                "The table has more than {max_rows} rows, more than DP Studio handles in the browser. Use the "
                "command line (python -m dpcore) for large files."
            ).format(max_rows=integer(max_rows))
        )
    if frame.shape[1] > max_columns:
        raise DataError(
            _("The table has more than {max_columns} columns. Drop the columns you do not need and upload again.").format(
                max_columns=max_columns
            )
        )
    if names is not None:  # the table has a header row
        frame.columns = [str(c).strip() for c in frame.columns]
        if len(set(frame.columns)) != len(frame.columns) or len(set(names)) != len(names):
            raise DataError(_("Two columns have the same name. Give every column a distinct header and upload again."))
    else:
        frame.columns = [f"column {i}" for i in range(1, frame.shape[1] + 1)]
    frame = frame.apply(_stripped)
    columns = comma_number_columns(frame) if decimal == "," or (decimal is None and suspect) else []
    if decimal == ",":
        frame[columns] = frame[columns].apply(_comma_numbers_to_float)
    info.update(rows=len(frame), columns=frame.shape[1], decimal=decimal or ".")
    info.update(decimal_comma_suspected=decimal is None and bool(columns), decimal_comma_columns=columns)
    return frame, info


def _stripped(column: pd.Series) -> pd.Series:
    """Text without the spaces around it; a marker that only the spaces hid (" ? ") becomes missing.

    A text column left with only numbers once such markers are gone becomes numbers, as the
    streaming reader reads it.
    """
    if not (column.dtype == object or pd.api.types.is_string_dtype(column)):
        return column
    try:
        stripped = column.str.strip()
    except AttributeError:  # True/False with gaps: no text to strip (the accessor has looked at every cell already)
        return column
    column = stripped.where(stripped.notna() | column.isna(), column)  # a workbook's numbers among text stay numbers
    marked = column.isin(MISSING_VALUES)
    if not marked.any():
        return column
    column = column.mask(marked)
    numbers = pd.to_numeric(column, errors="coerce")
    return numbers if numbers.notna().sum() == column.notna().sum() else column


def _keep_zero_padded_codes(frame: pd.DataFrame, text: str, header: bool, options: dict[str, Any]) -> pd.DataFrame:
    """Number columns written with leading zeros ("020", "060") read again as the text they are (codes, not numbers).

    Only the columns pandas read as numbers are read a second time, and only when some field
    of the file starts with a zero followed by a digit.
    """
    numeric = [
        i
        for i, name in enumerate(frame.columns)
        if pd.api.types.is_numeric_dtype(frame[name]) and not pd.api.types.is_bool_dtype(frame[name])
    ]
    if not numeric or not _PADDED_FIELD.search(text):
        return frame
    as_text = pd.read_csv(io.StringIO(text), header=0 if header else None, usecols=numeric, dtype=str, **options)
    for position, column in zip(numeric, as_text.columns, strict=True):  # usecols keeps the file's order
        stripped = as_text[column].str.strip()
        if stripped.str.fullmatch(ZERO_PADDED).fillna(False).any():
            frame[frame.columns[position]] = stripped.to_numpy(dtype=object)
    return frame


def _check_options(header: object, decimal: object) -> None:
    if header not in (None, True, False) or decimal not in (None, ".", ","):
        raise ValueError("header must be None, True or False and decimal None, '.' or ','")


def read_csv_bytes(
    raw: bytes,
    max_rows: int = MAX_ROWS,
    max_columns: int = MAX_COLUMNS,
    *,
    header: bool | None = None,
    decimal: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Parse an uploaded CSV. Returns the table and facts about the file.

    Parameters
    ----------
    raw : bytes
        The file's bytes (UTF-8 with or without BOM, else Latin-1; comma, semicolon or tab).
    max_rows, max_columns : int
        Guards that keep the app responsive and refuse tables it was not built for, with a
        clear sentence instead of a crash.
    header : bool or None
        True: the first row names the columns. False: it is data, and the columns are named
        ``column 1``, ``column 2``, ... None: guess with :func:`first_row_is_data`.
    decimal : {None, ".", ","}
        ",": text columns that are all European-style numbers (``1.234,5``) become numbers.
        ".": leave them as text. None: leave them as text but report them in ``info``.

    Returns
    -------
    (pandas.DataFrame, dict)
        The table, and ``info`` with keys ``format``, ``encoding``, ``delimiter``, ``rows``,
        ``columns``, ``header``, ``header_guessed``, ``decimal``, ``decimal_comma_suspected``
        and ``decimal_comma_columns``.
    """
    _check_options(header, decimal)
    text, encoding = decode(raw)
    delimiter = sniff_delimiter(text)
    options: dict[str, Any] = {"sep": delimiter, "skipinitialspace": True, **_MARKERS}
    guessed = header is None
    if guessed:
        try:
            sample = pd.read_csv(io.StringIO(text), header=None, dtype=str, nrows=_SAMPLE_ROWS + 1, **options)
            header = not first_row_is_data(sample)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError):
            header = True  # the full read below explains what is wrong with the file
    try:
        frame = pd.read_csv(io.StringIO(text), header=0 if header else None, **options)
        # pandas silently renames a repeated header (x, x.1) and, when the first data row has one
        # more field than the header (e.g. a trailing delimiter), turns the first column into the
        # index, shifting every value one column left: check both on the csv module's split.
        reader = csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True)
        rows = (row for row in reader if len(row) > 1 or (row and row[0].strip()))  # pandas skips blank lines
        names, first_row = [h.strip() for h in next(rows, [])], next(rows, [])
        if len(first_row) > len(names):
            raise pd.errors.ParserError
    except pd.errors.EmptyDataError:
        raise DataError(_("The file is empty. Choose a CSV file with a header row and at least one data row.")) from None
    except (pd.errors.ParserError, ValueError, csv.Error):
        raise DataError(
            _(
                "The file could not be read as a table: rows have different numbers of fields. Check that it is a "
                "CSV with one header row and the same delimiter (comma, semicolon or tab) on every line."
            )
        ) from None
    frame = _keep_zero_padded_codes(frame, text, bool(header), options)
    info = {
        "format": "csv",
        "encoding": encoding,
        "delimiter": _DELIMITER_NAMES[delimiter],
        "header": header,
        "header_guessed": guessed,
    }
    # A decimal comma is only plausible when the comma is not the delimiter.
    return _finish(frame, info, names if header else None, max_rows, max_columns, decimal, suspect=delimiter != ",")


def read_excel_bytes(
    raw: bytes,
    max_rows: int = MAX_ROWS,
    max_columns: int = MAX_COLUMNS,
    *,
    header: bool | None = None,
    decimal: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Parse an uploaded Excel workbook (.xlsx): its first sheet, with the same checks as a CSV.

    Parameters and the returned table are as for :func:`read_csv_bytes`. ``info`` has
    ``format`` ("xlsx"), ``sheet`` (the first sheet's name), ``sheets`` (how many the workbook
    has) instead of ``encoding`` and ``delimiter``.
    """
    _check_options(header, decimal)
    if not raw or not raw.strip():
        raise DataError(_("The file is empty. Choose an .xlsx workbook with a header row and at least one data row."))
    if raw.startswith(_OLE_MAGIC):
        # Excel stores a password-protected .xlsx inside the same container as an old .xls.
        if "EncryptionInfo".encode("utf-16-le") in raw:
            raise DataError(
                _(
                    "The workbook is protected by a password. Remove the password in your spreadsheet program (or save "
                    "it as CSV) and upload again."
                )
            )
        raise DataError(_(_REFUSED[_OLD_EXCEL]))
    if not raw.startswith(b"PK"):
        raise DataError(_("This is not an .xlsx workbook. Save the table as .xlsx or CSV and upload that."))
    try:  # openpyxl raises many kinds of errors on a broken file, and their messages may quote cells
        book = pd.ExcelFile(io.BytesIO(raw), engine="openpyxl")
        sheets = book.sheet_names
        # Read without a header (bounded by the row guard), then decide: one read instead of two.
        cells = pd.read_excel(book, sheet_name=0, header=None, nrows=max_rows + 2, **_MARKERS)
    except Exception:
        raise DataError(_(_BAD_WORKBOOK)) from None
    # Blank rows and columns around the table (formatting, a title line's neighbours) carry nothing.
    cells = cells.dropna(how="all").dropna(axis=1, how="all").reset_index(drop=True)
    if cells.empty:
        raise DataError(_("The first sheet of the workbook is empty. Put the table on the first sheet and upload again."))
    guessed = header is None
    if guessed:
        header = not first_row_is_data(cells.head(_SAMPLE_ROWS + 1))
    names = None
    if header:
        first = cells.iloc[0]
        names = [f"column {i}" if pd.isna(v) else str(v).strip() for i, v in enumerate(first, start=1)]
        cells = cells.iloc[1:].reset_index(drop=True).set_axis(names, axis=1)
    # Without the header row in them, columns of numbers or of text get their own type back.
    frame = cells.infer_objects()
    info = {"format": "xlsx", "sheet": str(sheets[0]), "sheets": len(sheets), "header": header, "header_guessed": guessed}
    return _finish(frame, info, names, max_rows, max_columns, decimal, suspect=True)


def read_parquet_bytes(
    raw: bytes,
    max_rows: int = MAX_ROWS,
    max_columns: int = MAX_COLUMNS,
    *,
    header: bool | None = None,
    decimal: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Parse an uploaded Parquet file (a warehouse export) with the same checks as a CSV.

    Parquet names its columns and types its numbers, so nothing is guessed: ``header`` and
    ``decimal`` are accepted for a uniform call and must be left out. The row guard is checked on
    the file's footer before any row is read. ``info`` has ``format`` ("parquet").
    """
    import pyarrow.parquet as pq

    _check_options(header, decimal)
    if header is False or decimal == ",":
        raise DataError(_("A Parquet file names its columns and types its numbers; there is nothing to read again."))
    try:  # pyarrow's messages on a broken file may quote its bytes
        parquet = pq.ParquetFile(io.BytesIO(raw))
        if parquet.metadata.num_rows > max_rows:
            raise DataError(
                _(
                    "The table has more than {max_rows} rows, more than DP Studio handles in the browser. Use the "
                    "command line (python -m dpcore) for large files."
                ).format(max_rows=integer(max_rows))
            )
        frame = parquet.read().to_pandas()
    except DataError:
        raise
    except Exception:
        raise DataError(
            _("This is not a readable Parquet file. Save the table as Parquet, CSV or .xlsx and upload that.")
        ) from None
    names = [str(c) for c in frame.columns]
    return _finish(
        frame, {"format": "parquet", "header": True, "header_guessed": False}, names, max_rows, max_columns, None, suspect=False
    )


def read_table_bytes(raw: bytes, filename: str, **options: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read an upload by its file name's extension: .xlsx as Excel, .parquet as Parquet, anything textual as CSV.

    ``options`` are passed to :func:`read_excel_bytes`, :func:`read_parquet_bytes` or
    :func:`read_csv_bytes`. Formats that are not read (.xls, .ods, archives, ...) raise a sentence
    saying what to save instead.
    """
    suffix = PurePath(filename or "").suffix.lower()
    if suffix in _EXCEL_SUFFIXES:
        return read_excel_bytes(raw, **options)
    if suffix in (".parquet", ".parq"):
        return read_parquet_bytes(raw, **options)
    if suffix in _REFUSED:
        raise DataError(_(_REFUSED[suffix]))
    return read_csv_bytes(raw, **options)  # .csv, .tsv, .txt, .data, .test, or no extension


def read_csv_path(path: str | os.PathLike[str], **kwargs: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a CSV file from disk with the same checks as an upload."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        raise DataError(_("The file '{path}' could not be opened.").format(path=path)) from None
    return read_csv_bytes(raw, **kwargs)
