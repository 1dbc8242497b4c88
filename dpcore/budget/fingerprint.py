"""Cell hashes and the first ledger format's table fingerprint.

* **Cell hashes**: one uint64 per cell, vectorised. Numbers hash by their value (``-0.0`` as
  ``0.0``); text that reads as a number hashes as that number, because the same cell may be
  parsed either way; every missing value hashes alike. :mod:`dpcore.budget.identity` builds its
  version fingerprints and overlap sketches on these.
* **The table fingerprint** (:class:`Fingerprint`): an order-independent hash of every cell,
  fed chunk by chunk. The first ledger format named each budget by it; budgets are now named
  by dataset (:mod:`dpcore.budget.datasets`), and this hash is kept only so that a table charged
  under the first format still finds its old budget. Its values must never change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_U = np.uint64
MISSING_HASH = _U(0x6A09E667F3BCC908)
#: A number as a CSV cell writes it (spaces around allowed).
NUMBER = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
_NUMBER_TAG = _U(0xBB67AE8584CAA73B)
_TEXT_TAG = _U(0x3C6EF372FE94F82B)
_LENGTH_MULT = _U(0xA54FF53A5F1D36F1)
_BYTE_BASE = _U(0x100000001B3)
_LANES = (_U(0x510E527FADE682D1), _U(0x9B05688C2B3E6C1F))
_NUMERIC_FIRST_BYTES = np.frombuffer(b"0123456789+-.", dtype=np.uint8)


def mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorised (uint64 arithmetic wraps modulo 2**64)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> _U(30))
        x = x * _U(0xBF58476D1CE4E5B9)
        x = x ^ (x >> _U(27))
        x = x * _U(0x94D049BB133111EB)
        return x ^ (x >> _U(31))


def number_hashes(numbers: np.ndarray) -> np.ndarray:
    """One hash per number; NaN hashes as missing."""
    numbers = np.asarray(numbers, dtype=np.float64)
    bits = np.where(numbers == 0.0, 0.0, numbers).view(np.uint64)
    return np.where(np.isnan(numbers), MISSING_HASH, mix(bits ^ _NUMBER_TAG))


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
    hashes = mix(hashes ^ _TEXT_TAG)
    # Text that reads as a number hashes as that number (the same cell may be parsed either way).
    nonempty = lengths > 0
    first = np.zeros(n, dtype=np.uint8)
    first[nonempty] = padded[starts[nonempty]]
    candidates = np.flatnonzero(nonempty & np.isin(first, _NUMERIC_FIRST_BYTES))
    if candidates.size:
        subset = chunk.take(pa.array(candidates))
        looks_numeric = pc.fill_null(pc.match_substring_regex(subset, NUMBER), False).to_numpy(zero_copy_only=False)
        if looks_numeric.any():
            numbers = pc.cast(pc.utf8_trim_whitespace(subset.filter(pa.array(looks_numeric))), pa.float64())
            hashes[candidates[looks_numeric]] = number_hashes(numbers.to_numpy(zero_copy_only=False))
    if chunk.null_count:
        hashes[~chunk.is_valid().to_numpy(zero_copy_only=False)] = MISSING_HASH
    return hashes


def factorize(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize`` of a column (missing → -1), reading a Categorical's codes as they are."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(dtype=np.int64), pd.Index(values.cat.categories)
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), pd.Index(uniques)


def plain_hashes(values: pd.Series) -> np.ndarray:
    """One hash per value, as written (numbers by value, text by its bytes unless it reads as a number)."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return number_hashes(values.to_numpy(dtype=np.float64, na_value=np.nan))
    if not pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_object_dtype(values.dtype):
        values = values.astype("str")
    array = pa.array(values, from_pandas=True)
    if pa.types.is_null(array.type):
        return np.full(len(values), MISSING_HASH, dtype=np.uint64)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.large_string())
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    parts = [_text_chunk_hashes(c) for c in chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def cell_hashes(values: pd.Series) -> np.ndarray:
    """One uint64 hash per cell of a column; numbers and number-like text agree, missing values agree.

    Text columns with few distinct values are hashed once per distinct value.
    """
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
    few = isinstance(values.dtype, pd.CategoricalDtype)
    if not numeric and len(values) and (few or pd.unique(values.iloc[:4096]).size * 4 <= min(len(values), 4096)):
        codes, uniques = factorize(values)
        return np.append(plain_hashes(pd.Series(uniques)), MISSING_HASH)[codes]
    return plain_hashes(values)


class Fingerprint:
    """An order-independent hash of a table, fed chunk by chunk (a multiset hash of its rows).

    Each row's hash mixes its cells' hashes in column order; the fingerprint is the SHA-256 of
    the column names, the number of rows and two lanes of the sum (mod 2**64) of the row
    hashes. Shuffling the rows or cutting the file into other chunks leaves it unchanged.

    Examples
    --------
    >>> a, b = Fingerprint(["x", "y"]), Fingerprint(["x", "y"])
    >>> a.add(pd.DataFrame({"x": [1, 2], "y": ["u", "v"]}))
    >>> b.add(pd.DataFrame({"x": ["2"], "y": ["v"]})); b.add(pd.DataFrame({"x": [1.0], "y": ["u"]}))
    >>> a.hexdigest() == b.hexdigest()
    True
    """

    def __init__(self, columns: Iterable[object]) -> None:
        self.columns = [str(c) for c in columns]
        self.lanes = np.zeros(2, dtype=np.uint64)
        self.rows = 0

    def add(self, frame: pd.DataFrame) -> None:
        row = np.zeros(len(frame), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for position, name in enumerate(self.columns):
                multiplier = _U((0x9E3779B97F4A7C15 + 2 * position) % (1 << 64) | 1)
                row = (row ^ cell_hashes(frame[name])) * multiplier
            for lane, key in enumerate(_LANES):
                self.lanes[lane] += np.sum(mix(row ^ key), dtype=np.uint64)
        self.rows += len(frame)

    def hexdigest(self) -> str:
        digest = hashlib.sha256(b"dpcore-table-fingerprint/1\x1e")
        digest.update("\x1f".join(self.columns).encode("utf-8"))
        digest.update(self.lanes.astype("<u8").tobytes())
        digest.update(str(self.rows).encode("ascii"))
        return digest.hexdigest()[:32]
