"""Reading CSV files: one list of missing-value markers, one sniffer, one streaming reader.

Every CSV the engine reads is read by the rules here, so a table means the same whether the
app reads it whole (:func:`dpcore.tables.loading.read_csv_bytes`, with pandas) or the command line
streams it (:func:`read_chunks`, with pyarrow): the same cells are missing and the same text
is stripped, so the same file gets the same fingerprint, the same dataset and the same budget.

* :data:`MISSING_VALUES`: the words that mean "no value". A cell is missing when, stripped of
  the spaces around it, it is one of them.
* :func:`decode` and :func:`sniff_delimiter`: UTF-8 (with or without BOM), else Latin-1;
  comma, semicolon or tab.
* :func:`read_chunks`: pyarrow's C++ parser fed pieces of whole lines, so memory stays
  bounded whatever the file's size; text is stripped, markers become missing, and a column
  whose every value is a number becomes numbers.

Errors are :class:`~dpcore.exceptions.DataError` sentences that never quote the file (the
parsers' own messages quote the offending line).
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Callable, Container, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from dpcore.exceptions import DataError
from dpcore.i18n import _

#: pandas' long-standing default markers plus "?" (the UCI archive's), written out so that a
#: new pandas cannot change which cells are missing.
# fmt: off
MISSING_VALUES = sorted({
    "", "?", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
    "NULL", "NaN", "None", "n/a", "nan", "null",
})
# fmt: on
DELIMITERS = (",", ";", "\t")
#: Rows per chunk of a streamed file: four randomness blocks of :mod:`dpcore.release`.
DEFAULT_CHUNKSIZE = 1 << 18
_MISSING_SET = pa.array(MISSING_VALUES, type=pa.string())
_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
_HEAD_BYTES = 1 << 20
_PIECE_BYTES = 16 << 20
_MAX_LINE_BYTES = 256 << 20


def decode(raw: bytes, *, complete: bool = True) -> tuple[str, str]:
    """Return ``(text, encoding)``: UTF-8 (with or without BOM) first, else Latin-1.

    ``complete=False`` for the head of a longer file: a character cut at its end is not an error.
    """
    if not raw or not raw.strip():
        raise DataError(_("The file is empty. Choose a CSV file with a header row and at least one data row."))
    if b"\x00" in raw[:8192]:
        raise DataError(_("This looks like a binary file (a spreadsheet or archive?), not a CSV. Save it as CSV and try again."))
    try:
        return codecs.getincrementaldecoder("utf-8-sig")().decode(raw, final=complete), "utf-8"
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
        return max(counts, key=counts.__getitem__)


def sniff_file(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(encoding, delimiter)`` of a CSV file, from its first megabyte."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        raise DataError(_("The file '{name}' could not be opened.").format(name=path.name)) from None
    text, encoding = decode(head, complete=False)
    return encoding, sniff_delimiter(text[:65536])


def file_chunks(path: str | os.PathLike[str], chunksize: int = DEFAULT_CHUNKSIZE) -> Callable[[], Iterator[pd.DataFrame]]:
    """A callable that reads a CSV file as DataFrame chunks (for :meth:`dpcore.budget.datasets.Catalog.open_table`)."""
    path = Path(path)
    encoding, delimiter = sniff_file(path)

    def chunks() -> Iterator[pd.DataFrame]:
        try:
            for frame, _info in read_chunks(path, encoding, delimiter, chunksize):
                yield frame
        except UnicodeDecodeError:
            raise DataError(_("The file's text could not be decoded. Save it as UTF-8 and try again.")) from None

    return chunks


def count_rows(path: str | os.PathLike[str], chunksize: int = DEFAULT_CHUNKSIZE) -> int:
    """The rows of a CSV file, parsed as :func:`file_chunks` parses them but with one column converted."""
    path = Path(path)
    encoding, delimiter = sniff_file(path)
    first = [str(name) for name in _header(path, encoding, delimiter)[0][:1]]
    try:
        return sum(len(frame) for frame, _info in read_chunks(path, encoding, delimiter, chunksize, columns=set(first)))
    except UnicodeDecodeError:
        raise DataError(_("The file's text could not be decoded. Save it as UTF-8 and try again.")) from None


def read_plainly(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (read with ``categorical`` columns) as :func:`file_chunks` would have read it.

    Without the hint, a column whose every value in the chunk is a number is read as numbers;
    a Categorical column of such values becomes those numbers (decided on its few values, as
    :func:`_as_numbers` decides on the column), so what is computed from the chunk — a dataset's
    identification — is the same whichever way the file was read.
    """
    numbers = {}
    for name, values in frame.items():
        if isinstance(values.dtype, pd.CategoricalDtype):
            column = _categorical_numbers(values)
            if column is not None:
                numbers[name] = column
    if not numbers:
        return frame
    frame = frame.copy(deep=False)
    for name, column in numbers.items():
        frame[name] = column
    return frame


