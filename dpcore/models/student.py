"""Students of subsample and aggregate: a released model trained on query points labelled once by a private teacher.

The teachers (:mod:`dpcore.models.subsample_aggregate`) answer every query at a price; a student
pays once — for its query points and their labels — and is then post-processing: it may be
released and asked anything. algorithms.md §10.2, the PATE-style variant.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from dpcore.i18n import N_
from dpcore.mechanisms import Laplace
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.models.subsample_aggregate import (
    AGGREGATES,
    DEFAULT_BLOCKS,
    SubsampleAggregateClassifier,
    SubsampleAggregateRegressor,
)
from dpcore.validation import Bounds, RandomStateLike, check_delta, check_epsilon, check_positive_int

DEFAULT_QUERIES = 100
# The share of the student's ε that draws its query points from noisy feature histograms, and their bins.
DEFAULT_QUERY_SHARE = 0.1
MARGINAL_BINS = 32
# The student averages the noisy labels of its 15 nearest query points: label noise averages out, and a
# nearest-neighbour model is stored as plain arrays that a buyer's model file loader trusts.
STUDENT_NEIGHBOURS = 15


def marginal_queries(
    X_unit: NDArray[np.float64],
    n_queries: int,
    categorical_levels: Mapping[int, int] | None,
    epsilon: float,
    structure: np.random.Generator,
    noise: np.random.Generator,
) -> NDArray[np.float64]:
    """Synthetic query points, in [0, 1] per feature, drawn from ε-DP one-way histograms of the features.

    Each feature gets one histogram over data-independent bins (its declared categories, or
    :data:`MARGINAL_BINS` equal bins of the declared range); one record adds 1 to one bin of each
    of the ``d`` histograms, so Laplace noise of scale ``d/ε`` on all of them together is ε-DP (one
    mechanism call per feature at ε/d, sequential composition). The points are then drawn feature
    by feature from the noisy histograms (negative counts read as 0): post-processing. They follow
    each feature's spread (Adult's capital gain is mostly 0) without copying any row.
    """
    n_features = X_unit.shape[1]
    levels = dict(categorical_levels or {})
    laplace = Laplace(epsilon / n_features, 1.0, noise)
    queries = np.empty((n_queries, n_features))
    for j in range(n_features):  # one histogram per feature, never a loop over records
        categories = int(levels.get(j, 0))
        bins = categories if categories > 1 else MARGINAL_BINS
        if categories > 1:
            index = np.rint(X_unit[:, j] * (bins - 1)).astype(np.int64)
        else:
            index = np.minimum((X_unit[:, j] * bins).astype(np.int64), bins - 1)
        counts = np.clip(laplace.randomise(np.bincount(index, minlength=bins)[:bins]), 0.0, None)
        weights = counts / counts.sum() if counts.sum() > 0 else np.full(bins, 1.0 / bins)
        chosen = structure.choice(bins, size=n_queries, p=weights)
        queries[:, j] = chosen / (bins - 1) if categories > 1 else (chosen + structure.random(n_queries)) / bins
    return queries


class _Student(DPEstimatorMixin, ABC):
    """Shared by the two students: the query set, the teacher that labels it once, and the student's fit."""

    n_queries: int
    n_blocks: int
    delta: float
    estimator: BaseEstimator | None
    student: BaseEstimator | None
    queries: ArrayLike | None
    query_share: float
    categorical_levels: Mapping[int, int] | None

    def _query_set(
        self, X: NDArray[np.float64], structure: np.random.Generator, noise: np.random.Generator
    ) -> tuple[NDArray[np.float64], float]:
        """The query points in the features' units, and the ε left for the labels."""
        epsilon = check_epsilon(self.epsilon)
        if self.queries is not None:
            queries = np.asarray(self.queries, dtype=float)
            if queries.ndim != 2 or queries.shape[1] != self.n_features_in_ or len(queries) == 0:
                raise ValueError("queries must be a non-empty table with one column per feature")
            return queries, epsilon
        if not 0 < self.query_share < 1:
            raise ValueError("query_share must be strictly between 0 and 1")
        unit = marginal_queries(
            self._unit(X),
            check_positive_int(self.n_queries, "n_queries"),
            self.categorical_levels,
            self.query_share * epsilon,
            structure,
            noise,
        )
        return self._lower + unit * (self._upper - self._lower), (1.0 - self.query_share) * epsilon

    def _label_budget(self, epsilon: float, n_labels: int) -> tuple[float, float]:
        """The (ε, δ) of one label: what is left for the labels split evenly over them (basic composition)."""
        return epsilon / n_labels, check_delta(self.delta) / n_labels

    def _finish(self, queries: NDArray[np.float64], labels: NDArray[Any]) -> None:
        template = self.student if self.student is not None else self._default_student(len(labels))
        self.student_ = clone(template).fit(self._unit(queries), labels)
        self.n_labels_ = len(labels)
        self._set_spent(self.epsilon, self.delta)

    @abstractmethod
    def _default_student(self, n_labels: int) -> BaseEstimator:
        """The released model trained on the noisy labels when none is given (a public choice of ``n_labels``)."""


