"""One list of every model the app, the evaluation engine and the benchmarks know.

Each entry says who made it (``kind``: ours, diffprivlib, interpret or non-private), its
task, its display name, and how to build it from a :class:`ModelContext` — the declared
domain and the budget — so no caller has to know a library's parameter names.

A default lives in one place. For our models that place is the estimator's ``__init__``:
a :class:`Parameter` shown on the Train page reads its default from there
(:func:`estimator_defaults`), and a hyper-parameter the owner did not choose is simply not
passed. The baselines from other libraries keep their settings here.

:data:`REGISTRY` holds the models that learn a target (``fit(X, y)``, ``predict``);
:data:`CLUSTERING` the models that find groups (task ``"clustering"``: ``fit(X)``,
``fit_predict``). :func:`get` and :func:`models_for` cover both.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from dpcore.i18n import N_, _
from dpcore.models import choice, multiplicative_weights, student
from dpcore.models._base import NEIGHBOURS, DPEstimatorMixin
from dpcore.models._specs import (
    CONTEXT_ARGUMENTS,
    KIND_LABELS,
    KINDS,
    Estimator,
    ModelContext,
    ModelSpec,
    Parameter,
    estimator_defaults,
)
from dpcore.models.additive import DPAdditiveClassifier, DPAdditiveRegressor
from dpcore.models.boosting import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models.clustering import NEIGHBOURHOODS, DPGridDensityClustering
from dpcore.models.dpsgd import DPSGDClassifier, DPSGDRegressor
from dpcore.models.extra_trees import DPExtraTreesClassifier, DPExtraTreesRegressor
from dpcore.models.mean import DPMeanRegressor
from dpcore.models.naive_bayes import DPGaussianNB
from dpcore.models.partitioned_forest import DPPartitionedForest
from dpcore.models.random_forest import DPRandomForestClassifier
from dpcore.models.regression_tree import DPRegressionTree

# The shapes live in dpcore.models._specs; callers keep importing them from here.
__all__ = [
    "CLUSTERING",
    "KINDS",
    "KIND_LABELS",
    "MODELS",
    "REGISTRY",
    "Estimator",
    "ModelContext",
    "ModelSpec",
    "Parameter",
    "estimator_defaults",
    "get",
    "models_for",
    "privacy_argument",
    "privacy_summary",
]


def _p(context: ModelContext, name: str, default: Any) -> Any:
    """A baseline's hyper-parameter: the owner's choice, else the baseline's setting here."""
    return context.params.get(name, default)


# --- ours -------------------------------------------------------------------------------


def _as_given(value: Any, default: Any) -> Any:
    """A whole-number float (``5.0`` from a form or a file) becomes an int unless the parameter is a float one."""
    whole = isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer()
    return int(value) if whole and not isinstance(default, float) else value


def _ours(estimator: type[DPEstimatorMixin], approximate: bool = False, **fixed: Any) -> Callable[[ModelContext], Estimator]:
    """Build ``estimator`` with the context's budget, domain and mechanisms, the ``fixed`` arguments
    that define the registry entry, and the owner's ``params``; everything else keeps its default.
    ``approximate`` passes the context's δ (the approximate-DP mode); otherwise δ keeps its default."""
    defaults = estimator_defaults(estimator)
    bound = set(CONTEXT_ARGUMENTS) | set(fixed) | {"delta"}

    def build(c: ModelContext) -> Estimator:
        kwargs = {name: getattr(c, name) for name in CONTEXT_ARGUMENTS if name in defaults}
        if approximate:
            kwargs["delta"] = c.delta
        kwargs.update(fixed)
        kwargs.update(
            {name: _as_given(value, defaults[name]) for name, value in c.params.items() if name in defaults and name not in bound}
        )
        return estimator(**kwargs)

    return build


def _our_model(
    key: str,
    name: str,
    task: str,
    estimator: type[DPEstimatorMixin],
    description: str,
    parameters: tuple[Parameter, ...] = (),
    approximate: bool = False,
    **fixed: Any,
) -> ModelSpec:
    """A registry entry for one of our estimators (``fixed``: the arguments that define the entry, e.g. ``leaf``)."""
    return ModelSpec(
        key, name, "ours", task, _ours(estimator, approximate, **fixed), description, parameters, estimator, approximate
    )


# --- diffprivlib --------------------------------------------------------------------------


