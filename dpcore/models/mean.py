"""The DP-mean baseline: predicts one noisy average for everyone."""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import RegressorMixin

from dpcore.i18n import N_
from dpcore.mechanisms import Laplace
from dpcore.models._base import NEIGHBOURS, DPEstimatorMixin, TargetScalingMixin
from dpcore.validation import Bounds, RandomStateLike


class DPMeanRegressor(TargetScalingMixin, RegressorMixin, DPEstimatorMixin):
    r"""Predict the ε-DP mean of the target: the "knows nothing about the features" floor.

    Parameters
    ----------
    epsilon : float, default 1.0
    target_bounds : (lower, upper), optional
        Declared bounds of the target; default [0, 1].
    random_state : None, int or Generator

    Attributes
    ----------
    mean_ : float
        The one prediction, in the target's units (``mean_unit_`` in [0, 1]).
    epsilon_spent_, delta_spent_ : float
        ε spent, and 0 for δ (pure ε-DP).

    Notes
    -----
    Privacy argument: targets are clipped into the declared bounds and scaled to [0, 1].
    The count (sensitivity 1) and the sum (sensitivity 1) each get Laplace noise with ε/2;
    sequential composition gives ε. Their ratio, clipped to [0, 1], is post-processing.

    Examples
    --------
    >>> DPMeanRegressor(epsilon=1.0, random_state=0).fit([[0]] * 100, [0.5] * 100).predict([[1]]).shape
    (1,)
    """

    privacy_summary = NEIGHBOURS + N_(
        "Targets are clipped into their declared bounds and scaled to [0, 1]; a noisy count and a noisy "
        "sum (Laplace, sensitivity 1 each) spend ε/2 each, so by sequential composition the model is ε-DP. Their ratio, the "
        "one prediction, is post-processing."
    )

    def __init__(
        self, *, epsilon: float = 1.0, target_bounds: Bounds | None = None, random_state: RandomStateLike = None
    ) -> None:
        self.epsilon = epsilon
        self.target_bounds = target_bounds
        self.random_state = random_state

    bounds = None  # features are ignored; kept so the shared input checks apply

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        y_unit = self._unit_target(y)
        _, noise = self._random_streams()
        laplace = Laplace(self.epsilon / 2.0, 1.0, noise)
        noisy_count = float(laplace.randomise(len(y_unit)))
        noisy_sum = float(laplace.randomise(y_unit.sum()))
        self.mean_unit_ = float(np.clip(noisy_sum / max(noisy_count, 1.0), 0.0, 1.0))
        self.mean_ = float(self._from_unit_target(self.mean_unit_))
        self._set_spent(self.epsilon)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        return np.full(X_unit.shape[0], self.mean_)
