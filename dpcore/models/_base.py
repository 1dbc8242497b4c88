"""What every dpcore estimator shares: declared bounds, scaling, labels and random streams."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from dpcore.backends import Rows
from dpcore.exceptions import PrivacyLeakWarning
from dpcore.i18n import N_
from dpcore.mechanisms import COUNT_NOISES, SELECTION_METHODS
from dpcore.validation import Bounds, RandomStateLike, check_bounds, check_epsilon, check_random_state, round_up_epsilon

NEIGHBOURS = N_("Neighbouring datasets differ by one added or removed record. ")


def unit_features(X: ArrayLike, lower: NDArray[np.float64], upper: NDArray[np.float64]) -> NDArray[np.float64]:
    """Declared-bounds scaling into [0, 1], NaN → 0.5 and clipped: what every model counts, on any backend."""
    unit = (np.asarray(X, dtype=float) - lower) / (upper - lower)
    unit[np.isnan(unit)] = 0.5
    return np.clip(unit, 0.0, 1.0, out=unit)


class DPEstimatorMixin(BaseEstimator):
    """Helpers for models whose inputs live in declared bounds.

    ``bounds`` is ``(lower, upper)`` per feature (scalars broadcast), ``None`` meaning [0, 1].
    Features are clipped into the bounds and scaled to [0, 1] before anything is counted,
    so one record's influence is bounded for every dataset. NaN becomes the middle of the
    bounds and ±inf the nearest bound: bad values never reach a sensitivity-bearing sum.

    Every estimator states its privacy argument twice over: in full in its docstring, and in
    two or three plain sentences in the class attribute ``privacy_summary`` (read by model
    cards through :func:`dpcore.models.registry.privacy_summary`). A fitted model exposes
    ``epsilon_spent_`` and ``delta_spent_``.

    ``_parameter_choices`` maps a hyper-parameter to its allowed values; a family adds its own
    (``leaf``, ``sampling``) to the mechanism choices every model shares, so this base class
    imports nothing from the model modules.
    """

    _parameter_choices: ClassVar[dict[str, tuple[Any, ...]]] = {}
    privacy_summary: ClassVar[str]

    # Hyper-parameters every estimator has (set in its __init__) and state every fit learns.
    epsilon: float
    bounds: Bounds | None
    random_state: RandomStateLike
    n_features_in_: int
    _lower: NDArray[np.float64]
    _upper: NDArray[np.float64]
    epsilon_spent_: float
    delta_spent_: float

    def _check_fit_input(self, X: ArrayLike, y: ArrayLike, classifier: bool) -> tuple[NDArray[np.float64], NDArray[Any]]:
        X_valid, y_valid = validate_data(self, X, y, dtype=float, ensure_all_finite=False, y_numeric=not classifier)
        if classifier:
            check_classification_targets(y_valid)
        check_epsilon(self.epsilon)
        self._lower, self._upper = check_bounds(self.bounds, self.n_features_in_)
        return X_valid, y_valid

    def fit_rows(self, rows: Rows) -> Self:
        """Fit on rows wherever they live (:class:`~dpcore.backends.Rows`: numpy arrays or a Spark table).

        ``rows`` carry the features in their declared units and the raw target, as ``fit(X, y)``
        takes them; the fitted model is the one ``fit`` gives on the same rows with the same row
        keys. The domain (bounds, classes) comes from the declarations only.
        """
        check_epsilon(self.epsilon)
        self.n_features_in_ = rows.n_features
        self._lower, self._upper = check_bounds(self.bounds, self.n_features_in_)
        return self._fit_rows(rows)

    def _fit_rows(self, rows: Rows) -> Self:
        raise TypeError(f"{type(self).__name__} cannot be fitted on a backend's rows yet")

    @classmethod
    def fits_rows(cls) -> bool:
        """Whether :meth:`fit_rows` works: the estimator reads its records through a backend's sums (else arrays only)."""
        return cls._fit_rows is not DPEstimatorMixin._fit_rows

    def _unit(self, X: ArrayLike) -> NDArray[np.float64]:
        """Declared-bounds scaling into [0, 1], with NaN → 0.5 and clipping."""
        return unit_features(X, self._lower, self._upper)

    def _check_predict_input(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=float, ensure_all_finite=False, reset=False)
        return self._unit(X)

    def _check_choices(self) -> None:
        """Validate the mechanism, sampling and leaf choices this estimator has (one message style for all)."""
        allowed = {"count_noise": COUNT_NOISES, "selection": SELECTION_METHODS, **self._parameter_choices}
        params = self.get_params(deep=False)
        for name, choices in allowed.items():
            value = params.get(name)
            if name in params and value not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {value!r}")

    def _random_streams(self) -> tuple[np.random.Generator, np.random.Generator]:
        """Two independent generators: one for data-independent structure, one for noise.

        Both stay secret. Some fits draw from ``structure`` what their privacy argument needs
        unreleased: DP-SGD's Poisson batches (amplification by subsampling), the experts'
        disjoint parts and the teachers' blocks (parallel composition over a secret split)."""
        structure, noise = check_random_state(self.random_state).spawn(2)
        return structure, noise

    def _set_spent(self, epsilon: float, delta: float = 0.0) -> None:
        """Record what the fit spent: ``epsilon_spent_`` (rounded up) and ``delta_spent_`` (0 for pure ε-DP)."""
        self.epsilon_spent_ = round_up_epsilon(epsilon)
        self.delta_spent_ = float(delta)


class TargetScalingMixin:
    """Regression targets: clipped into declared ``target_bounds`` and scaled to [0, 1]."""

    target_bounds: Bounds | None
    _target_lower: float
    _target_upper: float

    def _unit_target(self, y: ArrayLike) -> NDArray[np.float64]:
        lower, upper = check_bounds(self.target_bounds, 1, name="target_bounds")
        self._target_lower, self._target_upper = float(lower[0]), float(upper[0])
        y = np.asarray(y, dtype=float)
        y = np.where(np.isnan(y), (self._target_lower + self._target_upper) / 2, y)
        return np.clip((y - self._target_lower) / (self._target_upper - self._target_lower), 0.0, 1.0)

    def _from_unit_target(self, value: ArrayLike) -> NDArray[np.float64]:
        return self._target_lower + np.asarray(value, dtype=float) * (self._target_upper - self._target_lower)


class DeclaredClassesMixin:
    """Classifiers learn their label set from the declared ``classes``, never from the data.

    Without declared classes the labels seen in the data are used, with a
    :class:`PrivacyLeakWarning`: the presence of a rare label is itself private.
    Records whose label is not declared are dropped before anything is counted (a
    per-record filter, so no other record's contribution changes).
    """

    classes: Sequence[Any] | None
    classes_: NDArray[Any]

    def _encode_labels(self, y: ArrayLike) -> NDArray[np.int64]:
        if self.classes is None:
            warnings.warn(
                "classes were not declared, so they are read from the data; this leaks which labels occur. "
                "Pass classes=[...] to keep the model differentially private.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            classes = np.unique(y)
        else:
            classes = np.asarray(list(self.classes))
            if len(classes) < 1 or len(np.unique(classes)) != len(classes):
                raise ValueError("classes must be a list of distinct labels")
        self.classes_ = classes
        return pd.Index(classes).get_indexer(pd.Index(np.asarray(y))).astype(np.int64)

    def _decode(self, codes: NDArray[np.intp] | NDArray[np.int64]) -> NDArray[Any]:
        return self.classes_[codes]