def _diffprivlib_nb(c: ModelContext) -> Estimator:
    from diffprivlib.models import GaussianNB

    from dpcore.models.baselines import EncodedLabelClassifier

    return EncodedLabelClassifier(
        estimator=GaussianNB(epsilon=c.epsilon, bounds=c.bounds, random_state=_seed(c)), classes=c.classes
    )


def _diffprivlib_tree(c: ModelContext) -> Estimator:
    from diffprivlib.models import DecisionTreeClassifier

    from dpcore.models.baselines import EncodedLabelClassifier

    k = len(_declared_classes(c))
    return EncodedLabelClassifier(
        estimator=DecisionTreeClassifier(
            max_depth=int(_p(c, "max_depth", 5)),
            epsilon=c.epsilon,
            bounds=c.bounds,
            classes=list(range(k)),
            random_state=_seed(c),
        ),
        classes=c.classes,
    )


def _diffprivlib_forest(c: ModelContext) -> Estimator:
    from diffprivlib.models import RandomForestClassifier

    from dpcore.models.baselines import EncodedLabelClassifier

    k = len(_declared_classes(c))
    return EncodedLabelClassifier(
        estimator=RandomForestClassifier(
            n_estimators=int(_p(c, "n_estimators", 10)),
            max_depth=int(_p(c, "max_depth", 5)),
            epsilon=c.epsilon,
            bounds=c.bounds,
            classes=list(range(k)),
            random_state=_seed(c),
        ),
        classes=c.classes,
    )


def _diffprivlib_logistic(c: ModelContext) -> Estimator:
    from diffprivlib.models import LogisticRegression

    from dpcore.models.baselines import EncodedLabelClassifier, scaled

    return scaled(
        EncodedLabelClassifier(
            estimator=LogisticRegression(epsilon=c.epsilon, data_norm=float(np.sqrt(c.n_features)), random_state=_seed(c)),
            classes=c.classes,
        ),
        c.bounds,
    )


def _diffprivlib_linear(c: ModelContext) -> Estimator:
    from diffprivlib.models import LinearRegression

    from dpcore.models.baselines import scaled, unit_target

    # The functional mechanism's noise grows with the squared target range, so it is fitted on
    # the target scaled to [0, 1] by its declared bounds (the fairest use of it).
    return unit_target(
        scaled(LinearRegression(epsilon=c.epsilon, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0), random_state=_seed(c)), c.bounds),
        c.target_bounds,
    )


def _declared_classes(c: ModelContext) -> list[Any]:
    """A classifier baseline's declared labels (it never reads them from the data)."""
    if c.classes is None:  # was len(None): the same TypeError, without saying why
        raise TypeError("a classifier needs the declared classes in its ModelContext")
    return c.classes


def _seed(c: ModelContext) -> int | np.integer[Any] | None:
    """diffprivlib takes an int seed or a RandomState; pass ints through, else fresh entropy."""
    return c.random_state if isinstance(c.random_state, int | np.integer) else None


# --- interpret ------------------------------------------------------------------------------


def _dp_ebm(task: str) -> Callable[[ModelContext], Estimator]:
    def build(c: ModelContext) -> Estimator:
        from interpret.privacy import DPExplainableBoostingClassifier, DPExplainableBoostingRegressor

        from dpcore.models.baselines import EncodedLabelClassifier, scaled

        # Categorical features are DP-EBM's "nominal" (fairest to it); numeric ones get declared bounds.
        nominal = set(c.categorical_levels)
        common = dict(
            epsilon=c.epsilon,
            delta=c.delta,
            privacy_bounds={i: (0.0, 1.0) for i in range(c.n_features) if i not in nominal},
            feature_types=["nominal" if i in nominal else "continuous" for i in range(c.n_features)],
            n_jobs=1,
        )
        if task == "classification":
            return scaled(
                EncodedLabelClassifier(estimator=DPExplainableBoostingClassifier(**common), classes=c.classes), c.bounds
            )
        lower, upper = c.target_bounds if c.target_bounds is not None else (0.0, 1.0)
        return scaled(
            DPExplainableBoostingRegressor(privacy_target_min=float(lower), privacy_target_max=float(upper), **common), c.bounds
        )

    return build


# --- non-private --------------------------------------------------------------------------


