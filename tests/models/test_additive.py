"""The DP additive model: its budget adds up, its noise does not depend on the data, and it learns additive signals.

The neighbouring-datasets audits (replayed calls within sensitivity, and the whole-model test with
its power check) are in ``test_privacy.py`` with every other model's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from dpcore.backends import LocalRows
from dpcore.mechanisms import record_mechanism_calls
from dpcore.models import DPAdditiveClassifier, DPAdditiveRegressor

NOISE = {"laplace", "geometric"}


def _table(n: int, seed: int, classifier: bool):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    X[:, 3] = rng.integers(0, 5, n)  # a categorical column of 5 declared levels
    logit = 2.0 * np.sin(2 * np.pi * X[:, 0]) + 1.5 * (X[:, 1] - 0.5) + 1.0 * (X[:, 3] == 2)
    if classifier:
        return X, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, np.clip(10 + 2 * logit + rng.standard_normal(n), 0, 30)


def _model(classifier: bool, **params):
    domain = {"bounds": ([0, 0, 0, 0], [1, 1, 1, 4]), "categorical_levels": {3: 5}}
    if classifier:
        return DPAdditiveClassifier(classes=[0, 1], **domain, **params)
    return DPAdditiveRegressor(target_bounds=(0, 30), **domain, **params)


def _calls(model, X, y):
    with record_mechanism_calls() as recorder:
        clone(model).set_params(random_state=3).fit(X, y)
    return recorder.calls


@pytest.mark.parametrize("classifier", [False, True])
@pytest.mark.parametrize("quantile_share", [0.0, 0.15])
def test_the_noise_calls_spend_exactly_epsilon(classifier, quantile_share):
    """Quantiles, one count histogram per feature, one sum per round: their ε add up to the model's."""
    X, y = _table(500, 0, classifier)
    model = _model(classifier, epsilon=1.7, quantile_share=quantile_share, n_passes=2)
    calls = _calls(model, X, y)
    noise = [c for c in calls if c.mechanism in NOISE]
    d = X.shape[1]
    assert len(noise) == d + 2 * d  # the counts of every feature, then a round per feature and pass
    assert math.isclose(sum(c.epsilon for c in noise), (1 - quantile_share) * 1.7)
    selections = [c for c in calls if c.mechanism not in NOISE]
    assert all(c.mechanism == "exponential" for c in selections)
    assert bool(selections) == bool(quantile_share)
    assert model.fit(X, y).epsilon_spent_ == 1.7


@pytest.mark.parametrize("classifier", [False, True])
def test_the_calls_and_their_sensitivities_do_not_depend_on_the_data(classifier):
    """Two unrelated tables of different sizes: the same mechanisms at the same ε with the same sensitivity.

    The regressor's clip is fixed here: with ``clip="auto"`` it follows the target's *released* DP
    quantiles (post-processing), which differ between the tables' noisy draws.
    """
    model = _model(classifier, clip=0.2) if not classifier else _model(classifier)
    first = _calls(model, *_table(300, 1, classifier))
    second = _calls(model, *_table(1_200, 2, classifier))
    assert [(c.mechanism, c.epsilon, c.sensitivity) for c in first] == [(c.mechanism, c.epsilon, c.sensitivity) for c in second]


def test_a_record_moves_one_bin_per_feature_by_at_most_the_clip():
    """The round's query, recomputed with one extreme record added, differs by at most the clip in L1."""
    X, y = _table(400, 4, classifier=False)
    model = _model(False, clip=0.2, quantile_share=0.0, n_passes=1)
    calls = _calls(model, X, y)
    with record_mechanism_calls(replay=calls) as recorder:
        clone(model).set_params(random_state=3).fit(np.vstack([X, [[0.01, 0.99, 0.5, 4]]]), np.append(y, 30.0))
    for a, b in zip(calls, recorder.calls):
        assert np.abs(a.query - b.query).sum() <= a.sensitivity + 1e-9


BAD_RECORDS = {
    "missing": [np.nan, np.nan, np.nan, np.nan],
    "infinite": [np.inf, -np.inf, np.inf, -np.inf],
    "outside the bounds": [7.0, -3.0, 1e12, 9.0],
    "unseen category": [0.5, 0.5, 0.5, -1.0],
}


