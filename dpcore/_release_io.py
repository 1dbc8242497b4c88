"""Private helpers of :mod:`dpcore.release`: reading and writing the released file.

* **Spreadsheet-safe text** (OWASP CSV injection): a text cell that begins with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers (negative ones too)
  are left alone.
* **Reading a large CSV in chunks** with pyarrow's C++ reader, cleaned up the way
  :func:`dpcore.loading.read_csv_bytes` cleans an upload (stripped text, the same missing-value
  markers, numbers recognised per column).
* **The first ledger format's table fingerprint**: an order-independent hash of every cell,
  fed chunk by chunk. Budgets are now named by dataset (:mod:`dpcore.datasets`, hashing by
  :mod:`dpcore.identity`); this hash is kept only so that a table charged under the first
  format still finds its old budget. It also provides the cell-hashing primitives identity uses.
* **The stored copy** kept in the ledger: the released chunks as zstd-compressed Arrow IPC
  frames (category codes rather than text, so a copy of a gigabyte file takes tens of MB),
  rendered back to the identical file bytes when the copy is handed out again.
* **Read-ahead and write-behind threads**, so parsing, randomising and writing overlap.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import struct
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from dpcore.exceptions import DataError

# --- spreadsheet-safe text ----------------------------------------------------------------

_TRIGGER = r"^[=+\-@\t\r]"
_NUMBER = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
_TRIGGER_RE = re.compile(_TRIGGER)
_NUMBER_RE = re.compile(_NUMBER)
ESCAPING_RULE = (
    "Text cells that begin with =, +, -, @, a tab or a carriage return are written with a leading "
    "apostrophe (') so spreadsheet programs show them instead of running them as formulas; numbers, "
    "negative ones included, are written unchanged. The domains in this report are spelled as in the file."
)


def escape_label(text: str) -> str:
    """One text value made safe for spreadsheets (a leading ``'`` when it could run as a formula)."""
    text = str(text)
    if _TRIGGER_RE.match(text) and not _NUMBER_RE.match(text):
        return "'" + text
    return text


def escape_text_array(values):
    """:func:`escape_label` for a whole arrow string array, vectorised; nulls stay null."""
    trigger = pc.fill_null(pc.match_substring_regex(values, _TRIGGER), False)
    if not pc.any(trigger).as_py():
        return values
    number = pc.fill_null(pc.match_substring_regex(values, _NUMBER), False)
    escape = pc.and_(trigger, pc.invert(number))
    quote, empty = pa.scalar("'", type=values.type), pa.scalar("", type=values.type)
    return pc.if_else(escape, pc.binary_join_element_wise(quote, values, empty), values)


def keep_array(values: pd.Series):
    """A column copied unchanged (declared public): numbers as they are, text escaped."""
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
    if numeric:
        return pa.array(values.to_numpy(), from_pandas=True)
    if not pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_object_dtype(values.dtype):
        values = values.astype("str")
    return escape_text_array(pa.array(values, from_pandas=True))


def needs_quotes(text: str) -> bool:
    return any(ch in text for ch in ',"\r\n')


def write_csv(table: pa.Table, sink, header: bool, quoting: str) -> None:
    """Write one chunk of the released table (``quoting``: ``"none"`` when no cell can need quotes)."""
    pcsv.write_csv(table, sink, pcsv.WriteOptions(include_header=header, quoting_style=quoting))


# --- reading a large CSV in chunks -------------------------------------------------------------

# pandas' default missing-value words, plus "?" as :mod:`dpcore.loading` adds.
# fmt: off
NA_STRINGS = sorted({
    "", "?", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
    "NULL", "NaN", "None", "n/a", "nan", "null",
})
# fmt: on
_NA_SET = pa.array(NA_STRINGS, type=pa.string())
_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)


def _unreadable() -> DataError:
    return DataError(
        "The file could not be read as a table: some rows have a different number of fields than the header. "
        "Check that it is a CSV with one header row and the same delimiter on every line."
    )


_PIECE_BYTES = 16 << 20
_MAX_LINE_BYTES = 256 << 20


def _line_end(data, last: bool) -> int:
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