_STUDENT_NOTE = """
    Notes
    -----
    Privacy argument. Without ``queries``, a share ``query_share`` of ε draws the ``m`` query
    points from noisy one-way histograms of the features (:func:`marginal_queries`, ε-DP at that
    share); given ``queries`` (a public set), nothing is spent on them. The teacher ({teacher})
    then answers each point once at (ε − that share)/m (and δ/m), so by basic composition the
    points and their labels together are (ε, δ)-DP (ε-DP when δ = 0). The student is fitted on
    the points and the noisy labels only, so it is post-processing: it may be released and
    queried without limit. The teacher and its block models are dropped at the end of ``fit``:
    the fitted student holds none of them.

    Utility: every label costs its share of ε, so the student needs a large ε (tens) before its
    labels carry much; at small ε the teacher's answers per query are the better use of the
    method. ``n_queries = 100`` and ``query_share = 0.1`` were chosen on Adult and California
    Housing. Uniform points in the declared bounds were tried first and fail on long-tailed
    features (on Adult most fell at capital gains no one has, and the student learned the
    teacher's guesses there): the noisy histograms keep the points where the rows are.
"""


class SubsampleAggregateStudentRegressor(TargetScalingMixin, RegressorMixin, _Student):
    """A released regressor trained on public query points labelled once by a subsample-and-aggregate teacher.

    Parameters
    ----------
    epsilon : float, default 1.0
        Total ε of all the labels.
    delta : float, default 0.0
        Total δ of the labels: 0 for pure ε-DP (heavy-tailed noise), > 0 for Laplace noise, approximate DP.
    n_queries : int, default 100
        How many synthetic query points are labelled (ignored when ``queries`` is given).
    n_blocks : int, default 100
    aggregate : {"median", "mean"}, default "median"
        How the teacher combines the blocks (see :class:`SubsampleAggregateRegressor`).
    estimator : scikit-learn regressor, optional
        The teacher's block model (see :class:`SubsampleAggregateRegressor`).
    student : scikit-learn regressor, optional
        Fitted on the labelled queries (scaled to [0, 1]). Default: the mean of the 15 nearest
        labelled points (label noise averages out; stored as plain arrays).
    queries : array, optional
        A public query set in the features' own units (then all of ε goes to the labels).
    query_share : float, default 0.1
        Share of ε that draws the query points from noisy feature histograms (without ``queries``).
    bounds, target_bounds, categorical_levels, random_state : as for the other models.
    """ + _STUDENT_NOTE.format(teacher=":class:`SubsampleAggregateRegressor`")

    privacy_summary = NEIGHBOURS + N_(
        "Query points are drawn from noisy feature histograms (a tenth of ε), and a subsample-and-aggregate "
        "teacher (k secret blocks, smooth-sensitivity median) labels each once with an equal share of the rest, so points "
        "and labels are ε-DP (or (ε, δ)-DP) by basic composition; the released student is trained on them only."
    )

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 0.0,
        n_queries: int = DEFAULT_QUERIES,
        n_blocks: int = DEFAULT_BLOCKS,
        aggregate: str = "median",
        estimator: BaseEstimator | None = None,
        student: BaseEstimator | None = None,
        queries: ArrayLike | None = None,
        query_share: float = DEFAULT_QUERY_SHARE,
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.n_queries = n_queries
        self.n_blocks = n_blocks
        self.aggregate = aggregate
        self.estimator = estimator
        self.student = student
        self.queries = queries
        self.query_share = query_share
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.categorical_levels = categorical_levels
        self.random_state = random_state

    def _default_student(self, n_labels: int) -> BaseEstimator:
        return KNeighborsRegressor(n_neighbors=min(STUDENT_NEIGHBOURS, n_labels), algorithm="brute")

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        self._unit_target(y)  # checks and records the declared target bounds
        structure, noise = self._random_streams()
        queries, left = self._query_set(X, structure, noise)
        label_epsilon, label_delta = self._label_budget(left, len(queries))
        teacher = SubsampleAggregateRegressor(
            estimator=self.estimator,
            n_blocks=self.n_blocks,
            epsilon=label_epsilon,
            delta=label_delta,
            aggregate=self.aggregate,
            bounds=(self._lower, self._upper),
            target_bounds=(self._target_lower, self._target_upper),
            random_state=noise,
        )
        labels = teacher.fit(X, y).predict(queries)
        self._finish(queries, (labels - self._target_lower) / (self._target_upper - self._target_lower))
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        return self._from_unit_target(np.clip(self.student_.predict(X_unit), 0.0, 1.0))


