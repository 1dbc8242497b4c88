"""Subsample and aggregate: any estimator fitted on secret disjoint blocks, answers released privately.

Two forms (algorithms.md §10.2, after the thesis's chapter 3 and Nissim, Raskhodnikova & Smith 2007):

* the **teachers**, :class:`SubsampleAggregateRegressor` and :class:`SubsampleAggregateClassifier`,
  answer queries; every answered query spends ``epsilon`` (and ``delta``) again. They are never
  released themselves (their block models are not private): the engine's
  :func:`dpcore.training.answer_queries` checks the budget, charges it per query and only then
  returns the answers.
* the **students**, :class:`SubsampleAggregateStudentRegressor` and
  :class:`SubsampleAggregateStudentClassifier`, label a public (or synthetic) query set once through
  a teacher, paying for every label, and keep only a model trained on those noisy labels: the
  student is the release, and everything about it is post-processing of the paid-for labels.

Blocks. Each record is put in one of ``n_blocks`` blocks by an independent uniform draw from a
secret generator (equivalently: records sorted by secret random keys, cut at fixed, data-independent
key thresholds). Cutting a shuffled table into chunks of ``n/k`` rows would not do: the chunk
boundaries depend on the private ``n``, and adding one record would shift every later chunk. With
independent draws, a neighbouring table with one record more is coupled with the same draws for
every other record plus one draw for the new one, so **exactly one block changes, by one record**,
and ``n_blocks`` is a public number that never depends on the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dpcore.mechanisms import Exponential, Laplace
from dpcore.mechanisms.smooth_median import SmoothMedian
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.validation import Bounds, RandomStateLike, check_delta, check_epsilon, check_positive_int, round_up_epsilon

# Chosen on Adult and California Housing (about 20 000-40 000 rows, 100-300 rows per block):
# many blocks make the median's smooth sensitivity small (the answers near the median crowd
# together), while shallow trees still learn something from a few hundred rows.
DEFAULT_BLOCKS = 100
DEFAULT_QUERIES = 100
# The share of the student's ε that draws its query points from noisy feature histograms, and their bins.
DEFAULT_QUERY_SHARE = 0.1
MARGINAL_BINS = 32
AGGREGATES = ("median", "mean")
# The student averages the noisy labels of its 15 nearest query points: label noise averages out, and a
# nearest-neighbour model is stored as plain arrays that a buyer's model file loader trusts.
STUDENT_NEIGHBOURS = 15


def assign_blocks(n_rows: int, n_blocks: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Each row's secret block: an independent uniform draw from ``0 … n_blocks − 1`` (see the module's note)."""
    return rng.integers(0, n_blocks, size=n_rows)


def marginal_queries(X_unit: NDArray[np.float64], n_queries: int, categorical_levels: Mapping[int, int] | None,
                     epsilon: float, structure: np.random.Generator, noise: np.random.Generator) -> NDArray[np.float64]:
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


class _Teacher(DPEstimatorMixin):
    """Shared by the two teachers: the blocks, their fits, and the per-query bookkeeping."""

    estimator: BaseEstimator | None
    n_blocks: int
    delta: float
    block_models_: list[BaseEstimator | None]

    def _default_estimator(self) -> BaseEstimator:
        raise NotImplementedError

    def _fit_blocks(self, X_unit: NDArray[np.float64], y: NDArray[Any], rng: np.random.Generator) -> None:
        check_positive_int(self.n_blocks, "n_blocks", minimum=1)
        check_delta(self.delta)
        template = self.estimator if self.estimator is not None else self._default_estimator()
        # Each block model's own randomness (a tree's tie-breaking) is seeded from the secret stream, drawn
        # before the blocks so no record's block depends on it: a block's model is a function of its records.
        seeds = rng.integers(0, 2**31 - 1, size=self.n_blocks)
        blocks = assign_blocks(len(y), self.n_blocks, rng)
        self.block_models_ = []
        for block in range(self.n_blocks):  # one fit per block, never a loop over records
            rows = blocks == block
            self.block_models_.append(_fit_or_none(template, X_unit[rows], y[rows], int(seeds[block])))
        self.queries_answered_ = 0
        self._set_spent(0.0)

    def _charge(self, n_queries: int) -> None:
        """Every answered query spends ``epsilon`` and ``delta`` again (sequential composition)."""
        self.queries_answered_ += n_queries
        self.epsilon_spent_ = round_up_epsilon(self.queries_answered_ * self.epsilon)
        self.delta_spent_ = float(self.queries_answered_ * self.delta)

    def query_cost(self, n_queries: int) -> tuple[float, float]:
        """The (ε, δ) that answering ``n_queries`` queries spends: each one is paid for (basic composition)."""
        return round_up_epsilon(n_queries * check_epsilon(self.epsilon)), float(n_queries * self.delta)


