"""Boosting's paid preliminaries: a noisy row count for the sizes, DP quantiles for the structure."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.mechanisms import record_mechanism_calls
from dpcore.mechanisms.quantiles import _levels
from dpcore.models import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models.boosting import QUANTILE_PROBABILITIES, sized_rounds_and_depth


def _wide_table(n=6000, seed=0):
    """Features crowded into a tenth of their declared range; a long-tailed target under a generous cap."""
    rng = np.random.default_rng(seed)
    X = 0.45 + rng.random((n, 3)) / 10
    y = np.clip(0.02 * np.exp(2.5 * (X[:, 0] - 0.45) / 0.1) * rng.lognormal(0, 0.3, n), 0, 1)
    return X, y


def test_every_call_of_the_default_fit_adds_up_to_epsilon():
    X, y = _wide_table(800)
    with record_mechanism_calls() as recorded:
        model = DPBoostingRegressor(epsilon=1.3, random_state=0).fit(X, y)
    rounds_spent = sum(c.epsilon for c in recorded.calls if c.mechanism == "laplace" and c.query.size > 1)
    # An exponential call holds one selection per column and interval (1, 2, 4 intervals at the three
    # levels of 7 quantiles), and a record is in one interval per column: it is charged once per column.
    selections = [c for c in recorded.calls if c.mechanism == "exponential"]
    nodes = [len(level) for level in _levels(len(QUANTILE_PROBABILITIES))] * (len(selections) // 3)
    quantiles = sum(c.epsilon * c.query.shape[0] / k for c, k in zip(selections, nodes))
    size = [c.epsilon for c in recorded.calls if c.mechanism == "laplace" and c.query.size == 1]
    assert size == [pytest.approx(1.3 * model.size_share)]
    assert quantiles == pytest.approx(1.3 * model.quantile_share)
    assert rounds_spent + size[0] + quantiles == pytest.approx(1.3)
    assert model.epsilon_spent_ == 1.3


def test_quantile_placed_thresholds_find_data_in_wide_bounds():
    X, y = _wide_table()
    X_test, y_test = _wide_table(2000, seed=1)
    placed = DPBoostingRegressor(epsilon=1.0, random_state=0).fit(X, y)
    uniform = DPBoostingRegressor(epsilon=1.0, quantile_share=0.0, random_state=0).fit(X, y)
    inside = (placed.thresholds_ > 0.44) & (placed.thresholds_ < 0.56)
    assert inside.mean() > 0.6  # uniform thresholds: 0.1
    mae = lambda m: np.abs(m.predict(X_test) - y_test).mean()  # noqa: E731
    assert mae(placed) < 0.9 * mae(uniform)


def test_sizes_shrink_for_small_tables_and_keep_large_table_defaults():
    assert sized_rounds_and_depth(350, 1.0, 40, 6) == (7, 3)
    assert sized_rounds_and_depth(350, 4.0, 80, 6) == (28, 4)
    assert sized_rounds_and_depth(1_400, 1.0, 40, 6) == (28, 4)
    assert sized_rounds_and_depth(30_000, 1.0, 40, 6) == (40, 6)
    assert sized_rounds_and_depth(6_500, 1.0, 40, 6) == (40, 6)
    assert sized_rounds_and_depth(18_576, 0.25, 40, 6) == (40, 5)  # California at ε = 0.25 keeps depth 5
    assert sized_rounds_and_depth(-20, 1.0, 40, 5) == (3, 1)  # a negative noisy count still gives a model


def test_small_table_classifier_uses_the_sized_defaults():
    rng = np.random.default_rng(0)
    X = rng.random((400, 5))
    y = (X[:, 0] > 0.5).astype(int)
    model = DPBoostingClassifier(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert model._rounds < 20 and model._depth <= 4  # large-table defaults: 40 rounds of depth 6
    assert model.score(X, y) > 0.75


def test_trivial_category_subsets_are_redrawn():
    X = np.random.default_rng(0).integers(0, 3, (500, 4)) / 2
    model = DPBoostingClassifier(epsilon=1.0, classes=[0, 1], categorical_levels={i: 3 for i in range(4)}, random_state=0)
    model.fit(X, (X[:, 0] > 0.4).astype(int))
    chosen = model.subsets_[:, :, :3].sum(axis=2)
    assert np.all((chosen > 0) & (chosen < 3))


def test_clipped_softmax_residuals_stay_within_the_multiclass_l1_sensitivity():
    from scipy.special import softmax

    rng = np.random.default_rng(0)
    for k, clip in ((3, 0.2), (5, 0.7), (5, 0.3), (8, 1.0)):
        scores = rng.normal(0, 4, (20_000, k))
        targets = np.eye(k)[rng.integers(0, k, 20_000)]
        residual = np.clip(targets - softmax(scores, axis=1), -clip, clip)
        assert np.abs(residual).sum(axis=1).max() <= min(2.0, clip + min(1.0, (k - 1) * clip)) + 1e-12
