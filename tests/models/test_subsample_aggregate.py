"""Subsample and aggregate: one record changes one block, every answer is paid for, the student is the release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from privacy_testing import assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss
from sklearn.base import clone
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import LogisticRegression

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import BudgetExceededError
from dpcore.mechanisms import record_mechanism_calls
from dpcore.mechanisms.smooth_median import SmoothMedian
from dpcore.model_files import load_model, model_bytes
from dpcore.models.student import SubsampleAggregateStudentClassifier, SubsampleAggregateStudentRegressor, marginal_queries
from dpcore.models.subsample_aggregate import SubsampleAggregateClassifier, SubsampleAggregateRegressor, assign_blocks
from dpcore.tables.design import Design
from dpcore.tables.schema import Schema
from dpcore.training import answer_queries


def _data(classifier: bool, n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = (X[:, 0] + X[:, 1] > 1).astype(int) if classifier else np.clip(X[:, 0] + 0.05 * rng.standard_normal(n), 0, 1)
    return X, y


def _neighbour(X, y, extra_y):
    return np.vstack([X, [[0.99, 0.01, 0.5]]]), np.append(y, extra_y)


# --- blocks and call recording -------------------------------------------------------------


def test_a_records_block_does_not_depend_on_the_records_after_it():
    first = assign_blocks(50, 7, np.random.default_rng(3))
    more = assign_blocks(51, 7, np.random.default_rng(3))
    np.testing.assert_array_equal(first, more[:50])


TEACHERS = [
    SubsampleAggregateRegressor(n_blocks=15),
    SubsampleAggregateRegressor(n_blocks=15, delta=1e-6),
    SubsampleAggregateRegressor(n_blocks=15, aggregate="mean"),
    SubsampleAggregateClassifier(n_blocks=15, classes=[0, 1]),
]


def _answers_recorded(model, X, y, queries, replay=None):
    with record_mechanism_calls(replay=replay) as recorder:
        fitted = clone(model).set_params(random_state=11).fit(X, y)
        assert recorder.calls == []  # fitting the blocks releases nothing
        fitted.predict(queries)
    return recorder.calls


@pytest.mark.parametrize(
    "model", TEACHERS, ids=lambda m: f"{type(m).__name__}-{m.get_params().get('aggregate', 'vote')}-{m.delta}"
)
@pytest.mark.parametrize("extreme", [0, 1])
def test_neighbouring_teachers_answer_with_the_same_calls_and_one_block_changed(model, extreme):
    classifier = isinstance(model, SubsampleAggregateClassifier)
    X, y = _data(classifier)
    X_prime, y_prime = _neighbour(X, y, extreme)
    queries = np.random.default_rng(1).random((40, 3))
    calls = _answers_recorded(model, X, y, queries)
    replayed = _answers_recorded(model, X_prime, y_prime, queries, replay=calls)
    assert len(calls) == len(replayed) == 1
    a, b = calls[0], replayed[0]
    assert (a.mechanism, a.epsilon, a.sensitivity) == (b.mechanism, b.epsilon, b.sensitivity)
    if classifier:  # vote counts: each class's count moves by at most the declared sensitivity 1
        assert np.abs(a.query - b.query).max() <= a.sensitivity
        assert np.abs(a.query - b.query).sum(axis=1).max() <= 2
    elif a.mechanism == "laplace":  # the means of the block answers, one per query
        assert np.abs(a.query - b.query).sum() <= a.sensitivity + 1e-12
        assert a.epsilon == pytest.approx(40 * model.epsilon)
    else:  # block answers: the same one block (column) differs, for every query
        changed = np.flatnonzero(np.any(a.query != b.query, axis=0))
        assert len(changed) <= 1
        assert a.query.min() >= 0 and a.query.max() <= 1


def test_every_answered_query_is_counted():
    X, y = _data(False)
    model = SubsampleAggregateRegressor(n_blocks=10, epsilon=0.25, random_state=0).fit(X, y)
    assert (model.epsilon_spent_, model.queries_answered_) == (0.0, 0)
    model.predict(X[:8])
    model.predict(X[:4])
    assert (model.queries_answered_, model.epsilon_spent_) == (12, 3.0)
    assert model.query_cost(10) == (2.5, 0.0)


@pytest.mark.parametrize(
    "student",
    [
        SubsampleAggregateStudentRegressor(n_queries=30, n_blocks=9),
        SubsampleAggregateStudentClassifier(n_queries=30, n_blocks=9, classes=[0, 1]),
    ],
    ids=lambda s: type(s).__name__,
)
def test_the_student_pays_once_for_its_labels(student):
    classifier = isinstance(student, SubsampleAggregateStudentClassifier)
    X, y = _data(classifier)
    with record_mechanism_calls() as recorder:
        fitted = clone(student).set_params(epsilon=1.5, random_state=2).fit(X, y)
    histograms, (labels,) = recorder.calls[:-1], recorder.calls[-1:]
    # A tenth of ε on one noisy histogram per feature (each record in one bin of each), the rest on 30 labels.
    assert [c.mechanism for c in histograms] == ["laplace"] * 3 and all(c.sensitivity == 1.0 for c in histograms)
    assert sum(c.epsilon for c in histograms) == pytest.approx(0.15)
    assert labels.query.shape[0] == 30 and labels.epsilon * 30 == pytest.approx(1.35)
    assert fitted.epsilon_spent_ == 1.5
    # The released student keeps no block model, no teacher, nothing fitted on the private rows.
    kept = {name: value for name, value in vars(fitted).items() if name.endswith("_")}
    assert set(kept) <= {"n_features_in_", "student_", "n_labels_", "epsilon_spent_", "delta_spent_", "classes_"}
    with record_mechanism_calls() as recorder:
        fitted.predict(X)
    assert recorder.calls == []  # answering with the student is free: post-processing


def test_the_student_is_a_model_file_a_buyer_can_open():
    X, y = _data(True)
    student = SubsampleAggregateStudentClassifier(n_queries=20, n_blocks=5, classes=["no", "yes"], random_state=0)
    student.fit(X, np.array(["no", "yes"])[y])
    opened = load_model(model_bytes(student, read_from_data=[]))
    np.testing.assert_array_equal(opened.predict(X[:50]), student.predict(X[:50]))


def test_public_queries_are_used_as_given_and_get_all_of_epsilon():
    X, y = _data(False)
    queries = np.random.default_rng(5).random((12, 3))
    with record_mechanism_calls() as recorder:
        student = SubsampleAggregateStudentRegressor(queries=queries, n_blocks=5, random_state=0).fit(X, y)
    assert student.n_labels_ == 12 and [c.mechanism for c in recorder.calls] == ["smooth_median"]
    assert recorder.calls[0].epsilon * 12 == pytest.approx(1.0)
    with pytest.raises(ValueError, match="queries"):
        SubsampleAggregateStudentRegressor(queries=queries[:, :2]).fit(X, y)


# --- whole-model neighbouring tests ------------------------------------------------------
#
# Regression: 30 records of target 0 in k = 3 blocks all answer 0, so the median's local
# sensitivity is 0; one record of target 1 moves one block's answer. A variant that scales the
# noise to the local sensitivity (β = "infinite") answers exactly 0 on D and is caught.
# Classification: one block (k = 1) whose most frequent label flips when a record is added. A
# vote without noise always answers that label and is caught.

#: Sized by power (α = 1e-6, unchanged; both were 2,000): the teacher with noise for the local sensitivity
#: shows a loss of 0.49-0.52 at 500 runs for seeds 0-2 (tolerance 0.50, not always caught), so it gets
#: 1,200 (tolerance 0.32); the vote without noise shows a loss of 1.0 at 500 (tolerance 0.47).
REGRESSION_RUNS = 1_200
VOTE_RUNS = 500


class LocalSensitivityMedian(SmoothMedian):
    """Deliberately broken: β so large that only the local sensitivity counts."""

    @property
    def beta(self) -> float:
        return 1e6


class LocalSensitivityTeacher(SubsampleAggregateRegressor):
    def mechanism(self):
        return LocalSensitivityMedian(self.epsilon, self.delta, random_state=self._noise)


class NoiselessVote(SubsampleAggregateClassifier):
    """Deliberately broken: the most voted class, without noise."""

    def predict(self, X):
        return self._decode(np.argmax(self.votes(self._check_predict_input(X)), axis=1))


def _regression_loss(cls):
    X = np.full((30, 1), 0.5)
    d, d_prime = (X, np.zeros(30)), (np.vstack([X, [[0.5]]]), np.append(np.zeros(30), 1.0))

    def release(data, rng):
        model = cls(estimator=DummyRegressor(), n_blocks=3, epsilon=1.0, random_state=rng)
        return model.fit(*data).predict([[0.5]])[0]

    return neighbouring_privacy_loss(release, d, d_prime, 1.0, REGRESSION_RUNS, edges=[1e-9, 0.05, 0.2], seed=1)


def _vote_loss(cls):
    d, d_prime = (np.array([[0.5]]), np.array([1])), (np.array([[0.5], [0.5]]), np.array([1, 0]))

    def release(data, rng):
        model = cls(
            estimator=DummyClassifier(strategy="most_frequent"), n_blocks=1, epsilon=1.0, classes=[0, 1], random_state=rng
        )
        return int(model.fit(*data).predict([[0.5]])[0])

    return neighbouring_privacy_loss(release, d, d_prime, 1.0, VOTE_RUNS, n_outcomes=2, seed=2)


def test_the_teachers_answer_stays_within_epsilon():
    assert_within_epsilon(_regression_loss(SubsampleAggregateRegressor))


def test_the_privacy_test_catches_noise_scaled_to_the_local_sensitivity():
    assert_exceeds_epsilon(_regression_loss(LocalSensitivityTeacher))


def test_the_noisy_vote_stays_within_epsilon():
    assert_within_epsilon(_vote_loss(SubsampleAggregateClassifier))


def test_the_privacy_test_catches_a_vote_without_noise():
    assert_exceeds_epsilon(_vote_loss(NoiselessVote))


# --- the ledger ------------------------------------------------------------------------------


def _design(task: str) -> Design:
    X, y = _data(task == "classification", n=800)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=y if task == "regression" else np.array(["no", "yes"])[y])
    schema = Schema.from_dict(
        {
            "columns": [
                *({"name": c, "role": "feature", "kind": "numeric", "lower": 0, "upper": 1} for c in "abc"),
                {"name": "target", "role": "target", "kind": "numeric", "lower": 0, "upper": 1}
                if task == "regression"
                else {"name": "target", "role": "target", "kind": "categorical", "categories": ["no", "yes"]},
            ]
        }
    )
    return Design.from_table(frame, schema)


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_answer_queries_charges_every_answered_query(task):
    design = _design(task)
    ledger = BudgetLedger("queries", total_epsilon=5.0, path=":memory:")
    answered = answer_queries(design, design.X[:6], 0.5, ledger, n_blocks=20, seed=0)
    assert len(answered.answers) == 6 and answered.epsilon == 3.0
    assert ledger.spent == pytest.approx(3.0)
    (spend,) = ledger.spends()
    assert "6 queries" in spend.label and spend.released == "6 answered queries"


def test_answer_queries_refuses_a_batch_over_budget_and_charges_nothing():
    design = _design("regression")
    ledger = BudgetLedger("queries", total_epsilon=2.0, path=":memory:")
    with pytest.raises(BudgetExceededError):
        answer_queries(design, design.X[:5], 0.5, ledger, n_blocks=20, seed=0)
    assert ledger.spent == 0.0
    answered = answer_queries(design, design.X[:4], 0.5, ledger, n_blocks=20, seed=0)  # exactly what is left
    assert len(answered.answers) == 4 and ledger.remaining == pytest.approx(0.0)


def test_answer_queries_with_laplace_noise_charges_delta_per_query():
    design = _design("regression")
    ledger = BudgetLedger("queries", total_epsilon=5.0, total_delta=1e-5, path=":memory:")
    answer_queries(design, design.X[:4], 0.5, ledger, delta_per_query=1e-6, n_blocks=20, seed=0)
    assert ledger.spends()[0].delta == pytest.approx(4e-6)
    with pytest.raises(BudgetExceededError, match="δ"):
        answer_queries(design, design.X[:7], 0.1, ledger, delta_per_query=1e-6, n_blocks=20, seed=0)


def test_answer_queries_refuses_a_delta_for_a_classifiers_pure_vote():
    design = _design("classification")
    ledger = BudgetLedger("queries", total_epsilon=5.0, total_delta=1e-5, path=":memory:")
    with pytest.raises(ValueError, match="pure"):
        answer_queries(design, design.X[:4], 0.5, ledger, delta_per_query=1e-6, n_blocks=20, seed=0)
    assert ledger.spent == 0.0


# --- accuracy at large ε, and the scikit-learn contract --------------------------------------


def test_teachers_are_accurate_at_large_epsilon():
    X, y = _data(False, n=6000)
    answers = SubsampleAggregateRegressor(epsilon=50.0, n_blocks=30, random_state=0).fit(X, y).predict(X[:300])
    assert np.abs(answers - y[:300]).mean() < 0.08
    Xc, yc = _data(True, n=6000)
    labels = (
        SubsampleAggregateClassifier(epsilon=50.0, n_blocks=30, classes=[0, 1], estimator=LogisticRegression(), random_state=0)
        .fit(Xc, yc)
        .predict(Xc[:300])
    )
    assert np.mean(labels == yc[:300]) > 0.9


def test_students_are_accurate_at_large_epsilon():
    X, y = _data(False, n=6000)
    student = SubsampleAggregateStudentRegressor(epsilon=5000.0, n_queries=300, n_blocks=30, random_state=0).fit(X, y)
    assert np.abs(student.predict(X) - y).mean() < 0.1
    Xc, yc = _data(True, n=6000)
    student = SubsampleAggregateStudentClassifier(epsilon=5000.0, n_queries=300, n_blocks=30, classes=[0, 1], random_state=0)
    assert np.mean(student.fit(Xc, yc).predict(Xc) == yc) > 0.85


def test_query_points_follow_the_noisy_histograms_of_the_features():
    rng = np.random.default_rng(0)
    X_unit = np.column_stack([np.where(rng.random(5000) < 0.9, 0.0, rng.random(5000)), rng.integers(0, 4, 5000) / 3])
    points = marginal_queries(X_unit, 2000, {1: 4}, 10.0, np.random.default_rng(1), np.random.default_rng(2))
    assert np.mean(points[:, 0] < 1 / 32) > 0.8  # mostly where the long-tailed feature's rows are, not uniform
    assert set(np.round(points[:, 1] * 3, 9)) <= {0.0, 1.0, 2.0, 3.0}  # categories stay declared codes
