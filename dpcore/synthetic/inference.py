"""A fitted model's marginals, by Private-PGM's message passing over its junction tree, compiled as one program.

The fit needs a model's marginals on its own cliques at its start (when warm-started) and end, and
the draw needs them on the junction tree's nodes. All three come from one program,
:func:`node_beliefs`: the library's message passing over the tree's nodes, compiled once per tree
shape and then run in milliseconds. The library compiled its own for each (for the model's cliques
at the fit's start and end, and op by op for the draw): three large programs per model where this
compiles one (``benchmarks/synthetic_steps.py``). A model of zero potentials is uniform, so a fit
from scratch starts from marginals known without inference (:func:`constant_tables`).

Privacy: inference is post-processing of the fitted model, a function of the DP measurements alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

#: Columns of the model, by the library's names (our column positions).
Clique = tuple[int, ...]


def junction_tree(potentials: Any) -> tuple[tuple[Clique, ...], list[int]]:
    """The library's junction tree of the potentials' cliques: its nodes, and the elimination order that made it."""
    from mbi import junction_tree as trees

    tree, elimination = trees.make_junction_tree(potentials.domain, [tuple(clique) for clique in potentials.cliques])
    return tuple(tuple(node) for node in tree.nodes), list(elimination)


def node_beliefs(potentials: Any, total: Any, nodes: tuple[Clique, ...] | None = None) -> Any:
    """The model's marginals (a ``CliqueVector`` scaled to ``total``) on its junction tree's nodes."""
    if nodes is None:
        nodes = junction_tree(potentials)[0]
    return _beliefs_program()(potentials, float(total), nodes)


def clique_marginals(potentials: Any, total: Any) -> Any:
    """The model's marginals on the potentials' own cliques, summed from :func:`node_beliefs`."""
    import jax
    from mbi import CliqueVector, Factor

    nodes = junction_tree(potentials)[0]
    beliefs = node_beliefs(potentials, total, nodes)
    domain, cliques = potentials.domain, tuple(tuple(clique) for clique in potentials.cliques)
    tables = {
        clique: Factor(domain.project(clique), jax.device_put(summed_onto(beliefs[holding(nodes, clique)], clique)))
        for clique in cliques
    }
    return CliqueVector(domain, cliques, tables)


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
    """The first of ``cliques`` that holds every column of ``target``."""
    return next(tuple(clique) for clique in cliques if set(target) <= set(clique))


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
