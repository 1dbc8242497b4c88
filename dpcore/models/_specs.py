"""The shapes of the model registry: what an entry is, what a model is built from, and what the owner may change.

Kept apart from :mod:`dpcore.models.registry` (the entries themselves) so each reads in one sitting;
the registry re-exports every name here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, Self

from dpcore.i18n import N_
from dpcore.models._base import DPEstimatorMixin
from dpcore.tables.design import ModelContext

KINDS = ("ours", "diffprivlib", "interpret", "non-private")
#: What our estimators take from a :class:`~dpcore.tables.design.ModelContext` when they have the argument:
#: the budget, the declared domain, the mechanisms' settings and the generator.
CONTEXT_ARGUMENTS = (
    "epsilon",
    "bounds",
    "target_bounds",
    "classes",
    "categorical_levels",
    "count_noise",
    "selection",
    "random_state",
)
KIND_LABELS = {
    "ours": N_("DP Studio (ε-DP; (ε, δ)-DP where labelled approximate)"),
    "diffprivlib": N_("diffprivlib (ε-DP)"),
    "interpret": N_("InterpretML DP-EBM ((ε, δ)-DP)"),
    "non-private": N_("non-private reference — owner's eyes only"),
}


class Estimator(Protocol):
    """What a registry entry builds: a scikit-learn estimator (ours, a baseline's, or a pipeline)."""

    def fit(self, X: Any, y: Any) -> Self: ...

    def predict(self, X: Any) -> Any: ...


@dataclass(frozen=True)
class Parameter:
    """A hyper-parameter the Train page lets the owner change.

    For our models leave ``default`` out: :class:`ModelSpec` fills it in from the estimator.
    ``automatic``: left empty, the estimator chooses the value itself (from public settings only).
    """

    name: str
    help: str
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    default: object = None
    automatic: bool = False


@dataclass(frozen=True)
class ModelSpec:
    key: str
    name: str
    kind: str
    task: str
    build: Callable[[ModelContext], Estimator]
    description: str
    parameters: tuple[Parameter, ...] = ()
    estimator: type[DPEstimatorMixin] | None = None  # our estimator class; None for the baselines
    approximate: bool = False  # (ε, δ)-DP with the context's δ: labelled approximate wherever shown, and charged a δ

    def __post_init__(self) -> None:
        if self.estimator is not None:
            defaults = estimator_defaults(self.estimator)
            object.__setattr__(self, "parameters", tuple(replace(p, default=defaults[p.name]) for p in self.parameters))

    @property
    def private(self) -> bool:
        return self.kind != "non-private"

    def make(self, context: ModelContext) -> Estimator:
        """The estimator for ``context``, its budget turned from per person into per row."""
        return self.build(context.per_row())


def estimator_defaults(estimator: type | object) -> dict[str, Any]:
    """``{name: default}`` of an estimator's ``__init__`` (class or instance): where our defaults live.

    >>> from dpcore.models.regression_tree import DPRegressionTree
    >>> estimator_defaults(DPRegressionTree)["max_depth"]
    15
    """
    cls: type[Any] = estimator if isinstance(estimator, type) else type(estimator)
    signature = inspect.signature(cls.__init__)
    return {name: p.default for name, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}
