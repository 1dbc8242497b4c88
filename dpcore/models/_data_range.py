"""Trees whose random candidate thresholds land where the data are: a paid DP data range per feature."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils.validation import check_is_fitted

from dpcore.backends import RowBatch, Rows
from dpcore.mechanisms.quantiles import Quantiles, grid_histogram
from dpcore.models._base import DPEstimatorMixin
from dpcore.models._export import tree_records
from dpcore.models._tree_rows import rescale_to_range

#: Probabilities of the DP quantiles a data range is read from, and their public grid.
QUANTILE_PROBABILITIES = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875)
QUANTILE_GRID = 1024

DATA_RANGE_PRIVACY = r"""
    Data range (``range_share > 0``): before the trees, ``range_share·ε`` buys DP quantiles of every
    feature (:class:`~dpcore.mechanisms.quantiles.Quantiles`, ε-DP for all columns together, from
    their exact grid histograms summed over the rows); each feature's *data range* (:func:`data_range`) is a function of them only, and every
    record — in fitting and in prediction — is rescaled so that range becomes [0, 1] (values
    outside are clipped to its ends), a per-record map fixed by released values. The trees then
    draw their candidate thresholds on [0, 1] as before, so they fall where the records are
    rather than across a wide, empty declared range, and spend the remaining
    ``(1 − range_share)·ε``; the two parts compose sequentially to ``ε``.
"""


def quantiles_from_histogram(epsilon: float, histogram: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.float64]:
    """``(columns, 7)`` DP quantiles at :data:`QUANTILE_PROBABILITIES` from the columns' grid histograms (ε for all)."""
    return Quantiles(epsilon, QUANTILE_PROBABILITIES, QUANTILE_GRID, random_state=rng).randomise_histogram(histogram)


@dataclass(frozen=True)
class QuantileHistogram:
    """A job: the grid histogram of each selected column (``select(batch)``: ``(m, c)`` values in [0, 1])."""

    select: Callable[[RowBatch], NDArray[np.float64]]
    grid: int = QUANTILE_GRID

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        return grid_histogram(self.select(batch), self.grid)


def dp_quantiles_from_rows(
    epsilon: float, rows: Rows, select: Callable[[RowBatch], NDArray[np.float64]], rng: np.random.Generator
) -> NDArray[np.float64]:
    """``(c, 7)`` DP quantiles at :data:`QUANTILE_PROBABILITIES` of the ``c`` columns ``select`` picks from every batch.

    ``select(batch)`` maps rows one by one to ``(m, c)`` values in [0, 1] (it may drop rows;
    it runs where the rows are, so it must be picklable and hold no driver state). One pass
    sums the columns' grid histograms exactly; the exponential mechanism runs on the driver
    (:class:`~dpcore.mechanisms.quantiles.Quantiles`, ε-DP for all columns together).
    """
    return quantiles_from_histogram(epsilon, rows.aggregate(QuantileHistogram(select)), rng)


def data_range(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the data lie, from DP quantiles at :data:`QUANTILE_PROBABILITIES` (one row per column).

    One gap beyond the outer (1/8, 7/8) quantiles, but never more than twice the quartile-to-median
    gap past the quartiles: the outer quantiles are the noisiest, and on a wide, mostly empty
    declared range the exponential mechanism may put them far out in the empty part.
    """
    low = np.maximum(q[:, 0] - (q[:, 1] - q[:, 0]), q[:, 1] - 2 * (q[:, 3] - q[:, 1]))
    high = np.minimum(q[:, 6] + (q[:, 6] - q[:, 5]), q[:, 5] + 2 * (q[:, 5] - q[:, 3]))
    return np.maximum(low, 0.0), np.minimum(high, 1.0)


class DataRangeMixin(DPEstimatorMixin):
    """Rescale features to their DP data range before growing trees (see :data:`DATA_RANGE_PRIVACY`)."""

    range_share: float
    data_range_: NDArray[np.float64] | None
    trees_: list[Any]
    _describe_leaf: Any

    def _unit(self, X: ArrayLike) -> NDArray[np.float64]:
        unit = super()._unit(X)
        ranges = getattr(self, "data_range_", None)
        return unit if ranges is None else rescale_to_range(unit, ranges)

    def _narrow(self, rows: Rows, select: Callable[[RowBatch], NDArray[np.float64]], rng: np.random.Generator) -> float:
        """Spend ``range_share·ε`` on the data range of the features ``select`` gives (``data_range_``); the ε left.

        The trees' row map then rescales every record by ``data_range_`` (:class:`~dpcore.models._tree_rows.TreeRowMap`).
        """
        if not 0 <= self.range_share < 0.5:
            raise ValueError(f"range_share must be in [0, 0.5), got {self.range_share!r}")
        self.data_range_ = None  # a refit starts from the declared bounds
        if not self.range_share:
            return self.epsilon
        low, high = data_range(dp_quantiles_from_rows(self.range_share * self.epsilon, rows, select, rng))
        self.data_range_ = np.column_stack([low, high])
        return self.epsilon * (1 - self.range_share)

    def tree_records(self, feature_names: Sequence[str] | None = None, tree: int = 0) -> list[dict[str, Any]]:
        """Every node of tree ``tree`` as a dict, thresholds in original units (through the data range too)."""
        check_is_fitted(self)
        names = feature_names if feature_names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        lower, upper = self._lower, self._upper
        if self.data_range_ is not None:
            span = upper - lower
            lower, upper = lower + self.data_range_[:, 0] * span, lower + self.data_range_[:, 1] * span
        return tree_records(self.trees_[tree], names, lower, upper, self._describe_leaf)
