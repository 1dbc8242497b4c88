"""The private step of a synthetic copy: noisy marginals, and the pairs chosen by the exponential mechanism.

Everything here reads the data; everything after it (fitting the graphical model, drawing the
rows) reads only what this step returns. The three sub-steps and their noise are in
:mod:`dpcore.synthetic.budget`:

* :func:`marginal` counts **every** cell of the declared domain, empty ones included, so which
  cells are empty never shows (a variant measuring only non-empty cells would tell);
* :func:`choose_tree` picks ``d − 1`` pairs forming a spanning tree, one exponential-mechanism
  round each (Kruskal's algorithm with a private choice, as MST), scoring a pair by how far its
  true two-way marginal is, in L1, from what the noisy one-way marginals alone predict;
* :func:`measure` runs the three and returns the noisy marginals with their noise's standard
  deviation, which is all the model fit sees.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dpcore.i18n import _
from dpcore.mechanisms import Exponential, Gaussian, Laplace
from dpcore.progress import TimeLeft
from dpcore.synthetic.budget import Calibration

#: Cells counted at once when the pairs of a column are counted (about 32 MB of codes).
CELLS_PER_COUNT = 1 << 22


@dataclass(frozen=True)
class Measurement:
    """One noisy marginal: the columns (indices), the noisy count of every cell (C order) and the noise's std."""

    clique: tuple[int, ...]
    noisy: np.ndarray
    stddev: float


def marginal(cells: np.ndarray, shape: tuple[int, ...], clique: tuple[int, ...]) -> np.ndarray:
    """The count of every cell of the columns ``clique`` (flattened in C order), empty cells included."""
    sizes = tuple(shape[i] for i in clique)
    if not clique:
        return np.array([float(len(cells))])
    index = np.ravel_multi_index(tuple(cells[:, i] for i in clique), sizes)
    return np.bincount(index, minlength=int(np.prod(sizes))).astype(np.float64)


def pair_counts(cells: np.ndarray, shape: tuple[int, ...], first: int) -> list[np.ndarray]:
    """The count tables of the pairs of columns (``first``, j) for every later j: one ``bincount`` per chunk of them.

    A chunk holds as many later columns as keep both its codes (rows × columns) and its tables' cells under
    :data:`CELLS_PER_COUNT`; each pair's cells sit at an offset of their own in the chunk's count.
    """
    tables: list[np.ndarray] = []
    later = list(range(first + 1, len(shape)))
    while later:
        chunk, cells_counted = [later[0]], shape[first] * shape[later[0]]
        for j in later[1:]:
            if (len(chunk) + 1) * len(cells) > CELLS_PER_COUNT or cells_counted + shape[first] * shape[j] > CELLS_PER_COUNT:
                break
            chunk.append(j)
            cells_counted += shape[first] * shape[j]
        later = later[len(chunk) :]
        sizes = np.array([shape[j] for j in chunk])
        offsets = np.concatenate([[0], np.cumsum(shape[first] * sizes)])
        codes = cells[:, first, None] * sizes + cells[:, chunk] + offsets[:-1]
        counts = np.bincount(codes.ravel(), minlength=int(offsets[-1]))
        tables += [counts[offsets[n] : offsets[n + 1]].reshape(shape[first], size) for n, size in enumerate(sizes)]
    return tables


def noisy_marginal(counts: np.ndarray, calibration: Calibration, count: int, rng: np.random.Generator) -> np.ndarray:
    """``counts`` with the noise of a step of ``count`` marginals (one mechanism call per marginal)."""
    budget = calibration.marginal_budget(count)
    if calibration.noise == "gaussian":
        return Gaussian(rho=budget, sensitivity=calibration.l2, random_state=rng).randomise(counts)
    return Laplace(epsilon=budget, sensitivity=calibration.l1, random_state=rng).randomise(counts)


