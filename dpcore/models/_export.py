"""Grown trees as plain records for display and export: one implementation for every tree model.

A record is a dict per node. Every node has ``id``, ``depth`` and ``noisy_count`` (``None``
where no count was released). An internal node adds ``feature`` (its name), ``threshold`` (in
the feature's original units; a record goes left when its value is ``<= threshold``),
``left`` and ``right`` (child ids). A leaf adds ``leaf=True`` and ``value``: the prediction in
the target's original units (regression; ``None`` if the leaf has none) or the noisy class
counts by label (classification). Everything here reads released values only, so exporting a
tree is post-processing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from dpcore.models._tree import TreeArrays


def tree_records(
    tree: TreeArrays, feature_names: Sequence[str], lower: ArrayLike, upper: ArrayLike, describe_value: Callable[[Any], Any]
) -> list[dict[str, Any]]:
    """The nodes of ``tree`` as dicts in original units (thresholds mapped back by the declared bounds)."""
    lower = np.asarray(lower, dtype=float)
    span = np.asarray(upper, dtype=float) - lower
    records = []
    for i in range(len(tree.feature)):
        f = int(tree.feature[i])
        count = None if np.isnan(tree.noisy_count[i]) else round(float(tree.noisy_count[i]), 1)
        node: dict[str, Any] = {"id": i, "depth": int(tree.depth[i]), "noisy_count": count}
        if f >= 0:
            node.update(
                feature=str(feature_names[f]),
                threshold=float(lower[f] + tree.threshold[i] * span[f]),
                left=int(tree.left[i]),
                right=int(tree.right[i]),
            )
        else:
            node.update(leaf=True, value=describe_value(tree.value[i]))
        records.append(node)
    return records


class TreeRecordsMixin:
    """``tree_records`` for the models that keep their grown trees as :class:`TreeArrays`.

    A single tree or a partitioned forest keeps one ``tree_`` (a forest's trees are its
    roots); the ensembles keep a list ``trees_``, one block of roots per growth call.
    """

    # Set by the estimator this is mixed into (annotations only: no class attributes).
    n_features_in_: int
    tree_: TreeArrays
    _lower: NDArray[np.float64]
    _upper: NDArray[np.float64]
    classes_: NDArray[Any]
    _from_unit_target: Callable[[ArrayLike], NDArray[np.float64]]

    def tree_records(self, feature_names: Sequence[str] | None = None, tree: int = 0) -> list[dict[str, Any]]:
        """Every node of grown tree block ``tree`` as a dict (see the module docstring for the keys).

        Parameters
        ----------
        feature_names : list of str, optional
            Names for the features; default ``x0, x1, …``.
        tree : int, default 0
            Which block of ``trees_`` to export (ensembles); a single tree has only block 0.
        """
        check_is_fitted(self)
        names = feature_names if feature_names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        blocks = self.trees_ if hasattr(self, "trees_") else [self.tree_]
        return tree_records(blocks[tree], names, self._lower, self._upper, self._describe_leaf)

    def _describe_leaf(self, value: Any) -> dict[str, float] | float | None:
        if is_classifier(self):
            return {str(label): round(float(c), 1) for label, c in zip(self.classes_, value)}
        return float(self._from_unit_target(value)) if np.isfinite(value) else None
