"""DP model choice: a stated share of ε compares two or three learners on held-out rows, and the best one is kept.

The owner should get the learner that suits the table without looking at the table. Which of our
learners wins depends on the table (weak additive signals favour the additive model, interactions
favour boosting; §26 of ``benchmarks/README.md`` shows the ranking also moves with ε·rows), so a
fixed default loses somewhere. :func:`choose_model` buys the comparison with a share of ε:

1. a secret, data-independent split puts each row in the *held-out* part with probability
   ``held_out`` (a public fraction), else in the *training* part;
2. every candidate is fitted on the training part at ``share·ε / m`` (``m`` candidates);
3. each is scored on the held-out part by a bounded per-record loss, and the exponential
   mechanism (report noisy max, exact sampler) picks one at ``share·ε``;
4. the chosen learner is fitted again, on **every** row, with the rest, ``(1 − share)·ε``.

Only the final model and the name of its learner leave the fit: the screening models and the
held-out scores are dropped. With ``share=1`` there is no refit: the chosen candidate is kept as it
was fitted (already paid for), each candidate having had ε/m.

What it buys (§31 of ``benchmarks/README.md``): never the best candidate's error (it pays a quarter
of ε to find it), but on a table where the size-based suggestion is the wrong learner (the
weak-additive analog, where boosting loses to the additive model) it cut the error by 1.7–2.6
points at ε = 1 and 3; on Adult, where boosting wins everywhere, it cost 0.3–2.7 points. Below
about ε·rows = 1,000 the screening fits are too noisy to rank. So it is offered, not the default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin, RegressorMixin

from dpcore.i18n import N_
from dpcore.mechanisms import Exponential
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.models._specs import CONTEXT_ARGUMENTS
from dpcore.models.additive import DPAdditiveClassifier, DPAdditiveRegressor
from dpcore.models.boosting import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models.naive_bayes import DPGaussianNB
from dpcore.validation import Bounds, RandomStateLike, check_epsilon, check_random_state

__all__ = [
    "CANDIDATES",
    "CHOICE_KEYS",
    "DEFAULT_CANDIDATES",
    "DEFAULT_HELD_OUT",
    "DEFAULT_SHARE",
    "Choice",
    "brier_losses",
    "DPModelChoiceClassifier",
    "DPModelChoiceRegressor",
    "choose_model",
]

#: The share of ε that buys the comparison (the screening fits and the selection together).
#: Chosen on ``benchmarks/model_choice.py`` (``benchmarks/README.md`` §31): Adult and California
#: subsets of 1,000 and 5,000 rows and the weak-additive analog, at ε = 0.3, 1 and 3, five draws
#: each. Shares of 0.15, 0.25 and 0.4 gave about the same regret against the best candidate alone
#: (measured with the 0/1 error); a quarter leaves the final model three quarters of ε on every row.
DEFAULT_SHARE = 0.25
#: The public fraction of rows held out to score the candidates (a fifth, as Train's own held-out part).
DEFAULT_HELD_OUT = 0.2

#: Learners a choice may compare, by registry key: all pure ε-DP, so the choice is too. DP-SGD is
#: left out: it is (ε, δ)-DP, which would turn the whole choice approximate.
CANDIDATES: dict[str, dict[str, type[DPEstimatorMixin]]] = {
    "classification": {
        "dp_boosting_clf": DPBoostingClassifier,
        "dp_additive_clf": DPAdditiveClassifier,
        "dp_gaussian_nb": DPGaussianNB,
    },
    "regression": {"dp_boosting_reg": DPBoostingRegressor, "dp_additive_reg": DPAdditiveRegressor},
}
#: What a choice compares unless told otherwise: §26's two contenders, boosting and the additive model.
#: Naive Bayes is left out of the default: scored by the Brier score it was never picked in §31 (its
#: noisy variances make its probabilities overconfident), and every candidate thins the others' share.
DEFAULT_CANDIDATES = {
    "classification": ("dp_boosting_clf", "dp_additive_clf"),
    "regression": ("dp_boosting_reg", "dp_additive_reg"),
}
#: The registry keys of the choice itself, by task.
CHOICE_KEYS = {"classification": "dp_choice_clf", "regression": "dp_choice_reg"}
# What the choice hands on to each candidate when the candidate takes it: the registry's context, but its own ε and generator.
_SHARED = tuple(name for name in CONTEXT_ARGUMENTS if name not in ("epsilon", "random_state"))

Loss = Callable[[Any, NDArray[np.float64], NDArray[Any]], NDArray[np.float64]]


@dataclass(frozen=True)
class Choice:
    """What :func:`choose_model` returns: the final model (fitted on every row) and which candidate it is."""

    model: Any
    chosen: int
    epsilon: float


def _builder(estimator: type[DPEstimatorMixin], shared: Mapping[str, Any]) -> Callable[[float, np.random.Generator], Any]:
    """A maker of ``estimator`` at a given ε and generator, with the declared domain it takes (defaults otherwise)."""
    takes = set(inspect.signature(estimator.__init__).parameters)

    def make(epsilon: float, rng: np.random.Generator) -> Any:
        return estimator(epsilon=epsilon, random_state=rng, **{k: v for k, v in shared.items() if k in takes})

    return make


def choose_model(
    makers: Sequence[Callable[[float, np.random.Generator], Any]],
    X: NDArray[np.float64],
    y: NDArray[Any],
    loss: Loss,
    epsilon: float,
    *,
    share: float = DEFAULT_SHARE,
    held_out: float = DEFAULT_HELD_OUT,
    selection: str = "gumbel",
    random_state: RandomStateLike = None,
) -> Choice:
    """Screen the candidates ``makers`` on a held-out part, pick one by the exponential mechanism, refit it on all rows.

    ``makers[i](ε, rng)`` builds candidate ``i``, an unfitted pure ε-DP estimator spending ``ε``
    with noise from ``rng``; ``loss(model, X, y)`` is each record's loss in [0, 1]. The total is
    ``epsilon`` (the privacy argument is :class:`DPModelChoiceClassifier`'s). The final model's
    generator is dropped once it is fitted, so the model keeps nothing that could replay its noise.
    """
    check_epsilon(epsilon)
    if not 0 < share <= 1:
        raise ValueError(f"share must be above 0 and at most 1, got {share!r}")
    if not 0 < held_out < 1:
        raise ValueError(f"held_out must be strictly between 0 and 1, got {held_out!r}")
    m = len(makers)
    if m < 2:
        raise ValueError("a choice needs at least two candidates")
    structure, noise = check_random_state(random_state).spawn(2)
    held = structure.random(len(y)) < held_out  # one secret coin per row: a row's part never depends on the others
    seeds = noise.spawn(m + 2)
    screening = share * epsilon
    errors, candidates = np.zeros(m), []
    for i, make in enumerate(makers):
        candidates.append(make(screening / m, seeds[i]).fit(X[~held], y[~held]))
        errors[i] = float(np.sum(loss(candidates[i], X[held], y[held]))) if held.any() else 0.0
    # Each total moves by at most 1 when one held-out row is added or removed (losses lie in [0, 1]).
    chosen = int(Exponential(screening, sensitivity=1.0, method=selection, random_state=seeds[m]).select(-errors))
    if share == 1:  # no refit: the chosen candidate as it was fitted (already paid for)
        return Choice(candidates[chosen].set_params(random_state=None), chosen, screening)
    final = makers[chosen]((1.0 - share) * epsilon, seeds[m + 1]).fit(X, y).set_params(random_state=None)
    return Choice(final, chosen, epsilon)


PRIVACY = r"""
    Privacy argument (pure ε-DP, add/remove-one neighbours).

    Let ``s = share``, ``m`` the number of candidates, all pure ε-DP models of dpcore.

    * **The split** draws one secret coin per row (held out with the public probability
      ``held_out``), independent of the data and of the other rows, and is never released.
    * **Screening fits**: each candidate is fitted on the training part at ``s·ε/m``; the ``m``
      fits read the same rows, so they compose sequentially to ``s·ε`` on the training part.
    * **Selection**: each candidate's total loss on the held-out part (the Brier score halved
      for labels, the absolute error on the target scaled to [0, 1] by its declared bounds for
      numbers: both lie in [0, 1] per record, whatever the data and the model) moves by at most
      1 when one held-out row is added or removed: sensitivity 1.
      The exponential mechanism (:class:`~dpcore.mechanisms.Exponential`, exact sampler) picks
      the index at ``s·ε``. The totals themselves are never released, only the argmax.
    * **Parallel composition over the secret split**: a row added or removed lands in the
      training part (then only the screening fits see it, ``s·ε``; the selection reads the
      fitted candidates and the unchanged held-out rows: post-processing) or in the held-out
      part (then only the selection sees it, ``s·ε``). Each coin is independent of the data, so
      the screening is ``s·ε``-DP whichever part the row lands in (as the experts' parts,
      :mod:`dpcore.models.multiplicative_weights`).
    * **Final fit**: the chosen learner, fitted on every row at ``(1 − s)·ε``, composes
      sequentially with the screening: ``s·ε + (1 − s)·ε = ε`` in total, charged once. With
      ``share = 1`` there is no final fit: the chosen screening model is released as it was
      fitted, and the total is the screening's ``ε``.
    * **Exactness**: every candidate draws its noise with dpcore's exact samplers, and so does
      the pick (:func:`~dpcore.mechanisms.exponential.exact_choice`); the pick spends ``ε/(2Δ)``
      per unit of loss, not using the totals' monotonicity (which would halve its noise), so the
      call declares the plain sensitivity the audit checks.

    With ``k`` rows per person the context hands this model ``ε/k`` per row, and group privacy
    makes it ``ε`` per person, whichever parts a person's rows land in (so the split need not
    follow persons for privacy; a person's rows on both sides only make the held-out scores a
    little optimistic for every candidate alike).
