"""Reading an owner's CSV safely: encoding, delimiter, size guards, and sentences for errors.

Every failure raises :class:`~dpcore.exceptions.DataError` with a sentence that says what to
do. Messages never quote the file's contents: pandas' own messages can contain cell values,
so they are never passed on.
"""

from __future__ import annotations

import csv
import io

import pandas as pd

from dpcore.exceptions import DataError

MAX_ROWS = 2_000_000
MAX_COLUMNS = 500
DELIMITERS = (",", ";", "\t")
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}


def decode(raw: bytes) -> tuple[str, str]:
    """Return ``(text, encoding)``: UTF-8 (with or without BOM) first, else Latin-1."""
    if not raw or not raw.strip():
        raise DataError("The file is empty. Choose a CSV file with a header row and at least one data row.")
    if b"\x00" in raw[:8192]:
        raise DataError("This looks like a binary file (a spreadsheet or archive?), not a CSV. Save it as CSV and try again.")
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1"


def sniff_delimiter(text: str) -> str:
    """The delimiter among comma, semicolon and tab that splits the first lines most consistently."""
    sample = "\n".join(text.splitlines()[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        header = sample.splitlines()[0] if sample else ""
        counts = {d: header.count(d) for d in DELIMITERS}
        return max(counts, key=counts.get)


def read_csv_bytes(raw: bytes, max_rows: int = MAX_ROWS, max_columns: int = MAX_COLUMNS) -> tuple[pd.DataFrame, dict]:
    """Parse an uploaded CSV. Returns the table and facts about the file (encoding, delimiter).

    The guard on rows and columns keeps the app responsive and refuses tables it was not
    built for, with a clear sentence instead of a crash.
    """
    text, encoding = decode(raw)
    delimiter = sniff_delimiter(text)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, skipinitialspace=True, na_values=["?", "NA", "N/A", ""], keep_default_na=True)
        # pandas silently renames a repeated header (x, x.1) and, when the first data row has one
        # more field than the header (e.g. a trailing delimiter), turns the first column into the
        # index, shifting every value one column left: check both on the csv module's split.
        rows = csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True)
        rows = (row for row in rows if len(row) > 1 or (row and row[0].strip()))  # pandas skips blank lines
        header, first_row = [h.strip() for h in next(rows, [])], next(rows, [])
        if len(first_row) > len(header):
            raise pd.errors.ParserError
    except pd.errors.EmptyDataError:
        raise DataError("The file is empty. Choose a CSV file with a header row and at least one data row.") from None
    except (pd.errors.ParserError, ValueError, csv.Error):
        raise DataError(
            "The file could not be read as a table: rows have different numbers of fields. "
            "Check that it is a CSV with one header row and the same delimiter (comma, semicolon or tab) on every line."
        ) from None
    if frame.shape[1] < 2:
        raise DataError(
            "Only one column was found. The file may use a delimiter other than comma, semicolon or tab, "
            "or it is not a table: save it as CSV with one of those delimiters."
        )
    if len(frame) == 0:
        raise DataError("The file has a header but no data rows.")
    if len(frame) > max_rows:
        raise DataError(f"The table has more than {max_rows:,} rows, more than DP Studio handles in the browser. Use the command line (python -m dpcore) for large files.")
    if frame.shape[1] > max_columns:
        raise DataError(f"The table has more than {max_columns} columns. Drop the columns you do not need and upload again.")
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(set(frame.columns)) != len(frame.columns) or len(set(header)) != len(header):
        raise DataError("Two columns have the same name. Give every column a distinct header and upload again.")
    frame = frame.apply(lambda col: col.str.strip() if col.dtype == object or pd.api.types.is_string_dtype(col) else col)
    return frame, {"encoding": encoding, "delimiter": _DELIMITER_NAMES[delimiter], "rows": len(frame), "columns": frame.shape[1]}


def read_csv_path(path, **kwargs) -> tuple[pd.DataFrame, dict]:
    """Read a CSV file from disk with the same checks as an upload."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        raise DataError(f"The file '{path}' could not be opened.") from None
    return read_csv_bytes(raw, **kwargs)