def one_way_estimate(noisy: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Shares from noisy one-way counts (negative counts cut to 0), and the noisy total they agree on."""
    total = max(float(np.mean([m.sum() for m in noisy])), 1.0)
    shares = []
    for m in noisy:
        positive = np.clip(m, 0, None)
        shares.append(positive / positive.sum() if positive.sum() > 0 else np.full(m.size, 1.0 / m.size))
    return shares, total


def marginal_count(d: int, calibration: Calibration) -> int:
    """How many noisy marginals :func:`measure` returns: one per column, the tree's pairs and the anchored pairs."""
    if not calibration.rounds:
        return d
    return d + calibration.rounds + (d - 1 if calibration.anchored else 0)


def pair_count(d: int, calibration: Calibration) -> int:
    """How many two-way marginals :func:`measure` counts: every pair to score, the tree's, and the anchored pairs."""
    if not calibration.rounds:
        return 0
    return d * (d - 1) // 2 + calibration.rounds + (d - 1 if calibration.anchored else 0)


def choose_tree(
    cells: np.ndarray,
    shape: tuple[int, ...],
    shares: list[np.ndarray],
    total: float,
    calibration: Calibration,
    rng: np.random.Generator,
    work: TimeLeft | None = None,
) -> list[tuple[int, int]]:
    """``d − 1`` pairs forming a spanning tree, each chosen by the exponential mechanism (Kruskal, as MST)."""
    d = len(shape)
    pairs = list(itertools.combinations(range(d), 2))
    if not pairs:
        return []
    scores: list[float] = []
    for first in range(d - 1):  # a column's pairs with every later column, counted at once
        for n, counts in enumerate(pair_counts(cells, shape, first)):
            scores.append(float(np.abs(counts - total * np.outer(shares[first], shares[first + 1 + n])).sum()))
        if work is not None:
            work.tick(_("Counting pairs of columns: {done} of {pairs}").format(done=len(scores), pairs=len(pairs)), d - 1 - first)
    component = list(range(d))

    def root(i: int) -> int:
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    chosen: list[tuple[int, int]] = []
    epsilon = calibration.selection_epsilon()
    for _round in range(calibration.rounds):
        allowed = np.array([root(a) != root(b) for a, b in pairs])
        utilities = np.where(allowed, np.array(scores), -np.inf)
        pick = int(Exponential(epsilon, sensitivity=calibration.l1, random_state=rng).select(utilities))
        a, b = pairs[pick]
        component[root(a)] = root(b)
        chosen.append((a, b))
    return chosen


def anchored_pairs(anchor: int, d: int) -> list[tuple[int, int]]:
    """The pairs of the declared target (column ``anchor``) with every other column."""
    return [(min(anchor, i), max(anchor, i)) for i in range(d) if i != anchor]


def measure(
    cells: np.ndarray,
    shape: tuple[int, ...],
    calibration: Calibration,
    rng: np.random.Generator,
    work: TimeLeft | None = None,
    anchor: int | None = None,
) -> list[Measurement]:
    """The noisy one-way marginals, the chosen pairs' noisy two-way marginals: all a copy learns from the data.

    ``anchor``: the declared target's column when ``calibration.anchored``; its pairs with every
    other column are measured as a fourth step. ``work`` counts every two-way marginal counted
    (:func:`pair_count` of them) as a unit of its current stage.
    """
    d = len(shape)
    ones = [noisy_marginal(marginal(cells, shape, (i,)), calibration, d, rng) for i in range(d)]
    measurements = [Measurement((i,), m, calibration.stddev(d)) for i, m in enumerate(ones)]
    if calibration.rounds:
        shares, total = one_way_estimate(ones)
        tree = choose_tree(cells, shape, shares, total, calibration, rng, work)
        chosen = list(tree)
        if calibration.anchored and anchor is not None:
            chosen += anchored_pairs(anchor, d)
        for pair in chosen:
            noisy = noisy_marginal(marginal(cells, shape, pair), calibration, calibration.rounds, rng)
            measurements.append(Measurement(pair, noisy, calibration.stddev(calibration.rounds)))
        if work is not None:
            work.tick(_("Measuring the chosen pairs of columns…"), len(chosen))
    return measurements