@pytest.mark.parametrize("record", list(BAD_RECORDS))
@pytest.mark.parametrize("task", ["regression", "binary", "three classes"])
def test_a_record_with_bad_values_moves_every_query_by_at_most_its_sensitivity(record, task):
    """Privacy test 6 on the defaults (DP quantiles, counts, rounds): NaN, ±inf, out-of-bounds values
    and an undeclared category are mapped into one public bin of each feature before anything is summed."""
    classifier = task != "regression"
    X, y = _table(400, 5, classifier)
    model = _model(classifier)
    if task == "three classes":
        y = np.random.default_rng(5).integers(0, 3, len(y))
        model = model.set_params(classes=[0, 1, 2], n_passes=2)
    calls = _calls(model, X, y)
    extra_y = 1 if classifier else 30.0
    with record_mechanism_calls(replay=calls) as recorder:
        clone(model).set_params(random_state=3).fit(np.vstack([X, [BAD_RECORDS[record]]]), np.append(y, extra_y))
    assert len(recorder.calls) == len(calls)
    for a, b in zip(calls, recorder.calls):
        assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
        if a.mechanism == "exponential":  # utilities: each within the sensitivity (−inf marks the same excluded edges)
            excluded = np.isneginf(a.query) & np.isneginf(b.query)
            assert np.abs(np.where(excluded, 0.0, a.query) - np.where(excluded, 0.0, b.query)).max() <= a.sensitivity + 1e-9
        else:
            assert np.abs(a.query - b.query).sum() <= a.sensitivity + 1e-9


@pytest.mark.parametrize("classifier", [False, True])
def test_it_learns_an_additive_signal(classifier):
    X, y = _table(4_000, 5, classifier)
    X_test, y_test = _table(4_000, 6, classifier)
    model = _model(classifier, epsilon=8.0, random_state=0).fit(X, y)
    if classifier:
        assert model.score(X_test, y_test) > 0.7  # a constant guess gets about 0.5
    else:
        assert model.score(X_test, y_test) > 0.5
        assert np.all((model.predict(X_test) >= 0) & (model.predict(X_test) <= 30))


def test_three_classes_get_a_score_each():
    rng = np.random.default_rng(7)
    X = rng.random((3_000, 2))
    y = np.digitize(X[:, 0], [1 / 3, 2 / 3])
    model = DPAdditiveClassifier(epsilon=8.0, classes=[0, 1, 2], random_state=0).fit(X, y)
    assert model.shapes_.shape[2] == 3
    assert model.score(X, y) > 0.8


def test_a_declared_category_absent_from_the_data_still_has_its_bin():
    X, y = _table(300, 8, classifier=True)
    X[:, 3] = np.minimum(X[:, 3], 3)  # level 4 never occurs
    model = _model(True, random_state=0).fit(X, y)
    assert model.bin_counts_.shape == (4, 8)  # 8 numeric bins ≥ 5 declared levels
    assert model.predict_proba(np.array([[0.5, 0.5, 0.5, 4.0]])).shape == (1, 2)


def test_fit_rows_is_fit():
    X, y = _table(500, 9, classifier=False)
    model = _model(False, random_state=5)
    by_arrays = clone(model).fit(X, y)
    by_rows = clone(model).fit_rows(LocalRows(X, y))
    np.testing.assert_array_equal(by_arrays.shapes_, by_rows.shapes_)
    np.testing.assert_array_equal(by_arrays.edges_, by_rows.edges_)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_passes": 0}, "n_passes"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"count_share": 1.0}, "count_share"),
        ({"quantile_share": 0.5}, "quantile_share"),
        ({"smoothing": 1.0}, "smoothing"),
        ({"clip": 2.0}, "clip"),
        ({"min_bin_count": 0.0, "count_floor": 0.0}, "min_bin_count"),
    ],
)
def test_bad_parameters_are_named(params, message):
    X, y = _table(50, 10, classifier=False)
    with pytest.raises(ValueError, match=message):
        _model(False, **params).fit(X, y)


def test_the_weights_say_which_feature_moves_the_prediction_most():
    X, y = _table(4_000, 11, classifier=True)
    model = _model(True, epsilon=8.0, random_state=0).fit(X, y)
    weights = {r["feature"]: r["weight"] for r in model.weights_as_records(["sine", "slope", "noise", "code"])}
    assert weights["sine"] == max(weights.values())
    assert all(w >= 0 for w in weights.values())
