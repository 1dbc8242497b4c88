"""DP model choice: candidates screened on a secret split, picked by the exponential mechanism, the winner refitted."""

from __future__ import annotations

import numpy as np
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss
from sklearn.base import clone

from dpcore.mechanisms import Exponential, record_mechanism_calls
from dpcore.model_files import kept_generators
from dpcore.models import choice
from dpcore.models.choice import (
    CANDIDATES,
    DEFAULT_SHARE,
    DPModelChoiceClassifier,
    DPModelChoiceRegressor,
    choose_model,
)
from dpcore.models.registry import get


def _data(classifier: bool, n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = (X[:, 0] > 0.5).astype(int) if classifier else np.clip(X[:, 0] + 0.05 * rng.standard_normal(n), 0, 1)
    return X, y


class Constant:
    """A stub candidate that predicts one value whatever its rows: its fit is post-processing of nothing."""

    def __init__(self, value: float, log: list | None = None) -> None:
        self.value, self.log = value, log

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.full(len(X), self.value)

    def set_params(self, **params):
        return self


def _constant(value: float, log: list | None = None):
    def make(epsilon, rng):
        if log is not None:
            log.append(epsilon)
        return Constant(value)

    return make


def _label_errors(model, X, y):
    return (model.predict(X) != y).astype(float)


# --- the engine ----------------------------------------------------------------------------


@pytest.mark.parametrize("model", [DPModelChoiceClassifier(classes=[0, 1]), DPModelChoiceRegressor(target_bounds=(0, 1))])
def test_the_choice_spends_its_epsilon_once_and_keeps_only_the_final_model(model):
    X, y = _data(isinstance(model, DPModelChoiceClassifier))
    fitted = clone(model).set_params(epsilon=0.8, random_state=0).fit(X, y)
    assert fitted.epsilon_spent_ == 0.8 and fitted.delta_spent_ == 0.0
    assert fitted.chosen_ in CANDIDATES[model.task]
    assert type(fitted.final_model_) is CANDIDATES[model.task][fitted.chosen_]
    assert fitted.final_model_.epsilon == pytest.approx((1 - DEFAULT_SHARE) * 0.8)
    assert fitted.final_model_.n_features_in_ == 3  # refitted on every row's features
    assert kept_generators(fitted) == []
    assert fitted.predict(X[:5]).shape == (5,)


def test_labels_are_the_declared_ones_and_probabilities_line_up():
    X, y = _data(True)
    labels = np.array(["no", "yes"])[y]
    model = DPModelChoiceClassifier(classes=["no", "yes"], epsilon=4.0, random_state=1).fit(X, labels)
    assert set(model.predict(X)) <= {"no", "yes"}
    assert model.predict_proba(X[:4]).shape == (4, 2)


def test_at_large_epsilon_the_better_candidate_is_picked():
    # One candidate is right on every row, the other wrong on every row: the noisy max must find the first.
    X, y = np.zeros((400, 1)), np.ones(400)
    picks = [
        choose_model([_constant(0.0), _constant(1.0)], X, y, _label_errors, 50.0, random_state=seed).chosen for seed in range(10)
    ]
    assert picks == [1] * 10


def test_with_share_one_the_chosen_candidate_is_kept_as_fitted():
    X, y = np.zeros((100, 1)), np.ones(100)
    given: list[float] = []
    result = choose_model([_constant(0.0, given), _constant(1.0, given)], X, y, _label_errors, 2.0, share=1.0, random_state=0)
    assert given == [1.0, 1.0] and result.epsilon == 2.0  # no third fit


@pytest.mark.parametrize(
    "setting, match",
    [
        ({"share": 0.0}, "share"),
        ({"share": 1.5}, "share"),
        ({"held_out": 1.0}, "held_out"),
        ({"candidates": ["dp_mean"]}, "candidates"),
    ],
)
def test_bad_settings_are_named(setting, match):
    X, y = _data(False)
    with pytest.raises(ValueError, match=match):
        DPModelChoiceRegressor(target_bounds=(0, 1), **setting).fit(X, y)


def test_the_registry_offers_the_choice_for_both_tasks():
    for key, task in (("dp_choice_clf", "classification"), ("dp_choice_reg", "regression")):
        spec = get(key)
        assert spec.task == task and spec.kind == "ours" and not spec.approximate
        assert "quarter of ε" in spec.description


# --- the ε total and every noisy call --------------------------------------------------------


def test_the_budget_adds_up_screening_selection_and_final_fit():
    """Screening fits share s·ε, the pick is one exponential-mechanism call at s·ε, the refit gets (1 − s)·ε."""
    X, y = _data(True)
    given: list[float] = []
    with record_mechanism_calls() as recorder:
        choose_model([_constant(0.0, given), _constant(1.0, given)], X, y, _label_errors, 1.2, share=0.25, random_state=0)
    (pick,) = recorder.calls  # the stubs make no noisy calls: this is the selection
    assert pick.mechanism == "exponential" and pick.sensitivity == 1.0 and pick.epsilon == pytest.approx(0.3)
    screening, final = given[:2], given[2]
    assert sum(screening) == pytest.approx(0.3) and final == pytest.approx(0.9)
    # The fits read the training part, the pick the held-out part: the screening costs max(0.3, 0.3), the refit 0.9.
    assert max(sum(screening), pick.epsilon) + final == pytest.approx(1.2)


def _calls(model, X, y, replay=None):
    with record_mechanism_calls(replay=replay) as recorder:
        clone(model).fit(X, y)  # the model's own seed: both fits draw the same split for the rows they share
    return recorder.calls


def _audit(model, extra_x, extra_y) -> bool:
    """True if neighbouring fits make the same calls, each within its ε budget and declared sensitivity."""
    classifier = isinstance(model, DPModelChoiceClassifier)
    X, y = _data(classifier, n=300)
    X_prime, y_prime = np.vstack([X, [extra_x]]), np.append(y, extra_y)
    calls = _calls(model, X, y)
    replayed = _calls(model, X_prime, y_prime, replay=calls)
    assert len(calls) == len(replayed) > 0
    honest = True
    for a, b in zip(calls, replayed, strict=True):
        assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
        if a.query.shape != b.query.shape:  # a sample with one record more or less
            assert abs(a.query.size - b.query.size) <= 1
            continue
        with np.errstate(invalid="ignore"):  # −inf − −inf: a candidate ruled out on both sides
            diff = np.abs(a.query.astype(float) - b.query.astype(float))
        diff = np.where(np.isnan(diff), 0.0, diff)
        honest &= bool((diff.max() if a.mechanism == "exponential" else diff.sum()) <= a.sensitivity + 1e-9)
    return honest


CHEAP = [
    DPModelChoiceClassifier(classes=[0, 1], candidates=["dp_additive_clf", "dp_gaussian_nb"]),
    DPModelChoiceRegressor(target_bounds=(0, 1), candidates=["dp_boosting_reg", "dp_additive_reg"]),
]


def _held_out(seed: int, n: int = 300, share: float = 0.5) -> bool:
    """Whether the record added after ``n`` rows lands in the held-out part under ``seed`` (the model's own draw)."""
    structure, _ = np.random.default_rng(seed).spawn(2)
    return bool(structure.random(n + 1)[n] < share)


SEEDS = range(6)


def test_the_audit_seeds_put_the_added_record_on_both_sides():
    assert {_held_out(seed) for seed in SEEDS} == {True, False}


@pytest.mark.parametrize("model", CHEAP, ids=lambda m: type(m).__name__)
def test_neighbouring_fits_make_the_same_calls_within_sensitivity(model):
    classifier = isinstance(model, DPModelChoiceClassifier)
    for seed in SEEDS:
        assert _audit(clone(model).set_params(random_state=seed, held_out=0.5), (0.02, 0.98, 0.5), 1 if classifier else 0.0)


class RawErrors(DPModelChoiceRegressor):
    """Deliberately broken: scores on the target's own units (range 0–10), so one record moves a total by up to 10."""

    def fit(self, X, y):
        original = choice.choose_model

        def unscaled(makers, X, y, loss, epsilon, **kwargs):
            def raw(model, X_held, y_held):
                return np.abs(np.asarray(model.predict(X_held)) - y_held)

            return original(makers, X, y, raw, epsilon, **kwargs)

        choice.choose_model = unscaled
        try:
            return super().fit(X, y)
        finally:
            choice.choose_model = original


def test_the_audit_catches_scores_whose_sensitivity_is_not_one():
    broken = RawErrors(target_bounds=(0, 10), candidates=["dp_boosting_reg", "dp_additive_reg"])
    seed = next(seed for seed in SEEDS if _held_out(seed))
    assert not _audit(broken.set_params(random_state=seed, held_out=0.5), (0.02, 0.98, 0.5), 10.0)


# --- the selection on neighbouring datasets, with a power check -------------------------------
#
# Two fixed candidates (the constant 0 and the constant 1: their fits read nothing), and a table
# of 10 zeros and 10 ones almost all held out; the neighbour adds a one. With exact error counts
# the tie breaks to the first candidate on D and the added one flips it on D′ every time; the
# exponential mechanism at s·ε = 1 moves the pick by a factor (1 + e^½)/2 ≈ 1.32 < e.


class ExactPick(Exponential):
    def select(self, utilities, log_weights=None):
        utilities = np.asarray(utilities, dtype=float)
        return self._released(utilities, np.argmax(utilities))


def _pick_loss(monkeypatch, mechanism):
    monkeypatch.setattr(choice, "Exponential", mechanism)
    makers = [_constant(0.0), _constant(1.0)]
    X = np.zeros((20, 1))
    d, d_prime = (X, np.repeat([0.0, 1.0], 10)), (np.zeros((21, 1)), np.append(np.repeat([0.0, 1.0], 10), 1.0))

    def release(data, rng):
        return choose_model(makers, data[0], data[1], _label_errors, 4.0, share=0.25, held_out=0.999, random_state=rng).chosen

    return neighbouring_privacy_loss(release, d, d_prime, 1.0, 3_000, n_outcomes=2, seed=5)


def test_the_noisy_pick_stays_within_its_epsilon(monkeypatch):
    assert_within_epsilon(_pick_loss(monkeypatch, Exponential))


def test_the_privacy_test_catches_a_pick_from_exact_error_counts(monkeypatch):
    assert_exceeds_epsilon(_pick_loss(monkeypatch, ExactPick))


# --- one charge through the ledger -------------------------------------------------------------


def test_training_the_choice_charges_its_total_once_or_refuses_before_any_fit(tmp_path, monkeypatch):
    import pandas as pd

    import dpcore.training
    from dpcore.budget.accountant import BudgetLedger
    from dpcore.exceptions import BudgetExceededError
    from dpcore.tables.design import Design
    from dpcore.tables.schema import ColumnSpec, Schema

    X, y = _data(False, n=400)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "t": y})
    schema = Schema(
        columns=[ColumnSpec(name=n, role="feature", kind="numeric", lower=0.0, upper=1.0) for n in "abc"]
        + [ColumnSpec(name="t", role="target", kind="numeric", lower=0.0, upper=1.0)]
    )
    design = Design.from_table(frame, schema)
    ledger = BudgetLedger("table", total_epsilon=1.0, path=tmp_path / "ledger.sqlite3")
    fitted = []
    original = dpcore.training.fit_with_progress
    monkeypatch.setattr(dpcore.training, "fit_with_progress", lambda *args: fitted.append(1) or original(*args))
    with pytest.raises(BudgetExceededError):
        dpcore.training.train(design, "dp_choice_reg", 1.5, ledger)
    assert fitted == [] and ledger.spends() == []
    trained = dpcore.training.train(design, "dp_choice_reg", 0.6, ledger, seed=0)
    [spend] = ledger.spends()
    assert spend.epsilon == pytest.approx(0.6) and spend.mechanism == "DPModelChoiceRegressor"
    assert trained.details["chosen"] in CANDIDATES["regression"]


