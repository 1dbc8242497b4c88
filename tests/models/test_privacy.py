"""Privacy audits of whole models: call recording on neighbouring datasets, and neighbouring-output tests.

Call recording (after dp-recorder): fit on D while recording every mechanism call, then fit
on D plus one record *replaying* D's noisy outputs, so both fits walk the same path. The two
runs must make the same calls with the same ε and declared sensitivity, and every query's
difference must be within its declared sensitivity (L1 over the array for noise mechanisms,
per candidate for the exponential mechanism).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss
from sklearn.base import clone

from dpcore.exceptions import DataError
from dpcore.mechanisms import record_mechanism_calls
from dpcore.model_files import kept_generators, model_bytes
from dpcore.models import (
    DPAdditiveClassifier,
    DPAdditiveRegressor,
    DPBoostingClassifier,
    DPBoostingRegressor,
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPGaussianNB,
    DPMeanRegressor,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
    DPSGDClassifier,
    DPSGDRegressor,
)
from dpcore.models.boosting import QUANTILE_PROBABILITIES
from dpcore.models.registry import MODELS as REGISTRY_MODELS
from dpcore.models.registry import ModelContext

MODELS = [
    DPRegressionTree(max_depth=4, min_samples_split=5, min_samples_leaf=2),
    DPRegressionTree(max_depth=3, min_samples_split=5, min_samples_leaf=2, leaf="median"),
    DPPartitionedForest(n_estimators=4, max_depth=3, min_samples_split=5, min_samples_leaf=2),
    DPPartitionedForest(n_estimators=3, max_depth=2, leaf="median", count_noise="geometric", selection="permute_and_flip"),
    DPMeanRegressor(),
    DPExtraTreesRegressor(n_estimators=3, max_depth=3),
    DPExtraTreesRegressor(n_estimators=3, max_depth=3, sampling="subsample", max_samples=0.7),
    DPExtraTreesClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2]),
    DPExtraTreesClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2], sampling="subsample", count_noise="geometric"),
    DPRandomForestClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2]),
    DPRandomForestClassifier(n_estimators=3, max_depth=3, classes=[0, 1, 2], sampling="subsample", max_samples=0.5),
    DPGaussianNB(classes=[0, 1, 2]),
    DPBoostingRegressor(n_rounds=6, max_depth=3, categorical_levels={3: 4}),
    DPBoostingClassifier(n_rounds=6, max_depth=3, classes=[0, 1, 2], categorical_levels={3: 4}),
    DPBoostingClassifier(n_rounds=6, max_depth=2, classes=[0, 1], count_noise="geometric"),
    DPBoostingClassifier(n_rounds=6, max_depth=3, classes=[0, 1, 2], delta=1e-5),
    DPBoostingRegressor(n_rounds=6, max_depth=3, delta=1e-5),
    DPBoostingRegressor(),  # noisy row count for the sizes, DP quantiles for thresholds and target
    DPBoostingClassifier(classes=[0, 1], delta=1e-5),
    # First-level picks where the defaults make none: three classes, and the approximate mode (Gumbel, ε²/8-zCDP).
    DPBoostingClassifier(n_rounds=6, max_depth=3, classes=[0, 1, 2], select_share=0.3),
    DPBoostingRegressor(n_rounds=6, max_depth=3, delta=1e-5, select_share=0.3),
    DPAdditiveRegressor(categorical_levels={3: 4}),  # DP quantiles of features and target, bins, counts, 2 passes
    DPAdditiveRegressor(quantile_share=0.0, clip=0.3, n_passes=3),
    DPAdditiveClassifier(classes=[0, 1], categorical_levels={3: 4}),
    DPAdditiveClassifier(classes=[0, 1, 2], n_passes=2, count_noise="geometric"),
    DPSGDRegressor(epochs=2, batch_size=64),
    DPSGDClassifier(epochs=2, batch_size=64, classes=[0, 1, 2]),
    DPSGDClassifier(epochs=1, batch_size=64, classes=[0, 1], hidden_units=3),
]


def _neighbours(classifier: bool, extra_y):
    rng = np.random.default_rng(3)
    X = rng.random((400, 4))
    classes = 2 if classifier == "binary" else 3
    y = rng.integers(0, classes, 400) if classifier else np.clip(X[:, 0] + 0.1 * rng.standard_normal(400), 0, 1)
    X_prime = np.vstack([X, [[0.99, 0.01, 0.5, 0.73]]])
    y_prime = np.append(y, extra_y)
    return (X, y), (X_prime, y_prime)


def _record(model, X, y, replay=None):
    with record_mechanism_calls(replay=replay) as recorder:
        clone(model).set_params(random_state=11).fit(X, y)
    return recorder.calls


@pytest.mark.parametrize(
    "model", MODELS, ids=lambda m: f"{type(m).__name__}-{m.get_params().get('leaf', '')}{m.get_params().get('sampling', '')}"
)
@pytest.mark.parametrize("extreme", [0, 1])
def test_neighbouring_fits_make_the_same_calls_within_sensitivity(model, extreme):
    classifier = hasattr(model, "classes") and ("binary" if len(model.classes) == 2 else True)
    top = len(model.classes) - 1 if classifier else 1
    (X, y), (X_prime, y_prime) = _neighbours(classifier, extreme * top if classifier else float(extreme))
    calls = _record(model, X, y)
    replayed = _record(model, X_prime, y_prime, replay=calls)
    assert len(calls) == len(replayed) > 0
    for a, b in zip(calls, replayed):
        assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
        if a.mechanism == "median":
            # Its query is the leaf's sorted sample: one record more or less, never more.
            assert abs(a.query.size - b.query.size) <= 1
            continue
        assert a.query.shape == b.query.shape
        both_excluded = np.isneginf(a.query) & np.isneginf(b.query)
        with np.errstate(invalid="ignore"):
            diff = np.abs(np.where(both_excluded, 0.0, a.query.astype(float) - b.query.astype(float)))
        if a.mechanism == "exponential":
            assert diff.max() <= a.sensitivity + 1e-9
        elif a.mechanism == "gaussian":  # L2 sensitivity
            assert np.sqrt((diff**2).sum()) <= a.sensitivity + 1e-9
        else:
            assert diff.sum() <= a.sensitivity + 1e-9


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_each_record_is_charged_at_most_epsilon_along_its_path(model):
    """Sum the ε of the calls that touch one record: trees charge per level, so count per path."""
    classifier = hasattr(model, "classes")
    (X, y), _ = _neighbours(classifier, 0)
    fitted = clone(model).set_params(random_state=5, epsilon=1.3)
    calls = _record(fitted, X, y)
    fitted.fit(X, y)
    assert fitted.epsilon_spent_ == 1.3
    share = fitted.get_params().get("range_share", 0.0)
    if share:
        # The data range comes first: one exponential call per quantile level (1, 2, 4 intervals per column),
        # charged once per column to each record, adding up to range_share·ε; the trees get the rest.
        levels, calls = calls[:3], calls[3:]
        assert all(c.mechanism == "exponential" for c in levels)
        assert math.isclose(sum(c.epsilon * c.query.shape[0] / k for c, k in zip(levels, (1, 2, 4))), share * 1.3)
    per_query = getattr(fitted, "budget_per_query_", None)
    if per_query is not None:
        assert all(math.isclose(c.epsilon, per_query) for c in calls)


# --- whole-model neighbouring tests -------------------------------------------------------
#
# One record, then two: the fitted model's output is binned into "0", "strictly between" and
# "1" (where a shift of one record shows most) and the privacy loss is estimated both ways.
# The power check fits a variant that secretly spends ten times the claimed ε.
#
# Sized by power, per case (α = 1e-6, unchanged): the broken variant's loss at the runs below, seeds
# 0-2, against the tolerance there: regression tree 0.43-0.46 (tolerance 0.29 at 1,400), forest
# 0.47-0.49 (0.32 at 1,200), naive Bayes 0.61-0.67 (0.35 at 1,000), unclipped boosting 0.39-0.46
# (0.29 at 1,500), boosting on exact quantiles 1.0 (0.57 at 400). Every case used 2,000.
N_RUNS = {
    "regression_tree": 1_400,
    "random_forest": 1_200,
    "gaussian_nb": 1_000,
    "boosting": 1_500,
    "boosting_quantiles": 400,
    # Not yet sized by power: the additive models' cases arrived with the count every case used.
    "additive": 2_000,
    "additive_classifier": 2_000,
}
UNIT_EDGES = [1e-9, 1 - 1e-9]
POINT = np.array([[0.85]])


class _UnderNoised:
    """Mixin: fits with ten times the claimed ε (deliberately broken, for the power check)."""

    def fit(self, X, y):
        claimed = self.epsilon
        self.epsilon = 10 * claimed
        try:
            return super().fit(X, y)
        finally:
            self.epsilon = claimed


class UnderNoisedTree(_UnderNoised, DPRegressionTree):
    pass


class UnderNoisedNB(_UnderNoised, DPGaussianNB):
    pass


class UnderNoisedForest(_UnderNoised, DPRandomForestClassifier):
    pass


class UnderNoisedAdditive(_UnderNoised, DPAdditiveRegressor):
    pass


class UnderNoisedAdditiveClassifier(_UnderNoised, DPAdditiveClassifier):
    pass


class UnclippedBoosting(DPBoostingRegressor):
    """Deliberately broken: residuals are not clipped, but the noise still assumes they are."""

    def _residual_clip(self):
        return np.inf


class ExactQuantileBoosting(DPBoostingRegressor):
    """Deliberately broken: the target's quantiles (start and clip) are read exactly, not paid for."""

    def _preliminaries(self, X_unit, multiclass, noise, target=None):
        budget, noisy = super()._preliminaries(X_unit, multiclass, noise, target)
        if target is not None:
            noisy = np.quantile(target, QUANTILE_PROBABILITIES)
        return budget, noisy


