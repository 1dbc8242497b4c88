"""Row-by-row maps a fit applies to a backend's rows before it sums them (:meth:`Rows.prepared`).

Each is a small frozen dataclass holding only public, declared values (bounds, classes), so it
pickles to a Spark executor as it is and maps a row the same way wherever it runs: features
into [0, 1] by their declared bounds, a regression target into [0, 1] by its declared bounds,
labels to the codes of the declared classes (rows with any other label dropped — a per-record
filter, so no other record's contribution changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.backends import RowBatch
from dpcore.models._base import unit_features


def declared_classes(classes: Sequence[Any] | None) -> NDArray[Any]:
    """The declared labels, as a fit on a backend's rows needs them (it never reads labels from the data)."""
    if classes is None:
        raise ValueError("fitting on a backend's rows needs declared classes: pass classes=[...]")
    declared = np.asarray(list(classes))
    if len(declared) < 1 or len(np.unique(declared)) != len(declared):
        raise ValueError("classes must be a list of distinct labels")
    return declared


@dataclass(frozen=True, eq=False)
class UnitFeatures:
    """Features into [0, 1] by their declared bounds; the target as it is."""

    lower: NDArray[np.float64]
    upper: NDArray[np.float64]

    def __call__(self, batch: RowBatch) -> RowBatch:
        return RowBatch(unit_features(batch.X, self.lower, self.upper), batch.y, batch.key)


@dataclass(frozen=True, eq=False)
class UnitTarget(UnitFeatures):
    """Features and a regression target into [0, 1] by their declared bounds (a missing target → the middle)."""

    target_lower: float
    target_upper: float

    def __call__(self, batch: RowBatch) -> RowBatch:
        y = np.asarray(batch.y, dtype=float)
        y = np.where(np.isnan(y), (self.target_lower + self.target_upper) / 2, y)
        y_unit = np.clip((y - self.target_lower) / (self.target_upper - self.target_lower), 0.0, 1.0)
        return RowBatch(unit_features(batch.X, self.lower, self.upper), y_unit, batch.key)


@dataclass(frozen=True, eq=False)
class UnitCodes(UnitFeatures):
    """Features into [0, 1]; labels to their position among the declared ``classes``; other labels dropped."""

    classes: NDArray[Any]

    def __call__(self, batch: RowBatch) -> RowBatch:
        codes = pd.Index(self.classes).get_indexer(pd.Index(np.asarray(batch.y))).astype(np.int64)
        known = codes >= 0
        return RowBatch(unit_features(batch.X[known], self.lower, self.upper), codes[known], batch.key[known])
