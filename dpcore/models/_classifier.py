"""Prediction and export shared by the DP tree classifiers."""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin

from dpcore.models._base import DeclaredClassesMixin, DPEstimatorMixin
from dpcore.models._forest import class_probabilities, ensemble_leaf_values


class TreeEnsembleClassifier(DeclaredClassesMixin, ClassifierMixin, DPEstimatorMixin):
    """``predict_proba`` averages each tree's leaf distribution from its noisy class counts."""

    def _fit_codes(self, X, y):
        X, y = self._check_fit_input(X, y, classifier=True)
        codes = self._encode_labels(y)
        known = codes >= 0
        return self._unit(X)[known], codes[known]

    def predict_proba(self, X):
        X_unit = self._check_predict_input(X)
        return class_probabilities(ensemble_leaf_values(self.trees_, X_unit)).mean(axis=1)

    def predict(self, X):
        proba = self.predict_proba(X)
        return self._decode(np.argmax(proba, axis=1))

    def tree_records(self, feature_names=None, tree: int = 0) -> list[dict]:
        """The nodes of the first grown tree block as dicts (noisy class counts at leaves)."""
        names = feature_names if feature_names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        labels = [str(c) for c in self.classes_]
        return self.trees_[tree].to_records(
            names, self._lower, self._upper, lambda v: {label: round(float(c), 1) for label, c in zip(labels, v)}
        )

    @property
    def n_leaves_(self) -> int:
        return sum(t.n_leaves for t in self.trees_)
