"""Experts combined by multiplicative weights on noisy losses (the course report's online learning, made DP).

algorithms.md §10.3: DP experts are fitted on disjoint parts of the data; on a held-out part,
each expert's cumulative loss is measured, noised, and turned into weights ``w ∝ exp(−η·L̃)``.
The released ensemble is the experts plus their weights. Two forms of the weights:

* ``form="batch"``: one noisy vector of cumulative losses, ``L + Lap(m/ε)``.
* ``form="streaming"``: the report's form, in which the experts see the held-out records as a
  stream and the weights are updated after each step. The stream has ``n_steps`` public steps
  (each held-out record joins one step by a secret uniform draw, so adding a record changes one
  step's losses, never the number of steps); the cumulative losses after every step are released
  with the binary-tree mechanism for continual counting (Chan, Shi & Song 2011; Dwork, Naor,
  Pitassi & Rothblum 2010), so the whole path of the weights is private, for the same ε.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import softmax
from sklearn.base import ClassifierMixin, RegressorMixin, clone

from dpcore.i18n import N_
from dpcore.mechanisms import Laplace
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.validation import Bounds, RandomStateLike, check_delta, check_epsilon, check_positive_int

FORMS = ("batch", "streaming")
# The report's split: two experts on 40 % each, the weights on the last 20 %.
DEFAULT_HELD_OUT = 0.2
# Chosen on California Housing and Adult: with a few thousand held-out rows the losses of two
# decent experts differ by tens, so η = 0.01 lets the better one dominate without silencing the other.
DEFAULT_ETA = 0.01
DEFAULT_STEPS = 64
# What the ensemble hands on to each expert when the expert takes it.
_SHARED = ("bounds", "target_bounds", "classes", "categorical_levels", "random_state")


def tree_prefix_sums(
    steps: NDArray[np.float64], epsilon: float, sensitivity: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Noisy running totals of ``steps`` (``(T, m)``: one row of m losses per step) by the binary-tree mechanism.

    Level ``ℓ`` holds the sums of consecutive runs of ``2^ℓ`` steps; every step is in one node
    per level, ``L = ⌈log2 T⌉ + 1`` levels, so one record (in one step, each of its m losses in
    [0, 1]) moves all the nodes together by at most ``L·sensitivity`` in L1: Laplace noise of
    scale ``L·sensitivity/ε`` on every node is ε-DP (one call of the Laplace mechanism on all
    nodes). The total after step ``t`` adds the nodes of ``t``'s binary digits: at most ``L`` noisy
    nodes, whatever ``T``.
    """
    n_steps, width = steps.shape
    levels = math.ceil(math.log2(max(n_steps, 1))) + 1
    padded = np.zeros((2 ** (levels - 1), width))
    padded[:n_steps] = steps
    nodes = [padded.reshape(-1, 2**level, width).sum(axis=1) for level in range(levels)]
    flat = np.concatenate(nodes)
    noisy_flat = Laplace(epsilon, levels * sensitivity, rng).randomise(flat)
    noisy, start = [], 0
    for node in nodes:
        noisy.append(noisy_flat[start : start + len(node)])
        start += len(node)
    totals = np.zeros((n_steps, width))
    t = np.arange(1, n_steps + 1)
    for level in range(levels):
        has_bit = ((t >> level) & 1).astype(bool)
        index = (t >> level) - 1
        totals[has_bit] += noisy[level][index[has_bit]]
    return totals


def weights_from_losses(losses: NDArray[np.float64], eta: float) -> NDArray[np.float64]:
    """``w ∝ exp(−η·L)`` along the last axis."""
    return softmax(-eta * np.asarray(losses, dtype=float), axis=-1)


