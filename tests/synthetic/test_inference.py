"""A model's marginals on its junction tree's nodes are the library's message passing's, whoever computes them."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.synthetic.inference import constant_tables, junction_tree, node_beliefs
from dpcore.synthetic.model import names, private_pgm

pytest.importorskip("mbi")

SHAPE = (2, 3, 4, 2)
#: A cycle (0, 1, 2) and a tail: the junction tree holds a triple that none of these cliques holds.
CLIQUES = [(0, 1), (1, 2), (0, 2), (2, 3)]


def test_the_node_beliefs_sum_to_the_library_s_marginals_on_every_clique():
    from mbi import marginal_oracles

    mbi = private_pgm()
    domain = mbi.Domain(names(SHAPE), SHAPE)
    rng = np.random.default_rng(2)
    tables = {clique: mbi.Factor(domain.project(clique), rng.normal(size=domain.project(clique).shape)) for clique in CLIQUES}
    potentials = mbi.CliqueVector(domain, CLIQUES, tables)
    nodes = junction_tree(potentials)[0]
    assert any(len(node) == 3 for node in nodes)
    beliefs = node_beliefs(potentials, 500.0, nodes)
    library = marginal_oracles.message_passing_hugin(potentials, 500.0)
    for clique in CLIQUES:
        np.testing.assert_allclose(beliefs.project(clique).values, library[clique].values, rtol=1e-9)


def test_constant_tables_fill_every_clique_s_cells():
    mbi = private_pgm()
    tables = constant_tables(mbi.Domain(names(SHAPE), SHAPE), CLIQUES, lambda cells: 60.0 / cells)
    for clique in CLIQUES:
        assert tables[clique].values.shape == tuple(SHAPE[i] for i in clique)
        assert np.allclose(tables[clique].values.sum(), 60.0)
