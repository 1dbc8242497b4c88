"""Private-PGM's set-up and fit: where JAX keeps the compiled programs, and the library's iterates from our steps."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.synthetic.measure import Measurement, marginal
from dpcore.synthetic.model import (
    COMPILE_CACHE_ENV,
    compile_cache_directory,
    estimate,
    mirror_descent,
    names,
    noisy_total,
    private_pgm,
)

SHAPE = (2, 3, 4, 2)
#: The pairs (0, 1), (0, 2), (1, 2) close a cycle: the junction tree holds a triple that no measured clique holds.
CLIQUES = [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (1, 2), (2, 3)]


def test_the_compile_cache_lives_in_the_user_cache_unless_moved_or_turned_off(monkeypatch, tmp_path):
    monkeypatch.delenv(COMPILE_CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache_directory() == str(tmp_path / "dpstudio" / "jax")
    monkeypatch.setenv(COMPILE_CACHE_ENV, str(tmp_path / "elsewhere"))
    assert compile_cache_directory() == str(tmp_path / "elsewhere")
    monkeypatch.setenv(COMPILE_CACHE_ENV, "off")
    assert compile_cache_directory() is None


def _noisy(cliques: list[tuple[int, ...]]) -> list[Measurement]:
    rng = np.random.default_rng(5)
    first = rng.integers(0, 2, 3000)
    second = (first + rng.integers(0, 2, 3000)) % 3
    third = (second + rng.integers(0, 2, 3000)) % 4
    fourth = (third > 1).astype(int) ^ (rng.random(3000) < 0.2)
    cells = np.column_stack([first, second, third, fourth])
    return [Measurement(c, marginal(cells, SHAPE, c) + rng.normal(0, 20, marginal(cells, SHAPE, c).shape), 20.0) for c in cliques]


def _problem(measurements: list[Measurement]):
    mbi = private_pgm()
    domain = mbi.Domain(names(SHAPE), SHAPE)
    linear = [mbi.LinearMeasurement(m.noisy, m.clique, stddev=m.stddev) for m in measurements]
    return domain, mbi.marginal_loss.from_linear_measurements(linear, domain), noisy_total(measurements)


def _steps_side_by_side(warm: bool):
    """The library's steps and ours from the same start, with a step size 50 times the library's first, so that the
    line search refuses some steps: yields (library's state, our state, refused) after each step."""
    pytest.importorskip("mbi")
    import dataclasses

    import jax

    mbi = private_pgm()
    measurements = _noisy(CLIQUES)
    warm_start = estimate(measurements[:5], SHAPE, iterations=100) if warm else None
    domain, loss_fn, total = _problem(measurements)
    loss_fn = dataclasses.replace(loss_fn, lipschitz=loss_fn.lipschitz / 50)
    library, ours = mbi.estimation.MirrorDescent(), mirror_descent()()
    theirs = library._init(domain, loss_fn, total, warm_start=warm_start)
    mine = ours._init(domain, loss_fn, total, warm_start=warm_start)
    library_step = jax.jit(lambda state: library._step(state, loss_fn, total))
    our_step = jax.jit(lambda state: ours._step(state, loss_fn, total))
    mine = our_step(mine)  # our first step evaluates the start
    for _ in range(40):
        before = float(mine.alpha)
        theirs, mine = library_step(theirs), our_step(mine)
        yield theirs, mine, float(mine.alpha) < before, ours, total


@pytest.mark.parametrize("warm", [False, True])
def test_each_of_our_steps_is_the_library_s_one_step_later_accepted_or_refused(warm):
    refused = 0
    for theirs, mine, was_refused, _ours, _total in _steps_side_by_side(warm):
        refused += was_refused
        assert float(mine.alpha) == pytest.approx(float(theirs.alpha), rel=1e-12)
        for clique in mine.potentials.cliques:
            np.testing.assert_allclose(mine.potentials[clique].values, theirs.potentials[clique].values, atol=1e-9)
    assert refused >= 2


def _assert_the_model_is_its_potentials_own(model):
    from mbi import marginal_oracles

    library = marginal_oracles.message_passing_hugin(model.potentials, float(model.total))
    for clique in model.potentials.cliques:
        np.testing.assert_allclose(model.marginals[clique].values, library[clique].values, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.beliefs.project(clique).values, library[clique].values, rtol=1e-9, atol=1e-9)


def test_the_model_after_a_refused_step_is_its_accepted_potentials_own():
    for _theirs, mine, was_refused, ours, total in _steps_side_by_side(warm=False):
        if was_refused:
            _assert_the_model_is_its_potentials_own(ours._finalize(mine, total))
            return
    raise AssertionError("no step was refused")


def test_the_fitted_model_s_marginals_and_node_beliefs_are_its_potentials_own_even_without_a_step():
    fitted = estimate(_noisy(CLIQUES), SHAPE, iterations=150)
    _assert_the_model_is_its_potentials_own(fitted)
    assert any(len(node) == 3 for node in fitted.beliefs.cliques)
    unfitted = estimate(_noisy(CLIQUES), SHAPE, iterations=0)
    _assert_the_model_is_its_potentials_own(unfitted)
    assert np.isclose(float(unfitted.marginals[(0, 1)].values.sum()), float(unfitted.total))


def _blocks(fit, **options) -> int:
    """How many blocks of the library's 50 steps ``fit`` runs (its report comes after each)."""
    blocks = []
    fit(callback_fn=lambda _marginals: blocks.append(1), **options)
    return len(blocks)


@pytest.mark.parametrize("tol", [None, 1e-3, 1e-2, 1.0])
def test_our_fit_stops_where_the_library_s_convergence_test_stops_it(tol):
    import functools

    mbi = private_pgm()
    measurements = _noisy(CLIQUES)
    domain, _loss, total = _problem(measurements)
    linear = [mbi.LinearMeasurement(m.noisy, m.clique, stddev=m.stddev) for m in measurements]
    library = functools.partial(mbi.estimation.MirrorDescent().estimate, domain, linear, total, iters=500, tol=tol)
    ours = functools.partial(mirror_descent()().estimate, domain, linear, total, iters=500, tol=tol)
    blocks = _blocks(ours)
    assert blocks == _blocks(library)
    if tol is None:
        assert blocks == 10
    if tol == 1.0:
        assert blocks < 10


def test_a_warm_start_is_left_whole_by_the_fit_that_starts_from_it():
    measurements = _noisy(CLIQUES)
    earlier = estimate(measurements[:5], SHAPE, iterations=100)
    kept = {clique: np.array(earlier.potentials[clique].values) for clique in earlier.potentials.cliques}
    estimate(measurements, SHAPE, iterations=100, warm_start=earlier)
    for clique, values in kept.items():
        np.testing.assert_array_equal(np.asarray(earlier.potentials[clique].values), values)


def test_a_fit_compiles_one_program_whatever_its_tables_shapes(caplog):
    import logging

    import jax

    from dpcore.synthetic.model import fast_compile_options

    fast_compile_options()
    shape = (7, 5, 3, 6)  # shapes no other test fits
    rng = np.random.default_rng(2)
    cells = np.column_stack([rng.integers(0, size, 500) for size in shape])
    cliques = [(0,), (1,), (2,), (3,), (0, 1), (1, 2), (2, 3)]
    measurements = [
        Measurement(c, marginal(cells, shape, c) + rng.normal(0, 5, marginal(cells, shape, c).shape), 5.0) for c in cliques
    ]
    with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
        estimate(measurements, shape, iterations=100)
    compiled = [record.getMessage() for record in caplog.records if "Finished XLA compilation" in record.getMessage()]
    assert len(compiled) <= 1 and all("_multi_step" in message for message in compiled), compiled  # 0: compiled before