def _fit_or_none(template: BaseEstimator, X: NDArray[np.float64], y: NDArray[Any], seed: int) -> BaseEstimator | None:
    """A block's fitted model, or ``None`` when its records cannot fit one (empty, one class...).

    ``None`` answers a public fallback. Whether a fit fails depends on that block's records only,
    so one record still changes at most one block's answer.
    """
    if len(y) == 0:
        return None
    model = clone(template)
    if "random_state" in model.get_params(deep=False):
        model.set_params(random_state=seed)
    try:
        return model.fit(X, y)
    except ValueError:
        return None


class SubsampleAggregateRegressor(TargetScalingMixin, RegressorMixin, _Teacher):
    r"""Answer regression queries with the noisy median of ``n_blocks`` models fitted on secret blocks.

    Parameters
    ----------
    estimator : scikit-learn regressor, optional
        Fitted once per block on the features scaled to [0, 1] by their declared bounds and the
        target scaled to [0, 1]. Default: scikit-learn's ``DecisionTreeRegressor(max_depth=5,
        min_samples_leaf=10)`` — the block models need no privacy of their own.
    n_blocks : int, default 100
        The public number of blocks ``k``.
    epsilon : float, default 1.0
        ε **per answered query**.
    delta : float, default 0.0
        δ per answered query (median only). 0: pure ε-DP with heavy-tailed noise; > 0: Laplace
        noise, (ε, δ)-DP (approximate).
    aggregate : {"median", "mean"}, default "median"
        ``"median"``: the thesis's smooth-sensitivity median. ``"mean"``: the mean of the ``k``
        clipped answers with Laplace noise of scale ``1/(k·ε)`` (one answer of ``k`` in [0, 1]
        changes, so the mean moves by at most ``1/k``): pure ε-DP, and with a hundred blocks or
        more usually less noise than the median's smooth bound (see benchmarks/README.md §10).
    bounds, target_bounds : declared bounds of the features and of the target.
    random_state : None, int or Generator

    Notes
    -----
    Privacy argument. One record is in one block (see the module's note), so adding or removing
    it changes one block's model and hence, for each query, one of the ``k`` answers; the answers
    are clipped to the declared target bounds. The median of the answers is released with noise
    scaled to its β-smooth sensitivity (:class:`~dpcore.mechanisms.SmoothMedian`, NRS 2007,
    Lemmas 2.6, 2.7 and 2.9): ε-DP for ``delta = 0``, (ε, δ)-DP otherwise, per query; or their
    mean with Laplace noise at sensitivity ``1/k`` (``aggregate="mean"``), ε-DP. ``m``
    queries answered spend ``m·ε`` and ``m·δ`` (basic composition): ``predict`` counts them in
    ``queries_answered_`` and ``epsilon_spent_``. Fitting alone releases nothing.
    """

    privacy_summary = (
        NEIGHBOURS + "Each record is in one of k secret blocks, so it changes one of the k block answers to a query; "
        "their median is released with noise scaled to its smooth sensitivity (Nissim, Raskhodnikova and Smith 2007) "
        "or their mean with Laplace noise (sensitivity 1/k), ε-DP (or (ε, δ)-DP) per answered query, paid for every time."
    )

    def __init__(self, *, estimator: BaseEstimator | None = None, n_blocks: int = DEFAULT_BLOCKS, epsilon: float = 1.0,
                 delta: float = 0.0, aggregate: str = "median", bounds: Bounds | None = None,
                 target_bounds: Bounds | None = None, random_state: RandomStateLike = None) -> None:
        self.estimator = estimator
        self.n_blocks = n_blocks
        self.epsilon = epsilon
        self.delta = delta
        self.aggregate = aggregate
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.random_state = random_state

    def _default_estimator(self) -> BaseEstimator:
        return DecisionTreeRegressor(max_depth=5, min_samples_leaf=10)

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {self.aggregate!r}")
        if self.aggregate == "mean" and self.delta != 0:
            raise ValueError("the noisy mean is pure ε-DP: delta must be 0")
        structure, self._noise = self._random_streams()
        self._fit_blocks(self._unit(X), self._unit_target(y), structure)
        return self

    def block_answers(self, X_unit: NDArray[np.float64]) -> NDArray[np.float64]:
        """Every block's answer to every query, ``(queries, blocks)``, clipped to [0, 1]; a failed block answers 0.5."""
        answers = np.full((X_unit.shape[0], len(self.block_models_)), 0.5)
        for b, model in enumerate(self.block_models_):
            if model is not None:
                answers[:, b] = model.predict(X_unit)
        return np.clip(np.nan_to_num(answers, nan=0.5), 0.0, 1.0)

    def mechanism(self) -> SmoothMedian:
        return SmoothMedian(self.epsilon, self.delta, random_state=self._noise)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """One private answer per row of ``X``; each row spends ``epsilon`` (and ``delta``)."""
        X_unit = self._check_predict_input(X)
        answers = self.block_answers(X_unit)
        if not len(X_unit):
            noisy = np.zeros(0)
        elif self.aggregate == "mean":
            # One record moves each of the m means by at most 1/k, so m/k in L1: Laplace at m·ε (what the m
            # answers cost anyway) adds noise of scale 1/(k·ε) to each, in one vectorised call.
            m, k = answers.shape
            noisy = np.clip(Laplace(self.epsilon * m, m / k, self._noise).randomise(answers.mean(axis=1)), 0.0, 1.0)
        else:
            noisy = self.mechanism().randomise(answers)
        self._charge(len(X_unit))
        return self._from_unit_target(noisy)


