"""A model's marginals from the one compiled program are the library's own, and zero potentials are the uniform model."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.synthetic.inference import clique_marginals, constant_tables, junction_tree, node_beliefs
from dpcore.synthetic.model import names, private_pgm

pytest.importorskip("mbi")

SHAPE = (2, 3, 4, 2)
#: A cycle (0, 1, 2) and a tail: the junction tree holds a triple that none of these cliques holds.
CLIQUES = [(0, 1), (1, 2), (0, 2), (2, 3)]


def _random_potentials():
    mbi = private_pgm()
    domain = mbi.Domain(names(SHAPE), SHAPE)
    rng = np.random.default_rng(2)
    tables = {clique: mbi.Factor(domain.project(clique), rng.normal(size=domain.project(clique).shape)) for clique in CLIQUES}
    return mbi.CliqueVector(domain, CLIQUES, tables)


def test_the_marginals_summed_from_the_tree_s_beliefs_are_the_library_s_message_passing():
    from mbi import marginal_oracles

    potentials = _random_potentials()
    ours = clique_marginals(potentials, 500.0)
    library = marginal_oracles.message_passing_hugin(potentials, 500.0)
    for clique in CLIQUES:
        np.testing.assert_allclose(ours[clique].values, library[clique].values, rtol=1e-9)
    nodes = junction_tree(potentials)[0]
    assert any(len(node) == 3 for node in nodes)
    beliefs = node_beliefs(potentials, 500.0, nodes)
    assert all(np.isclose(float(beliefs[node].values.sum()), 500.0) for node in nodes)


def test_zero_potentials_are_the_uniform_model():
    mbi = private_pgm()
    domain = mbi.Domain(names(SHAPE), SHAPE)
    zeros = constant_tables(domain, CLIQUES, lambda cells: 0.0)
    uniform = constant_tables(domain, CLIQUES, lambda cells: 500.0 / cells)
    for clique in CLIQUES:
        np.testing.assert_allclose(clique_marginals(zeros, 500.0)[clique].values, uniform[clique].values, rtol=1e-12)
