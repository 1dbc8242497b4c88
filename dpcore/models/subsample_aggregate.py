"""Subsample and aggregate: any estimator fitted on secret disjoint blocks, answers released privately.

Two forms (algorithms.md §10.2, after the thesis's chapter 3 and Nissim, Raskhodnikova & Smith 2007):

* the **teachers**, :class:`SubsampleAggregateRegressor` and :class:`SubsampleAggregateClassifier`,
  answer queries; every answered query spends ``epsilon`` (and ``delta``) again. They are never
  released themselves (their block models are not private): the engine's
  :func:`dpcore.training.answer_queries` checks the budget, charges it per query and only then
  returns the answers.
* the **students** (:mod:`dpcore.models.student`) label a query set once through a teacher,
  paying for every label, and keep only a model trained on those noisy labels.

Blocks. Each record is put in one of ``n_blocks`` blocks by an independent uniform draw from a
secret generator (equivalently: records sorted by secret random keys, cut at fixed, data-independent
key thresholds). Cutting a shuffled table into chunks of ``n/k`` rows would not do: the chunk
boundaries depend on the private ``n``, and adding one record would shift every later chunk. With
independent draws, a neighbouring table with one record more is coupled with the same draws for
every other record plus one draw for the new one, so **exactly one block changes, by one record**,
and ``n_blocks`` is a public number that never depends on the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dpcore.i18n import N_
from dpcore.mechanisms import Exponential, Laplace
from dpcore.mechanisms.smooth_median import SmoothMedian
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.validation import Bounds, RandomStateLike, check_delta, check_epsilon, check_positive_int, round_up_epsilon

# Chosen on Adult and California Housing (about 20 000-40 000 rows, 100-300 rows per block):
# many blocks make the median's smooth sensitivity small (the answers near the median crowd
# together), while shallow trees still learn something from a few hundred rows.
DEFAULT_BLOCKS = 100
AGGREGATES = ("median", "mean")


def assign_blocks(n_rows: int, n_blocks: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Each row's secret block: an independent uniform draw from ``0 … n_blocks − 1`` (see the module's note)."""
    return rng.integers(0, n_blocks, size=n_rows)


class _Teacher(DPEstimatorMixin, ABC):
    """Shared by the two teachers: the blocks, their fits, and the per-query bookkeeping."""

    estimator: BaseEstimator | None
    n_blocks: int
    delta: float
    block_models_: list[BaseEstimator | None]

    @abstractmethod
    def _default_estimator(self) -> BaseEstimator:
        """The model fitted on every block when none is given."""

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
        self._set_spent(*self.query_cost(self.queries_answered_))

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
        more usually less noise than the median's smooth bound (benchmarks/README.md, "Subsample and aggregate").
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

    privacy_summary = NEIGHBOURS + N_(
        "Each record is in one of k secret blocks, so it changes one of the k block answers to a query; "
        "their median is released with noise scaled to its smooth sensitivity (Nissim, Raskhodnikova and Smith 2007) "
        "or their mean with Laplace noise (sensitivity 1/k), ε-DP (or (ε, δ)-DP) per answered query, paid for every time."
    )

    def __init__(
        self,
        *,
        estimator: BaseEstimator | None = None,
        n_blocks: int = DEFAULT_BLOCKS,
        epsilon: float = 1.0,
        delta: float = 0.0,
        aggregate: str = "median",
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
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
    over the declared classes with the vote counts as utility (sensitivity 1; sampled exactly,
    :func:`~dpcore.mechanisms.exponential.exact_choice`), ε-DP per answered query; ``m`` answers spend ``m·ε``. A block that cannot
    fit (empty, one label where the estimator needs two) abstains, which also moves one count by
    at most 1.
    """

    privacy_summary = NEIGHBOURS + N_(
        "Each record is in one of k secret blocks, so it changes one block's vote on a query by at most one; "
        "the answer is drawn by the exponential mechanism over the declared classes with the vote counts as utility "
        "(sensitivity 1), ε-DP per answered query, and every answered query is paid for again."
    )

    def __init__(
        self,
        *,
        estimator: BaseEstimator | None = None,
        n_blocks: int = DEFAULT_BLOCKS,
        epsilon: float = 1.0,
        delta: float = 0.0,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
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


def is_teacher(model: object) -> bool:
    """Whether ``model`` answers queries at a price per query (and so must never be released as it is)."""
    return isinstance(model, _Teacher)