def _categorical_numbers(values: pd.Series) -> np.ndarray | None:
    """A Categorical column as float64 if every present value is a number, else None (:func:`_as_numbers` by value)."""
    codes = values.cat.codes.to_numpy().astype(np.int64)
    valid = codes[codes >= 0]
    if len(valid) == 0:
        return np.full(len(values), np.nan)
    categories = values.cat.categories
    present = np.bincount(valid, minlength=len(categories)) > 0
    distinct = pa.array(np.asarray(categories[present], dtype=object), type=pa.string())
    cast = _numbers_or_none(list(categories[valid[:64]]), distinct)
    if cast is None:
        return None
    table = np.full(len(categories) + 1, np.nan)
    table[np.flatnonzero(present)] = cast
    return table[codes]


# --- the streaming reader ------------------------------------------------------------------------


def _unreadable() -> DataError:
    return DataError(
        _(
            "The file could not be read as a table: some rows have a different number of fields than the header. "
            "Check that it is a CSV with one header row and the same delimiter on every line."
        )
    )


def _line_end(data: bytes, last: bool) -> int:
    """Index just after the first (or last) newline of ``data`` outside double quotes, or -1.

    ``data`` starts at the beginning of a line, so a newline is outside quotes when an even
    number of quote characters precede it (an escaped quote ``""`` counts twice).
    """
    quotes = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 34) if b'"' in data else None
    find = data.rfind if last else data.find
    at = find(b"\n")
    while at >= 0:
        if quotes is None or np.searchsorted(quotes, at) % 2 == 0:
            return at + 1
        at = data.rfind(b"\n", 0, at) if last else data.find(b"\n", at + 1)
    return -1


def _header(path: str | os.PathLike[str], encoding: str, delimiter: str) -> tuple[list[str], int]:
    """The column names and the byte offset where the data rows start."""
    data = b""
    with open(path, "rb") as handle:
        while (end := _line_end(data, last=False)) < 0:
            block = handle.read(_HEAD_BYTES)
            if not block:
                end = len(data)
                break
            data += block
            if len(data) > _MAX_LINE_BYTES:
                raise _unreadable()
    options = pcsv.ReadOptions(encoding=encoding, use_threads=False)
    try:
        names = pcsv.read_csv(
            pa.py_buffer(data[:end]), read_options=options, parse_options=pcsv.ParseOptions(delimiter=delimiter)
        )
    except pa.ArrowInvalid as error:
        if "UTF8" in str(error):
            raise UnicodeDecodeError(encoding, b"", 0, 1, "not valid text in this encoding") from None
        raise _unreadable() from None
    return names.column_names, end


