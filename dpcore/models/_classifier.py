"""Prediction and export shared by the DP tree classifiers."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin

from dpcore.models._base import DeclaredClassesMixin, DPEstimatorMixin
from dpcore.models._export import TreeRecordsMixin
from dpcore.models._forest import class_probabilities, ensemble_leaf_values
from dpcore.models._tree import TreeArrays


class TreeEnsembleClassifier(TreeRecordsMixin, DeclaredClassesMixin, ClassifierMixin, DPEstimatorMixin):
    """``predict_proba`` averages each tree's leaf distribution from its noisy class counts."""

    trees_: list[TreeArrays]

    def _fit_codes(self, X: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        X, y = self._check_fit_input(X, y, classifier=True)
        codes = self._encode_labels(y)
        known = codes >= 0
        return self._unit(X)[known], codes[known]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        return class_probabilities(ensemble_leaf_values(self.trees_, X_unit)).mean(axis=1)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        proba = self.predict_proba(X)
        return self._decode(np.argmax(proba, axis=1))

    @property
    def n_leaves_(self) -> int:
        return sum(t.n_leaves for t in self.trees_)
