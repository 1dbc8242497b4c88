"""Multiplicative-weights experts: disjoint parts, noisy losses, a private streaming path, ε by parallel composition."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss
from sklearn.base import clone
from sklearn.linear_model import LinearRegression

from dpcore.exceptions import PrivacyLeakWarning
from dpcore.mechanisms import Laplace, record_mechanism_calls
from dpcore.models import DPBoostingRegressor, DPGaussianNB, DPMeanRegressor, DPRegressionTree
from dpcore.models import multiplicative_weights as mw
from dpcore.models.multiplicative_weights import (
    MultiplicativeWeightsClassifier,
    MultiplicativeWeightsEnsemble,
    tree_prefix_sums,
    weights_from_losses,
)

CHEAP_EXPERTS = [DPMeanRegressor(), DPRegressionTree(max_depth=2)]


def _data(classifier: bool, n: int = 800, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = (X[:, 0] > 0.5).astype(int) if classifier else np.clip(X[:, 0] + 0.05 * rng.standard_normal(n), 0, 1)
    return X, y


def test_tree_prefix_sums_are_the_running_totals_without_noise_and_noised_once():
    steps = np.random.default_rng(0).random((37, 2))
    exact = tree_prefix_sums(steps, 1e12, 2.0, np.random.default_rng(1))
    # Without noise a prefix sum is still off by its nodes' rounding to the noise grid: at most 7 nodes, each within
    # half a step of 14/(4096·74) (the exact sampler's grid for 74 node values of sensitivity 2·7).
    np.testing.assert_allclose(exact, np.cumsum(steps, axis=0), atol=7 * 14 / (4096 * 74) / 2)
    with record_mechanism_calls() as recorder:
        tree_prefix_sums(steps, 1.0, 2.0, np.random.default_rng(1))
    (call,) = recorder.calls
    assert call.sensitivity == 2.0 * 7  # 37 steps: ceil(log2 37) + 1 = 7 levels, each record in one node of each


def test_weights_follow_the_losses():
    weights = weights_from_losses(np.array([[10.0, 20.0], [5.0, 5.0]]), eta=0.1)
    np.testing.assert_allclose(weights[0], [1 / (1 + np.exp(-1)), 1 - 1 / (1 + np.exp(-1))])
    np.testing.assert_allclose(weights[1], [0.5, 0.5])
    assert np.isfinite(weights_from_losses(np.array([1e6, 0.0]), eta=1.0)).all()


# --- call recording ------------------------------------------------------------------------


class ForgetsTheLevels(MultiplicativeWeightsEnsemble):
    """Deliberately broken: the tree's nodes are noised as if each record were in one node only."""

    def fit(self, X, y):
        original = mw.tree_prefix_sums

        def one_level(steps, epsilon, sensitivity, rng):
            levels = int(np.ceil(np.log2(max(len(steps), 1)))) + 1
            return original(steps, epsilon, sensitivity / levels, rng)

        mw.tree_prefix_sums = one_level
        try:
            return super().fit(X, y)
        finally:
            mw.tree_prefix_sums = original


def _calls(model, X, y, replay=None):
    with record_mechanism_calls(replay=replay) as recorder:
        clone(model).fit(X, y)  # with the model's own seed, so both fits draw the same parts
    return recorder.calls


def _audit(model, extra_y, extra_x=(0.97, 0.02, 0.5)) -> bool:
    """True if neighbouring fits make the same calls and every query moves within its declared sensitivity."""
    classifier = isinstance(model, MultiplicativeWeightsClassifier)
    X, y = _data(classifier)
    X_prime, y_prime = np.vstack([X, [extra_x]]), np.append(y, extra_y)
    calls = _calls(model, X, y)
    replayed = _calls(model, X_prime, y_prime, replay=calls)
    assert len(calls) == len(replayed) > 0
    honest = True
    for a, b in zip(calls, replayed, strict=True):
        assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
        assert a.epsilon <= model.epsilon
        if a.query.shape != b.query.shape:  # a DP median's sample: one record more or less
            assert abs(a.query.size - b.query.size) <= 1
            continue
        diff = np.abs(a.query.astype(float) - b.query.astype(float))
        diff = np.where(np.isnan(diff), 0.0, diff)
        honest &= bool((diff.max() if a.mechanism == "exponential" else diff.sum()) <= a.sensitivity + 1e-9)
    return honest


MODELS = [
    MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS),
    MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS, form="streaming", n_steps=16),
    MultiplicativeWeightsClassifier(experts=[DPGaussianNB(), DPGaussianNB()], classes=[0, 1], form="streaming", n_steps=8),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{type(m).__name__}-{m.form}")
@pytest.mark.parametrize("extreme", [0, 1])
def test_neighbouring_fits_make_the_same_calls_within_sensitivity(model, extreme):
    # Over several secret draws the added record lands in every part, the held-out one included.
    for seed in range(8):
        assert _audit(clone(model).set_params(random_state=seed), extreme)