"""
PRIVACY_SUMMARY = NEIGHBOURS + N_(
    "A secret draw holds out a public share of the rows (a fifth unless set otherwise). Each candidate learner is "
    "fitted on the rest with a public share s of ε (a quarter unless set otherwise, split between them), and the "
    "exponential mechanism picks the one with the smallest total error on the held-out rows, at s·ε too (one row's "
    "error is between 0 and 1); a row is on one side of the split only, so the comparison costs s·ε. The chosen "
    "learner is then fitted on every row with the rest, (1 − s)·ε: ε in total."
)


class _Choice(DPEstimatorMixin):
    """Shared by the classifier and the regressor: the candidates, the screening and the final model."""

    task: ClassVar[str]
    candidates: Sequence[str] | None
    share: float
    held_out: float
    selection: str
    categorical_levels: Mapping[int, int] | None
    count_noise: str
    final_model_: Any
    chosen_: str

    privacy_summary = PRIVACY_SUMMARY

    def _candidate_keys(self) -> list[str]:
        known = CANDIDATES[self.task]
        keys = list(self.candidates) if self.candidates is not None else list(DEFAULT_CANDIDATES[self.task])
        unknown = [k for k in keys if k not in known]
        if unknown or len(set(keys)) != len(keys) or len(keys) < 2:
            raise ValueError(f"candidates must be two or more distinct keys of {sorted(known)}, got {keys!r}")
        return keys

    def _choose(self, X: NDArray[np.float64], y: NDArray[Any], shared: Mapping[str, Any], loss: Loss) -> None:
        keys = self._candidate_keys()
        makers = [_builder(CANDIDATES[self.task][key], shared) for key in keys]
        result = choose_model(
            makers,
            X,
            y,
            loss,
            self.epsilon,
            share=self.share,
            held_out=self.held_out,
            selection=self.selection,
            random_state=self.random_state,
        )
        self.final_model_, self.chosen_ = result.model, keys[result.chosen]
        self._set_spent(result.epsilon)

    def _shared(self) -> dict[str, Any]:
        params = self.get_params(deep=False)
        return {name: params[name] for name in _SHARED if name in params}


_PARAMETERS = """
    Parameters
    ----------
    candidates : sequence of str, optional
        Registry keys of the learners to compare, among ``CANDIDATES[task]`` (default: ``DEFAULT_CANDIDATES[task]``).
    epsilon : float, default 1.0
        The total ε: the comparison and the final fit together.
    share : float, default 0.25
        The share of ε that buys the comparison (:data:`DEFAULT_SHARE`; what it was chosen on is there).
    held_out : float, default 0.2
        The public fraction of rows held out to score the candidates.
    selection : {"gumbel", "permute_and_flip"}
        The exponential mechanism's sampler, for the pick and for the candidates that take it.
    bounds, categorical_levels, count_noise, random_state : as for the other models.

    Attributes
    ----------
    final_model_ : the chosen learner fitted on every row; chosen_ : its registry key.