def _header(path, encoding: str, delimiter: str) -> tuple[list[str], int]:
    """The column names and the byte offset where the data rows start."""
    data = b""
    with open(path, "rb") as handle:
        while (end := _line_end(data, last=False)) < 0:
            block = handle.read(1 << 20)
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


def _pieces(path, start: int):
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


def _as_numbers(array: pa.Array) -> np.ndarray | None:
    """The column as float64 if every non-missing value is a number, else None (like pandas' inference)."""
    valid = array.drop_null()
    if len(valid) == 0:
        return np.full(len(array), np.nan)
    sample = valid.slice(0, 64).to_pylist()
    try:
        [float(v) for v in sample]
    except ValueError:
        return None
    try:
        return pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _clean_column(array):
    """Strip whitespace, mark pandas' missing-value words as missing, and read numbers as numbers."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        return _clean_dictionary(array)
    if _needs_strip(array):
        array = pc.utf8_trim_whitespace(array)
        array = pc.if_else(pc.is_in(array, value_set=_NA_SET), pa.scalar(None, type=array.type), array)
    numbers = _as_numbers(array)
    if numbers is not None:
        return numbers
    return array.to_pandas(types_mapper=lambda t: _STR_DTYPE)


def _clean_dictionary(array: pa.DictionaryArray) -> pd.Categorical:
    """A dictionary-encoded text column as a pandas Categorical, cleaned through its (few) distinct values."""
    values = array.dictionary
    if _needs_strip(values):
        values = pc.utf8_trim_whitespace(values)
        values = pc.if_else(pc.is_in(values, value_set=_NA_SET), pa.scalar(None, type=values.type), values)
    remap, categories = pd.factorize(values.to_pandas(types_mapper=lambda t: _STR_DTYPE), use_na_sentinel=True)
    remap = np.append(np.asarray(remap, dtype=np.int64), -1)
    indices = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return pd.Categorical.from_codes(remap[indices], categories=pd.Index(categories, dtype=_STR_DTYPE))


def read_chunks(path, encoding: str, delimiter: str, chunksize: int, categorical=()):
    """Yield ``(frame, bytes_read)`` for consecutive chunks of ``chunksize`` rows (the last may be shorter).

    Columns named in ``categorical`` are dictionary-encoded while parsing (they become pandas
    Categoricals), so their values are cleaned, matched and hashed once per distinct value.

    Raises :class:`DataError` with a sentence (never the file's contents: pyarrow's own
    messages quote the offending line), or ``UnicodeDecodeError`` when the text is not valid
    in ``encoding``.
    """
    names, start = _header(path, encoding, delimiter)
    stripped = [str(n).strip() for n in names]
    if len(set(names)) != len(names) or len(set(stripped)) != len(stripped):
        raise DataError("Two columns have the same name. Give every column a distinct header.")
    convert = pcsv.ConvertOptions(
        column_types={n: pa.dictionary(pa.int32(), pa.string()) if n.strip() in categorical else pa.string() for n in names},
        null_values=NA_STRINGS,
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )
    read = pcsv.ReadOptions(encoding=encoding, column_names=names, use_threads=False, block_size=_PIECE_BYTES + 1)
    parse = pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)

    def frame(batches):
        table = pa.Table.from_batches(batches).unify_dictionaries()
        return pd.DataFrame({s: _clean_column(table.column(i)) for i, s in enumerate(stripped)})

    pending, rows, done = [], 0, start
    try:
        for piece, done in _pieces(path, start):
            table = pcsv.read_csv(pa.py_buffer(piece), read_options=read, parse_options=parse, convert_options=convert)
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


def prefetch(iterable, depth: int = 1):
    """Iterate ``iterable`` in a background thread, ``depth`` items ahead (its errors are re-raised here)."""
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run():
        try:
            for item in iterable:
                if not put((item, None)):
                    return
            put((done, None))
        except BaseException as error:  # handed to the consumer, which re-raises it
            put((None, error))

    thread = threading.Thread(target=run, name="dpcore-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = items.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
        thread.join()


class BackgroundWriter:
    """Formats released chunks as CSV and writes them (and the stored copy) in a background thread."""

    def __init__(self, sink, copy: StoredCopy | None, quoting: str, depth: int = 1):
        self.sink, self.copy, self.quoting = sink, copy, quoting
        self.items: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="dpcore-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            if self.error is not None:
                continue
            try:
                table, header = item
                buffer = pa.BufferOutputStream()
                write_csv(table, buffer, header, self.quoting)
                self.sink.write(buffer.getvalue())
                if self.copy is not None:
                    self.copy.append(table)
            except BaseException as error:  # re-raised by put() or close()
                self.error = error

    def put(self, table: pa.Table, header: bool) -> None:
        if self.error is not None:
            raise self.error
        self.items.put((table, header))

    def close(self, raise_errors: bool = True) -> None:
        self.items.put(None)
        self.thread.join()
        if raise_errors and self.error is not None:
            raise self.error


# --- the table fingerprint -------------------------------------------------------------------

_U = np.uint64
_MISSING_HASH = _U(0x6A09E667F3BCC908)
_NUMBER_TAG = _U(0xBB67AE8584CAA73B)
_TEXT_TAG = _U(0x3C6EF372FE94F82B)
_LENGTH_MULT = _U(0xA54FF53A5F1D36F1)
_BYTE_BASE = _U(0x100000001B3)
_LANES = (_U(0x510E527FADE682D1), _U(0x9B05688C2B3E6C1F))
_NUMERIC_FIRST_BYTES = np.frombuffer(b"0123456789+-.", dtype=np.uint8)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorised (uint64 arithmetic wraps modulo 2**64)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> _U(30))
        x = x * _U(0xBF58476D1CE4E5B9)
        x = x ^ (x >> _U(27))
        x = x * _U(0x94D049BB133111EB)
        return x ^ (x >> _U(31))


def _number_hashes(numbers: np.ndarray) -> np.ndarray:
    numbers = np.asarray(numbers, dtype=np.float64)
    bits = np.where(numbers == 0.0, 0.0, numbers).view(np.uint64)
    return np.where(np.isnan(numbers), _MISSING_HASH, _mix(bits ^ _NUMBER_TAG))


def _text_chunk_hashes(chunk: pa.Array) -> np.ndarray:
    """Per-string hashes of one arrow string array, eight bytes at a time.

    Each string's bytes are read as little-endian 64-bit words (the last one masked to the
    string's end) and folded in with a multiply per word; strings that have ended drop out of
    the loop, so the work is about one pass per eight bytes of text.
    """
    n = len(chunk)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    buffers = chunk.buffers()
    offset_type = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[chunk.offset : chunk.offset + n + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    padded = np.zeros(offsets[-1] - offsets[0] + 8, dtype=np.uint8)
    padded[: offsets[-1] - offsets[0]] = data[offsets[0] : offsets[-1]]
    words = np.ndarray(shape=(padded.size - 7,), dtype="<u8", buffer=padded, strides=(1,))
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    hashes = lengths.astype(np.uint64) * _LENGTH_MULT
    rows, step = None, 0
    with np.errstate(over="ignore"):
        while rows is None or rows.size:
            at = starts if rows is None else starts[rows]
            left = (lengths if rows is None else lengths[rows]) - 8 * step
            word = words[at + 8 * step]
            bits = np.minimum(np.maximum(left, 0), 8).astype(np.uint64) * _U(8)
            word &= np.where(bits >= _U(64), ~_U(0), (_U(1) << (bits & _U(63))) - _U(1))
            factor = _U(int(_BYTE_BASE) + 2 * step)
            if rows is None:
                hashes = (hashes ^ word) * factor
                rows = None if np.all(left > 8) else np.flatnonzero(left > 8)
            else:
                hashes[rows] = (hashes[rows] ^ word) * factor
                rows = rows[left > 8]
            step += 1
    hashes = _mix(hashes ^ _TEXT_TAG)
    # Text that reads as a number hashes as that number (the same cell may be parsed either way).
    nonempty = lengths > 0
    first = np.zeros(n, dtype=np.uint8)
    first[nonempty] = padded[starts[nonempty]]
    candidates = np.flatnonzero(nonempty & np.isin(first, _NUMERIC_FIRST_BYTES))
    if candidates.size:
        subset = chunk.take(pa.array(candidates))
        looks_numeric = pc.fill_null(pc.match_substring_regex(subset, _NUMBER), False).to_numpy(zero_copy_only=False)
        if looks_numeric.any():
            numbers = pc.cast(pc.utf8_trim_whitespace(subset.filter(pa.array(looks_numeric))), pa.float64())
            hashes[candidates[looks_numeric]] = _number_hashes(numbers.to_numpy(zero_copy_only=False))
    if chunk.null_count:
        hashes[~chunk.is_valid().to_numpy(zero_copy_only=False)] = _MISSING_HASH
    return hashes


def factorize(frame: pd.DataFrame, name: str, cache: dict | None = None) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize`` of one column (missing → -1), remembered in ``cache`` for the chunk."""
    if cache is not None and name in cache:
        return cache[name]
    values = frame[name]
    if isinstance(values.dtype, pd.CategoricalDtype):
        result = (values.cat.codes.to_numpy(dtype=np.int64), pd.Index(values.cat.categories))
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        result = (np.asarray(codes, dtype=np.int64), pd.Index(uniques))
    if cache is not None:
        cache[name] = result
    return result