def _prediction(model):
    if hasattr(model, "predict_proba"):
        return model.predict_proba(POINT)[0, 1]
    return model.predict(POINT)[0]


CASES = {
    "regression_tree": (
        lambda cls, rng: cls(epsilon=1.0, max_depth=1, min_samples_split=0, min_samples_leaf=0, n_thresholds=4, random_state=rng),
        DPRegressionTree,
        UnderNoisedTree,
        0.0,
        1.0,
        _prediction,
        UNIT_EDGES,
    ),
    "random_forest": (
        lambda cls, rng: cls(n_estimators=1, max_depth=1, n_thresholds=4, epsilon=1.0, classes=[0, 1], random_state=rng),
        DPRandomForestClassifier,
        UnderNoisedForest,
        0,
        1,
        _prediction,
        UNIT_EDGES,
    ),
    "gaussian_nb": (
        lambda cls, rng: cls(epsilon=1.0, classes=[0, 1], random_state=rng),
        DPGaussianNB,
        UnderNoisedNB,
        0,
        1,
        lambda model: model.class_count_[1],
        [-0.5, 0.5, 1.5],
    ),
    # The leaves' path with a fixed public clip and start (no quantiles: they would drown the signal).
    "boosting": (
        lambda cls, rng: cls(epsilon=1.0, n_rounds=1, max_depth=1, quantile_share=0.0, clip=0.2, random_state=rng),
        DPBoostingRegressor,
        UnclippedBoosting,
        0.5,
        1.0,
        _prediction,
        [0.5, 0.505, 0.51, 0.52],
    ),
    # The default path: DP quantiles of features and target place thresholds, start and clip.
    "boosting_quantiles": (
        lambda cls, rng: cls(epsilon=1.0, n_rounds=1, max_depth=1, random_state=rng),
        DPBoostingRegressor,
        ExactQuantileBoosting,
        0.5,
        1.0,
        _prediction,
        [0.45, 0.55, 0.65, 0.85],
    ),
    # One round of one feature with a public clip and start: the bin's noisy count and noisy residual sum.
    "additive": (
        lambda cls, rng: cls(epsilon=1.0, quantile_share=0.0, clip=0.2, n_passes=1, random_state=rng),
        DPAdditiveRegressor,
        UnderNoisedAdditive,
        0.5,
        1.0,
        _prediction,
        [0.495, 0.5, 0.505, 0.51],
    ),
    "additive_classifier": (
        lambda cls, rng: cls(epsilon=1.0, quantile_share=0.0, classes=[0, 1], random_state=rng),
        DPAdditiveClassifier,
        UnderNoisedAdditiveClassifier,
        0,
        1,
        _prediction,
        [0.48, 0.49, 0.5, 0.51],
    ),
}