"""


class DPModelChoiceClassifier(DeclaredClassesMixin, ClassifierMixin, _Choice):
    __doc__ = (
        """The better of boosting and the additive model (naive Bayes on request) for a label, chosen privately on held-out rows.
"""
        + _PARAMETERS
        + """
    classes : sequence, optional
        The declared labels.

    Notes
    -----
    A record's loss is its Brier score halved (:func:`brier_losses`), in [0, 1].
"""
        + PRIVACY
        + """
    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((2000, 2))
    >>> model = DPModelChoiceClassifier(classes=[0, 1], epsilon=3.0, random_state=0).fit(X, (X[:, 0] > 0.5).astype(int))
    >>> model.chosen_ in CANDIDATES["classification"], model.epsilon_spent_
    (True, 3.0)
    """
    )

    task = "classification"

    def __init__(
        self,
        *,
        candidates: Sequence[str] | None = None,
        epsilon: float = 1.0,
        share: float = DEFAULT_SHARE,
        held_out: float = DEFAULT_HELD_OUT,
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        count_noise: str = "laplace",
        selection: str = "gumbel",
        random_state: RandomStateLike = None,
    ) -> None:
        self.candidates = candidates
        self.epsilon = epsilon
        self.share = share
        self.held_out = held_out
        self.bounds = bounds
        self.classes = classes
        self.categorical_levels = categorical_levels
        self.count_noise = count_noise
        self.selection = selection
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        self._check_choices()
        known = self._encode_labels(y) >= 0  # a label that is not declared: the record is dropped (a per-record filter)
        # Every candidate learns the declared labels themselves, so the chosen one names them in what it shows.
        shared = self._shared() | {"classes": list(self.classes_)}
        self._choose(X[known], np.asarray(y)[known], shared, brier_losses)
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_predict_input(X)
        return np.asarray(self.final_model_.predict_proba(X), dtype=float)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        self._check_predict_input(X)
        return np.asarray(self.final_model_.predict(X))


class DPModelChoiceRegressor(TargetScalingMixin, RegressorMixin, _Choice):
    __doc__ = (
        """The better of boosting and the additive model for a number, chosen privately on held-out rows.
