"""DP trees fitted through the backend's rows: batching and row order change nothing, jobs equal plain numpy."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone

import dpcore.models._splitting as split
from dpcore.backends import LocalRows, RowBatch
from dpcore.mechanisms import keyed
from dpcore.models import (
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
)
from dpcore.models._data_range import QUANTILE_GRID, QuantileHistogram
from dpcore.models._forest import DisjointParts, Subsample
from dpcore.models._tree_rows import (
    CandidateHistogram,
    GridHistogram,
    LeafHistogram,
    LevelOccupancy,
    PairHistogram,
    RootCounts,
    TreeRowMap,
    TreeSoFar,
)

REGRESSORS = [
    DPRegressionTree(max_depth=4, min_samples_split=5, min_samples_leaf=2, bounds=(-1.0, 2.0), target_bounds=(0.0, 3.0)),
    DPRegressionTree(max_depth=3, leaf="median", min_samples_split=5, min_samples_leaf=2),
    DPPartitionedForest(n_estimators=3, max_depth=3, min_samples_split=5, min_samples_leaf=2),
    DPPartitionedForest(n_estimators=2, max_depth=2, leaf="median", count_noise="geometric"),
    DPExtraTreesRegressor(n_estimators=3, max_depth=3, min_samples_split=5),
    DPExtraTreesRegressor(n_estimators=3, max_depth=3, sampling="subsample", max_samples=0.6, range_share=0.0),
]
CLASSIFIERS = [
    DPRandomForestClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2]),
    DPRandomForestClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2], sampling="subsample", max_samples=0.5),
    DPExtraTreesClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2], min_samples_split=5),
]


def _data(classifier: bool, n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    y = rng.integers(0, 3, n) if classifier else np.clip(X[:, 0] + 0.1 * rng.standard_normal(n), 0, 1)
    X[rng.random(X.shape) < 0.02] = np.nan
    return X, y


def _fitted_arrays(model) -> list[np.ndarray]:
    trees = model.trees_ if hasattr(model, "trees_") else [model.tree_]
    arrays = [getattr(t, name) for t in trees for name in t.__dataclass_fields__]
    if getattr(model, "data_range_", None) is not None:
        arrays.append(model.data_range_)
    return arrays


def _assert_same_model(a, b):
    left, right = _fitted_arrays(a), _fitted_arrays(b)
    assert len(left) == len(right)
    for x, y in zip(left, right):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("model", REGRESSORS + CLASSIFIERS, ids=lambda m: type(m).__name__)
def test_small_batches_and_another_row_order_give_the_same_model(model):
    classifier = hasattr(model, "classes")
    X, y = _data(classifier)
    whole = clone(model).set_params(random_state=4).fit(X, y)
    batched = clone(model).set_params(random_state=4).fit_rows(LocalRows(X, y, batch_rows=7))
    _assert_same_model(whole, batched)
    # Memberships are keyed by the row keys, sums are exact: the order rows are read in does not matter.
    order = np.random.default_rng(1).permutation(len(y))
    shuffled = clone(model).set_params(random_state=4).fit_rows(LocalRows(X[order], y[order], key=order, batch_rows=50))
    _assert_same_model(whole, shuffled)


def test_rows_must_declare_a_classifiers_classes_and_undeclared_labels_are_dropped():
    X, y = _data(True)
    with pytest.raises(ValueError, match="declare the classes"):
        DPRandomForestClassifier(random_state=0).fit_rows(LocalRows(X, y))
    model = DPExtraTreesClassifier(n_estimators=2, max_depth=2, classes=[0, 1], random_state=0)
    labelled = clone(model).fit_rows(LocalRows(X, y))
    known = y < 2
    _assert_same_model(labelled, clone(model).fit_rows(LocalRows(X[known], y[known], key=np.flatnonzero(known))))
    _assert_same_model(labelled, clone(model).fit(X, y))
    assert list(labelled.classes_) == [0, 1]


def _tree_so_far(rng: np.random.Generator, membership, grid: bool):
    """Roots 0 and 1; root 0 split on feature 2 into nodes 2 and 3; node 3 split on feature 0 into 4 and 5."""
    feature = np.array([2, -1, -1, 0, -1, -1])
    cut = np.array([20.0, 0, 0, 9.0, 0, 0]) if grid else np.array([0.5, 0, 0, 0.3, 0, 0])
    left = np.array([2, -1, -1, 4, -1, -1])  # right children: left + 1
    return TreeSoFar(membership, feature, cut, left)


def _numpy_nodes(X, roots, tree):
    node = roots.copy()
    for i in range(len(node)):
        while node[i] >= 0 and tree.feature[node[i]] >= 0:
            at = node[i]
            node[i] = tree.left[at] + (X[i, tree.feature[at]] > tree.cut[at])
    return node


def test_level_histograms_equal_a_direct_numpy_count():
    rng = np.random.default_rng(2)
    n, d, n_thresholds = 500, 3, 40
    unit = rng.random((n, d))
    batch = RowBatch(
        split.bin_features(unit, split.threshold_grid(n_thresholds)).astype(float),
        np.zeros(n, np.int64),
        np.arange(n, dtype=np.uint64),
    )
    membership = DisjointParts(keyed.new_key(rng), 2)
    roots = membership(batch.key)
    tree = _tree_so_far(rng, membership, grid=True)
    node = _numpy_nodes(batch.X, roots, tree)
    np.testing.assert_array_equal(tree.nodes(batch), node)
    splitting = np.array([1, 2, 5])  # nodes 4 and 3... are not splitting at this level
    local = np.full(6, -1)
    local[splitting] = np.arange(3)
    width = n_thresholds + 1

    codes = rng.integers(0, 3, n)
    got = GridHistogram(tree, local, 3, width, 3)(RowBatch(batch.X, codes, batch.key))
    q = np.rint(rng.random(n) * 2**14).astype(np.int64)
    got_regression = GridHistogram(tree, local, 3, width, 0)(RowBatch(batch.X, q, batch.key))
    expected = np.zeros((3, d, width, 3), np.int64)
    expected_regression = np.zeros((3, d, width, 3), np.int64)
    for i in range(n):
        if local[node[i]] < 0:
            continue
        for f in range(d):
            b = int(batch.X[i, f])
            expected[local[node[i]], f, b, codes[i]] += 1
            expected_regression[local[node[i]], f, b] += [1, q[i], q[i] * q[i]]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_regression, expected_regression)

    levels = rng.integers(0, 5, n)  # few occupied levels, on the 256-level grid
    level_batch = RowBatch(batch.X, levels, batch.key)
    occupancy = LevelOccupancy(tree, local, 3, split.TARGET_LEVELS)(level_batch)
    pair_key = split.occupied_pairs(occupancy)
    pair_of = np.full(3 * split.TARGET_LEVELS, -1)
    pair_of[pair_key] = np.arange(len(pair_key))
    pairs = PairHistogram(tree, local, pair_of, len(pair_key), split.TARGET_LEVELS, width)(level_batch)
    inside = local[node] >= 0
    np.testing.assert_allclose(
        split.sae_utility_pairs(pairs, pair_key, 3, n_thresholds),
        split.sae_utility_grid(batch.X[inside].astype(int), local[node[inside]], levels[inside], 3, n_thresholds),
    )
    assert occupancy.sum() == inside.sum() == pairs[0].sum()

    leaves = np.array([1, 2, 4, 5])
    leaf_pos = np.full(6, -1)
    leaf_pos[leaves] = np.arange(4)
    sums = LeafHistogram(tree, leaf_pos, 4, 0)(RowBatch(batch.X, q, batch.key))
    np.testing.assert_array_equal(sums, np.bincount(leaf_pos[node], weights=q, minlength=4).astype(np.int64))
    counts = LeafHistogram(tree, leaf_pos, 4, 3)(RowBatch(batch.X, codes, batch.key)).reshape(4, 3)
    np.testing.assert_array_equal(counts, np.stack([np.bincount(leaf_pos[node][codes == c], minlength=4) for c in range(3)], 1))
    np.testing.assert_array_equal(RootCounts(membership, 2)(batch), np.bincount(roots, minlength=2))


def test_candidate_histograms_equal_a_direct_numpy_count():
    rng = np.random.default_rng(3)
    n, d, k = 400, 3, 4
    X = rng.random((n, d))
    q = np.rint(rng.random(n) * 2**14).astype(np.int64)
    membership = Subsample(keyed.new_key(rng), tree=1, probability=0.7)
    tree = TreeSoFar(membership, np.array([1, -1, -1]), np.array([0.4, 0, 0]), np.array([1, -1, -1]))
    batch = RowBatch(X, q, np.arange(n, dtype=np.uint64))
    node = _numpy_nodes(X, membership(batch.key), tree)
    local = np.array([-1, 0, 1])
    features, thresholds = rng.integers(0, d, (2, k)), rng.random((2, k))
    got = CandidateHistogram(tree, local, features, thresholds, 0)(batch)
    left, totals = got[:, :k], got[:, k]
    for ell in range(2):
        mine = node == ell + 1
        np.testing.assert_array_equal(totals[ell], [mine.sum(), q[mine].sum(), (q[mine] ** 2).sum()])
        for c in range(k):
            go = mine & (X[:, features[ell, c]] <= thresholds[ell, c])
            np.testing.assert_array_equal(left[ell, c], [go.sum(), q[go].sum(), (q[go] ** 2).sum()])


def test_jobs_and_row_maps_survive_pickling():
    rng = np.random.default_rng(4)
    X, y = _data(True, n=50)
    batch = RowBatch(X, y, np.arange(50, dtype=np.uint64))
    row_map = TreeRowMap(np.zeros(4), np.ones(4), "classes", classes=np.array([0, 1]), n_thresholds=10)
    mapped = row_map(batch)
    assert set(np.unique(mapped.y)) <= {0, 1} and len(mapped) == (y < 2).sum()
    tree = _tree_so_far(rng, DisjointParts(keyed.new_key(rng), 2), grid=True)
    jobs = [row_map, GridHistogram(tree, np.arange(6), 6, 11, 2), QuantileHistogram(row_map.features)]
    for job, rows in zip(jobs, [batch, mapped, batch]):
        copy = pickle.loads(pickle.dumps(job))
        a, b = job(rows), copy(rows)
        if isinstance(a, RowBatch):
            a, b = a.X, b.X
        np.testing.assert_array_equal(a, b)
    assert QuantileHistogram(row_map.features)(batch).shape == (4, QUANTILE_GRID)


@pytest.mark.parametrize(
    "model", [REGRESSORS[0], REGRESSORS[1], REGRESSORS[4], CLASSIFIERS[0], CLASSIFIERS[2]], ids=lambda m: type(m).__name__
)
def test_levels_summed_in_several_passes_give_the_same_model(model, monkeypatch):
    import dpcore.models._tree as tree_module

    classifier = hasattr(model, "classes")
    X, y = _data(classifier)
    whole = clone(model).set_params(random_state=6).fit(X, y)
    monkeypatch.setattr(tree_module, "MAX_CELLS", 300)  # a few nodes (or pairs) per pass
    _assert_same_model(whole, clone(model).set_params(random_state=6).fit(X, y))
