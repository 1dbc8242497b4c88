"""Boosting fitted through the backend interface: the same model whatever the batches, cache or backend."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from same_model import fitted_state
from scipy.special import softmax
from test_boosting_structures import drawn

from dpcore.backends import LocalRows, Rows
from dpcore.backends.rows import FIXED_SCALE
from dpcore.models import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models._boosting.rows import CandidateSums, RoundSums, TargetColumn, pick_sensitivity, residuals
from dpcore.models._boosting.structures import MULTICLASS, leaf_index


class Elsewhere(Rows):
    """Rows that are not in memory as far as the model can tell: every job and map crosses a pickle, as to Spark."""

    def __init__(self, local: LocalRows) -> None:
        self.local = local

    @property
    def n_features(self) -> int:
        return self.local.n_features

    def aggregate(self, job):
        return self.local.aggregate(pickle.loads(pickle.dumps(job)))

    def prepared(self, prepare):
        return Elsewhere(self.local.prepared(pickle.loads(pickle.dumps(prepare))))


def _table(n=300, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    X[:, 3] = rng.integers(0, 4, n) / 3  # a categorical feature with 4 declared levels
    X[rng.random((n, 4)) < 0.02] = np.nan
    y_reg = np.clip(X[:, 0] + 0.1 * rng.standard_normal(n), 0, 1)
    y_reg[5] = np.nan
    labels = np.array(["a", "b", "c", "d"])[:classes]
    y_clf = labels[(np.nan_to_num(X[:, 1]) * classes).astype(int).clip(0, classes - 1)].astype(object)
    y_clf[:4] = "undeclared"  # dropped before anything is counted
    return X, y_reg, y_clf, list(labels)


def _models(classes):
    binary = classes[:2]
    return [
        DPBoostingRegressor(epsilon=2.0, categorical_levels={3: 4}, random_state=3),
        DPBoostingRegressor(
            epsilon=1.0, n_rounds=5, max_depth=3, delta=1e-5, quantile_share=0.0, select_share=0.3, random_state=3
        ),
        DPBoostingClassifier(epsilon=2.0, classes=binary, categorical_levels={3: 4}, random_state=3),
        DPBoostingClassifier(epsilon=2.0, classes=classes, categorical_levels={3: 4}, random_state=3),
        DPBoostingClassifier(epsilon=1.0, n_rounds=6, max_depth=2, classes=classes, delta=1e-5, select_share=0.3, random_state=3),
        DPBoostingClassifier(epsilon=1.0, n_rounds=4, max_depth=2, classes=["a"], random_state=3),
    ]


def _data_for(model, X, y_reg, y_clf):
    if isinstance(model, DPBoostingRegressor):
        return X, y_reg
    return X, y_clf


@pytest.mark.parametrize("index", range(6))
def test_small_batches_fit_the_same_model_as_one_batch(index):
    X, y_reg, y_clf, classes = _table()
    model = _models(classes)[index]
    X, y = _data_for(model, X, y_reg, y_clf)
    one = model.__class__(**model.get_params()).fit_rows(LocalRows(X, y))
    many = model.__class__(**model.get_params()).fit_rows(LocalRows(X, y, batch_rows=7))
    assert fitted_state(one) == fitted_state(many)
    assert one.leaf_values_.any()


@pytest.mark.parametrize("index", range(6))
def test_running_scores_give_the_floats_the_recomputation_gives(index):
    """In memory the scores are carried from round to round; elsewhere each round recomputes them: same bytes."""
    X, y_reg, y_clf, classes = _table()
    model = _models(classes)[index]
    X, y = _data_for(model, X, y_reg, y_clf)
    carried = model.__class__(**model.get_params()).fit_rows(LocalRows(X, y, batch_rows=50))
    recomputed = model.__class__(**model.get_params()).fit_rows(Elsewhere(LocalRows(X, y, batch_rows=50)))
    assert fitted_state(carried) == fitted_state(recomputed)


def test_fit_is_fit_rows_on_the_arrays():
    X, y_reg, y_clf, classes = _table()
    y_reg = np.nan_to_num(y_reg, nan=0.5)  # fit refuses a missing target; rows map it to the middle
    for model in _models(classes):
        X_, y = _data_for(model, X, y_reg, y_clf)
        a = model.__class__(**model.get_params()).fit(X_, y)
        b = model.__class__(**model.get_params()).fit_rows(LocalRows(X_, y))
        assert fitted_state(a) == fitted_state(b)
        np.testing.assert_array_equal(a.predict(X_), b.predict(X_))


def test_rows_need_declared_classes():
    X, _, y_clf, _ = _table()
    with pytest.raises(ValueError, match="declared classes"):
        DPBoostingClassifier().fit_rows(LocalRows(X, y_clf))


def test_an_empty_table_still_fits():
    """Every job gets (and sums) an empty batch: a Spark partition can be empty too."""
    model = DPBoostingRegressor(epsilon=1.0, random_state=0).fit_rows(LocalRows(np.zeros((0, 3)), np.zeros(0)))
    assert model.predict(np.full((2, 3), 0.5)).shape == (2,)
    empty = LocalRows(np.zeros((0, 4)), np.array([], dtype=object))
    model = DPBoostingClassifier(epsilon=1.0, classes=["a", "b", "c"], categorical_levels={3: 4}, random_state=0).fit_rows(empty)
    assert model.predict_proba(np.full((2, 4), 0.5)).shape == (2, 3)


def test_target_column_gathers_the_rounded_targets_for_audits():
    y = np.array([0.5, 1.0, 0.25, 0.1])
    values = np.asarray(TargetColumn(LocalRows(np.zeros((4, 1)), y, batch_rows=3)))
    np.testing.assert_array_equal(values, np.sort(np.rint(y * FIXED_SCALE) / FIXED_SCALE))


def test_rounded_multiclass_residuals_keep_the_l1_bound_exactly():
    """Rounded toward zero, no component grows: the declared L1 sensitivity holds with no tolerance."""
    rng = np.random.default_rng(0)
    for k, clip in ((3, 0.2), (5, 0.7), (5, 0.3), (8, 1.0), (4, 0.333)):
        scores = rng.normal(0, 4, (20_000, k))
        codes = rng.integers(0, k, 20_000)
        clipped = np.clip(residuals(MULTICLASS, codes, scores, k), -clip, clip)
        rounded = np.trunc(clipped / clip * FIXED_SCALE)
        bound = min(2.0, clip + min(1.0, (k - 1) * clip))
        assert (np.abs(rounded).sum(axis=1) / FIXED_SCALE * clip).max() <= bound
        assert np.all(np.abs(rounded) <= FIXED_SCALE)


def test_round_job_recomputes_scores_in_round_order():
    """Round r's job adds the earlier steps one round at a time: the driver's running sum, float for float."""
    rng = np.random.default_rng(1)
    X = rng.random((500, 3))
    levels = np.zeros(3, dtype=np.int64)
    drawn_ = drawn(levels, 5, 2, multiway=0, seed=1)
    features, thresholds, subsets, branches = drawn_.features, drawn_.thresholds, drawn_.subsets, drawn_.branches
    steps = rng.normal(0, 0.1, (4, 4, 1))
    leaves = leaf_index(X, features, thresholds, subsets, levels, branches)
    running = np.full((500, 1), 0.3)
    for r in range(4):
        running += steps[r][leaves[:, r]]
    job = RoundSums(
        "regression",
        1,
        clip=10.0,
        unit=10.0,
        n_leaves=4,
        initial=np.array([0.3]),
        features=features,
        thresholds=thresholds,
        subsets=subsets,
        levels=levels,
        branches=branches,
        leaf_values=steps,
    )
    scores, leaf = job._scores_and_leaf(LocalRows(X, np.zeros(500)).batches()[0])
    assert scores.tobytes() == running.tobytes()
    np.testing.assert_array_equal(leaf, leaves[:, 4])


def test_leaf_index_matches_a_record_by_record_walk():
    """Two-way levels add 1 for left, a branch per category adds its code, each times the branches below it."""
    rng = np.random.default_rng(2)
    levels = np.array([0, 3, 0, 5, 9])
    X = rng.random((200, 5))
    for f in (1, 3, 4):
        X[:, f] = rng.integers(0, levels[f], 200) / (levels[f] - 1)
    drawn_ = drawn(levels, 9, 3, multiway=5, knots=np.tile([0.2, 0.8], (5, 1)), seed=2)
    features, thresholds, subsets, branches = drawn_.features, drawn_.thresholds, drawn_.subsets, drawn_.branches
    assert set(np.unique(branches)) == {1, 2, 3, 5}  # the nine-category feature always splits two ways
    assert np.prod(branches, axis=1).max() <= 8
    leaves = leaf_index(X, features, thresholds, subsets, levels, branches)
    for i in range(0, 200, 17):
        for r in range(9):
            leaf, stride = 0, 1
            for j, f in enumerate(features[r]):
                code = int(round(X[i, f] * (levels[f] - 1))) if levels[f] else 0
                if branches[r, j] > 2:
                    digit = code
                elif levels[f]:
                    digit = int(subsets[r, j, code])
                else:
                    digit = int(X[i, f] <= thresholds[r, j])
                leaf += digit * stride if branches[r, j] > 1 else 0
                stride *= int(branches[r, j])
            assert leaves[i, r] == leaf


def test_softmax_residuals_sum_like_before():
    """The residual function is the same y − softmax(F) the in-memory fit used."""
    scores = np.array([[0.0, 1.0, -1.0]])
    np.testing.assert_allclose(residuals(MULTICLASS, np.array([1]), scores, 3), np.eye(3)[[1]] - softmax(scores, axis=1))


def _candidate_job(n, seed, rounds=3):
    """Two numeric and two categorical columns, a binary label, the candidate splits and their job before round ``rounds``."""
    rng = np.random.default_rng(seed)
    levels = np.array([0, 3, 0, 4])
    X = rng.random((n, 4))
    X[:, 1], X[:, 3] = rng.integers(0, 3, n) / 2, rng.integers(0, 4, n) / 3
    y = rng.integers(0, 2, n)
    structures = drawn(levels, rounds + 1, 2, multiway=5, seed=4)
    steps = np.random.default_rng(4).normal(0, 0.2, (rounds, 4, 1))
    thresholds, subsets, branches = candidates = structures.candidates()
    return (
        X,
        y,
        levels,
        candidates,
        CandidateSums(
            "binary",
            2,
            clip=0.7,
            unit=0.7,
            n_leaves=4,
            initial=np.array([0.0]),
            levels=levels,
            leaf_values=steps,
            **structures.up_to(rounds),
            candidate_thresholds=thresholds,
            candidate_subsets=subsets,
            candidate_branches=branches,
        ),
    )


def test_candidate_sums_are_each_candidate_splits_branch_sums():
    """Every feature's candidate split, its branches' clipped residual sums: a direct walk gives the same numbers."""
    X, y, levels, (thresholds, subsets, branches), job = _candidate_job(400, 3)
    sums = job.branch_sums(LocalRows(X, y, batch_rows=64).aggregate(job)) / FIXED_SCALE * 0.7
    assert sums.shape == (4, 4, 1)
    leaves = leaf_index(X, job.features, job.thresholds, job.subsets, levels, job.branches)
    scores = job.leaf_values[np.arange(3), leaves].sum(axis=1)
    clipped = np.clip(residuals("binary", y, scores, 2), -0.7, 0.7)
    for f in range(4):
        if levels[f] and branches[f] > 2:
            digit = np.rint(X[:, f] * (levels[f] - 1)).astype(int)
        elif levels[f]:
            digit = subsets[f][np.rint(X[:, f] * (levels[f] - 1)).astype(int)].astype(int)
        else:
            digit = (X[:, f] <= thresholds[f]).astype(int)
        expected = np.bincount(digit, clipped[:, 0], 4)
        np.testing.assert_allclose(sums[f, :, 0], expected, atol=400 * 0.7 / FIXED_SCALE)
    assert (branches == [2, 3, 2, 4]).all()


def test_one_record_moves_every_candidates_utility_by_at_most_its_residual_bound():
    """The pick's sensitivity: a record adds its clipped residual to one branch of each candidate."""
    X, y, _, _, job = _candidate_job(301, 5)
    utility = lambda n: np.abs(job.branch_sums(LocalRows(X[:n], y[:n]).aggregate(job))).sum(axis=(1, 2))  # noqa: E731
    assert np.abs(utility(301) - utility(300)).max() <= pick_sensitivity(0.7, 0.7) == FIXED_SCALE  # exact integers


def test_the_pick_sensitivity_never_rounds_below_a_records_reach():
    """Multiclass: the L1 bound over the clip is no whole number; its ceiling on the grid still covers every record."""
    rng = np.random.default_rng(6)
    for k, clip in ((3, 0.2), (5, 0.7), (4, 0.333)):
        l1 = min(2.0, clip + min(1.0, (k - 1) * clip))
        scores, codes = rng.normal(0, 4, (20_000, k)), rng.integers(0, k, 20_000)
        rounded = np.trunc(np.clip(residuals(MULTICLASS, codes, scores, k), -clip, clip) / clip * FIXED_SCALE)
        assert np.abs(rounded).sum(axis=1).max() <= pick_sensitivity(l1, clip)