def _pieces(path: str | os.PathLike[str], start: int) -> Iterator[tuple[bytes | memoryview, int]]:
    """Yield ``(bytes, end_offset)``: runs of about ``_PIECE_BYTES`` bytes of whole lines from ``start`` on.

    Reading the file in pieces (instead of handing pyarrow the whole file, which it would read
    ahead to the end) keeps memory bounded whatever the file's size.
    """
    with open(path, "rb") as handle:
        handle.seek(start)
        carry = b""
        while True:
            block = handle.read(_PIECE_BYTES)
            data = carry + block if carry else block
            if not block:
                if data.strip():
                    yield data, handle.tell()
                return
            cut = _line_end(data, last=True)
            if cut < 0:
                if len(data) > _MAX_LINE_BYTES:
                    raise _unreadable()
                carry = data
                continue
            yield memoryview(data)[:cut], handle.tell() - (len(data) - cut)
            carry = data[cut:]


def _needs_strip(array: pa.Array) -> bool:
    """True when some string may start or end with whitespace (any non-ASCII edge byte counts)."""
    n = len(array)
    if n == 0 or array.null_count == n:
        return False
    buffers = array.buffers()
    offset_type = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[array.offset : array.offset + n + 1].astype(np.int64)
    if buffers[2] is None:
        return False
    data = np.frombuffer(buffers[2], dtype=np.uint8)
    nonempty = np.diff(offsets) > 0
    edges = np.concatenate((data[offsets[:-1][nonempty]], data[offsets[1:][nonempty] - 1]))
    return bool(np.any((edges <= 32) | (edges >= 128)))


def _stripped(array: pa.Array) -> pa.Array:
    """Text without the spaces around it; a marker that only the spaces hid becomes missing."""
    if not _needs_strip(array):
        return array
    array = pc.utf8_trim_whitespace(array)
    return pc.if_else(pc.is_in(array, value_set=_MISSING_SET), pa.scalar(None, type=array.type), array)


def _as_numbers(array: pa.Array) -> np.ndarray | None:
    """The column as float64 if every non-missing value is a number, else None (like pandas' inference)."""
    valid = array.drop_null()
    if len(valid) == 0:
        return np.full(len(array), np.nan)
    return _numbers_or_none(valid.slice(0, 64).to_pylist(), array)


def _numbers_or_none(sample: list[str], values: pa.Array) -> np.ndarray | None:
    """``values`` as float64 when the ``sample`` (the first 64 present values, in row order) reads as numbers and Arrow
    casts every value, else None: the one test of "this column is numbers", for a column read as text
    (:func:`_as_numbers`) and for a Categorical one (:func:`_categorical_numbers`), so both reads agree."""
    try:
        [float(v) for v in sample]
    except ValueError:
        return None
    try:
        return pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _text_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its number columns as text (the others as they are)."""
    return pa.schema([f.with_type(pa.string()) if pa.types.is_floating(f.type) else f for f in schema])


def _clean_column(array: pa.Array | pa.ChunkedArray) -> np.ndarray | pd.Series | pd.Categorical:
    """Strip whitespace, mark the missing-value words as missing, and read numbers as numbers."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_floating(array.type):  # parsed as numbers by the reader (spaces around them trimmed)
        return array.to_numpy(zero_copy_only=False)
    if pa.types.is_dictionary(array.type):
        return _clean_dictionary(array)
    array = _stripped(array)
    numbers = _as_numbers(array)
    if numbers is not None:
        return numbers
    return array.to_pandas(types_mapper=lambda t: _STR_DTYPE)


def _clean_dictionary(array: pa.DictionaryArray) -> pd.Categorical:
    """A dictionary-encoded text column as a pandas Categorical, cleaned through its (few) distinct values."""
    values = _stripped(array.dictionary)
    remap, categories = pd.factorize(values.to_pandas(types_mapper=lambda t: _STR_DTYPE), use_na_sentinel=True)
    remap = np.append(np.asarray(remap, dtype=np.int64), -1)
    indices = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return pd.Categorical.from_codes(remap[indices], categories=pd.Index(categories, dtype=_STR_DTYPE))


