"""Rows drawn from a fitted Private-PGM model follow the model's law."""

from __future__ import annotations

import numpy as np
import pytest
from privacy_testing import ALPHA, chi_square_pvalue

from dpcore.synthetic import sampling
from dpcore.synthetic.inference import junction_tree
from dpcore.synthetic.measure import Measurement, marginal
from dpcore.synthetic.model import draw, estimate, names

pytest.importorskip("mbi")

SHAPE = (2, 3, 4, 2)


def _fitted(cliques: list[tuple[int, ...]]):
    """A model fitted to exact counts of ``cliques`` on 5,000 rows whose columns depend on each other."""
    rng = np.random.default_rng(7)
    first = rng.integers(0, 2, 5000)
    second = (first + rng.integers(0, 2, 5000)) % 3
    third = (first + second + rng.integers(0, 3, 5000)) % 4
    fourth = (third > 1).astype(int) ^ (rng.random(5000) < 0.2)
    cells = np.column_stack([first, second, third, fourth])
    measurements = [Measurement(clique, marginal(cells, SHAPE, clique), 1.0) for clique in cliques]
    return estimate(measurements, SHAPE, iterations=300)


@pytest.fixture(scope="module")
def with_a_cycle():
    """The pairs (0, 1), (1, 2), (0, 2) close a cycle: the junction tree holds a triple no fitted clique holds."""
    return _fitted([(0, 1), (1, 2), (0, 2), (2, 3)])


@pytest.fixture(scope="module")
def a_chain():
    return _fitted([(0, 1), (1, 2), (2, 3)])


def _model_law(model, columns: tuple[int, ...]) -> np.ndarray:
    labels = names(SHAPE)
    table = np.asarray(model.project(tuple(labels[i] for i in columns)).datavector(flatten=False), dtype=float)
    return table / table.sum()


def test_the_steps_multiply_to_the_model_s_joint_law(with_a_cycle, a_chain):
    letters = {label: chr(ord("a") + i) for i, label in enumerate(names(SHAPE))}
    for model in (with_a_cycle, a_chain):
        nodes, elimination = junction_tree(model.potentials)
        steps = sampling.drawing_steps(nodes, elimination)
        joint, order = np.ones(()), ""
        for (parents, column), table in zip(steps, sampling.step_tables(model, nodes, steps), strict=True):
            conditional = table / table.sum(axis=-1, keepdims=True)
            given = "".join(letters[p] for p in parents) + letters[column]
            joint = np.einsum(f"{order},{given}->{order}{letters[column]}", joint, conditional)
            order += letters[column]
        law = _model_law(model, tuple(ord(letter) - ord("a") for letter in order))
        np.testing.assert_allclose(joint, law, atol=1e-9)


class _EdgeOfOne:
    """A generator whose every uniform is the largest double below 1, and whose permutations are the identity."""

    def random(self, size: int) -> np.ndarray:
        return np.full(size, np.nextafter(1.0, 0.0))

    def permutation(self, size: int) -> np.ndarray:
        return np.arange(size)


@pytest.mark.parametrize("method", ["sample", "round"])
def test_a_value_the_model_rules_out_is_never_drawn_even_at_the_edge_of_one(method):
    table = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [2.0, 0.0]])  # four parent values, the column always 0
    parent = np.array([0, 1, 2, 3, 3])
    drawn = sampling._draw_column(table, [parent], 5, _EdgeOfOne(), method)  # type: ignore[arg-type]
    assert drawn.tolist() == [0, 0, 0, 0, 0]


def test_a_parent_value_without_mass_falls_back_on_the_column_s_own_law_and_a_single_value_column_works():
    table = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 3.0]])
    drawn = sampling._draw_column(table, [np.zeros(4000, dtype=int)], 4000, np.random.default_rng(1), "sample")
    assert set(np.unique(drawn)) == {0, 2}
    single = sampling._draw_column(np.array([[5.0]]), [np.zeros(1, dtype=int)], 1, np.random.default_rng(1), "round")
    assert single.tolist() == [0]


@pytest.mark.parametrize("columns", [(0, 1, 2), (2, 3), (1, 3), (0, 3)])
def test_independent_rows_follow_the_model_s_law_on_its_cliques_and_beyond(with_a_cycle, columns):
    rows = draw(with_a_cycle, SHAPE, 20_000, np.random.default_rng(3), method="sample")
    counts = marginal(rows, SHAPE, columns)
    # Drawn from exactly the model's distribution: a false alarm once in 1/ALPHA seeds.
    assert chi_square_pvalue(counts, _model_law(with_a_cycle, columns)) > ALPHA


def test_rounded_rows_spread_each_parent_group_within_two_rows_of_the_model(with_a_cycle):
    nodes, elimination = junction_tree(with_a_cycle.potentials)
    steps = sampling.drawing_steps(nodes, elimination)
    rows = draw(with_a_cycle, SHAPE, 7_001, np.random.default_rng(4))
    index = {label: i for i, label in enumerate(names(SHAPE))}
    for parents, column in steps:
        law = _model_law(with_a_cycle, (*(index[p] for p in parents), index[column]))
        law = law.reshape(-1, SHAPE[index[column]])
        sizes = tuple(SHAPE[index[p]] for p in parents)
        group = np.ravel_multi_index(tuple(rows[:, index[p]] for p in parents), sizes) if parents else np.zeros(len(rows), int)
        for code in np.unique(group):
            mine = rows[group == code, index[column]]
            expected = len(mine) * law[code] / law[code].sum()
            # One row per slice of the group's distribution: a value's count is within two of its share.
            assert np.all(np.abs(np.bincount(mine, minlength=law.shape[1]) - expected) < 2)


def test_a_seed_gives_the_same_rows_and_no_rows_is_an_empty_table(a_chain):
    assert np.array_equal(
        draw(a_chain, SHAPE, 500, np.random.default_rng(9)), draw(a_chain, SHAPE, 500, np.random.default_rng(9))
    )
    assert not np.array_equal(
        draw(a_chain, SHAPE, 500, np.random.default_rng(9)), draw(a_chain, SHAPE, 500, np.random.default_rng(10))
    )
    assert draw(a_chain, SHAPE, 0, np.random.default_rng(9)).shape == (0, len(SHAPE))
    with pytest.raises(ValueError, match="method"):
        draw(a_chain, SHAPE, 10, np.random.default_rng(9), method="mode")
