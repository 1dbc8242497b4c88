"""A model's marginals on its junction tree's nodes, and the tables a fit starts from.

Rows are drawn from the marginals on the junction tree's nodes (:mod:`~dpcore.synthetic.sampling`). A
model of ours carries them from its fit (:func:`~dpcore.synthetic.model.mirror_descent`); for any
other, :func:`node_beliefs` runs the library's message passing, compiled as one program per tree shape.
A fit from scratch starts from zero potentials, tables made by :func:`constant_tables` in numpy.

Privacy: inference is post-processing of the fitted model, a function of the DP measurements alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np

#: Columns of the model, by the library's names (our column positions).
Clique = tuple[int, ...]


def junction_tree(potentials: Any) -> tuple[tuple[Clique, ...], list[int]]:
    """The library's junction tree of the potentials' cliques: its nodes, and the elimination order that made it.

    The fit's start, its traced step and the draw all ask for the tree of the same cliques: it is made once.
    """
    nodes, elimination = _tree(potentials.domain, tuple(tuple(clique) for clique in potentials.cliques))
    return nodes, list(elimination)


@lru_cache(maxsize=32)
def _tree(domain: Any, cliques: tuple[Clique, ...]) -> tuple[tuple[Clique, ...], tuple[int, ...]]:
    from mbi import junction_tree as trees

    tree, elimination = trees.make_junction_tree(domain, list(cliques))
    return tuple(tuple(node) for node in tree.nodes), tuple(elimination)


def node_beliefs(potentials: Any, total: Any, nodes: tuple[Clique, ...] | None = None) -> Any:
    """The model's marginals (a ``CliqueVector`` scaled to ``total``) on its junction tree's nodes."""
    if nodes is None:
        nodes = junction_tree(potentials)[0]
    return _beliefs_program()(potentials, float(total), nodes)


def constant_tables(domain: Any, cliques: Sequence[Clique], value: Callable[[int], float]) -> Any:
    """A ``CliqueVector`` with ``value(cells)`` in every cell of each clique's table, made in numpy.

    Built in numpy and copied to the device: made with JAX's own constructors, each table's shape would compile a
    program of its own.
    """
    import jax
    from mbi import CliqueVector, Factor

    tables = {}
    for clique in cliques:
        projected = domain.project(clique)
        tables[clique] = Factor(projected, jax.device_put(np.full(projected.shape, value(projected.size()))))
    return CliqueVector(domain, cliques, tables)


def holding(cliques: Any, target: Clique) -> Clique:
    """The first of ``cliques`` that holds every column of ``target`` (a junction tree's nodes always hold one)."""
    found = next((tuple(clique) for clique in cliques if set(target) <= set(clique)), None)
    if found is None:
        raise ValueError(f"no clique holds the columns {target}")
    return found


def summed_onto(factor: Any, target: Clique) -> np.ndarray:
    """``factor``'s values summed onto ``target``'s columns, axes in ``target``'s order."""
    attrs = list(factor.domain.attributes)
    values = np.asarray(factor.values, dtype=np.float64)
    summed = values.sum(axis=tuple(i for i, name in enumerate(attrs) if name not in target))
    kept = [name for name in attrs if name in target]
    return np.transpose(summed, [kept.index(name) for name in target])


@cache
def _beliefs_program() -> Any:
    """The library's message passing over the junction tree's nodes, compiled once per tree shape."""
    import jax
    from mbi import marginal_oracles

    def beliefs(potentials: Any, total: float, nodes: tuple) -> Any:
        return marginal_oracles.message_passing_stable(potentials.expand(list(nodes)), total)

    return jax.jit(beliefs, static_argnames=("nodes",))