def _loss(case: str, broken: bool):
    make, honest, under_noised, first_y, added_y, output, edges = CASES[case]
    cls = under_noised if broken else honest
    d = (POINT, np.array([first_y]))
    d_prime = (np.vstack([POINT, POINT]), np.array([first_y, added_y]))

    def release(data, rng):
        return output(make(cls, rng).fit(*data))

    return neighbouring_privacy_loss(release, d, d_prime, 1.0, N_RUNS[case], edges=edges, seed=1)


@pytest.mark.parametrize("case", list(CASES))
def test_whole_model_stays_within_epsilon(case):
    assert_within_epsilon(_loss(case, broken=False))


@pytest.mark.parametrize("case", list(CASES))
def test_whole_model_test_catches_an_under_noised_variant(case):
    assert_exceeds_epsilon(_loss(case, broken=True))


@pytest.mark.parametrize("key", [key for key, spec in REGISTRY_MODELS.items() if spec.kind == "ours"])
def test_a_fitted_model_keeps_no_generator_that_could_replay_its_noise(key):
    """A saved model that held its noise generator would let its holder rewind the stream and subtract the noise."""
    spec = REGISTRY_MODELS[key]
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 0] > 0.5).astype(int) if spec.task == "classification" else X[:, 0]
    context = ModelContext(
        n_features=3,
        epsilon=2.0,
        bounds=(0.0, 1.0),
        target_bounds=(0.0, 1.0),
        classes=[0, 1] if spec.task == "classification" else None,
    )
    model = spec.make(context)
    model.fit(X) if spec.task == "clustering" else model.fit(X, y)
    assert kept_generators(model) == []


def test_a_teacher_or_a_model_holding_a_generator_cannot_be_saved():
    from dpcore.models.subsample_aggregate import SubsampleAggregateClassifier

    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 0] > 0.5).astype(int)
    teacher = SubsampleAggregateClassifier(classes=[0, 1], epsilon=1.0, random_state=0).fit(X, y)
    with pytest.raises(DataError, match="teacher cannot be saved or released"):
        model_bytes(teacher, read_from_data=[])
    model = (
        REGISTRY_MODELS["dp_gaussian_nb"]
        .make(ModelContext(n_features=3, epsilon=1.0, bounds=(0.0, 1.0), classes=[0, 1]))
        .fit(X, y)
    )
    model.kept_stream_ = np.random.default_rng(1)  # what a careless estimator would leave behind
    assert kept_generators(model) == ["DPGaussianNB.kept_stream_"]
    with pytest.raises(DataError, match="replay"):
        model_bytes(model, read_from_data=[])
