"""Where a model's rows live, and the one operation that reads them: sums over row batches.

Every data-touching step of a fit is a *job*: a function from a :class:`RowBatch` to an
``int64`` array (a histogram of counts, of target sums, of class counts). A backend runs the
job on every batch of its rows and adds the results. Split choice, noise and the fitted
estimator stay with the caller, so the same model code fits from numpy arrays
(:class:`LocalRows`) or from a table on Spark (:class:`dpcore.backends.spark.SparkRows`).

Why integers: adding floats in another order gives another last bit, and a model fitted on
Spark must be byte-identical to the one fitted locally. Sums of values in [0, 1] are kept in
fixed point (:func:`fixed`): a value is rounded to the public grid of ``2^-FIXED_BITS`` — a
per-record map fixed before the data are seen, so every sensitivity argued for values in
[0, 1] holds for the rounded values — and integer sums are exact in any order. With
``FIXED_BITS = 14`` a sum of squares over ``2^34`` (1.7·10^10) rows still fits in ``int64``
(:func:`exact_bincount` keeps the float sums exact on the way).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

BATCH_ROWS = 1 << 20
FIXED_BITS = 14
FIXED_SCALE = float(1 << FIXED_BITS)


@dataclass(frozen=True)
class RowBatch:
    """Some rows: features ``X`` ``(m, d)``, target ``y`` ``(m,)`` and stable row keys ``key`` ``(m,)``."""

    X: NDArray[np.float64]
    y: NDArray
    key: NDArray[np.uint64]

    def __len__(self) -> int:
        return len(self.key)

    def take(self, keep: NDArray[np.bool_] | NDArray[np.intp]) -> RowBatch:
        return RowBatch(self.X[keep], self.y[keep], self.key[keep])


Job = Callable[[RowBatch], NDArray[np.int64]]
Prepare = Callable[[RowBatch], RowBatch]


def fixed(values: ArrayLike, bits: int = FIXED_BITS) -> NDArray[np.float64]:
    """Values rounded to the grid of ``2^-bits``, as integer-valued floats ready to be counted exactly."""
    return np.rint(np.asarray(values, dtype=float) * float(1 << bits))


def unfixed(sums: ArrayLike, bits: int = FIXED_BITS) -> NDArray[np.float64]:
    """Fixed-point sums back in the values' units."""
    return np.asarray(sums, dtype=float) / float(1 << bits)


def exact_bincount(keys: NDArray[np.intp], weights: NDArray[np.float64] | None, size: int) -> NDArray[np.int64]:
    """``bincount`` of integer-valued weights (or counts), as ``int64``, exact however many rows come at once.

    float64 sums of integers are exact below 2^53; a weight here is at most 2^28 (a fixed-point
    square), so the float sums run over slices of :data:`BATCH_ROWS` rows and the slices add in int64.
    """
    if weights is None:
        return np.bincount(keys, minlength=size).astype(np.int64)
    total = np.zeros(size, dtype=np.int64)
    for start in range(0, len(keys), BATCH_ROWS):
        part = slice(start, start + BATCH_ROWS)
        total += np.rint(np.bincount(keys[part], weights=weights[part], minlength=size)).astype(np.int64)
    return total


class Rows(ABC):
    """A table a model can be fitted on, wherever its rows are."""

    @property
    @abstractmethod
    def n_features(self) -> int:
        """Columns of ``X``."""

    @abstractmethod
    def aggregate(self, job: Job) -> NDArray[np.int64]:
        """The sum of ``job(batch)`` over every batch of rows (every batch gives the same shape)."""

    @abstractmethod
    def prepared(self, prepare: Prepare) -> Rows:
        """These rows with ``prepare`` applied to every batch; ``prepare`` maps rows one by one (it may drop some)."""


class LocalRows(Rows):
    """Rows held in memory as numpy arrays; batches are consecutive slices.

    ``key`` defaults to the row positions ``0 … n−1``.
    """

    def __init__(self, X: ArrayLike, y: ArrayLike, key: ArrayLike | None = None, batch_rows: int = BATCH_ROWS) -> None:
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y)
        if self.X.ndim != 2 or len(self.y) != len(self.X):
            raise ValueError("X must be 2-D with one target per row")
        self.key = np.arange(len(self.y), dtype=np.uint64) if key is None else np.asarray(key, dtype=np.uint64)
        self.batch_rows = batch_rows

    def __len__(self) -> int:
        return len(self.key)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def batches(self) -> list[RowBatch]:
        n = len(self.key)
        starts = range(0, n, self.batch_rows) if n else [0]
        return [
            RowBatch(self.X[s : s + self.batch_rows], self.y[s : s + self.batch_rows], self.key[s : s + self.batch_rows])
            for s in starts
        ]

    def aggregate(self, job: Job) -> NDArray[np.int64]:
        total: NDArray[np.int64] | None = None
        for batch in self.batches():
            part = np.asarray(job(batch), dtype=np.int64)
            total = part if total is None else total + part
        assert total is not None
        return total

    def prepared(self, prepare: Prepare) -> LocalRows:
        parts = [prepare(batch) for batch in self.batches()]
        return LocalRows(
            np.concatenate([p.X for p in parts]),
            np.concatenate([p.y for p in parts]),
            np.concatenate([p.key for p in parts]),
            self.batch_rows,
        )
