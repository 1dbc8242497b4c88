"""Baselines to compare against: diffprivlib's DP models, DP-EBM, and non-private scikit-learn.

Every DP baseline is given its domain from the schema (bounds, classes, data norm), so none
of them reads it from the data or raises ``PrivacyLeakWarning``. Two diffprivlib 0.6.6 traps
are handled here: its random forest assigns random leaf labels unless labels are the
integers 0…K−1 (so labels are always encoded and decoded around it), and its
``LogisticRegression`` needs scikit-learn ≤ 1.7.2 (pinned in requirements.txt).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, clone
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted

from dpcore.validation import Bounds, RandomStateLike, check_bounds, check_random_state


class DeclaredBoundsScaler(TransformerMixin, BaseEstimator):
    """Scale features to [0, 1] with *declared* bounds (clipping), unlike MinMaxScaler which reads the data."""

    def __init__(self, *, bounds: Bounds | None = None) -> None:
        self.bounds = bounds

    def fit(self, X: ArrayLike, y: object = None) -> Self:
        X = np.asarray(X, dtype=float)
        self.n_features_in_ = X.shape[1]
        self.lower_, self.upper_ = check_bounds(self.bounds, self.n_features_in_)
        return self

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        unit = (np.asarray(X, dtype=float) - self.lower_) / (self.upper_ - self.lower_)
        return np.clip(np.where(np.isnan(unit), 0.5, unit), 0.0, 1.0)


class EncodedLabelClassifier(ClassifierMixin, BaseEstimator):
    """Fit ``estimator`` on label codes 0…K−1 of the declared ``classes`` and decode its predictions.

    Rows whose label is not declared are dropped. This is how diffprivlib's random forest
    must be called: with other labels it silently assigns random leaf labels.
    """

    def __init__(self, *, estimator: Any = None, classes: Sequence[Any] | None = None) -> None:
        self.estimator = estimator
        self.classes = classes

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        if self.classes is None:  # was list(None): the same TypeError, without saying why
            raise TypeError("classes must be declared: the labels come from the declaration, never from the data")
        self.classes_ = np.asarray(list(self.classes))
        codes = _codes(self.classes_, y)
        known = codes >= 0
        self.estimator_ = clone(self.estimator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.estimator_.fit(np.asarray(X)[known], codes[known])
        return self

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        check_is_fitted(self)
        return self.classes_[np.asarray(self.estimator_.predict(X), dtype=int)]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        proba = self.estimator_.predict_proba(X)
        full = np.zeros((proba.shape[0], len(self.classes_)))
        full[:, np.asarray(self.estimator_.classes_, dtype=int)] = proba
        return full


def _codes(classes: np.ndarray, y: ArrayLike) -> NDArray[np.int64]:
    import pandas as pd

    return pd.Index(classes).get_indexer(np.asarray(y)).astype(np.int64)


class PartitionedForestRegressor(RegressorMixin, BaseEstimator):
    """Non-private partitioned forest (paper A's "Python_Forest"): one scikit-learn tree per disjoint part."""

    def __init__(
        self,
        *,
        n_estimators: int = 25,
        max_depth: int = 5,
        min_samples_split: int = 20,
        min_samples_leaf: int = 10,
        random_state: RandomStateLike = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        rng = check_random_state(self.random_state)
        part = rng.integers(0, self.n_estimators, size=len(y))
        self.estimators_ = [
            DecisionTreeRegressor(
                max_depth=self.max_depth, min_samples_split=self.min_samples_split, min_samples_leaf=self.min_samples_leaf
            ).fit(X[part == k], y[part == k])
            for k in range(self.n_estimators)
            if np.any(part == k)
        ]
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        return np.mean([tree.predict(X) for tree in self.estimators_], axis=0)


def scaled(estimator: Any, bounds: Bounds | None) -> Any:
    """``estimator`` behind a declared-bounds scaler (for linear models and DP-EBM)."""
    return make_pipeline(DeclaredBoundsScaler(bounds=bounds), estimator)


def unit_target(regressor: Any, target_bounds: Bounds | None) -> Any:
    """``regressor`` fitted on the target scaled to [0, 1] by declared bounds, predicting in original units."""
    from sklearn.compose import TransformedTargetRegressor

    (lower,), (upper,) = check_bounds(target_bounds, 1, name="target_bounds")
    span = upper - lower
    return TransformedTargetRegressor(
        regressor=regressor,
        func=lambda y: np.clip((y - lower) / span, 0.0, 1.0),
        inverse_func=lambda z: lower + z * span,
        check_inverse=False,
    )