def _plain_hashes(values: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return _number_hashes(values.to_numpy(dtype=np.float64, na_value=np.nan))
    if not pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_object_dtype(values.dtype):
        values = values.astype("str")
    array = pa.array(values, from_pandas=True)
    if pa.types.is_null(array.type):
        return np.full(len(values), _MISSING_HASH, dtype=np.uint64)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.large_string())
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    parts = [_text_chunk_hashes(c) for c in chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def cell_hashes(frame: pd.DataFrame, name: str, cache: dict | None = None) -> np.ndarray:
    """One uint64 hash per cell of a column; numbers and number-like text agree, missing values agree.

    Text columns with few distinct values are hashed once per distinct value.
    """
    values = frame[name]
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
    few = (cache is not None and name in cache) or isinstance(values.dtype, pd.CategoricalDtype)
    if not numeric and len(values) and (few or pd.unique(values.iloc[:4096]).size * 4 <= min(len(values), 4096)):
        codes, uniques = factorize(frame, name, cache)
        per_value = np.append(_plain_hashes(pd.Series(uniques)), _MISSING_HASH)
        return per_value[codes]
    return _plain_hashes(values)


class Fingerprint:
    """An order-independent hash of a table, fed chunk by chunk (a multiset hash of its rows).

    Each row's hash mixes its cells' hashes in column order; the fingerprint is the SHA-256 of
    the column names, the number of rows and two lanes of the sum (mod 2**64) of the row
    hashes. Shuffling the rows or cutting the file into other chunks leaves it unchanged.
    """

    def __init__(self, columns):
        self.columns = [str(c) for c in columns]
        self.lanes = np.zeros(2, dtype=np.uint64)
        self.rows = 0

    def add(self, frame: pd.DataFrame, cache: dict | None = None) -> None:
        row = np.zeros(len(frame), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for position, name in enumerate(self.columns):
                multiplier = _U((0x9E3779B97F4A7C15 + 2 * position) % (1 << 64) | 1)
                row = (row ^ cell_hashes(frame, name, cache)) * multiplier
            for lane, key in enumerate(_LANES):
                self.lanes[lane] += np.sum(_mix(row ^ key), dtype=np.uint64)
        self.rows += len(frame)

    def hexdigest(self) -> str:
        digest = hashlib.sha256(b"dpcore-table-fingerprint/1\x1e")
        digest.update("\x1f".join(self.columns).encode("utf-8"))
        digest.update(self.lanes.astype("<u8").tobytes())
        digest.update(str(self.rows).encode("ascii"))
        return digest.hexdigest()[:32]


# --- the stored copy --------------------------------------------------------------------------

_PAYLOAD_MAGIC = b"DPRC1"
_LENGTH = struct.Struct("<Q")


class StoredCopy:
    """The released chunks as zstd-compressed Arrow IPC frames (category codes, not text: small).

    Rendering the frames again with the same CSV writer gives back the released file byte for
    byte (see :func:`iter_stored`).
    """

    def __init__(self, quoting: str):
        header = json.dumps({"quoting": quoting}).encode("utf-8")
        self.parts: list[bytes] = [_PAYLOAD_MAGIC, _LENGTH.pack(len(header)), header]
        self.options = pa.ipc.IpcWriteOptions(compression="zstd")

    def append(self, table: pa.Table) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=self.options) as stream:
            stream.write_table(table)
        frame = sink.getvalue().to_pybytes()
        self.parts += [_LENGTH.pack(len(frame)), frame]

    def payload(self) -> bytearray:
        """The whole stored copy in one buffer; the frames are released as they are copied in."""
        payload = bytearray(sum(len(part) for part in self.parts))
        position = 0
        while self.parts:
            part = self.parts.pop(0)
            payload[position : position + len(part)] = part
            position += len(part)
        return payload


def iter_stored(payload: bytes):
    """The released file's bytes, chunk by chunk, re-rendered from a stored copy."""
    if not payload.startswith(_PAYLOAD_MAGIC):
        raise DataError("The stored copy in the ledger is damaged; ask for a fresh copy.")
    position = len(_PAYLOAD_MAGIC)
    (size,) = _LENGTH.unpack_from(payload, position)
    quoting = json.loads(payload[position + _LENGTH.size : position + _LENGTH.size + size])["quoting"]
    position += _LENGTH.size + size
    first = True
    while position < len(payload):
        (size,) = _LENGTH.unpack_from(payload, position)
        position += _LENGTH.size
        table = pa.ipc.open_stream(pa.py_buffer(payload[position : position + size])).read_all()
        position += size
        sink = pa.BufferOutputStream()
        write_csv(table, sink, first, quoting)
        first = False
        yield sink.getvalue().to_pybytes()


# --- shuffling the released rows ----------------------------------------------------------------

KEY_COLUMN = "__row_key__"


class ShuffleBuckets:
    """A random row order for a copy larger than memory, in two passes.

    Each released row carries a random 63-bit key. Pass one appends rows to ``n_buckets``
    temporary Arrow files by the key's top bits; pass two reads one bucket at a time and sorts
    it by key. Concatenating the buckets in order gives exactly the rows sorted by key — the
    same order an in-memory sort gives — with memory bounded by one bucket.
    """

    def __init__(self, n_buckets: int):
        import tempfile

        # A power of two, so the key's top bits name every bucket exactly.
        bits = max(0, int(n_buckets) - 1).bit_length()
        self.n_buckets = 1 << bits
        self.shift = 63 - bits
        self._directory = tempfile.TemporaryDirectory(prefix="dpcore-shuffle-")
        self._writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        self._files: dict[int, object] = {}
        self._schema: pa.Schema | None = None

    def add(self, table: pa.Table, keys: np.ndarray) -> None:
        table = table.append_column(KEY_COLUMN, pa.array(keys, type=pa.int64()))
        self._schema = table.schema
        bucket = (keys >> self.shift) if self.n_buckets > 1 else np.zeros(len(keys), dtype=np.int64)
        order = np.argsort(bucket, kind="stable")
        table, bucket = table.take(pa.array(order)), bucket[order]
        bounds = np.searchsorted(bucket, np.arange(self.n_buckets + 1))
        for b in range(self.n_buckets):
            if bounds[b + 1] > bounds[b]:
                self._writer(b).write_table(table.slice(bounds[b], bounds[b + 1] - bounds[b]))

    def _writer(self, b: int):
        if b not in self._writers:
            handle = open(f"{self._directory.name}/{b}.arrow", "wb")  # noqa: SIM115 (closed in tables())
            self._files[b] = handle
            self._writers[b] = pa.ipc.new_stream(handle, self._schema)
        return self._writers[b]

    def tables(self):
        """The buckets in order, each sorted by key, without the key column."""
        for writer in self._writers.values():
            writer.close()
        for handle in self._files.values():
            handle.close()
        for b in range(self.n_buckets):
            if b not in self._writers:
                continue
            with pa.memory_map(f"{self._directory.name}/{b}.arrow") as source:
                table = pa.ipc.open_stream(source).read_all()
            order = pc.sort_indices(table, sort_keys=[(KEY_COLUMN, "ascending")])
            yield table.take(order).drop_columns([KEY_COLUMN])

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._directory.cleanup()