def _sk(name: str, **fixed: Any) -> Callable[[ModelContext], Estimator]:
    def build(c: ModelContext) -> Estimator:
        import sklearn.ensemble as ensemble
        import sklearn.linear_model as linear
        import sklearn.naive_bayes as nb
        import sklearn.tree as tree

        from dpcore.models.baselines import PartitionedForestRegressor, scaled

        seed = _seed(c)
        makers = {
            "DecisionTreeRegressor": lambda: tree.DecisionTreeRegressor(random_state=seed, **fixed),
            "DecisionTreeClassifier": lambda: tree.DecisionTreeClassifier(random_state=seed, **fixed),
            "RandomForestRegressor": lambda: ensemble.RandomForestRegressor(n_estimators=10, random_state=seed, **fixed),
            "RandomForestClassifier": lambda: ensemble.RandomForestClassifier(n_estimators=10, random_state=seed, **fixed),
            "ExtraTreesRegressor": lambda: ensemble.ExtraTreesRegressor(n_estimators=10, random_state=seed, **fixed),
            "ExtraTreesClassifier": lambda: ensemble.ExtraTreesClassifier(n_estimators=10, random_state=seed, **fixed),
            "GaussianNB": lambda: nb.GaussianNB(),
            "LogisticRegression": lambda: scaled(linear.LogisticRegression(max_iter=1000), c.bounds),
            "LinearRegression": lambda: scaled(linear.LinearRegression(), c.bounds),
            "PartitionedForest": lambda: PartitionedForestRegressor(random_state=seed, **fixed),
        }
        return makers[name]()

    return build


_SAMPLING = Parameter(
    "sampling",
    N_("disjoint: each record trains one tree (full ε each); subsample: trees overlap (ε split between them)."),
    choices=("disjoint", "subsample"),
)
_TREE_PARAMS = (
    Parameter(
        "max_depth",
        N_("How many questions deep the tree may go; deeper trees split the budget more thinly."),
        minimum=1,
        maximum=20,
    ),
    Parameter("min_samples_split", N_("Stop splitting a group smaller than this (by its noisy count)."), minimum=1, maximum=1000),
    Parameter("min_samples_leaf", N_("Never make a group smaller than this (by its noisy count)."), minimum=1, maximum=1000),
)
_FOREST_PARAMS = (
    Parameter("n_estimators", N_("Number of trees; each sees its own share of the records."), minimum=1, maximum=200),
    Parameter("max_depth", N_("Depth of each tree."), minimum=1, maximum=12),
)
_ET_PARAMS = (Parameter("n_estimators", N_("Number of trees."), minimum=1, maximum=100), _SAMPLING)
_RF_PARAMS = (
    Parameter("n_estimators", N_("Number of trees."), minimum=1, maximum=100),
    Parameter("max_depth", N_("Depth of each tree."), minimum=1, maximum=12),
    _SAMPLING,
)
# Boosting shows no parameters: its defaults were fixed on public data; the owner's table must not tune them.
_APPROX = N_("APPROXIMATE DP ((ε, δ), δ = 1e-5): Gaussian noise, more accurate, a tiny chance δ that the ε promise fails.")

_DPSGD_PARAMS = (
    Parameter(
        "epochs",
        N_(
            "Expected passes over the rows. The budget is shared by every step, so more passes mean more noise in each. "
            "Left empty, the model chooses from a quarter of a pass to 20 passes from ε and the noisy row count: fewer at a "
            "small ε."
        ),
        minimum=1,
        maximum=200,
        automatic=True,
    ),
    Parameter(
        "hidden_units",
        N_("0: a straight-line (linear) model; more: one hidden layer of that many units."),
        minimum=0,
        maximum=256,
    ),
)
_DPSGD = N_(
    "APPROXIMATE DP ((ε, δ), with the δ you choose when training): learns step by step from random batches of rows; "
    "each row's pull on the model is capped and every step gets exact Gaussian noise; a bound proved for that noise "
    "adds up what all steps spend."
)

