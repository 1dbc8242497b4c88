"""Boosting's paid preliminaries: a noisy row count for the sizes, DP quantiles for the structure."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.mechanisms import record_mechanism_calls
from dpcore.mechanisms.quantiles import _levels
from dpcore.models import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models._boosting.structures import Structures
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
    # The last exponential calls pick each round's first level, one call of one selection per round.
    exponential = [c for c in recorded.calls if c.mechanism == "exponential"]
    selections, picks = exponential[: -model._rounds], exponential[-model._rounds :]
    nodes = [len(level) for level in _levels(len(QUANTILE_PROBABILITIES))] * (len(selections) // 3)
    quantiles = sum(c.epsilon * c.query.shape[0] / k for c, k in zip(selections, nodes))
    size = [c.epsilon for c in recorded.calls if c.mechanism == "laplace" and c.query.size == 1]
    assert size == [pytest.approx(1.3 * model.size_share)]
    assert quantiles == pytest.approx(1.3 * model.quantile_share)
    assert all(c.query.shape == (3,) for c in picks)
    picked = sum(c.epsilon for c in picks)
    assert picked == pytest.approx(model._select_share * (1.3 - size[0] - quantiles))
    assert rounds_spent + size[0] + quantiles + picked == pytest.approx(1.3)
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


def _structures(levels, rounds=40, depth=3, multiway=16, weighting=0.0, knots=None, seed=0):
    """Structures not drawn yet (for tests that learn between rounds)."""
    levels = np.asarray(levels)
    knots = np.tile([0.0, 1.0], (levels.size, 1)) if knots is None else knots
    return Structures(np.random.default_rng(seed), levels, knots, rounds, depth, multiway, weighting)


def drawn(levels, rounds=40, depth=3, **options):
    """Every round's structure drawn, learning nothing between rounds."""
    structures = _structures(levels, rounds, depth, **options)
    for r in range(rounds):
        structures.draw(r)
    return structures


def test_small_categorical_features_split_one_branch_per_category_within_the_leaf_budget():
    structures = drawn([3, 5, 0, 40], rounds=60, depth=4)
    branches, features = structures.branches, structures.features
    assert np.prod(branches, axis=1).max() <= 16
    wide = branches > 2
    assert set(np.unique(features[wide])) <= {0, 1}  # 40 categories: over the cap, a random subset
    np.testing.assert_array_equal(branches[wide], np.array([3, 5])[features[wide]])
    for r in range(60):  # a feature split one branch per category is not split again in the same tree
        split = features[r][wide[r]]
        assert len(split) == len(set(split))


def test_feature_draws_follow_the_released_steps_once_every_feature_was_split_on():
    """Feature 1's branches get steps far apart, the others' none: with full weighting it takes almost every level."""
    structures = _structures([0, 0, 0, 0], rounds=30, depth=2, weighting=1.0)
    drawn = []
    for r in range(30):
        structures.draw(r)
        features = structures.features[r]
        drawn.append(features.copy())
        steps = np.zeros((4, 1))
        position = int(np.flatnonzero(features == 1)[0]) if 1 in features else None
        if position is not None:
            steps[:, 0] = np.where((np.arange(4) >> position) & 1, 0.2, -0.2)
        structures.learn(r, steps + np.random.default_rng(r).normal(0, 1e-3, (4, 1)), np.full(4, 100.0))
    first, later = np.array(drawn[:2]), np.array(drawn[10:])
    assert set(first.ravel()) == {0, 1, 2, 3}  # the first cycle covers every feature before any weighting
    assert np.mean(later == 1) > 0.45  # one slot in two (every tree takes feature 1 once)


def test_a_share_of_thresholds_lies_between_the_quantile_knots():
    knots = np.tile([0.0, 0.45, 0.47, 0.49, 0.5, 0.51, 0.53, 0.55, 1.0], (2, 1))
    structures = drawn([0, 0], rounds=400, depth=2, knots=knots)
    inside = (structures.thresholds > 0.45) & (structures.thresholds < 0.55)
    # 30 % drawn in rank space (6 of the 8 gaps lie in [0.45, 0.55]) plus 70 % × 10 % uniform in [0, 1].
    assert 0.25 < inside.mean() < 0.36
    assert structures.thresholds.min() >= 0.0 and structures.thresholds.max() <= 1.0


def test_a_thin_leaf_divides_by_the_count_floor_not_by_its_noisy_count():
    rng = np.random.default_rng(0)
    X, y = rng.random((3000, 3)), rng.random(3000)
    floored = DPBoostingRegressor(epsilon=1.0, n_rounds=10, max_depth=6, random_state=0).fit(X, y)
    unfloored = DPBoostingRegressor(epsilon=1.0, n_rounds=10, max_depth=6, count_floor=0.0, random_state=0).fit(X, y)
    # ~47 records a leaf against a count noise of scale ~70: divided by a noisy count, many steps run to
    # the clip; divided by at least the floor, none does.
    step_clip = floored.learning_rate * floored._clip
    assert np.mean(np.isclose(np.abs(unfloored.leaf_values_), step_clip)) > 0.1
    assert np.abs(floored.leaf_values_).max() < 0.7 * step_clip
    assert np.median(np.abs(floored.leaf_values_)) < 0.5 * np.median(np.abs(unfloored.leaf_values_))


