"""Where a copy's randomness comes from, and the secret order of its rows.

A copy has two sources of randomness, both from its *entropy* (the operating system's, or a
seed in tests):

* **Per-row draws are keyed** (:mod:`dpcore.mechanisms.keyed`): a secret 16-byte key is drawn
  from the entropy, and every draw a row gets — each column's randomized response or Laplace
  noise, the uniform code of a missing value, the row's place in the secret order, its word in
  a cut — is an AES-keyed pseudo-random function of (key, the row's stable key, a stream). A row
  gets the same draws however a file is cut into chunks, whichever Spark task reads it and
  however often a task is retried; without the key, the draws of different rows and streams are
  indistinguishable from independent uniform ones. Filler rows (padding) are keyed by their
  index in streams of their own.
* **The few whole-copy draws** (the noisy row count, the choice of each person's rows) come
  from ``SeedSequence(entropy, spawn_key=(stream,))`` generators on the driver.

*Row keys* are positions ``0 … n−1`` for an in-memory table and ``file ordinal · 2^40 + row
within the file`` for files (:func:`~dpcore.mechanisms.keyed.file_row_keys`), so one CSV file
streamed and the same table in memory get the same copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from dpcore.mechanisms import keyed
from dpcore.validation import RandomStateLike

#: ``spawn_key`` streams of the driver-side generators.
PAD_STREAM = 2**31 + 1
PERSON_STREAM = 2**31 + 2
KEY_STREAM = 2**31 + 3
#: Keyed streams: a column's draws use ``COLUMN_STREAMS + its plan index``; fillers have their own.
COLUMN_STREAMS = 0
FILLER_STREAMS = 1 << 28
FILLER_INPUT_STREAMS = 2 << 28
ROW_ORDER_STREAM = 2**31
FILLER_ORDER_STREAM = 2**31 + 4
#: The cut's words (which real rows a copy cut to a noisy row count keeps), apart from the order's.
CUT_STREAM = 2**31 + 5
#: The ``source`` of a row in the order's tie-break: real rows before fillers of the same word.
REAL, FILLER = 0, 1


def generator(entropy: int, *key: int) -> np.random.Generator:
    """The generator of one driver-side stream, from the copy's entropy."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))


def entropy(random_state: RandomStateLike) -> tuple[int, bool]:
    """The copy's entropy, and whether it was seeded (``None``: fresh from the operating system)."""
    if random_state is None:
        # A SeedSequence made without entropy draws an int from the operating system.
        return int(cast(int, np.random.SeedSequence().entropy)), False
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63)), True
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state), True
    raise TypeError(f"random_state must be None, a non-negative int or a numpy Generator, got {type(random_state).__name__}")


@dataclass(frozen=True)
class Draws:
    """A copy's randomness: its entropy (driver-side draws) and the secret key of every per-row draw.

    Small and picklable, so Spark ships it to the executors with the plan.
    """

    entropy: int
    key: bytes

    @classmethod
    def of(cls, entropy: int) -> Draws:
        return cls(entropy, keyed.new_key(generator(entropy, KEY_STREAM)))


def positions(start: int, n: int) -> np.ndarray:
    """Row keys of rows ``start … start+n−1`` of one table or of the first file."""
    return keyed.file_row_keys(0, start, n)


def order_words(key: bytes, rows: np.ndarray, stream: int = ROW_ORDER_STREAM) -> np.ndarray:
    """Each row's keyed 63-bit sort word (non-negative ``int64``, so Spark's signed longs sort it alike).

    Sorting a copy by these words puts its rows in a uniformly random order. Row order must not
    survive into a copy: a file sorted by a sensitive column would give every row's true value
    away, whatever noise each cell gets.
    """
    return (keyed.random_words(key, rows, stream)[:, 0] >> np.uint64(1)).astype(np.int64)


def signed(rows: np.ndarray) -> np.ndarray:
    """Row keys as ``int64`` (Spark has no unsigned longs): the order's last tie-break."""
    return np.asarray(rows, dtype=np.uint64).view(np.int64)


def secret_order(words: np.ndarray, sources: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The permutation sorting rows by ``(word, source, row key)``: the copy's row order on every backend."""
    return np.lexsort((signed(rows), sources, words))
