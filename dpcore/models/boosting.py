"""ε-DP gradient boosting on trees that never look at the data (spec §9).

Each round draws an *oblivious* tree — one random feature and one random split per level,
shared by every node of the level — without touching the data, so the structure is free and
the whole budget goes to the leaves. Numeric features split at a uniform random threshold
inside their declared bounds; categorical features (given by ``categorical_levels``) split on a
uniform random subset of their declared categories, not on thresholds over codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin, RegressorMixin

from dpcore.mechanisms import Gaussian, Geometric, Laplace, count_mechanism, zcdp_rho
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.validation import Bounds, RandomStateLike, check_positive_int

Residuals = Callable[[np.ndarray, np.ndarray], np.ndarray]

_PRIVACY = r"""
    Privacy argument (pure ε-DP, add/remove-one neighbours).

    * **Free structure.** Every round's tree (features, thresholds, category subsets) is drawn
      from a generator that never sees the data.
    * **Bounded contribution.** A record's residual (``y − F(x)``; ``y − sigmoid(F)``; the
      softmax residual vector) is clipped to ``[−clip, clip]`` per component, so it moves one
      leaf's residual sum by at most ``clip`` (regression, binary) or by ``min(2, K·clip)`` in
      L1 (multiclass: the unclipped residual vector already has L1 norm ≤ 2).
    * **Per-round budget.** Round ``r`` spends ``ε/n_rounds``: a share ``count_share`` on the
      leaves' noisy counts (sensitivity 1) and the rest on their noisy residual sums (Laplace).
      The leaves of one round are disjoint (parallel composition).
    * **Sequential rounds.** Residuals of round ``r`` depend on the record itself and on earlier
      rounds' *released* noisy leaves only, so the rounds compose adaptively: ``n_rounds ·
      ε/n_rounds = ε``. Leaf steps (noisy sum over noisy count, shrunk toward zero when the
      count is small) and predictions are post-processing.

    Approximate-DP mode (``delta > 0``, clearly not pure ε-DP): the same queries get Gaussian
    noise. ``(ε, δ)`` is turned into a zCDP budget ``ρ = (√(ln(1/δ) + ε) − √ln(1/δ))²``, spread
    evenly over the rounds (ρ's add up under composition); each query's noise is
    ``σ = Δ₂/√(2ρ_query)`` with the L2 sensitivities 1 (counts), ``clip`` (regression, binary) and
    ``min(√2, √K·clip)`` (multiclass), and ρ-zCDP implies (ε, δ)-DP (Bun & Steinke 2016).

    Defaults (``n_rounds``, ``max_depth``, ``learning_rate``, ``clip``, ``count_share``) were fixed
    once on public benchmark data — California Housing (StatLib) and UCI Adult — and are never
    tuned on the owner's table (tuning on it would itself leak).
"""

_PRIVACY_SUMMARY = NEIGHBOURS + (
    "Every round's tree is drawn without looking at the data, and each round spends ε/n_rounds on noisy leaf counts and "
    "noisy sums of {residuals} clipped to [−clip, clip]; the leaves of a round hold disjoint records (parallel composition) "
    "and the rounds compose sequentially, so the model is ε-DP. With delta > 0 the same queries get Gaussian noise under "
    "zCDP accounting instead, and the model is (ε, δ)-DP."
)


def auto_rounds(epsilon: float) -> int:
    """Rounds for a budget: more rounds when each can afford less noise (depends on ε only)."""
    return int(np.clip(round(40.0 * np.sqrt(epsilon)), 10, 160))


class _BoostingBase(DPEstimatorMixin):
    def _check_params(self, multiclass: bool = False) -> None:
        if self.n_rounds == "auto":
            # Multiclass rounds release K sums per leaf at once, so each round is costlier: fewer of them.
            self._rounds = max(10, auto_rounds(self.epsilon) // 2) if multiclass else auto_rounds(self.epsilon)
            if self.delta:
                # Under zCDP the noise grows only with √rounds, so the approximate mode affords three times as many.
                self._rounds *= 3
        else:
            self._rounds = check_positive_int(self.n_rounds, "n_rounds")
        if self.max_depth == "auto":
            self._depth = 3 if multiclass else 5
        else:
            self._depth = check_positive_int(self.max_depth, "max_depth")
        if not 0 < self.learning_rate <= 1:
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate!r}")
        if not self.clip > 0:
            raise ValueError(f"clip must be > 0, got {self.clip!r}")
        if not 0 < self.count_share < 1:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share!r}")

    def _residual_clip(self) -> float:
        """What bounds each record's residual; the released sums' sensitivity rests on it."""
        return self.clip

    def _levels(self, d: int) -> np.ndarray:
        """Number of declared categories per feature (0 for numeric)."""
        levels = np.zeros(d, dtype=np.int64)
        for feature, count in dict(self.categorical_levels or {}).items():
            if not 0 <= int(feature) < d or int(count) < 2:
                raise ValueError("categorical_levels maps feature indices to category counts >= 2")
            levels[int(feature)] = int(count)
        return levels

    def _draw_structures(self, rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All rounds' oblivious trees at once: features, thresholds and category subsets."""
        levels = self._levels(d)
        features = rng.integers(0, d, size=(self._rounds, self._depth))
        thresholds = rng.random((self._rounds, self._depth))
        width = max(int(levels.max()), 1)
        subsets = rng.random((self._rounds, self._depth, width)) < 0.5
        return features, thresholds, subsets, levels

    def _leaf_index(self, X_unit: np.ndarray, rounds: slice = slice(None)) -> np.ndarray:
        """Leaf of every record in every selected round: ``(n, rounds)``."""
        features = self.features_[rounds]
        thresholds = self.thresholds_[rounds]
        subsets = self.subsets_[rounds]
        values = X_unit[:, features]  # (n, R, D)
        levels = self._levels_[features]  # (R, D)
        codes = np.rint(values * np.maximum(levels - 1, 1)).astype(np.int64)
        r_idx = np.arange(features.shape[0])[:, None]
        d_idx = np.arange(features.shape[1])[None, :]
        in_subset = subsets[r_idx, d_idx, np.clip(codes, 0, subsets.shape[2] - 1)]
        goes_left = np.where(levels > 0, in_subset, values <= thresholds)
        return (goes_left * (1 << np.arange(features.shape[1]))).sum(axis=2)

    def _boost(
        self, X_unit: np.ndarray, targets: np.ndarray, initial: ArrayLike, residual_fn: Residuals,
        residual_sensitivity: tuple[float, float],
    ) -> None:
        """Run the rounds; ``targets`` is (n, K), ``initial`` the public starting score (K,), and
        ``residual_sensitivity`` the (L1, L2) bound of one record's clipped residual vector."""
        n, k = targets.shape
        structure, noise = self._random_streams()
        self.features_, self.thresholds_, self.subsets_, self._levels_ = self._draw_structures(structure, X_unit.shape[1])
        round_epsilon = self.epsilon / self._rounds
        counts_mech: Gaussian | Laplace | Geometric
        sums_mech: Gaussian | Laplace
        if self.delta:
            # Approximate DP: Gaussian noise, ρ-zCDP per query, ρ's add up over the rounds.
            round_rho = zcdp_rho(self.epsilon, self.delta) / self._rounds
            counts_mech = Gaussian(round_rho * self.count_share, 1.0, noise)
            sums_mech = Gaussian(round_rho * (1 - self.count_share), residual_sensitivity[1], noise)
            count_scale = counts_mech.sigma
        else:
            counts_mech = count_mechanism(self.count_noise, round_epsilon * self.count_share, noise)
            sums_mech = Laplace(round_epsilon * (1 - self.count_share), residual_sensitivity[0], noise)
            count_scale = 1.0 / (round_epsilon * self.count_share)
        n_leaves = 1 << self._depth
        leaves = self._leaf_index(X_unit)  # (n, R): the structure is fixed in advance
        scores = np.tile(np.asarray(initial, dtype=float), (n, 1))
        self.leaf_values_ = np.zeros((self._rounds, n_leaves, k))
        for r in range(self._rounds):
            residual = np.clip(residual_fn(targets, scores), -self._residual_clip(), self._residual_clip())
            leaf = leaves[:, r]
            counts = counts_mech.randomise(np.bincount(leaf, minlength=n_leaves)).astype(float)
            sums = np.stack([np.bincount(leaf, weights=residual[:, j], minlength=n_leaves) for j in range(k)], axis=1)
            noisy_sums = sums_mech.randomise(sums)
            # Shrink toward zero by the noise level: a leaf whose count is near the count
            # noise's scale gets a damped step instead of a wild ratio.
            damping = self.min_leaf_count + count_scale
            step = noisy_sums / (np.maximum(counts, 0.0) + damping)[:, None]
            self.leaf_values_[r] = self.learning_rate * self._step_scale * np.clip(step, -self.clip, self.clip)
            scores += self.leaf_values_[r][leaf]
        self.initial_ = np.asarray(initial, dtype=float)
        self._set_spent(self.epsilon, self.delta)

    def _decision(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        leaves = self._leaf_index(X_unit)
        rounds = np.arange(self._rounds)[None, :]
        return self.initial_[None, :] + self.leaf_values_[rounds, leaves].sum(axis=1)

    def rounds_as_records(self, feature_names: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Each round's oblivious tree as plain data (split per level, leaf steps)."""
        names = feature_names if feature_names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        out = []
        for r in range(self._rounds):
            levels: list[dict[str, Any]] = []
            for f, t in zip(self.features_[r], self.thresholds_[r]):
                if self._levels_[f] > 0:
                    levels.append({"feature": str(names[f]), "categories_left": np.flatnonzero(self.subsets_[r, len(levels), : self._levels_[f]]).tolist()})
                else:
                    levels.append({"feature": str(names[f]), "threshold": float(self._lower[f] + t * (self._upper[f] - self._lower[f]))})
            out.append({"round": r, "levels": levels, "leaf_steps": self.leaf_values_[r].round(6).tolist()})
        return out


class DPBoostingRegressor(TargetScalingMixin, RegressorMixin, _BoostingBase):
    __doc__ = (
        r"""ε-DP gradient boosting for regression with data-independent oblivious trees.

    Parameters
    ----------
    epsilon : float, default 1.0
    n_rounds : int or "auto", default "auto"
        ``"auto"``: ``40·√ε`` rounds, between 10 and 160 (a function of ε only), three times as
        many in the approximate-DP mode.
    max_depth : int, default 5
        Depth of each oblivious tree (``2**max_depth`` leaves).
    learning_rate : float, default 0.8
    clip : float, default 0.2
        Residual clip (target scaled to [0, 1]).
    count_share : float, default 0.15
        Share of each round's ε spent on leaf counts.
    min_leaf_count : float, default 5
        Added to each noisy count before dividing (shrinks small leaves' steps toward zero).
    delta : float, default 0.0
        ``0`` for pure ε-DP (Laplace or geometric noise). A declared ``δ > 0`` switches to the
        **approximate-DP mode**: Gaussian noise with zCDP accounting, (ε, δ)-DP overall.
    bounds, target_bounds : declared bounds (default [0, 1]).
    categorical_levels : dict, optional
        ``{feature index: number of declared categories}`` for ordinal-coded categorical features.
    count_noise : {"laplace", "geometric"}
    random_state : None, int or Generator

    Attributes
    ----------
    features_, thresholds_, subsets_ : each round's free structure
    leaf_values_ : (n_rounds, 2**max_depth, 1) leaf steps
    epsilon_spent_, delta_spent_ : float
        What the fit spent; ``delta_spent_`` is ``delta`` (0 for pure ε-DP).

    Notes
    -----"""
        + _PRIVACY
        + r"""
    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((2000, 3)); y = X[:, 0]
    >>> DPBoostingRegressor(epsilon=4.0, random_state=0).fit(X, y).predict(X[:2]).shape
    (2,)
    """
    )

    privacy_summary = _PRIVACY_SUMMARY.format(residuals="residuals")

    _step_scale = 1.0

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        n_rounds: int | str = "auto",
        max_depth: int | str = 5,
        learning_rate: float = 0.8,
        clip: float = 0.2,
        count_share: float = 0.15,
        min_leaf_count: float = 5.0,
        delta: float = 0.0,
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        count_noise: str = "laplace",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.n_rounds = n_rounds
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.clip = clip
        self.count_share = count_share
        self.min_leaf_count = min_leaf_count
        self.delta = delta
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.categorical_levels = categorical_levels
        self.count_noise = count_noise
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        self._check_params()
        y_unit = self._unit_target(y)[:, None]
        self._boost(self._unit(X), y_unit, [0.5], lambda t, s: t - s, (self.clip, self.clip))
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        return self._from_unit_target(np.clip(self._decision(X)[:, 0], 0.0, 1.0))


class DPBoostingClassifier(DeclaredClassesMixin, ClassifierMixin, _BoostingBase):
    __doc__ = (
        r"""ε-DP gradient boosting for binary and multiclass classification (log-loss).

    Parameters as :class:`DPBoostingRegressor`, with declared ``classes`` instead of
    ``target_bounds``, and defaults ``learning_rate=1.0``, ``clip=0.7``, ``count_share=0.3``
    (log-loss residuals live in [−1, 1] and need a wider clip than regression's).
    ``max_depth="auto"`` is 5 for two classes and 3 for more; with more than two classes
    ``n_rounds="auto"`` is halved (each round releases ``K`` sums per leaf). Fixed on UCI
    Adult (binary) and Nursery (five classes), public data. Binary problems boost one logit; ``K > 2`` classes boost ``K`` scores
    on shared structures with softmax residuals. Leaf steps are scaled by a Newton-style
    factor (``2`` for binary, ``K/(K−1)`` otherwise).

    Notes
    -----"""
        + _PRIVACY
        + r"""
    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((2000, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> DPBoostingClassifier(epsilon=4.0, classes=[0, 1], random_state=0).fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """
    )

    privacy_summary = _PRIVACY_SUMMARY.format(residuals="log-loss residuals (one per class with more than two classes)")

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        n_rounds: int | str = "auto",
        max_depth: int | str = "auto",
        learning_rate: float = 1.0,
        clip: float = 0.7,
        count_share: float = 0.3,
        min_leaf_count: float = 5.0,
        delta: float = 0.0,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        count_noise: str = "laplace",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.n_rounds = n_rounds
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.clip = clip
        self.count_share = count_share
        self.min_leaf_count = min_leaf_count
        self.delta = delta
        self.bounds = bounds
        self.classes = classes
        self.categorical_levels = categorical_levels
        self.count_noise = count_noise
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        codes = self._encode_labels(y)
        self._check_params(multiclass=len(self.classes_) > 2)
        known = codes >= 0
        X_unit, codes = self._unit(X)[known], codes[known]
        k = len(self.classes_)
        if k <= 2:
            self._step_scale = 2.0
            targets = (codes == k - 1).astype(float)[:, None]
            self._boost(X_unit, targets, [0.0], lambda t, s: t - _sigmoid(s), (self.clip, self.clip))
        else:
            self._step_scale = k / (k - 1)
            targets = np.eye(k)[codes]
            # y − softmax has L1 norm ≤ 2 and L2 norm ≤ √2 before clipping; clipping only shrinks it.
            sensitivity = (min(2.0, k * self.clip), min(np.sqrt(2.0), np.sqrt(k) * self.clip))
            self._boost(X_unit, targets, np.zeros(k), lambda t, s: t - _softmax(s), sensitivity)
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        scores = self._decision(X)
        if len(self.classes_) <= 2:
            p = _sigmoid(scores[:, 0])
            return np.column_stack([1 - p, p]) if len(self.classes_) == 2 else np.ones((len(p), 1))
        return _softmax(scores)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