def test_multiclass_trees_get_depth_four_only_when_the_table_is_large_for_its_epsilon():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (10_000, 4)) / 2
    y = rng.integers(0, 5, 10_000)
    levels = {i: 3 for i in range(4)}
    depth = {
        eps: DPBoostingClassifier(epsilon=eps, n_rounds=1, classes=list(range(5)), categorical_levels=levels, random_state=0)
        .fit(X, y)
        ._depth
        for eps in (1.0, 4.0)
    }
    assert depth == {1.0: 3, 4.0: 4}


def test_rounds_as_records_name_a_branch_per_category():
    X = np.random.default_rng(0).integers(0, 3, (800, 2)) / 2
    model = DPBoostingClassifier(epsilon=2.0, classes=[0, 1], categorical_levels={0: 3, 1: 3}, random_state=0)
    records = model.fit(X, (X[:, 0] > 0.4).astype(int)).rounds_as_records(["a", "b"])
    levels = [level for record in records for level in record["levels"]]
    assert {"feature": "a", "branch_per_category": 3, "picked": True} in levels  # column a decides the label
    assert all(set(level) <= {"feature", "branch_per_category", "categories_left", "threshold", "picked"} for level in levels)
    assert all(
        record["levels"][0]["picked"] and not any("picked" in level for level in record["levels"][1:]) for record in records
    )


def test_a_leaf_step_never_divides_by_a_bare_noisy_count():
    X, y = np.random.default_rng(0).random((200, 2)), np.zeros(200)
    with pytest.raises(ValueError, match="cannot both be 0"):
        DPBoostingRegressor(min_leaf_count=0.0, count_floor=0.0).fit(X, y)


def test_weighted_draws_fall_back_to_uniform_when_no_step_moved():
    structures = _structures([0, 0, 0], rounds=40, depth=2, weighting=1.0)
    for r in range(40):
        structures.draw(r)  # full weighting with no effect anywhere: the weights are all 0, and the draw uniform
        structures.learn(r, np.zeros((4, 1)), np.full(4, 50.0))
    later = structures.features[2:].ravel()
    assert np.all(np.bincount(later, minlength=3) > len(later) / 6)  # every feature drawn, none left out


def test_first_level_picks_take_more_of_a_small_tables_rounds_and_none_for_multiclass_or_a_large_regression():
    rng = np.random.default_rng(0)
    X, y = rng.random((400, 3)), rng.integers(0, 3, 400)

    def fit(**options):
        return DPBoostingClassifier(random_state=0, **options).fit(X, y % 2 if options.get("classes") == [0, 1] else y)

    small = fit(classes=[0, 1])  # 400 rows at ε = 1: 7 of the 40 rounds
    assert small._select_share == pytest.approx(0.35 * (1 - small._rounds / 40))
    assert small._select_share > 0.2
    assert fit(classes=[0, 1], n_rounds=40, max_depth=6, size_share=0.0)._select_share == pytest.approx(0.2)
    regressor = DPBoostingRegressor(random_state=0).fit(X, X[:, 0])
    assert regressor._select_share == pytest.approx(0.35 * (1 - regressor._rounds / 40))
    assert DPBoostingRegressor(size_share=0.0, random_state=0).fit(X, X[:, 0])._select_share == 0.0  # a large table's regressor
    # The rounds a fit really runs set the share, whoever chose them; one column or one class leaves nothing to pick.
    assert fit(classes=[0, 1], n_rounds=10)._select_share == pytest.approx(0.35 * (1 - 10 / 40))
    assert fit(classes=[0, 1], n_rounds=200)._select_share == pytest.approx(0.2)
    assert DPBoostingRegressor(n_rounds=6, max_depth=3, random_state=0).fit(X, X[:, 0])._select_share == pytest.approx(
        0.35 * 34 / 40
    )
    assert DPBoostingClassifier(classes=[0, 1], random_state=0).fit(X[:, :1], y % 2)._select_share == 0.0
    assert DPBoostingClassifier(classes=[0], random_state=0).fit(X, np.zeros(400, dtype=int))._select_share == 0.0
    assert fit(classes=[0, 1, 2])._select_share == 0.0
    assert fit(classes=[0, 1], delta=1e-5)._select_share == 0.0
    assert fit(classes=[0, 1, 2], select_share=0.4)._select_share == 0.4
    for wrong in (1.0, -0.1, "most"):
        with pytest.raises(ValueError, match="select_share"):
            fit(classes=[0, 1], select_share=wrong)


def test_the_first_level_pick_finds_the_one_column_that_decides_the_label():
    """Twelve noise columns and one that decides the label: the picks return to it, random draws would not.

    Over five seeds: picked a third of the time (five-seed means 0.28-0.41 over 30 seeds), drawn 1/13 (at most 0.115).
    """
    rng = np.random.default_rng(1)
    X = rng.random((5000, 13))
    y = (X[:, 7] > 0.5).astype(int)

    def share(**options):
        return np.mean(
            [
                np.mean(
                    DPBoostingClassifier(epsilon=1.0, classes=[0, 1], random_state=seed, **options).fit(X, y).features_[:, 0] == 7
                )
                for seed in range(5)
            ]
        )

    assert share() > 0.2
    assert share(select_share=0.0) < 0.15