class SubsampleAggregateClassifier(DeclaredClassesMixin, ClassifierMixin, _Teacher):
    r"""Answer classification queries with a noisy vote of ``n_blocks`` classifiers fitted on secret blocks.

    Parameters
    ----------
    estimator : scikit-learn classifier, optional
        Fitted once per block on the features scaled to [0, 1]. Default: scikit-learn's
        ``DecisionTreeClassifier(max_depth=5, min_samples_leaf=10)``.
    n_blocks : int, default 100
    epsilon : float, default 1.0
        ε **per answered query**.
    delta : float, default 0.0
        Kept at 0: the vote is pure ε-DP (accepted so the registry can treat both teachers alike).
    classes : list, optional
        Declared labels (read from the data with a :class:`PrivacyLeakWarning` otherwise).
    bounds, random_state : as for the other models.

    Notes
    -----
    Privacy argument. One record changes one block's model (module note), hence one block's vote
    per query: a class's vote count moves by at most 1. The answer is the exponential mechanism
    over the declared classes with the vote counts as utility (sensitivity 1; report-noisy-max
    with Gumbel noise), ε-DP per answered query; ``m`` answers spend ``m·ε``. A block that cannot
    fit (empty, one label where the estimator needs two) abstains, which also moves one count by
    at most 1.
    """

    privacy_summary = (
        NEIGHBOURS + "Each record is in one of k secret blocks, so it changes one block's vote on a query by at most one; "
        "the answer is drawn by the exponential mechanism over the declared classes with the vote counts as utility "
        "(sensitivity 1), ε-DP per answered query, and every answered query is paid for again."
    )

    def __init__(self, *, estimator: BaseEstimator | None = None, n_blocks: int = DEFAULT_BLOCKS, epsilon: float = 1.0,
                 delta: float = 0.0, bounds: Bounds | None = None, classes: Sequence[Any] | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.estimator = estimator
        self.n_blocks = n_blocks
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.classes = classes
        self.random_state = random_state

    def _default_estimator(self) -> BaseEstimator:
        return DecisionTreeClassifier(max_depth=5, min_samples_leaf=10)

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        if self.delta != 0:
            raise ValueError("the noisy vote is pure ε-DP: delta must be 0")
        codes = self._encode_labels(y)
        known = codes >= 0
        structure, self._noise = self._random_streams()
        self._fit_blocks(self._unit(X)[known], codes[known], structure)
        return self

    def votes(self, X_unit: NDArray[np.float64]) -> NDArray[np.int64]:
        """How many blocks vote for each declared class, ``(queries, classes)``."""
        counts = np.zeros((X_unit.shape[0], len(self.classes_)), dtype=np.int64)
        rows = np.arange(X_unit.shape[0])
        for model in self.block_models_:
            if model is None:
                continue
            vote = np.asarray(model.predict(X_unit)).astype(np.int64)
            valid = (vote >= 0) & (vote < counts.shape[1])
            np.add.at(counts, (rows[valid], vote[valid]), 1)
        return counts

    def mechanism(self) -> Exponential:
        return Exponential(self.epsilon, 1.0, random_state=self._noise)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """One private label per row of ``X``; each row spends ``epsilon``."""
        X_unit = self._check_predict_input(X)
        chosen = np.asarray(self.mechanism().select(self.votes(X_unit)), dtype=np.int64) if len(X_unit) else np.zeros(0, np.int64)
        self._charge(len(X_unit))
        return self._decode(chosen)


class _Student(DPEstimatorMixin):
    """Shared by the two students: the query set, the teacher that labels it once, and the student's fit."""

    n_queries: int
    n_blocks: int
    delta: float
    estimator: BaseEstimator | None
    student: BaseEstimator | None
    queries: ArrayLike | None
    query_share: float
    categorical_levels: Mapping[int, int] | None

    def _query_set(self, X: NDArray[np.float64], structure: np.random.Generator,
                   noise: np.random.Generator) -> tuple[NDArray[np.float64], float]:
        """The query points in the features' units, and the ε left for the labels."""
        epsilon = check_epsilon(self.epsilon)
        if self.queries is not None:
            queries = np.asarray(self.queries, dtype=float)
            if queries.ndim != 2 or queries.shape[1] != self.n_features_in_ or len(queries) == 0:
                raise ValueError("queries must be a non-empty table with one column per feature")
            return queries, epsilon
        if not 0 < self.query_share < 1:
            raise ValueError("query_share must be strictly between 0 and 1")
        unit = marginal_queries(self._unit(X), check_positive_int(self.n_queries, "n_queries"), self.categorical_levels,
                                self.query_share * epsilon, structure, noise)
        return self._lower + unit * (self._upper - self._lower), (1.0 - self.query_share) * epsilon

    def _label_budget(self, epsilon: float, n_labels: int) -> tuple[float, float]:
        """The (ε, δ) of one label: what is left for the labels split evenly over them (basic composition)."""
        return epsilon / n_labels, check_delta(self.delta) / n_labels

    def _finish(self, queries: NDArray[np.float64], labels: NDArray[Any]) -> None:
        template = self.student if self.student is not None else self._default_student(len(labels))
        self.student_ = clone(template).fit(self._unit(queries), labels)
        self.n_labels_ = len(labels)
        self._set_spent(self.epsilon, self.delta)

    def _default_student(self, n_labels: int) -> BaseEstimator:
        raise NotImplementedError


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

    privacy_summary = (
        NEIGHBOURS + "Query points are drawn from noisy feature histograms (a tenth of ε), and a subsample-and-aggregate "
        "teacher (k secret blocks, smooth-sensitivity median) labels each once with an equal share of the rest, so points "
        "and labels are ε-DP (or (ε, δ)-DP) by basic composition; the released student is trained on them only."
    )

    def __init__(self, *, epsilon: float = 1.0, delta: float = 0.0, n_queries: int = DEFAULT_QUERIES,
                 n_blocks: int = DEFAULT_BLOCKS, aggregate: str = "median", estimator: BaseEstimator | None = None,
                 student: BaseEstimator | None = None, queries: ArrayLike | None = None,
                 query_share: float = DEFAULT_QUERY_SHARE, bounds: Bounds | None = None, target_bounds: Bounds | None = None,
                 categorical_levels: Mapping[int, int] | None = None, random_state: RandomStateLike = None) -> None:
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
        teacher = SubsampleAggregateRegressor(estimator=self.estimator, n_blocks=self.n_blocks, epsilon=label_epsilon,
                                              delta=label_delta, aggregate=self.aggregate, bounds=(self._lower, self._upper),
                                              target_bounds=(self._target_lower, self._target_upper), random_state=noise)
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

    privacy_summary = (
        NEIGHBOURS + "Query points are drawn from noisy feature histograms (a tenth of ε), and a subsample-and-aggregate "
        "teacher (k secret blocks, a noisy vote) labels each once with an equal share of the rest, so points and labels "
        "are ε-DP by basic composition; the released student is trained on them only."
    )

    def __init__(self, *, epsilon: float = 1.0, delta: float = 0.0, n_queries: int = DEFAULT_QUERIES,
                 n_blocks: int = DEFAULT_BLOCKS, estimator: BaseEstimator | None = None, student: BaseEstimator | None = None,
                 queries: ArrayLike | None = None, query_share: float = DEFAULT_QUERY_SHARE, bounds: Bounds | None = None,
                 classes: Sequence[Any] | None = None,
                 categorical_levels: Mapping[int, int] | None = None, random_state: RandomStateLike = None) -> None:
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
        teacher = SubsampleAggregateClassifier(estimator=self.estimator, n_blocks=self.n_blocks, epsilon=label_epsilon,
                                               bounds=(self._lower, self._upper), classes=list(self.classes_), random_state=noise)
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


def is_teacher(model: object) -> bool:
    """Whether ``model`` answers queries at a price per query (and so must never be released as it is)."""
    return isinstance(model, _Teacher)
