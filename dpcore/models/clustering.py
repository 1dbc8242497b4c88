"""ε-DP grid density clustering: the thesis's DP-DBSCAN made rigorous (spec §10.4).

The published algorithm noises the distance function and labels every point, which is not
differentially private. This one lays a grid that never looks at the data, releases one noisy
histogram of **every** cell, and finds the groups by post-processing it: dense cells are those
whose noisy count passes a threshold, groups are connected components of dense cells. The
product is the **map** (cell → group, with the noisy counts), never a label per person.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage
from sklearn.utils.validation import check_is_fitted, validate_data

from dpcore.i18n import N_, _, integer
from dpcore.mechanisms import count_mechanism
from dpcore.models._base import NEIGHBOURS, DPEstimatorMixin
from dpcore.validation import Bounds, RandomStateLike, check_bounds, check_epsilon, check_positive_int

MIN_FEATURES, MAX_FEATURES = 2, 4
MAX_CELLS = 2**20  # 1,048,576 cells: a 1024 × 1024 map, or 32 cells a side in four dimensions
MIN_RESOLUTION, MAX_RESOLUTION = 2, 1024
#: Automatic resolution: the share of ε that buys a noisy row count, Qardaji, Yang & Li's constant
#: c in "about n·ε/c cells" (their guideline for uniform grids, c = 10), and the ε above which the
#: grid gets no finer (then an average cell keeps about 10 rows, so the rows' own scatter, not the
#: noise, would fragment the groups; chosen on the blobs and California benchmarks).
AUTO_SHARE = 0.05
AUTO_C = 10.0
AUTO_EPSILON_CAP = 1.0
AUTO_MIN_RESOLUTION, AUTO_MAX_RESOLUTION = 4, 128
NEIGHBOURHOODS = ("corners", "faces")
NO_GROUP = -1


#: How many empty cells of a whole grid may pass the noise floor by chance, on average: one grid in
#: twenty shows a spurious dense cell. At one per grid (the floor used before) a small ε drew a group
#: where no rows are on most maps; chosen so a map at any ε shows noise as "no group", not as a group.
FALSE_CELLS_PER_GRID = 0.05


def noise_floor(epsilon: float, n_cells: int) -> float:
    """The noisy count that an empty cell of the grid reaches by chance in only one grid in twenty.

    ``P(Lap(1/ε) ≥ t) = ½·e^(−ε·t)``, so with ``t = ln(n_cells / (2·c)) / ε`` and ``c`` =
    :data:`FALSE_CELLS_PER_GRID` the expected number of empty cells at or above ``t`` is ``c``
    (the two-sided geometric mechanism has the same tail up to a factor below 2). It depends on ε
    and the grid only, never on the data.

    >>> round(noise_floor(1.0, 1024), 2)
    9.23
    """
    return max(math.log(n_cells / (2.0 * FALSE_CELLS_PER_GRID)), 0.0) / epsilon


def grid_problem(resolution: int | Sequence[int] | None, n_features: int) -> str | None:
    """A sentence saying why a grid cannot be laid (too few or many features, too many cells), or None."""
    if not MIN_FEATURES <= n_features <= MAX_FEATURES:
        return _("Choose {least} to {most} numeric columns to find groups in (got {count}).").format(
            least=MIN_FEATURES, most=MAX_FEATURES, count=n_features
        )
    if resolution is None:
        return None
    sides = [resolution] * n_features if isinstance(resolution, int | np.integer) else list(resolution)
    if len(sides) != n_features:
        return _("Give one resolution per column ({count}), or one for all.").format(count=n_features)
    if any(
        isinstance(s, bool) or not isinstance(s, int | np.integer) or not MIN_RESOLUTION <= s <= MAX_RESOLUTION for s in sides
    ):
        return _("The resolution must be a whole number of cells per column from {least} to {most}.").format(
            least=MIN_RESOLUTION, most=MAX_RESOLUTION
        )
    cells = math.prod(int(s) for s in sides)
    if cells > MAX_CELLS:
        return _(
            "A grid of {grid} would have {cells} cells, more than the {most} that can be noised and drawn: choose a "
            "coarser resolution or fewer columns."
        ).format(grid=" × ".join(str(int(s)) for s in sides), cells=integer(cells), most=integer(MAX_CELLS))
    return None


class DPGridDensityClustering(DPEstimatorMixin):
    r"""Find dense groups in 2–4 numeric features with a noisy grid histogram (ε-DP).

    The features are clipped into their declared ``bounds`` and cut into a grid of
    ``resolution`` equal cells per feature (the published DBSCAN's Eps is about one cell
    side). Every cell's count gets Laplace or geometric noise; a cell is **dense** when its
    noisy count is at least :attr:`threshold_`; **groups** are the connected components of
    dense cells (cells touching at a face, or also at a corner). The release is the map:
    :attr:`labels_map_` and :attr:`noisy_counts_`. :meth:`predict` looks up the cell of a
    point, which is post-processing of the map — applied to the owner's own rows it gives
    labels for the owner's eyes only, and they are not part of the release.

    Parameters
    ----------
    epsilon : float, default 1.0
        Total ε of the fit.
    bounds : (lower, upper), optional
        Declared bounds of each feature (scalars broadcast); default [0, 1]. Never read from
        the data: values outside are clipped into the edge cells, NaN goes to the middle.
    resolution : int, sequence of int, or None, default None
        Cells per feature (2 to 1024; at most :data:`MAX_CELLS` cells in all). ``None`` chooses
        it privately: :data:`AUTO_SHARE` (5 %) of ε buys a noisy row count ``n̂`` and the grid
        gets about ``n̂·min(ε_hist, 1)/10`` cells, ``round((n̂·min(ε_hist, 1)/10)^(1/d))`` per
        feature, clamped to [4, 128] — the guideline of Qardaji, Yang & Li (2013) for uniform
        grids, which puts about ``10/ε`` rows in an average cell against noise of scale ``1/ε``;
        above ε = 1 the grid gets no finer (:data:`AUTO_EPSILON_CAP`).
    min_pts : float, default 5
        A dense cell holds at least this many rows (by its noisy count): DBSCAN's MinPts for
        two dimensions (Ester et al. 1996). The threshold used is the larger of ``min_pts``
        and :func:`noise_floor`, at which an empty cell is dense by chance in only one grid in
        twenty; both depend on ε and the grid only, never on the data.
    neighbours : {"corners", "faces"}, default "corners"
        Dense cells touching at a corner (as DBSCAN's Eps-ball of one cell side reaches the
        diagonal cells) or only at a face belong to the same group.
    count_noise : {"laplace", "geometric"}, default "laplace"
    random_state : None, int or Generator

    Attributes
    ----------
    grid_shape_ : tuple of int
        Cells per feature.
    edges_ : list of ndarray
        Each feature's cell edges, in its units (``grid_shape_[j] + 1`` values from the bounds).
    noisy_counts_ : ndarray of shape ``grid_shape_``
        The released histogram: every cell's noisy count.
    threshold_ : float
        The noisy count from which a cell is dense.
    labels_map_ : ndarray of int, shape ``grid_shape_``
        Each cell's group, 0 … ``n_clusters_`` − 1, largest (by noisy rows) first; −1 for cells in
        no group.
    n_clusters_ : int
    cluster_sizes_ : ndarray of float
        Each group's noisy number of rows (the sum of its cells' noisy counts).
    cells_ : pandas.DataFrame
        The map as a table, one row per cell: ``<feature>_lower`` and ``<feature>_upper`` for
        each feature, ``noisy_count`` and ``cluster`` (−1: in no group).
    noisy_rows_ : float or None
        The noisy row count bought for the automatic resolution (None when it was declared).
    epsilon_spent_, delta_spent_ : float
        ε spent, and 0 for δ (pure ε-DP).

    Notes
    -----
    Privacy argument. Neighbouring datasets differ by one added or removed record. The grid's
    edges come from the declared bounds and the resolution only. Adding or removing one
    record changes exactly one cell's count, by 1, so the histogram of **all** cells —
    empty ones included, so which cells are occupied is never revealed by which cells are
    noised — has L1 sensitivity 1, and Laplace or geometric noise of scale ``1/ε_hist`` makes
    it ε_hist-DP. With ``resolution=None`` a noisy row count (sensitivity 1) spends
    ``ε_n = 0.05·ε`` first and the grid is chosen from it (post-processing), the histogram
    spends ``ε_hist = ε − ε_n``: sequential composition gives ε. The threshold depends on ε
    and the number of cells only; dense cells, connected components, group sizes and
    :meth:`predict` are post-processing of the noisy histogram. With several rows per person
    (at most k kept), fit at ε/k: by group privacy each person gets ε, the same as a
    sensitivity of k per cell.

    References
    ----------
    Ester, Kriegel, Sander & Xu (1996), "A density-based algorithm for discovering clusters in
    large spatial databases with noise", KDD. Qardaji, Yang & Li (2013), "Differentially
    private grids for geospatial data", ICDE. Dwork, McSherry, Nissim & Smith (2006),
    "Calibrating noise to sensitivity in private data analysis", TCC.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0.25, 0.03, (2000, 2)), rng.normal(0.75, 0.03, (2000, 2))])
    >>> model = DPGridDensityClustering(epsilon=1.0, resolution=20, random_state=0).fit(X)
    >>> model.n_clusters_, model.labels_map_.shape
    (2, (20, 20))
    >>> int(model.predict([[0.25, 0.25]])[0]) != int(model.predict([[0.75, 0.75]])[0])
    True
    """

    _parameter_choices = {"neighbours": NEIGHBOURHOODS}
    grid_shape_: tuple[int, ...]
    edges_: list[NDArray[np.float64]]
    noisy_counts_: NDArray[Any]
    threshold_: float
    labels_map_: NDArray[np.int64]
    n_clusters_: int
    cluster_sizes_: NDArray[np.float64]
    cells_: pd.DataFrame
    noisy_rows_: float | None
    privacy_summary = NEIGHBOURS + N_(
        "The grid comes from the declared bounds and resolution only, and one record changes one cell's count by "
        "1, so the noisy histogram of every cell, empty ones included, is ε-DP (with an automatic resolution a noisy row "
        "count spends 5 % of ε first, by sequential composition). Dense cells, groups and the map are post-processing; no "
        "label of any person is released."
    )

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        bounds: Bounds | None = None,
        resolution: int | Sequence[int] | None = None,
        min_pts: float = 5.0,
        neighbours: str = "corners",
        count_noise: str = "laplace",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.resolution = resolution
        self.min_pts = min_pts
        self.neighbours = neighbours
        self.count_noise = count_noise
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: object = None) -> Self:
        """Noise the grid histogram of ``X`` and find the groups; ``y`` is ignored."""
        X_valid = validate_data(self, X, dtype=float, ensure_all_finite=False, ensure_min_samples=1)
        epsilon = check_epsilon(self.epsilon)
        self._check_choices()
        d = self.n_features_in_
        if not MIN_FEATURES <= d <= MAX_FEATURES:
            raise ValueError(f"the grid takes {MIN_FEATURES} to {MAX_FEATURES} features, got n_features = {d}")
        problem = grid_problem(self.resolution, d)
        if problem:
            raise ValueError(problem)
        if isinstance(self.min_pts, bool) or not isinstance(self.min_pts, numbers.Real) or not self.min_pts >= 0:
            raise ValueError(f"min_pts must be a number of at least 0, got {self.min_pts!r}")
        self._lower, self._upper = self._grid_bounds(X_valid)
        _, noise = self._random_streams()
        unit = self._unit(X_valid)
        epsilon_hist, self.noisy_rows_ = epsilon, None
        if self.resolution is None:
            epsilon_n = AUTO_SHARE * epsilon
            epsilon_hist = epsilon - epsilon_n
            self.noisy_rows_ = float(count_mechanism(self.count_noise, epsilon_n, noise).randomise(len(unit)))
            shape = (auto_resolution(self.noisy_rows_, epsilon_hist, d),) * d
        else:
            shape = tuple(
                int(s) for s in (self.resolution if not isinstance(self.resolution, int | np.integer) else [self.resolution] * d)
            )
        self.grid_shape_ = shape
        self.edges_ = [np.linspace(lo, hi, side + 1) for lo, hi, side in zip(self._lower, self._upper, shape, strict=True)]
        counts = np.bincount(self._cell_index(unit), minlength=math.prod(shape))
        self.noisy_counts_ = self._noisy_histogram(counts, epsilon_hist, noise).reshape(shape)
        self.threshold_ = max(float(self.min_pts), noise_floor(epsilon_hist, math.prod(shape)))
        self._find_groups()
        self._set_spent(epsilon)
        return self

    def _grid_bounds(self, X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The grid's range: the declared bounds, never the data's (``X`` is unused; a test breaks this on purpose)."""
        return check_bounds(self.bounds, X.shape[1])

    def _noisy_histogram(self, counts: NDArray[np.int64], epsilon: float, rng: np.random.Generator) -> NDArray[Any]:
        """Every cell's count plus noise of scale 1/ε: one mechanism call over the whole grid, empty cells included."""
        return np.asarray(count_mechanism(self.count_noise, epsilon, rng).randomise(counts))

    def _cell_index(self, unit: NDArray[np.float64]) -> NDArray[np.intp]:
        """The flat cell number of each row of ``unit`` (features in [0, 1]): one pass, no loop over rows."""
        sides = np.asarray(self.grid_shape_)
        coordinates = np.minimum((unit * sides).astype(np.intp), sides - 1)
        return np.asarray(np.ravel_multi_index(tuple(coordinates.T), self.grid_shape_), dtype=np.intp)

    def _find_groups(self) -> None:
        """Dense cells, their connected components, ordered by noisy size: post-processing of the histogram."""
        d = len(self.grid_shape_)
        dense = self.noisy_counts_ >= self.threshold_
        structure = ndimage.generate_binary_structure(d, d if self.neighbours == "corners" else 1)
        components, n = ndimage.label(dense, structure=structure)
        weights = self.noisy_counts_.ravel().astype(float)
        sizes = np.asarray(np.bincount(components.ravel(), weights=weights, minlength=n + 1)[1:], dtype=np.float64)
        order = np.argsort(-sizes, kind="stable")
        relabel = np.full(n + 1, NO_GROUP, dtype=np.int64)
        relabel[order + 1] = np.arange(n)
        self.labels_map_ = relabel[components]
        self.n_clusters_ = int(n)
        self.cluster_sizes_ = sizes[order]
        self.cells_ = self._cells_table()

    def _cells_table(self) -> pd.DataFrame:
        names = [str(n) for n in getattr(self, "feature_names_in_", [f"x{j}" for j in range(len(self.grid_shape_))])]
        index = np.indices(self.grid_shape_).reshape(len(self.grid_shape_), -1)
        table: dict[str, Any] = {}
        for name, edges, position in zip(names, self.edges_, index, strict=True):
            table[f"{name}_lower"] = edges[position]
            table[f"{name}_upper"] = edges[position + 1]
        table["noisy_count"] = self.noisy_counts_.ravel()
        table["cluster"] = self.labels_map_.ravel()
        return pd.DataFrame(table)

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """The group of the cell each row of ``X`` falls in (−1: in no group) — a lookup in the released map."""
        check_is_fitted(self, "labels_map_")
        X_valid = validate_data(self, X, dtype=float, ensure_all_finite=False, reset=False)
        return np.asarray(self.labels_map_.ravel()[self._cell_index(self._unit(X_valid))], dtype=np.int64)

    def fit_predict(self, X: ArrayLike, y: object = None) -> NDArray[np.int64]:
        """Fit, then :meth:`predict` the same rows: those labels are for the owner's eyes only."""
        return self.fit(X).predict(X)


def auto_resolution(noisy_rows: float, epsilon: float, n_features: int) -> int:
    """Cells per feature for about ``n̂·min(ε, 1)/10`` cells in all (after Qardaji, Yang & Li 2013), clamped to [4, 128] and the cell cap.

    >>> auto_resolution(20_000, 1.0, 2), auto_resolution(20_000, 0.1, 2), auto_resolution(20_000, 4.0, 2)
    (45, 14, 45)
    >>> auto_resolution(1e9, 10.0, 4)
    32
    """
    check_positive_int(n_features, "n_features")
    side = round((max(noisy_rows, 1.0) * min(epsilon, AUTO_EPSILON_CAP) / AUTO_C) ** (1.0 / n_features))
    cap = int(math.floor(MAX_CELLS ** (1.0 / n_features) + 1e-9))
    return int(min(max(side, AUTO_MIN_RESOLUTION), AUTO_MAX_RESOLUTION, cap))