def read_chunks(
    path: str | os.PathLike[str],
    encoding: str,
    delimiter: str,
    chunksize: int,
    categorical: Container[str] = (),
    columns: Container[str] | None = None,
    numeric: Container[str] = (),
) -> Iterator[tuple[pd.DataFrame, int]]:
    """Yield ``(frame, bytes_read)`` for consecutive chunks of ``chunksize`` rows (the last may be shorter).

    Columns named in ``categorical`` are dictionary-encoded while parsing (they become pandas
    Categoricals), so their values are cleaned, matched and hashed once per distinct value.
    With ``columns``, only the header's columns named there are converted and returned (a
    release skips the identifiers it drops); a name the header lacks is simply absent.
    Columns named in ``numeric`` (a release's binned and Laplace columns) are parsed straight
    into numbers, without building their text first; once a piece holds a cell that is not a
    number, the rest of the file is read as text and the chunk's parsed numbers are turned back
    into text, so such a column means what it would have meant read as text (its numbers, by
    value; the released copy and the fingerprint read it by value alone).
    Pieces are parsed on the calling thread: pyarrow's own threads cost a quarter more CPU
    and gained no time on the shared 2-core machine, where the release's reader, randomiser
    and writer already overlap.

    Raises :class:`DataError` with a sentence, or ``UnicodeDecodeError`` when the text is not
    valid in ``encoding``.
    """
    names, start = _header(path, encoding, delimiter)
    stripped = [str(n).strip() for n in names]
    if len(set(names)) != len(names) or len(set(stripped)) != len(stripped):
        raise DataError(_("Two columns have the same name. Give every column a distinct header."))
    text_types = {n: pa.dictionary(pa.int32(), pa.string()) if n.strip() in categorical else pa.string() for n in names}
    number_types = {n: pa.float64() for n in names if n.strip() in numeric and n.strip() not in categorical}

    def options(types: dict[str, pa.DataType]) -> pcsv.ConvertOptions:
        convert = pcsv.ConvertOptions(
            column_types=types, null_values=MISSING_VALUES, strings_can_be_null=True, quoted_strings_can_be_null=True
        )
        if columns is not None:
            convert.include_columns = [n for n, s in zip(names, stripped) if s in columns]
        return convert

    as_text = options(text_types)
    convert = options(text_types | number_types) if number_types else as_text
    if columns is not None:
        stripped = [s for s in stripped if s in columns]
    read = pcsv.ReadOptions(encoding=encoding, column_names=names, use_threads=False, block_size=_PIECE_BYTES + 1)
    parse = pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)

    def frame(batches: list[pa.RecordBatch]) -> pd.DataFrame:
        table = pa.Table.from_batches(batches).unify_dictionaries()
        return pd.DataFrame({s: _clean_column(table.column(i)) for i, s in enumerate(stripped)})

    pending: list[pa.RecordBatch] = []

    def parsed(piece: bytes | memoryview) -> pa.Table:
        nonlocal convert, pending
        if convert is not as_text:
            try:
                return pcsv.read_csv(pa.py_buffer(piece), read_options=read, parse_options=parse, convert_options=convert)
            except pa.ArrowInvalid as error:
                if "conversion error" not in str(error):
                    raise
            convert = as_text  # a cell that is not a number: this column is text from here on
            if pending:
                pending = pa.Table.from_batches(pending).cast(_text_schema(pending[0].schema)).to_batches()
        return pcsv.read_csv(pa.py_buffer(piece), read_options=read, parse_options=parse, convert_options=convert)

    rows, done = 0, start
    try:
        for piece, done in _pieces(path, start):
            table = parsed(piece)
            pending += table.to_batches()
            rows += table.num_rows
            while rows >= chunksize:
                table = pa.Table.from_batches(pending)
                head, rest = table.slice(0, chunksize), table.slice(chunksize)
                yield frame(head.to_batches()), done
                pending, rows = rest.to_batches(), rest.num_rows
    except pa.ArrowInvalid as error:
        if "UTF8" in str(error):
            raise UnicodeDecodeError(encoding, b"", 0, 1, "not valid text in this encoding") from None
        raise _unreadable() from None
    if rows:
        yield frame(pending), done
