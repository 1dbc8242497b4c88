"""ε-DP quantiles of every column at once, by the exponential mechanism on a public grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.mechanisms._base import Mechanism
from dpcore.mechanisms.exponential import Exponential
from dpcore.validation import RandomStateLike


def _levels(n_quantiles: int) -> list[list[tuple[int, int, int]]]:
    """A balanced binary tree over the quantile indices, level by level: ``(index, left, right)``,
    where ``left``/``right`` are the indices already released that bracket it (−1 and
    ``n_quantiles`` meaning the ends of the domain). Depends on the number of quantiles only."""
    levels: list[list[tuple[int, int, int]]] = []
    spans = [(0, n_quantiles, -1, n_quantiles)]
    while spans:
        level, next_spans = [], []
        for start, stop, left, right in spans:
            if start >= stop:
                continue
            middle = (start + stop) // 2
            level.append((middle, left, right))
            next_spans += [(start, middle, left, middle), (middle + 1, stop, middle, right)]
        if level:
            levels.append(level)
        spans = next_spans
    return levels


class Quantiles(Mechanism):
    r"""ε-DP quantiles of each column of values in [0, 1], on a public grid of ``grid`` cells.

    The candidate outputs are the grid's ``grid + 1`` edges ``g/grid``. The quantiles are found
    by recursive splitting (after Kaplan, Schnapp & Stemmer 2022): the middle quantile of the list
    first, over the whole domain; then each half of the list inside the interval its released
    neighbours bracket, and so on — ``L = ⌈log₂(m + 1)⌉`` levels for ``m`` quantiles, every
    column in one vectorised exponential-mechanism call per level.

    Privacy argument (pure ε-DP, add/remove-one neighbours). At one level, the intervals of one
    column are disjoint (half-open grid cells, split at the outputs of earlier levels), so a
    record lies in at most one of them. Inside an interval ``I`` holding ``n_I`` records, the
    target quantile ``q`` becomes the relative quantile ``q' = (q − q_left)/(q_right − q_left)``
    and edge ``g`` has utility ``u(g) = −|rank_I(g) − q'·n_I| / max(q', 1 − q')``, ``rank_I(g)``
    the records of ``I`` below ``g``. Adding a record below ``g`` moves ``rank_I`` by 1 and
    ``q'·n_I`` by ``q'``, a record above moves only ``q'·n_I``, so ``|rank_I − q'·n_I|`` moves by at
    most ``max(q', 1 − q')`` and ``u`` by at most 1: each selection is the exponential mechanism
    with sensitivity 1 at ``ε / (d·L)``. Per level, parallel composition over intervals; across
    the ``L`` levels (adaptive: the intervals depend only on released outputs) and the ``d``
    columns, sequential composition: ``d · L · ε/(d·L) = ε`` in total. The grid, the quantile
    list and the tree over it are public.

    Parameters
    ----------
    epsilon : float
        Budget of one :meth:`randomise` call, for all columns together.
    quantiles : sequence of float in (0, 1)
        The quantiles wanted, increasing.
    grid : int, default 256
        Number of public grid cells on [0, 1].
    random_state : None, int or numpy.random.Generator

    Examples
    --------
    >>> values = np.random.default_rng(0).random((5000, 2)) * 0.1 + 0.45
    >>> q = Quantiles(1.0, (0.25, 0.5, 0.75), random_state=0).randomise(values)
    >>> q.shape, bool(np.all((q > 0.4) & (q < 0.6)))
    ((2, 3), True)
    """

    name = "quantiles"

    def __init__(
        self,
        epsilon: float,
        quantiles: Sequence[float] = (0.25, 0.5, 0.75),
        grid: int = 256,
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, 1.0, random_state)
        q = np.asarray(quantiles, dtype=float)
        if q.ndim != 1 or q.size == 0 or np.any((q <= 0) | (q >= 1)) or np.any(np.diff(q) <= 0):
            raise ValueError("quantiles must be increasing values strictly between 0 and 1")
        if int(grid) < 2:
            raise ValueError("grid must be at least 2")
        self.quantiles = q
        self.grid = int(grid)

    def randomise(self, values: ArrayLike) -> NDArray[np.float64]:
        """``(d, m)`` quantiles of the ``d`` columns of ``values`` (clipped into [0, 1]; NaN → 0.5)."""
        return self.randomise_histogram(self.histogram(values))

    def histogram(self, values: ArrayLike) -> NDArray[np.int64]:
        """``(d, grid)`` counts of each column's values per grid cell: all :meth:`randomise_histogram` reads."""
        return grid_histogram(values, self.grid)

    def randomise_histogram(self, histogram: ArrayLike) -> NDArray[np.float64]:
        """``(d, m)`` quantiles from the columns' grid histograms (:meth:`histogram`)."""
        histogram = np.asarray(histogram)
        d = histogram.shape[0]
        below = np.concatenate([np.zeros((d, 1)), np.cumsum(histogram, axis=1)], axis=1)  # records below edge g
        levels = _levels(self.quantiles.size)
        selector = Exponential(self.epsilon / (d * len(levels)), 1.0, random_state=self.rng)
        q_ext = np.concatenate([[0.0], self.quantiles, [1.0]])
        edges = np.zeros((d, self.quantiles.size + 2), dtype=np.int64)  # released edges, with the ends
        edges[:, -1] = self.grid
        candidates = np.arange(self.grid + 1)
        for level in levels:
            index, left, right = (np.array(column) for column in zip(*level))
            lo, hi = edges[:, left + 1], edges[:, right + 1]  # (d, nodes)
            q_rel = (q_ext[index + 1] - q_ext[left + 1]) / (q_ext[right + 1] - q_ext[left + 1])
            in_interval = np.take_along_axis(below, hi, axis=1) - np.take_along_axis(below, lo, axis=1)
            rank = below[:, None, :] - np.take_along_axis(below, lo, axis=1)[:, :, None]  # (d, nodes, grid+1)
            target = (q_rel[None, :] * in_interval)[..., None]
            utility = -np.abs(rank - target) / np.maximum(q_rel, 1 - q_rel)[None, :, None]
            inside = (candidates[None, None, :] >= lo[..., None]) & (candidates[None, None, :] <= hi[..., None])
            utility = np.where(inside, utility, -np.inf)
            chosen = np.asarray(selector.select(utility.reshape(-1, self.grid + 1))).reshape(d, len(level))
            edges[:, index + 1] = chosen
        # Not recorded again here: the exponential selections above are the only releases (and
        # are what a replaying audit substitutes); this is post-processing of them.
        return edges[:, 1:-1] / self.grid


def grid_histogram(values: ArrayLike, grid: int) -> NDArray[np.int64]:
    """``(d, grid)`` counts of each column's values (clipped into [0, 1]; NaN → 0.5) per cell of a public grid.

    A per-record map into cells, so histograms of row batches add up to the table's; it draws
    nothing, so a pass over row batches needs no mechanism object.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    d = values.shape[1]
    values = np.clip(np.where(np.isnan(values), 0.5, values), 0.0, 1.0)
    cells = np.minimum((values * grid).astype(np.int64), grid - 1)
    offsets = (np.arange(d) * grid)[None, :]
    return np.bincount((cells + offsets).ravel(), minlength=d * grid).reshape(d, grid).astype(np.int64)
