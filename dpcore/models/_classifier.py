"""Prediction and export shared by the DP tree classifiers."""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin

from dpcore.backends import LocalRows, Rows
from dpcore.models._base import DeclaredClassesMixin, DPEstimatorMixin
from dpcore.models._export import TreeRecordsMixin
from dpcore.models._forest import class_probabilities, ensemble_leaf_values
from dpcore.models._tree import TreeArrays


class TreeEnsembleClassifier(TreeRecordsMixin, DeclaredClassesMixin, ClassifierMixin, DPEstimatorMixin):
    """``predict_proba`` averages each tree's leaf distribution from its noisy class counts."""

    trees_: list[TreeArrays]

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Grow the trees on ``X, y`` spending ``epsilon`` (labels not in ``classes`` are dropped)."""
        X, y = self._check_fit_input(X, y, classifier=True)
        self._encode_labels(y)  # classes_: the declared ones, or (with a warning) those in y
        return self._fit_rows(LocalRows(X, y))

    def fit_rows(self, rows: Rows) -> Self:
        """Fit on a backend's rows; the classes must be declared (rows are never read for their labels)."""
        if self.classes is None:
            raise ValueError("declare the classes (classes=[...]) to fit on a backend's rows: they are never read from the data")
        self._encode_labels(np.empty(0))  # classes_ from the declaration, checked
        return super().fit_rows(rows)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        return class_probabilities(ensemble_leaf_values(self.trees_, X_unit)).mean(axis=1)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        proba = self.predict_proba(X)
        return self._decode(np.argmax(proba, axis=1))

    @property
    def n_leaves_(self) -> int:
        return sum(t.n_leaves for t in self.trees_)