REGISTRY: tuple[ModelSpec, ...] = (
    _our_model(
        "dp_boosting_reg",
        N_("DP boosted trees (regressor)"),
        "regression",
        DPBoostingRegressor,
        N_(
            "Many small trees whose splits are mostly drawn at random (on a small table, each round's first split is "
            "picked with noise); most of the budget goes to noisy leaf averages."
        ),
    ),
    _our_model(
        "dp_boosting_clf",
        N_("DP boosted trees (classifier)"),
        "classification",
        DPBoostingClassifier,
        N_(
            "Many small trees whose splits are mostly drawn at random (with two classes, each round's first split is "
            "picked with noise); most of the budget goes to noisy leaf steps."
        ),
    ),
    _our_model(
        "dp_additive_reg",
        N_("DP additive model (regressor)"),
        "regression",
        DPAdditiveRegressor,
        N_(
            "One step function per column, fitted one column at a time from noisy sums over its bins: "
            "best when each column pulls the target a little on its own, on small tables."
        ),
    ),
    _our_model(
        "dp_additive_clf",
        N_("DP additive model (classifier)"),
        "classification",
        DPAdditiveClassifier,
        N_(
            "One step function per column, fitted one column at a time from noisy sums over its bins: "
            "best when each column pulls the label a little on its own, on small tables."
        ),
    ),
    _our_model(
        "dp_boosting_reg_approx",
        N_("DP boosted trees (regressor), approximate DP δ = 1e-5"),
        "regression",
        DPBoostingRegressor,
        _APPROX,
        approximate=True,
    ),
    _our_model(
        "dp_boosting_clf_approx",
        N_("DP boosted trees (classifier), approximate DP δ = 1e-5"),
        "classification",
        DPBoostingClassifier,
        _APPROX,
        approximate=True,
    ),
    _our_model(
        "dp_tree",
        N_("DP regression tree (mean leaves)"),
        "regression",
        DPRegressionTree,
        N_("One tree; each split chosen by the exponential mechanism, leaves are noisy averages."),
        _TREE_PARAMS,
        leaf="mean",
    ),
    _our_model(
        "dp_tree_median",
        N_("DP regression tree (median leaves)"),
        "regression",
        DPRegressionTree,
        N_("One tree whose leaves are DP medians: robust to outliers."),
        _TREE_PARAMS,
        leaf="median",
    ),
    _our_model(
        "dp_forest",
        N_("DP partitioned forest (mean leaves)"),
        "regression",
        DPPartitionedForest,
        N_("Many small DP trees on disjoint parts of the data, averaged; each gets the full ε."),
        _FOREST_PARAMS,
        leaf="mean",
    ),
    _our_model(
        "dp_forest_median",
        N_("DP partitioned forest (median leaves)"),
        "regression",
        DPPartitionedForest,
        N_("The partitioned forest with median leaves."),
        _FOREST_PARAMS,
        leaf="median",
    ),
    _our_model(
        "dp_extra_trees_reg",
        N_("DP ExtraTrees regressor"),
        "regression",
        DPExtraTreesRegressor,
        N_("Randomised trees whose candidate splits cost nothing; the budget goes to choosing among them and to leaves."),
        _ET_PARAMS,
    ),
    _our_model(
        "dp_sgd_linear",
        N_("DP-SGD linear regression (approximate DP)"),
        "regression",
        DPSGDRegressor,
        _DPSGD,
        _DPSGD_PARAMS,
        approximate=True,
    ),
    _our_model(
        "dp_mean",
        N_("DP mean (baseline)"),
        "regression",
        DPMeanRegressor,
        N_("Predicts one noisy average for everyone: the floor any useful model must beat."),
    ),
    _our_model(
        "dp_extra_trees_clf",
        N_("DP ExtraTrees classifier"),
        "classification",
        DPExtraTreesClassifier,
        N_("Randomised trees with free candidate splits and noisy class counts at the leaves."),
        _ET_PARAMS,
    ),
    _our_model(
        "dp_random_forest",
        N_("DP random forest"),
        "classification",
        DPRandomForestClassifier,
        N_("Trees whose splits are chosen by the exponential mechanism with Gini impurity; leaves are noisy class counts."),
        _RF_PARAMS,
    ),
    _our_model(
        "dp_gaussian_nb",
        N_("DP Gaussian Naive Bayes"),
        "classification",
        DPGaussianNB,
        N_("Noisy class counts, means and variances: fast and robust at small ε."),
    ),
    _our_model(
        "dp_sgd_logistic",
        N_("DP-SGD logistic regression (approximate DP)"),
        "classification",
        DPSGDClassifier,
        _DPSGD,
        _DPSGD_PARAMS,
        approximate=True,
    ),
    *student.registry_entries(_our_model, Parameter),
    *multiplicative_weights.registry_entries(_our_model, Parameter),
    *choice.registry_entries(_our_model),
    ModelSpec(
        "dpl_gaussian_nb",
        N_("diffprivlib Gaussian NB"),
        "diffprivlib",
        "classification",
        _diffprivlib_nb,
        N_("IBM diffprivlib's DP Gaussian Naive Bayes."),
    ),
    ModelSpec(
        "dpl_tree",
        N_("diffprivlib decision tree"),
        "diffprivlib",
        "classification",
        _diffprivlib_tree,
        N_("diffprivlib's DP tree: random splits, noisy leaves."),
    ),
    ModelSpec(
        "dpl_random_forest",
        N_("diffprivlib random forest"),
        "diffprivlib",
        "classification",
        _diffprivlib_forest,
        N_("diffprivlib's DP random forest (random splits, noisy leaves)."),
    ),
    ModelSpec(
        "dpl_logistic",
        N_("diffprivlib logistic regression"),
        "diffprivlib",
        "classification",
        _diffprivlib_logistic,
        N_("diffprivlib's objective-perturbation logistic regression."),
    ),
    ModelSpec(
        "dpl_linear",
        N_("diffprivlib linear regression"),
        "diffprivlib",
        "regression",
        _diffprivlib_linear,
        N_("diffprivlib's functional-mechanism linear regression."),
    ),
    ModelSpec(
        "dp_ebm_clf",
        N_("DP-EBM classifier (δ = 1e-5)"),
        "interpret",
        "classification",
        _dp_ebm("classification"),
        N_("InterpretML's DP explainable boosting: (ε, δ)-DP, binary labels only."),
    ),
    ModelSpec(
        "dp_ebm_reg",
        N_("DP-EBM regressor (δ = 1e-5)"),
        "interpret",
        "regression",
        _dp_ebm("regression"),
        N_("InterpretML's DP explainable boosting: (ε, δ)-DP."),
    ),
    ModelSpec(
        "sk_tree_reg",
        N_("scikit-learn decision tree"),
        "non-private",
        "regression",
        _sk("DecisionTreeRegressor"),
        N_("Non-private reference."),
    ),
    ModelSpec(
        "sk_forest_reg",
        N_("scikit-learn random forest"),
        "non-private",
        "regression",
        _sk("RandomForestRegressor"),
        N_("Non-private reference (10 trees)."),
    ),
    ModelSpec(
        "sk_partitioned_forest",
        N_("partitioned forest of scikit-learn trees"),
        "non-private",
        "regression",
        _sk("PartitionedForest"),
        N_("Non-private version of the partitioned forest (paper A's Python_Forest)."),
    ),
    ModelSpec(
        "sk_extra_trees_reg",
        N_("scikit-learn ExtraTrees regressor"),
        "non-private",
        "regression",
        _sk("ExtraTreesRegressor"),
        N_("Non-private reference (10 trees)."),
    ),
    ModelSpec(
        "sk_linear",
        N_("scikit-learn linear regression"),
        "non-private",
        "regression",
        _sk("LinearRegression"),
        N_("Non-private reference."),
    ),
    ModelSpec(
        "sk_tree_clf",
        N_("scikit-learn decision tree"),
        "non-private",
        "classification",
        _sk("DecisionTreeClassifier"),
        N_("Non-private reference."),
    ),
    ModelSpec(
        "sk_forest_clf",
        N_("scikit-learn random forest"),
        "non-private",
        "classification",
        _sk("RandomForestClassifier"),
        N_("Non-private reference (10 trees)."),
    ),
    ModelSpec(
        "sk_extra_trees_clf",
        N_("scikit-learn ExtraTrees"),
        "non-private",
        "classification",
        _sk("ExtraTreesClassifier"),
        N_("Non-private reference (10 trees)."),
    ),
    ModelSpec(
        "sk_gaussian_nb",
        N_("scikit-learn Gaussian NB"),
        "non-private",
        "classification",
        _sk("GaussianNB"),
        N_("Non-private reference."),
    ),
    ModelSpec(
        "sk_logistic",
        N_("scikit-learn logistic regression"),
        "non-private",
        "classification",
        _sk("LogisticRegression"),
        N_("Non-private reference."),
    ),
)


