"""Where a copy's randomness comes from, and the random order of its rows.

Each (stream, block of :data:`BLOCK_ROWS` rows) pair draws from its own generator,
``SeedSequence(entropy, spawn_key=(stream, block))``: a column's stream is its index in the
plan, and the row order, the padding and the choice of each person's rows have streams of
their own. A block that a chunk covers only in part is drawn in full and cut, so every row
gets the same draws however a file is cut into chunks. The entropy comes from the operating
system; a seed is for tests only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import pyarrow as pa
from numpy.typing import DTypeLike

from dpcore.validation import RandomStateLike

BLOCK_ROWS = 1 << 16
#: ``spawn_key`` streams besides the columns' (which use small column indices).
ROW_ORDER_STREAM = 2**31
PAD_STREAM = 2**31 + 1
PERSON_STREAM = 2**31 + 2


def generator(entropy: int, *key: int) -> np.random.Generator:
    """The generator of one stream (and block), from the copy's entropy."""
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


def by_block(
    inputs: np.ndarray,
    start: int,
    entropy: int,
    stream: int,
    draw: Callable[[np.random.Generator, np.ndarray], np.ndarray],
    fill: float,
    dtype: DTypeLike,
) -> np.ndarray:
    """``draw(generator, block_inputs)`` for rows ``start, start+1, …``, one generator per block of rows.

    A block the rows cover only in part is padded with ``fill`` to its full size before
    drawing, and only its covered rows are kept.
    """
    n, size = len(inputs), BLOCK_ROWS
    out = np.empty(n, dtype=dtype)
    for block in range(start // size, (start + n - 1) // size + 1 if n else start // size):
        first = block * size
        lo, hi = max(first, start), min(first + size, start + n)
        if hi - lo == size:
            out[lo - start : hi - start] = draw(generator(entropy, stream, block), inputs[lo - start : hi - start])
        else:
            padded = np.full(size, fill, dtype=inputs.dtype)
            padded[lo - first : hi - first] = inputs[lo - start : hi - start]
            out[lo - start : hi - start] = draw(generator(entropy, stream, block), padded)[lo - first : hi - first]
    return out


def row_keys(start: int, n: int, entropy: int) -> np.ndarray:
    """Random 63-bit sort keys of rows ``start … start+n−1``.

    Sorting a copy by these keys puts its rows in a uniformly random order. Row order must
    not survive into a copy: a file sorted by a sensitive column would give every row's true
    value away, whatever noise each cell gets.
    """
    def draw(rng: np.random.Generator, block: np.ndarray) -> np.ndarray:
        return rng.integers(0, 2**63 - 1, size=len(block), dtype=np.int64)

    return by_block(np.zeros(n, dtype=np.int64), start, entropy, ROW_ORDER_STREAM, draw, 0, np.int64)


def shuffled(table: pa.Table, start: int, entropy: int) -> pa.Table:
    """The rows in the random order of :func:`row_keys` (the order the streaming buckets give too)."""
    order = np.argsort(row_keys(start, len(table), entropy), kind="stable")
    return table.take(pa.array(order))