def test_the_chosen_model_saves_opens_and_is_named_on_its_card(tmp_path):
    import pandas as pd

    from dpcore.budget.accountant import BudgetLedger
    from dpcore.model_card import model_card
    from dpcore.model_files import load_model, model_bytes
    from dpcore.tables.design import Design
    from dpcore.tables.schema import ColumnSpec, Schema
    from dpcore.training import train

    X, y = _data(True, n=400)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "label": np.array(["no", "yes"])[y]})
    schema = Schema(
        columns=[
            ColumnSpec(name="a", role="feature", kind="numeric", lower=0.0, upper=1.0),
            ColumnSpec(name="b", role="feature", kind="numeric", lower=0.0, upper=1.0),
            ColumnSpec(name="label", role="target", kind="categorical", categories=["no", "yes"]),
        ]
    )
    design = Design.from_table(frame, schema)
    trained = train(design, "dp_choice_clf", 1.0, BudgetLedger("t", total_epsilon=2.0, path=tmp_path / "l.sqlite3"))
    opened = load_model(model_bytes(trained.model, read_from_data=[]))
    np.testing.assert_array_equal(opened.predict(design.X[:20]), trained.model.predict(design.X[:20]))
    assert f"**Learner chosen by DP**: {get(trained.details['chosen']).name}" in model_card(trained, schema)