class _Ensemble(DPEstimatorMixin, ABC):
    """Shared by the regressor and the classifier: parts, experts, noisy losses, weights."""

    experts: Sequence[DPEstimatorMixin] | None
    held_out: float
    eta: float
    form: str
    n_steps: int
    delta: float
    categorical_levels: Mapping[int, int] | None
    experts_: list[Any]
    weights_: NDArray[np.float64]

    @abstractmethod
    def _default_experts(self) -> list[DPEstimatorMixin]:
        """The experts used when none are given (the regressor's and the classifier's own)."""

    @abstractmethod
    def _losses(self, expert: Any, X: NDArray[np.float64], y: NDArray[Any]) -> NDArray[np.float64]:
        """Each held-out record's loss for one expert, in [0, 1]."""

    def _check_params(self) -> list[DPEstimatorMixin]:
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {self.form!r}")
        if not 0 < self.held_out < 1:
            raise ValueError("held_out must be strictly between 0 and 1")
        if not (isinstance(self.eta, int | float) and self.eta >= 0 and math.isfinite(self.eta)):
            raise ValueError("eta must be a finite number at least 0")
        check_positive_int(self.n_steps, "n_steps")
        experts = list(self.experts) if self.experts is not None else self._default_experts()
        if not experts or not all(isinstance(e, DPEstimatorMixin) for e in experts):
            raise TypeError(
                "experts must be a non-empty list of dpcore's DP estimators (a non-private expert would leak its part)"
            )
        return experts

    def _prepare_expert(self, expert: DPEstimatorMixin, seed: np.random.Generator) -> Any:
        """A copy of ``expert`` with the ensemble's ε, δ and declared domain (each part gets the full ε: parallel)."""
        mine = self.get_params(deep=False) | {"random_state": seed}
        params = expert.get_params(deep=False)
        chosen = {name: mine[name] for name in _SHARED if name in params and name in mine}
        chosen["epsilon"] = self.epsilon
        if "delta" in params:
            chosen["delta"] = self.delta
        return clone(expert).set_params(**chosen)

    def _fit_ensemble(self, X: NDArray[np.float64], y: NDArray[Any], labels: NDArray[Any]) -> None:
        """Split by secret draws, fit the experts on their parts, and weigh them on the held-out part."""
        templates = self._check_params()
        structure, noise = self._random_streams()
        m = len(templates)
        share = (1.0 - self.held_out) / m
        # Two secret draws per record, in one call so a record's draws never depend on how many others there are:
        # its part (m = the held-out part) and, if held out, its step of the stream.
        draws = structure.random((len(y), 2))
        part = np.searchsorted(np.cumsum([share] * m), draws[:, 0], side="right")
        seeds = noise.spawn(m + 1)
        self.experts_ = []
        for i, template in enumerate(templates):
            rows = part == i
            # The expert's generator goes once it is fitted: kept in the model, it would let anyone replay the noise.
            self.experts_.append(
                self._prepare_expert(template, seeds[i]).fit(X[rows], labels[rows]).set_params(random_state=None)
            )
        held = part == m
        # A small table's held-out part can be empty (the attack audit's 50-row fits met one): it has no losses.
        losses = (
            np.stack([self._losses(expert, X[held], y[held]) for expert in self.experts_], axis=1)
            if held.any()
            else np.zeros((0, m))
        )
        weight_rng = seeds[m]
        if self.form == "batch":
            noisy = Laplace(self.epsilon, float(m), weight_rng).randomise(losses.sum(axis=0))
            self.weights_path_ = weights_from_losses(noisy, self.eta)[None, :]
        else:
            step = np.minimum((draws[held, 1] * self.n_steps).astype(np.int64), self.n_steps - 1)
            per_step = np.zeros((self.n_steps, m))
            np.add.at(per_step, step, losses)
            self.weights_path_ = weights_from_losses(tree_prefix_sums(per_step, self.epsilon, float(m), weight_rng), self.eta)
        self.weights_ = self.weights_path_[-1]
        self._set_spent(self.epsilon, max(float(getattr(e, "delta_spent_", 0.0)) for e in self.experts_))

    def weights_path_records(self) -> list[dict[str, Any]]:
        """The weights after every step (one step for the batch form), as records for a chart: step, expert, weight."""
        check_epsilon(self.epsilon)
        names = [f"{i + 1}. {type(e).__name__}" for i, e in enumerate(self.experts_)]
        return [
            {"step": t + 1, "expert": names[i], "weight": float(w)}
            for t, row in enumerate(self.weights_path_)
            for i, w in enumerate(row)
        ]