class SubsampleAggregateStudentClassifier(DeclaredClassesMixin, ClassifierMixin, _Student):
    """A released classifier trained on public query points labelled once by a noisy vote of block classifiers.

    Parameters
    ----------
    epsilon : float, default 1.0
        Total ε of all the labels (the vote is pure ε-DP; ``delta`` stays 0).
    delta : float, default 0.0
    n_queries, n_blocks, estimator, queries, query_share : as for :class:`SubsampleAggregateStudentRegressor`.
    student : scikit-learn classifier, optional
        Default: the majority of the 15 nearest labelled points.
    classes : list, optional
        Declared labels.
    bounds, categorical_levels, random_state : as for the other models.
    """ + _STUDENT_NOTE.format(teacher=":class:`SubsampleAggregateClassifier`")

    privacy_summary = NEIGHBOURS + N_(
        "Query points are drawn from noisy feature histograms (a tenth of ε), and a subsample-and-aggregate "
        "teacher (k secret blocks, a noisy vote) labels each once with an equal share of the rest, so points and labels "
        "are ε-DP by basic composition; the released student is trained on them only."
    )

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 0.0,
        n_queries: int = DEFAULT_QUERIES,
        n_blocks: int = DEFAULT_BLOCKS,
        estimator: BaseEstimator | None = None,
        student: BaseEstimator | None = None,
        queries: ArrayLike | None = None,
        query_share: float = DEFAULT_QUERY_SHARE,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.n_queries = n_queries
        self.n_blocks = n_blocks
        self.estimator = estimator
        self.student = student
        self.queries = queries
        self.query_share = query_share
        self.bounds = bounds
        self.classes = classes
        self.categorical_levels = categorical_levels
        self.random_state = random_state

    def _default_student(self, n_labels: int) -> BaseEstimator:
        return KNeighborsClassifier(n_neighbors=min(STUDENT_NEIGHBOURS, n_labels), algorithm="brute")

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        if self.delta != 0:
            raise ValueError("the noisy vote is pure ε-DP: delta must be 0")
        self._encode_labels(y)  # declared classes (or read with a warning), checked once here
        structure, noise = self._random_streams()
        queries, left = self._query_set(X, structure, noise)
        label_epsilon, _ = self._label_budget(left, len(queries))
        teacher = SubsampleAggregateClassifier(
            estimator=self.estimator,
            n_blocks=self.n_blocks,
            epsilon=label_epsilon,
            bounds=(self._lower, self._upper),
            classes=list(self.classes_),
            random_state=noise,
        )
        labels = teacher.fit(X, y).predict(queries)
        self._finish(queries, pd.Index(self.classes_).get_indexer(pd.Index(labels)).astype(np.int64))
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """The student's class probabilities, one column per declared class (0 for a class no label had)."""
        X_unit = self._check_predict_input(X)
        proba = np.zeros((X_unit.shape[0], len(self.classes_)))
        proba[:, np.asarray(self.student_.classes_, dtype=np.int64)] = self.student_.predict_proba(X_unit)
        return proba

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        return self._decode(np.argmax(self.predict_proba(X), axis=1))


def registry_entries(our_model: Callable[..., Any], parameter: Callable[..., Any]) -> tuple[Any, ...]:
    """The registry's entries for the two students (the registry passes its own builders: no import cycle)."""
    common = (
        parameter(
            "n_queries",
            N_("How many points the private teacher labels; each label costs an equal share of ε."),
            minimum=1,
            maximum=2000,
        ),
        parameter(
            "n_blocks",
            N_("Secret blocks of rows, one teacher model each; more blocks make the noisy median or vote steadier."),
            minimum=3,
            maximum=1000,
        ),
    )
    aggregate = parameter(
        "aggregate",
        N_(
            "median: the thesis's noisy median of the blocks' answers; mean: their noisy mean, usually steadier with many blocks."
        ),
        choices=AGGREGATES,
    )
    return (
        our_model(
            "dp_sa_student_reg",
            N_("DP subsample-and-aggregate student (regressor)"),
            "regression",
            SubsampleAggregateStudentRegressor,
            _SPENDS_REGRESSION,
            (*common, aggregate),
        ),
        our_model(
            "dp_sa_student_clf",
            N_("DP subsample-and-aggregate student (classifier)"),
            "classification",
            SubsampleAggregateStudentClassifier,
            _SPENDS_CLASSIFICATION,
            common,
        ),
    )


_SPENDS_REGRESSION = N_(
    "Spends ε once: a tenth draws points from noisy histograms of the columns, the rest pays a private "
    "teacher (models on secret blocks of rows, a noisy median) to label each point; the student learns "
    "from those labels."
)
_SPENDS_CLASSIFICATION = N_(
    "Spends ε once: a tenth draws points from noisy histograms of the columns, the rest pays a private "
    "teacher (models on secret blocks of rows, a noisy vote) to label each point; the student learns "
    "from those labels."
)