# --- clustering ---------------------------------------------------------------------------
# The baselines see the features scaled to [0, 1] by their declared bounds, as our grid does;
# n_clusters (k-means) and the resolution (DBSCAN's Eps = one cell side) are public choices.


def _kmeans(private: bool) -> Callable[[ModelContext], Estimator]:
    def build(c: ModelContext) -> Estimator:
        from sklearn.cluster import KMeans

        from dpcore.models.baselines import scaled

        k = int(_p(c, "n_clusters", 8))
        if private:
            from diffprivlib.models import KMeans as DPKMeans

            return scaled(DPKMeans(n_clusters=k, epsilon=c.epsilon, bounds=(0.0, 1.0), random_state=_seed(c)), c.bounds)
        return scaled(KMeans(n_clusters=k, n_init="auto", random_state=_seed(c)), c.bounds)

    return build


def _dbscan(c: ModelContext) -> Estimator:
    from sklearn.cluster import DBSCAN

    from dpcore.models.baselines import scaled

    resolution = _p(c, "resolution", None) or 32
    return scaled(DBSCAN(eps=1.0 / float(resolution), min_samples=int(_p(c, "min_pts", 5))), c.bounds)


_N_CLUSTERS = Parameter(
    "n_clusters", N_("How many groups k-means must find (a public choice)."), minimum=2, maximum=50, default=8
)
CLUSTERING: tuple[ModelSpec, ...] = (
    _our_model(
        "dp_grid_clustering",
        N_("DP grid density clustering"),
        "clustering",
        DPGridDensityClustering,
        N_(
            "A noisy count of every cell of a grid laid from the declared bounds; dense cells that touch form a group. "
            "Releases the map of groups, never a label per person."
        ),
        (
            Parameter(
                "resolution",
                N_("Cells per column (about DBSCAN's Eps); empty: chosen privately with 5 % of ε."),
                minimum=2,
                maximum=1024,
            ),
            Parameter(
                "min_pts",
                N_("A cell is dense from this many rows (by its noisy count), or the noise floor if higher."),
                minimum=0,
                maximum=100_000,
            ),
            Parameter(
                "neighbours", N_("Dense cells touching at a corner, or only at a face, form one group."), choices=NEIGHBOURHOODS
            ),
        ),
    ),
    ModelSpec(
        "dpl_kmeans",
        N_("diffprivlib k-means"),
        "diffprivlib",
        "clustering",
        _kmeans(private=True),
        N_("diffprivlib's DP k-means (DPLloyd, Su et al. 2016) at the same ε; k is a public choice."),
        (_N_CLUSTERS,),
    ),
    ModelSpec(
        "sk_kmeans",
        N_("scikit-learn k-means"),
        "non-private",
        "clustering",
        _kmeans(private=False),
        N_("Non-private reference: labels every row."),
        (_N_CLUSTERS,),
    ),
    ModelSpec(
        "sk_dbscan",
        N_("scikit-learn DBSCAN"),
        "non-private",
        "clustering",
        _dbscan,
        N_("Non-private reference: DBSCAN with Eps one cell side and MinPts as ours, on the declared-bounds scale."),
    ),
)

