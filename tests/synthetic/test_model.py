"""Private-PGM's set-up and fit: where JAX keeps the compiled programs, and the library's model whichever way it starts."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.synthetic.measure import Measurement, marginal
from dpcore.synthetic.model import COMPILE_CACHE_ENV, compile_cache_directory, estimate, names, noisy_total, private_pgm

SHAPE = (2, 3, 4)


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
    cells = np.column_stack([first, second, third])
    return [Measurement(c, marginal(cells, SHAPE, c) + rng.normal(0, 20, marginal(cells, SHAPE, c).shape), 20.0) for c in cliques]


def _library_fit(measurements: list[Measurement], warm_start=None):
    """Private-PGM's own mirror descent, start and end included: what ours must equal."""
    mbi = private_pgm()
    labels = names(SHAPE)
    linear = [mbi.LinearMeasurement(m.noisy, m.clique, stddev=m.stddev) for m in measurements]
    return mbi.estimation.MirrorDescent().estimate(
        mbi.Domain(labels, SHAPE), linear, known_total=noisy_total(measurements), iters=200, warm_start=warm_start
    )


@pytest.mark.parametrize("warm", [False, True])
def test_the_fit_is_the_library_s_own_from_scratch_and_warm_started(warm):
    pytest.importorskip("mbi")
    first = _noisy([(0,), (1,), (2,), (0, 1)])
    grown = first + _noisy([(1, 2)])
    ours_start = estimate(first, SHAPE, iterations=200) if warm else None
    library_start = _library_fit(first) if warm else None
    measurements = grown if warm else first
    ours = estimate(measurements, SHAPE, iterations=200, warm_start=ours_start)
    library = _library_fit(measurements, warm_start=library_start)
    assert ours.potentials.cliques == library.potentials.cliques
    for clique in library.potentials.cliques:
        np.testing.assert_allclose(ours.potentials[clique].values, library.potentials[clique].values, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(ours.marginals[clique].values, library.marginals[clique].values, rtol=1e-7, atol=1e-7)
