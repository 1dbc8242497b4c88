"""Rows drawn from a fitted Private-PGM model, one column at a time along its junction tree.

The model's distribution factorises over its junction tree: drawn in the reverse of the tree's
elimination order, each column depends only on the columns already drawn that share a tree node
with it, so each column is drawn from one table, the model's marginal over those columns and itself.
Those tables are summed from the junction tree's node beliefs, which the fitted model carries
(:func:`~dpcore.synthetic.model.mirror_descent`); the draws themselves are vectorised numpy, grouped by
the parents' values.

This replaces the library's ``MarkovRandomField.synthetic_data``, which compiled its message passing
and projections operation by operation: 5.5 s of wall clock on Adult and 30 s on a 76-column table,
where this takes 0.1 s (``benchmarks/synthetic_steps.py``). The rows follow the same
law; the tests check it.

Privacy: drawing is post-processing of the fitted model, itself a function of the DP measurements
alone, so it spends nothing. Its randomness comes from the copy's own generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpcore.synthetic.inference import Clique, holding, junction_tree, summed_onto

#: How the rows are drawn: "round" spreads each group's rows evenly over its conditional distribution
#: (stratified, so the copy's counts stay within a row or two of the model's), "sample" draws them independently.
METHODS = ("round", "sample")

#: One column to draw, after the columns it depends on (its parents).
Step = tuple[Clique, int]


def draw_cells(model: Any, labels: list[int], rows: int, rng: np.random.Generator, method: str = "round") -> np.ndarray:
    """``rows`` rows of cells (rows × columns, columns in ``labels``' order) drawn from ``model``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    if model.constraints:
        raise ValueError("a model fitted under constraints is drawn by the library's own sampler")
    nodes, elimination = junction_tree(model.potentials)
    steps = drawing_steps(nodes, elimination)
    drawn: dict[int, np.ndarray] = {}
    for (parents, column), table in zip(steps, step_tables(model, nodes, steps), strict=True):
        drawn[column] = _draw_column(table, [drawn[name] for name in parents], rows, rng, method)
    return np.column_stack([drawn[name] for name in labels]).astype(np.int64, copy=False)


def drawing_steps(nodes: tuple[Clique, ...], elimination: list[int]) -> list[Step]:
    """The columns in drawing order, each with the columns drawn before it on which it depends (its parents).

    In the reverse of the junction tree's elimination order, a column's neighbours drawn before it
    form a clique with it in the triangulated graph, so one tree node holds them all.
    """
    steps: list[Step] = []
    drawn: list[int] = []
    for column in reversed(elimination):
        neighbours = set().union(*(set(node) for node in nodes if column in node))
        steps.append((tuple(name for name in drawn if name in neighbours), column))
        drawn.append(column)
    return steps


def step_tables(model: Any, nodes: tuple[Clique, ...], steps: list[Step]) -> list[np.ndarray]:
    """The model's marginal over each step's parents and column (axes in that order), as numpy arrays."""
    # Every step lies in a node: the nodes are all the maximal cliques of the triangulated graph.
    targets = [(*parents, column) for parents, column in steps]
    return [summed_onto(model.beliefs[holding(nodes, target)], target) for target in targets]


def _draw_column(table: np.ndarray, parents: list[np.ndarray], rows: int, rng: np.random.Generator, method: str) -> np.ndarray:
    """One column's values given its parents' drawn values, from the model's ``table`` over (parents…, column)."""
    size = table.shape[-1]
    conditional = np.clip(table.reshape(-1, size), 0.0, None)
    code = np.ravel_multi_index(tuple(parents), table.shape[:-1]) if parents else np.zeros(rows, dtype=np.int64)
    groups, group_of_row, group_sizes = np.unique(code, return_inverse=True, return_counts=True)
    weights = conditional[groups]
    mass = weights.sum(axis=1, keepdims=True)
    # Parents' values the model gives no mass (rounding) fall back on the column's own distribution.
    weights = np.where(mass > 0, weights, conditional.sum(axis=0))
    cumulative = np.cumsum(weights, axis=1)
    cumulative /= cumulative[:, -1:]
    if method == "sample":
        uniform = rng.random(rows)
    else:
        # Each group's rows in a random order, the i-th of n in its own slice [i/n, (i+1)/n) of [0, 1).
        shuffled = rng.permutation(rows)
        by_group = shuffled[np.argsort(group_of_row[shuffled], kind="stable")]
        starts = np.cumsum(group_sizes) - group_sizes
        rank = np.empty(rows, dtype=np.int64)
        rank[by_group] = np.arange(rows) - starts[group_of_row[by_group]]
        uniform = (rank + rng.random(rows)) / group_sizes[group_of_row]
    # One search for every row: group g's cumulative distribution shifted to [g, g + 1].
    shifted = (cumulative + np.arange(len(groups))[:, None]).ravel()
    position = np.searchsorted(shifted, uniform + group_of_row, side="right")
    # A uniform within an ulp of 1 rounds to g + 1 and would run past its group: keep it on the group's last value
    # with mass, never on a value the model rules out.
    last = size - 1 - np.argmax(weights[:, ::-1] > 0, axis=1)
    return np.minimum(position - group_of_row * size, last[group_of_row])