_NOTES = """
    Notes
    -----
    Privacy argument. Every record falls in exactly one part by a secret uniform draw: one of
    the ``m`` expert parts (``(1 − held_out)/m`` of the records each) or the held-out part. A
    record in expert part ``i`` changes only expert ``i``, which is ε-DP (each expert is one of
    dpcore's DP models at the full ε); the weights are computed from the released experts and
    the held-out records, which do not include it, so for it they are post-processing. A record
    in the held-out part changes each expert's loss by at most 1 (losses are clipped to [0, 1]),
    so the vector of ``m`` cumulative losses moves by at most ``m`` in L1: ``Lap(m/ε)`` on it is
    ε-DP (batch form), and so is the tree mechanism over the stream of steps (streaming form,
    :func:`tree_prefix_sums`); the experts do not depend on it. The parts are disjoint, so by
    parallel composition the released ensemble — experts and weights, or the weights' whole path —
    is ε-DP in total, with δ the largest expert δ (0 for pure experts). The spec's bound
    ``max(expert ε) + ε_w`` charges the weights sequentially; it holds too, but the weights
    never read an expert's records, so each part can have the full ε. ``η`` is a public choice.
"""


class MultiplicativeWeightsEnsemble(TargetScalingMixin, RegressorMixin, _Ensemble):
    (
        """DP regression experts fitted on disjoint parts, combined by weights from their noisy held-out losses.

    Parameters
    ----------
    experts : list of dpcore regressors, optional
        Unfitted templates; each is fitted on its own part with this ensemble's ε, δ, bounds and
        target bounds. Default: :class:`~dpcore.models.DPBoostingRegressor` and
        :class:`~dpcore.models.DPRegressionTree` (two experts, as in the course report).
    epsilon : float, default 1.0
        The total ε (every part gets it: parallel composition).
    delta : float, default 0.0
        Passed to experts that take one (approximate DP when > 0).
    held_out : float, default 0.2
        Share of the records (by secret draw) that weigh the experts.
    eta : float, default 0.01
        Learning rate of the multiplicative update, applied to the cumulative losses.
    form : {"batch", "streaming"}, default "batch"
    n_steps : int, default 64
        The public number of steps of the streaming form.
    bounds, target_bounds, categorical_levels, random_state : as for the other models.

    Attributes
    ----------
    experts_ : fitted experts; weights_ : their weights; weights_path_ : ``(steps, m)`` weights after every step.
    """
        + _NOTES
        + """
    A record's loss for an expert is its absolute error on the target scaled to [0, 1].
    """
    )

    privacy_summary = NEIGHBOURS + N_(
        "The records are split by secret draws into disjoint parts: each DP expert is fitted on its own part "
        "at ε, and the experts' cumulative losses on the held-out part (one record moves them by at most the number of "
        "experts) get Laplace noise at ε. Every record is in one part, so by parallel composition the ensemble is ε-DP."
    )

    def __init__(
        self,
        *,
        experts: Sequence[DPEstimatorMixin] | None = None,
        epsilon: float = 1.0,
        delta: float = 0.0,
        held_out: float = DEFAULT_HELD_OUT,
        eta: float = DEFAULT_ETA,
        form: str = "batch",
        n_steps: int = DEFAULT_STEPS,
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.experts = experts
        self.epsilon = epsilon
        self.delta = delta
        self.held_out = held_out
        self.eta = eta
        self.form = form
        self.n_steps = n_steps
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.categorical_levels = categorical_levels
        self.random_state = random_state

    def _default_experts(self) -> list[DPEstimatorMixin]:
        from dpcore.models.boosting import DPBoostingRegressor
        from dpcore.models.regression_tree import DPRegressionTree

        return [DPBoostingRegressor(), DPRegressionTree(max_depth=6)]

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        unit = self._unit_target(y)
        self._fit_ensemble(X, unit, self._from_unit_target(unit))
        return self

    def _losses(self, expert: Any, X: NDArray[np.float64], y: NDArray[Any]) -> NDArray[np.float64]:
        scaled = (np.asarray(expert.predict(X), dtype=float) - self._target_lower) / (self._target_upper - self._target_lower)
        return np.clip(np.abs(np.clip(scaled, 0.0, 1.0) - y), 0.0, 1.0)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_predict_input(X)
        predictions = np.stack([np.asarray(e.predict(X), dtype=float) for e in self.experts_], axis=1)
        return predictions @ self.weights_


class MultiplicativeWeightsClassifier(DeclaredClassesMixin, ClassifierMixin, _Ensemble):
    (
        """DP classification experts fitted on disjoint parts, combined by weights from their noisy held-out errors.

    Parameters
    ----------
    experts : list of dpcore classifiers with ``predict_proba``, optional
        Default: :class:`~dpcore.models.DPBoostingClassifier` and :class:`~dpcore.models.DPGaussianNB`.
    classes : list, optional
        Declared labels, handed on to every expert.
    epsilon, delta, held_out, eta, form, n_steps, bounds, categorical_levels, random_state :
        as for :class:`MultiplicativeWeightsEnsemble`.
    """
        + _NOTES
        + """
    A record's loss for an expert is 0 if the expert labels it right, else 1.
    """
    )

    privacy_summary = MultiplicativeWeightsEnsemble.privacy_summary

    def __init__(
        self,
        *,
        experts: Sequence[DPEstimatorMixin] | None = None,
        epsilon: float = 1.0,
        delta: float = 0.0,
        held_out: float = DEFAULT_HELD_OUT,
        eta: float = DEFAULT_ETA,
        form: str = "batch",
        n_steps: int = DEFAULT_STEPS,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.experts = experts
        self.epsilon = epsilon
        self.delta = delta
        self.held_out = held_out
        self.eta = eta
        self.form = form
        self.n_steps = n_steps
        self.bounds = bounds
        self.classes = classes
        self.categorical_levels = categorical_levels
        self.random_state = random_state

    def _default_experts(self) -> list[DPEstimatorMixin]:
        from dpcore.models.boosting import DPBoostingClassifier
        from dpcore.models.naive_bayes import DPGaussianNB

        return [DPBoostingClassifier(), DPGaussianNB()]

    def _prepare_expert(self, expert: DPEstimatorMixin, seed: np.random.Generator) -> Any:
        # Experts learn the declared class codes, so their probability columns line up.
        return super()._prepare_expert(expert, seed).set_params(classes=list(range(len(self.classes_))))

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        codes = self._encode_labels(y)
        known = codes >= 0
        self._fit_ensemble(X[known], codes[known], codes[known])
        return self

    def _losses(self, expert: Any, X: NDArray[np.float64], y: NDArray[Any]) -> NDArray[np.float64]:
        return (np.asarray(expert.predict(X)) != y).astype(float)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_predict_input(X)
        return sum(
            (w * e.predict_proba(X) for w, e in zip(self.weights_, self.experts_, strict=True)),
            np.zeros((np.asarray(X).shape[0], len(self.classes_))),
        )

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        return self._decode(np.argmax(self.predict_proba(X), axis=1))


_SPENDS = N_(
    "Spends ε once, in parallel: two DP experts each learn from their own part of the rows at ε, and noisy totals of "
    "their errors on the last fifth (also at ε) weigh them."
)


def registry_entries(our_model: Callable[..., Any], parameter: Callable[..., Any]) -> tuple[Any, ...]:
    """The registry's entries for the two ensembles (the registry passes its own builders: no import cycle)."""
    settings = (
        parameter(
            "form",
            N_(
                "batch: weights from one noisy total of each expert's losses; streaming: the weights after "
                "every step of the held-out rows, drawn as a chart (same ε)."
            ),
            choices=FORMS,
        ),
        parameter("n_steps", N_("Steps of the streaming form (a public number)."), minimum=1, maximum=1024),
    )
    return (
        our_model(
            "dp_experts_reg",
            N_("DP experts by multiplicative weights (regressor)"),
            "regression",
            MultiplicativeWeightsEnsemble,
            _SPENDS,
            settings,
        ),
        our_model(
            "dp_experts_clf",
            N_("DP experts by multiplicative weights (classifier)"),
            "classification",
            MultiplicativeWeightsClassifier,
            _SPENDS,
            settings,
        ),
    )
