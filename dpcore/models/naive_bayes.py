"""ε-DP Gaussian Naive Bayes (spec §6, after Vaidya et al. 2013)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin

from dpcore.backends import FIXED_BITS, LocalRows, RowBatch, Rows, exact_bincount, fixed, unfixed
from dpcore.i18n import N_
from dpcore.mechanisms import Laplace, count_mechanism
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin
from dpcore.models._prepare import UnitCodes, declared_classes
from dpcore.validation import Bounds, RandomStateLike


class DPGaussianNB(DeclaredClassesMixin, ClassifierMixin, DPEstimatorMixin):
    r"""ε-DP Gaussian Naive Bayes with noisy class counts, means and variances.

    Parameters
    ----------
    epsilon : float, default 1.0
    bounds : (lower, upper), optional
        Declared feature bounds; default [0, 1].
    classes : list, optional
        Declared labels (read from the data with a warning if missing).
    var_smoothing : float, default 1e-3
        Floor on each variance in the unit scale, so a noisy near-zero variance cannot
        dominate the likelihood.
    count_noise : {"laplace", "geometric"}
    random_state : None, int or Generator

    Attributes
    ----------
    class_count_ : noisy counts per class
    theta_, var_ : per-class means and variances in original units
    epsilon_spent_, delta_spent_ : float
        ε spent, and 0 for δ (pure ε-DP).

    Notes
    -----
    Privacy argument (add/remove-one). Features are clipped into declared bounds, scaled to
    [0, 1] and centred: ``z = x − 1/2 ∈ [−1/2, 1/2]``. Three queries, ε/3 each, composed
    sequentially:

    1. class counts — one histogram, sensitivity 1 (a record is in one class);
    2. per-class sums of ``z`` — a record changes the ``d`` sums of its class by at most
       1/2 each: L1 sensitivity ``d/2``;
    3. per-class sums of ``z²`` — L1 sensitivity ``d/4``.

    The sums are taken in fixed point: ``z`` is rounded to the public grid of ``2^-14`` (it stays
    in [−1/2, 1/2]) and squared after rounding, so both sensitivities hold exactly for the summed
    values, and integer sums are the same in any order of the rows (on any backend).

    Means and variances are ratios of these noisy sums to the noisy counts (clipped),
    i.e. post-processing, so the model is ε-DP. ``predict_proba`` uses only them.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((500, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> DPGaussianNB(epsilon=5.0, classes=[0, 1], random_state=0).fit(X, y).predict_proba(X).shape
    (500, 2)
    """

    privacy_summary = NEIGHBOURS + N_(
        "Features are clipped into their declared bounds; the class counts (sensitivity 1), the per-class "
        "sums (sensitivity d/2) and the per-class sums of squares (sensitivity d/4) each get noise with ε/3, so by sequential "
        "composition the model is ε-DP. Means, variances and predictions come from these noisy sums only (post-processing)."
    )

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        var_smoothing: float = 1e-3,
        count_noise: str = "laplace",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.var_smoothing = var_smoothing
        self.count_noise = count_noise
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        if self.classes is None:
            self._encode_labels(y)  # the labels read from the data, with a PrivacyLeakWarning
            return self._fit_rows(LocalRows(X, y), self.classes_)
        return self._fit_rows(LocalRows(X, y))

    def _fit_rows(self, rows: Rows, classes: NDArray[Any] | None = None) -> Self:
        """Fit from ``rows`` (features in declared units, raw labels); ``classes`` default to the declared ones."""
        self._check_choices()
        self.classes_ = declared_classes(self.classes) if classes is None else classes
        k, d = len(self.classes_), rows.n_features
        moments = rows.prepared(UnitCodes(self._lower, self._upper, self.classes_)).aggregate(_ClassMoments(k, d))
        exact_counts, z_sums, z_squares = np.split(moments, [k, k + k * d])
        _, noise = self._random_streams()
        share = self.epsilon / 3.0
        counts = count_mechanism(self.count_noise, share, noise).randomise(exact_counts.astype(float)).astype(float)
        sums = Laplace(share, d / 2.0, noise).randomise(unfixed(z_sums).reshape(k, d))
        squares = Laplace(share, d / 4.0, noise).randomise(unfixed(z_squares, 2 * FIXED_BITS).reshape(k, d))
        safe = np.maximum(counts, 1.0)[:, None]
        mean_z = np.clip(sums / safe, -0.5, 0.5)
        var_unit = np.clip(squares / safe - mean_z**2, self.var_smoothing, 0.25)
        self.class_count_ = counts
        self.class_prior_ = np.maximum(counts, 1.0) / np.maximum(counts, 1.0).sum()
        span = self._upper - self._lower
        self._mean_unit, self._var_unit = mean_z + 0.5, var_unit
        self.theta_ = self._lower + self._mean_unit * span
        self.var_ = var_unit * span**2
        self._set_spent(self.epsilon)
        return self

    def predict_joint_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        unit = self._check_predict_input(X)
        diff = unit[:, None, :] - self._mean_unit[None, :, :]
        log_like = -0.5 * (np.log(2 * np.pi * self._var_unit)[None] + diff**2 / self._var_unit[None]).sum(axis=2)
        return log_like + np.log(self.class_prior_)[None, :]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        joint = self.predict_joint_log_proba(X)
        joint -= joint.max(axis=1, keepdims=True)
        proba = np.exp(joint)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        joint = self.predict_joint_log_proba(X)
        return self.classes_[np.argmax(joint, axis=1)]


@dataclass(frozen=True)
class _ClassMoments:
    """Job: per class, the row count and the fixed-point sums of ``z = unit − 1/2`` and of its square.

    ``z`` is rounded to the grid of ``2^-FIXED_BITS`` (``fixed(unit) − 2^(FIXED_BITS−1)``, an
    integer in ``[−2^13, 2^13]``) and the square is that integer's square, so both sums are exact
    integers whatever the batches and the rounded values keep ``|z| ≤ 1/2`` and ``z² ≤ 1/4``.
    """

    n_classes: int
    n_features: int

    def __call__(self, batch: RowBatch) -> NDArray[np.int64]:
        k, d = self.n_classes, self.n_features
        z = fixed(batch.X) - float(1 << (FIXED_BITS - 1))
        cells = (np.asarray(batch.y, dtype=np.intp)[:, None] * d + np.arange(d)[None, :]).ravel()
        return np.concatenate(
            [
                exact_bincount(np.asarray(batch.y, dtype=np.intp), None, k),
                exact_bincount(cells, z.ravel(), k * d),
                exact_bincount(cells, (z * z).ravel(), k * d),
            ]
        )