"""
        + _PARAMETERS
        + """
    target_bounds : (float, float)
        The declared range of the target; the loss is measured on it.

    Notes
    -----
    A record's loss is the absolute error on the target scaled to [0, 1] by ``target_bounds``
    (prediction and truth both clipped into them), so it lies in [0, 1].
"""
        + PRIVACY
        + """
    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((2000, 2))
    >>> model = DPModelChoiceRegressor(target_bounds=(0, 1), epsilon=3.0, random_state=0).fit(X, X[:, 0])
    >>> model.chosen_ in CANDIDATES["regression"], model.epsilon_spent_
    (True, 3.0)
    """
    )

    task = "regression"

    def __init__(
        self,
        *,
        candidates: Sequence[str] | None = None,
        epsilon: float = 1.0,
        share: float = DEFAULT_SHARE,
        held_out: float = DEFAULT_HELD_OUT,
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        categorical_levels: Mapping[int, int] | None = None,
        count_noise: str = "laplace",
        selection: str = "gumbel",
        random_state: RandomStateLike = None,
    ) -> None:
        self.candidates = candidates
        self.epsilon = epsilon
        self.share = share
        self.held_out = held_out
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.categorical_levels = categorical_levels
        self.count_noise = count_noise
        self.selection = selection
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        self._check_choices()
        self._unit_target(y)  # the declared range, checked, for the loss
        lower, upper = self._target_lower, self._target_upper

        def scaled_errors(model: Any, X_held: NDArray[np.float64], y_held: NDArray[Any]) -> NDArray[np.float64]:
            unit = np.clip((np.asarray(model.predict(X_held), dtype=float) - lower) / (upper - lower), 0.0, 1.0)
            return np.abs(unit - self._unit_target(y_held))

        self._choose(X, np.asarray(y, dtype=float), self._shared(), scaled_errors)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_predict_input(X)
        return np.asarray(self.final_model_.predict(X), dtype=float)


def brier_losses(model: Any, X: NDArray[np.float64], labels: NDArray[Any]) -> NDArray[np.float64]:
    """Each record's Brier score halved, ``½·Σ_c (p_c − [c = y])²``, which lies in [0, 1] for any probabilities.

    Chosen over the 0/1 error: screening models fitted on a share of ε mostly predict the
    majority class, so their error counts tie and the pick is a coin toss, while their
    probabilities still tell a model that learnt something from one that did not
    (``benchmarks/README.md`` §31: the 0/1 error's regret was up to three times the Brier score's).
    """
    probabilities = np.asarray(model.predict_proba(X), dtype=float)
    truth = np.zeros_like(probabilities)
    codes = pd.Index(model.classes_).get_indexer(pd.Index(np.asarray(labels)))  # every label here is a declared one
    truth[np.arange(len(codes)), codes] = 1.0
    return np.clip(0.5 * np.sum((probabilities - truth) ** 2, axis=1), 0.0, 1.0)


_DESCRIPTION = N_(
    "A quarter of ε compares two learners, DP boosted trees and the DP additive model, on a held-out fifth of the "
    "rows; you get the better of the two, trained on every row with the other three quarters."
)


def registry_entries(our_model: Callable[..., Any]) -> tuple[Any, ...]:
    """The registry's entries for the two choices (the registry passes its own builder: no import cycle)."""
    return (
        our_model(
            CHOICE_KEYS["regression"],
            N_("Let DP choose the model (regressor)"),
            "regression",
            DPModelChoiceRegressor,
            _DESCRIPTION,
        ),
        our_model(
            CHOICE_KEYS["classification"],
            N_("Let DP choose the model (classifier)"),
            "classification",
            DPModelChoiceClassifier,
            _DESCRIPTION,
        ),
    )
