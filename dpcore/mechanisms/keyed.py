"""Keyed per-row randomness: the same draws for a row wherever and however often it is read.

A fit or a release on Spark reads each row in some task, maybe twice when a task is retried,
and in an order no one controls. If a row's random draws came from a generator walking the
table, a retried task or another partitioning would draw differently and a buyer could be
handed two copies of one release. Here every draw is a pseudo-random function of a secret key
and the row's stable key: AES-128 (through ``cryptography``) encrypts the 16-byte block
``row key ‖ stream ‖ counter``, so

* the same (key, row, stream, counter) always gives the same number, on any backend, in any
  batch, however often it is recomputed;
* without the key, the draws of different rows, streams and counters are indistinguishable from
  independent uniform draws (AES as a pseudo-random permutation, 2^64-block inputs at most),
  which is what the privacy arguments of the models and the release assume of their randomness;
* the key is 16 bytes drawn from the fit's or release's secret generator, so a seed (tests and
  demos only) reproduces a run and an unseeded run is unpredictable.

A *row key* is a ``uint64`` naming a row for as long as the table does not change: a row's
position in an in-memory table, or ``file ordinal · 2^40 + row within the file`` for a table
read from files (:func:`file_row_keys`).
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

KEY_BYTES = 16
ROWS_PER_FILE_BITS = 40
_BLOCK = np.dtype([("row", "<u8"), ("stream", "<u4"), ("counter", "<u4")])


def new_key(rng: np.random.Generator) -> bytes:
    """A secret key drawn from ``rng`` (the fit's or release's secret generator)."""
    return bytes(rng.bytes(KEY_BYTES))


def file_row_keys(file_ordinal: int, first_row: int, n_rows: int) -> NDArray[np.uint64]:
    """Row keys of ``n_rows`` consecutive rows of file ``file_ordinal``, starting at row ``first_row``."""
    if not 0 <= file_ordinal < 1 << (64 - ROWS_PER_FILE_BITS):
        raise ValueError("too many input files for row keys")
    if first_row + n_rows > 1 << ROWS_PER_FILE_BITS:
        raise ValueError("a file has too many rows for row keys")
    start = (file_ordinal << ROWS_PER_FILE_BITS) + first_row
    return np.arange(start, start + n_rows, dtype=np.uint64)


def random_words(key: bytes, rows: NDArray[np.uint64], stream: int, width: int = 1) -> NDArray[np.uint64]:
    """``(len(rows), width)`` pseudo-random 64-bit words: word ``j`` of row ``r`` in ``stream``.

    Each AES block gives two words, so word ``j`` is half ``j % 2`` of block ``j // 2``.
    """
    if len(key) != KEY_BYTES:
        raise ValueError("a row randomness key has 16 bytes")
    rows = np.asarray(rows, dtype=np.uint64)
    n_blocks = (width + 1) // 2
    blocks = np.empty((len(rows), n_blocks), dtype=_BLOCK)
    blocks["row"] = rows[:, None]
    blocks["stream"] = stream
    blocks["counter"] = np.arange(n_blocks, dtype=np.uint32)[None, :]
    # ECB on distinct blocks is AES used as a pseudo-random function of each block: counter mode, keyed by row.
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    cipher = encryptor.update(blocks.tobytes()) + encryptor.finalize()
    return np.frombuffer(cipher, dtype="<u8").reshape(len(rows), 2 * n_blocks)[:, :width].astype(np.uint64)


def uniforms(key: bytes, rows: NDArray[np.uint64], stream: int, width: int = 1) -> NDArray[np.float64]:
    """``(len(rows), width)`` uniforms in [0, 1) on the 2^-53 grid."""
    words = random_words(key, rows, stream, width)
    return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53


def integers(key: bytes, rows: NDArray[np.uint64], stream: int, high: int, width: int = 1) -> NDArray[np.int64]:
    """``(len(rows), width)`` integers in ``[0, high)``; each value's probability is within ``high·2^-53`` of ``1/high``."""
    return np.minimum(np.floor(uniforms(key, rows, stream, width) * high), high - 1).astype(np.int64)


def words_at(key: bytes, rows: NDArray[np.uint64], stream: int, counters: NDArray[np.uint32]) -> NDArray[np.uint64]:
    """Word ``counters[i]`` of row ``rows[i]`` in ``stream``: the word :func:`random_words` puts in that column.

    Each row brings its own counter, so a row's ``k``-th word is the same whichever other rows
    are drawn with it (exact samplers draw a varying number of words per row).
    """
    if len(key) != KEY_BYTES:
        raise ValueError("a row randomness key has 16 bytes")
    counters = np.asarray(counters, dtype=np.uint32)
    blocks = np.empty(len(rows), dtype=_BLOCK)
    blocks["row"] = rows
    blocks["stream"] = stream
    blocks["counter"] = counters // 2
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    cipher = encryptor.update(blocks.tobytes()) + encryptor.finalize()
    halves = np.frombuffer(cipher, dtype="<u8").reshape(len(rows), 2)
    return halves[np.arange(len(rows)), counters % 2].astype(np.uint64)