MODELS = {spec.key: spec for spec in (*REGISTRY, *CLUSTERING)}


def privacy_summary(model: object) -> str:
    """The privacy argument of ``model`` in two or three plain sentences, for a model card.

    ``model`` is a registry key, or one of our estimators (class or instance), which states its
    argument once in its class attribute ``privacy_summary``. A baseline from another library
    has none; by its key it gets its registry description.

    >>> privacy_summary("dp_mean") == DPMeanRegressor.privacy_summary
    True
    >>> privacy_summary("dpl_tree")
    "diffprivlib's DP tree: random splits, noisy leaves."
    """
    if isinstance(model, str):
        spec = get(model)
        return spec.estimator.privacy_summary if spec.estimator is not None else spec.description
    summary = getattr(model, "privacy_summary", None)
    if not isinstance(summary, str):
        raise TypeError(f"privacy_summary takes a registry key or one of dpcore's estimators, got {type(model).__name__}")
    return summary


def privacy_argument(model: object) -> str:
    """:func:`privacy_summary` in the reader's language (the class attribute itself stays English).

    A summary is :data:`~dpcore.models._base.NEIGHBOURS` and one sentence group from the catalog;
    an estimator whose argument names task-specific parts keeps its ``privacy_template`` and
    ``privacy_fields``, which are translated before they are put together.
    """
    estimator = get(model).estimator if isinstance(model, str) else model
    template = getattr(estimator, "privacy_template", None)
    if template is not None:
        fields = {name: _(text) for name, text in getattr(estimator, "privacy_fields", {}).items()}
        return _(NEIGHBOURS) + _(template).format(**fields)
    summary = privacy_summary(model)
    if summary.startswith(NEIGHBOURS):
        return _(NEIGHBOURS) + _(summary[len(NEIGHBOURS) :])
    return _(summary)


def models_for(task: str, kinds: Collection[str] = KINDS) -> list[ModelSpec]:
    """The registry's models for ``task`` ("regression", "classification" or "clustering"), in display order."""
    return [m for m in MODELS.values() if m.task == task and m.kind in kinds]


def get(key: str) -> ModelSpec:
    try:
        return MODELS[key]
    except KeyError:
        raise ValueError(f"unknown model {key!r}; known: {', '.join(MODELS)}") from None