def test_the_audit_catches_a_tree_that_forgets_a_record_is_in_every_level():
    # A record every expert gets badly wrong, so its losses add up to more than the declared sensitivity.
    broken = ForgetsTheLevels(experts=CHEAP_EXPERTS, form="streaming", n_steps=16)
    assert not all(_audit(clone(broken).set_params(random_state=seed), 1, (0.02, 0.5, 0.5)) for seed in range(20))


def test_the_ensemble_spends_epsilon_once_by_parallel_composition():
    X, y = _data(False)
    model = MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS, epsilon=0.7, random_state=0).fit(X, y)
    assert model.epsilon_spent_ == 0.7 and model.delta_spent_ == 0.0
    assert all(e.epsilon_spent_ == 0.7 for e in model.experts_)
    approximate = MultiplicativeWeightsEnsemble(experts=[DPBoostingRegressor(n_rounds=5)], delta=1e-6, random_state=0).fit(X, y)
    assert approximate.delta_spent_ == 1e-6


def test_a_non_private_expert_is_refused():
    X, y = _data(False)
    with pytest.raises(TypeError, match="DP estimators"):
        MultiplicativeWeightsEnsemble(experts=[LinearRegression()]).fit(X, y)


# --- the released weights on neighbouring held-out parts ------------------------------------
#
# Two fixed experts (post-processing of their own parts) and a held-out part of 20 records; the
# neighbour adds a record that one expert gets wrong and the other right, which moves the exact
# weight of the first expert from 0.5 to 0.27. Its released weight is binned; a variant that
# publishes the exact losses is caught.


class ExactLosses(Laplace):
    def randomise(self, values):
        return self._released(np.asarray(values, float), np.asarray(values, float))


def _weights_loss(noise):
    losses = np.full((20, 2), 0.5)
    d, d_prime = losses, np.vstack([losses, [1.0, 0.0]])

    def release(data, rng):
        noisy = noise(1.0, 2.0, rng).randomise(data.sum(axis=0))
        return weights_from_losses(noisy, eta=1.0)[0]

    return neighbouring_privacy_loss(release, d, d_prime, 1.0, 3_000, edges=[0.2, 0.4, 0.6, 0.8], seed=3)


def test_the_noisy_weights_stay_within_epsilon():
    assert_within_epsilon(_weights_loss(Laplace))


def test_the_privacy_test_catches_weights_from_exact_losses():
    assert_exceeds_epsilon(_weights_loss(ExactLosses))


# --- usefulness --------------------------------------------------------------------------------


def test_weights_path_records_for_the_chart():
    X, y = _data(False)
    model = MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS, form="streaming", n_steps=10, random_state=0).fit(X, y)
    records = model.weights_path_records()
    assert len(records) == 20 and {r["step"] for r in records} == set(range(1, 11))
    assert model.weights_path_.shape == (10, 2) and np.allclose(model.weights_path_.sum(axis=1), 1.0)


def test_at_large_epsilon_the_better_expert_gets_the_weight():
    X, y = _data(False, n=5000)
    model = MultiplicativeWeightsEnsemble(
        experts=[DPMeanRegressor(), DPBoostingRegressor(n_rounds=20)], epsilon=100.0, eta=0.05, random_state=0
    ).fit(X, y)
    assert model.weights_[1] > 0.95
    assert np.abs(model.predict(X) - y).mean() < 0.08
    Xc, yc = _data(True, n=5000)
    clf = MultiplicativeWeightsClassifier(classes=["lo", "hi"], epsilon=100.0, random_state=0).fit(Xc, np.array(["lo", "hi"])[yc])
    assert np.mean(clf.predict(Xc) == np.array(["lo", "hi"])[yc]) > 0.9


def test_bad_settings_are_named():
    X, y = _data(False)
    for setting, match in [({"form": "online"}, "form"), ({"held_out": 1.0}, "held_out"), ({"eta": -1.0}, "eta")]:
        with pytest.raises(ValueError, match=match):
            MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS, **setting).fit(X, y)


@pytest.fixture(autouse=True)
def _quiet_leak_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield


@pytest.mark.parametrize("form", ["batch", "streaming"])
def test_an_empty_held_out_part_still_fits(form):
    """Nobody held out (a tiny table's draws can do that): no losses, the noisy weights still come out."""
    X, y = _data(False, n=50)
    model = mw.MultiplicativeWeightsEnsemble(experts=CHEAP_EXPERTS, held_out=1e-9, form=form, random_state=0).fit(X, y)
    assert np.isfinite(model.weights_).all() and model.weights_.sum() == pytest.approx(1.0)
    assert model.predict(X[:3]).shape == (3,)
