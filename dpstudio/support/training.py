"""Train one registry model on the session's table: hold-out split, budget spend, and what to show."""

from __future__ import annotations

import io
import pickle
import threading
import time
from decimal import Decimal

import numpy as np
import pandas as pd
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    mean_absolute_error,
    root_mean_squared_error,
)

from dpcore.accountant import ADD_REMOVE, UNITS, BudgetLedger, convert, fmt
from dpcore.exceptions import DataError
from dpcore.models.registry import ModelContext, get
from dpcore.schema import Normaliser, Schema
from dpcore.validation import epsilon_decimal
from dpstudio.support.readable import leaf_text, number, split_text, subset_text
from dpstudio.support.state import Dataset, TrainedModel

HOLDOUT_SHARE = 0.2
DEMO_SEED = 2024


def design(dataset: Dataset, encoding: str = "ordinal"):
    """Features, target, feature names, bounds, target bounds and classes from the declared schema."""
    schema = dataset.schema
    schema.check(dataset.frame, need_target=True)
    normaliser = Normaliser(schema, encoding=encoding)
    X, y = normaliser.design(dataset.frame)
    if len(y) < 20:
        raise DataError("Fewer than 20 rows have a usable target value; a model cannot be trained on so few.")
    target = schema.target
    target_bounds = (target.lower, target.upper) if target.kind == "numeric" else None
    classes = list(target.categories) if target.kind == "categorical" else None
    return X, y, normaliser.feature_names(), normaliser.feature_bounds(), target_bounds, classes, normaliser.categorical_levels()


def holdout_split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A data-independent random 80/20 split of row positions."""
    test = rng.random(n) < HOLDOUT_SHARE
    return np.flatnonzero(~test), np.flatnonzero(test)


def train_model(
    dataset: Dataset,
    model_key: str,
    epsilon: float,
    ledger: BudgetLedger,
    params: dict | None = None,
    encoding: str = "ordinal",
    count_noise: str = "laplace",
    selection: str = "gumbel",
    seeded: bool = False,
    progress=None,
) -> TrainedModel:
    """Fit on 80 % of the rows, charge ``epsilon`` to the ledger, and score on the other 20 %.

    The charge is made after fitting and before anything about the model is returned; if the
    ledger refuses it (:class:`BudgetExceededError`), the model is discarded unseen. ``progress``,
    if given, is called as ``progress(seconds_elapsed, seconds_estimated)`` while the fit runs.
    """
    spec = get(model_key)
    X, y, names, bounds, target_bounds, classes, levels = design(dataset, encoding)
    rng = np.random.default_rng(DEMO_SEED if seeded else None)
    train, test = holdout_split(len(y), rng)
    context = ModelContext(
        n_features=X.shape[1], epsilon=epsilon, bounds=bounds, target_bounds=target_bounds, classes=classes,
        count_noise=count_noise, selection=selection, categorical_levels=levels, random_state=DEMO_SEED if seeded else None,
        params=dict(params or {}),
    )
    model = fit_with_progress(lambda: spec.make(context), X[train], y[train], progress)
    ledger.spend(
        f"Train {spec.name}" + (" (demo seed)" if seeded else ""), epsilon, delta=float(getattr(model, "delta", 0.0) or 0.0),
        mechanism=type(model).__name__, released="a trained model",
    )
    predicted = model.predict(X[test])
    details: dict = {"n_train": len(train), "n_test": len(test), "n_without_target": len(dataset.frame) - len(y)}
    if spec.task == "regression":
        metrics = {"MAE": mean_absolute_error(y[test], predicted), "RMSE": root_mean_squared_error(y[test], predicted)}
        typical = np.full(len(test), np.median(y[train]))
        details["baseline"] = {"MAE": mean_absolute_error(y[test], typical), "RMSE": root_mean_squared_error(y[test], typical)}
        details["baseline_name"] = "always predicting the training rows' median"
    else:
        metrics = {"accuracy": accuracy_score(y[test], predicted), "balanced accuracy": balanced_accuracy_score(y[test], predicted)}
        values, counts = np.unique(y[train], return_counts=True)
        majority = np.full(len(test), values[np.argmax(counts)], dtype=object)
        details["baseline"] = {"accuracy": accuracy_score(y[test], majority),
                               "balanced accuracy": balanced_accuracy_score(y[test], majority)}
        details["baseline_name"] = "always predicting the most common class"
        details["confusion"] = pd.DataFrame(
            confusion_matrix(y[test], predicted, labels=classes),
            index=pd.Index(classes, name="true"),
            columns=pd.Index(classes, name="predicted"),
        )
        details["per_class"] = per_class_table(y[test], predicted, classes)
    if hasattr(model, "tree_records"):
        details["tree"] = model.tree_records(names)
    if hasattr(model, "rounds_as_records"):
        details["rounds"] = model.rounds_as_records(names)
    return TrainedModel(model_key, spec.name, spec.task, model, epsilon, dict(params or {}), metrics, names, seeded, details)


CALIBRATION_SHARE = 0.05


def fit_with_progress(make, X, y, progress=None):
    """``make().fit(X, y)``, reporting elapsed and estimated seconds while it runs.

    The estimate comes from a throw-away fit on a random 5 % of the rows (at least 200), scaled
    by the number of rows: the fits here grow about linearly with the rows. The throw-away model
    is never shown nor released, so it costs no budget.
    """
    if progress is None:
        return make().fit(X, y)
    rng = np.random.default_rng()
    size = min(len(y), max(200, int(CALIBRATION_SHARE * len(y))))
    sample = rng.choice(len(y), size=size, replace=False)
    started = time.perf_counter()
    try:
        make().fit(X[sample], y[sample])
        estimate = (time.perf_counter() - started) * len(y) / size
    except Exception:  # the real fit will say what is wrong
        estimate = float("nan")
    outcome: dict = {}

    def work():
        try:
            outcome["model"] = make().fit(X, y)
        except BaseException as error:  # re-raised below, in the page's thread
            outcome["error"] = error

    started = time.perf_counter()
    worker = threading.Thread(target=work, name="dpstudio-fit", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.5)
        progress(time.perf_counter() - started, estimate)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["model"]


def format_metric(value: float, task: str) -> str:
    """Errors in the target's units with thousands separators; accuracies as percentages."""
    if task == "classification":
        return f"{value:.1%}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"


def per_class_table(y_true, y_pred, classes) -> pd.DataFrame:
    rows = []
    for label in classes:
        actual, guessed = y_true == label, y_pred == label
        hits = int(np.sum(actual & guessed))
        rows.append(
            {
                "class": label,
                "rows": int(actual.sum()),
                "precision": hits / guessed.sum() if guessed.sum() else np.nan,
                "recall": hits / actual.sum() if actual.sum() else np.nan,
            }
        )
    return pd.DataFrame(rows)


def tree_dot(records: list[dict], schema: Schema, max_depth: int = 3, unit: str = "") -> str:
    """Graphviz source for the first ``max_depth`` levels of a tree (deeper nodes summarised), in the owner's units."""
    lines = ['digraph tree {', 'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];', "edge [fontsize=9];"]
    by_id = {r["id"]: r for r in records}

    def label(node):
        count = "n ≈ ?" if node["noisy_count"] is None else f"n ≈ {node['noisy_count']:,.0f}"
        if node.get("leaf"):
            return f"leaf\\n{leaf_text(node['value'], unit)}\\n{count}", "#e8f5e9"
        return f"{split_text(node['feature'], node['threshold'], schema)}?\\n{count}", "#e3f2fd"

    def visit(node_id, depth):
        node = by_id[node_id]
        text, colour = label(node)
        if depth >= max_depth and not node.get("leaf"):
            text, colour = f"… subtree\\n{text}", "#f5f5f5"
        lines.append(f'n{node_id} [label="{_escape(text)}", fillcolor="{colour}"];')
        if node.get("leaf") or depth >= max_depth:
            return
        for child, edge in ((node["left"], "yes"), (node["right"], "no")):
            lines.append(f'n{node_id} -> n{child} [label="{edge}"];')
            visit(child, depth + 1)

    if records:
        visit(records[0]["id"], 0)
    lines.append("}")
    return "\n".join(lines)


def rounds_table(rounds: list[dict], schema: Schema, first: int = 8) -> pd.DataFrame:
    """The first boosting rounds: each level's random split, and the range of the leaf steps in the target's units.

    A regression model's steps are learned on the target scaled into [0, 1]; they are shown times
    the declared range, so a step reads as dollars or years. Classification steps are log-odds.
    """
    target = schema.target
    scale = (target.upper - target.lower) if target is not None and target.kind == "numeric" else 1.0
    unit = target.name if target is not None and target.kind == "numeric" else "log-odds"
    rows = []
    for record in rounds[:first]:
        splits = [
            split_text(level["feature"], level["threshold"], schema) if "threshold" in level
            else subset_text(level["feature"], level.get("categories_left", []), schema)
            for level in record["levels"]
        ]
        steps = np.asarray(record["leaf_steps"], dtype=float) * scale
        rows.append({"round": record["round"] + 1, "random splits": " · ".join(splits),
                     f"smallest leaf step ({unit})": number(float(steps.min())),
                     f"largest leaf step ({unit})": number(float(steps.max()))})
    return pd.DataFrame(rows)


def _escape(text: str) -> str:
    return text.replace('"', '\\"')


def model_card(trained: TrainedModel, dataset: Dataset, unit: str = ADD_REMOVE) -> str:
    """A short Markdown card: what the model is, its ε in the dataset's unit, parameters, bounds and privacy argument."""
    spec = get(trained.key)
    schema = dataset.schema
    docstring = (type(trained.model).__doc__ or "").strip().splitlines()[0] if type(trained.model).__doc__ else spec.description
    lines = [
        f"# Model card: {trained.name}",
        "",
        f"*{docstring}*",
        "",
        privacy_line(trained, unit),
        f"- **Task**: {trained.task}; target `{schema.target.name}`.",
        f"- **Parameters**: {', '.join(f'{k} = {v}' for k, v in trained.parameters.items()) or 'defaults'}.",
        f"- **Count noise / selection**: {getattr(trained.model, 'count_noise', 'n/a')} / {getattr(trained.model, 'selection', 'n/a')}.",
        "",
        "## Declared bounds (public)",
        "",
    ]
    for c in [*schema.features, schema.target]:
        domain = f"[{c.lower:g}, {c.upper:g}]" if c.kind == "numeric" else "{" + ", ".join(c.categories) + "}"
        lines.append(f"- `{c.name}` ({c.kind}): {domain}" + (f" — {c.source}" if c.source else ""))
    lines += ["", "## Privacy argument", "", privacy_summary(trained.key), ""]
    for note in schema.leak_notes():
        lines.append(f"> **Warning:** {note}")
    if trained.seeded:
        lines.append("> **Reproducible demo seed — do not release this model.**")
    return "\n".join(lines) + "\n"


def privacy_line(trained: TrainedModel, unit: str = ADD_REMOVE) -> str:
    """The model's guarantee, and what it costs in the dataset's unit of protection."""
    delta = float(getattr(trained.model, "delta", 0.0) or 0.0)
    if delta:
        line = (f"- **Privacy**: (ε = {trained.epsilon:g}, δ = {delta:g})-differential privacy — APPROXIMATE DP (Gaussian "
                "noise, zCDP accounting), not pure ε-DP; add/remove-one neighbours.")
    else:
        line = f"- **Privacy**: ε = {trained.epsilon:g} (pure ε-differential privacy, add/remove-one neighbours)."
    eps, dlt = convert(epsilon_decimal(trained.epsilon), Decimal(repr(delta)), ADD_REMOVE, unit)
    return line + (f" In the dataset's unit ({UNITS[unit]}) it counts as ε = {fmt(eps)}"
                   + (f", δ = {fmt(dlt)}" if dlt else "") + ".")


def privacy_summary(model_key: str) -> str:
    """The privacy argument in two sentences, per model family."""
    summaries = {
        "dp_tree": "Every split is chosen by the exponential mechanism over a fixed threshold grid and every count and leaf sum "
        "gets Laplace or geometric noise, each with ε/(2·depth+1). A record meets at most 2·depth+1 such queries on its path "
        "and nodes of one level hold disjoint records, so the whole tree is ε-DP.",
        "dp_forest": "Records are split into disjoint random parts and each grows a DP tree with the full ε. "
        "Disjoint parts compose in parallel, so the forest is ε-DP; averaging is post-processing.",
        "dp_extra_trees": "Candidate splits are drawn at random without looking at the data; each level spends ε/(2(h+1)) "
        "on a noisy count and on the exponential-mechanism choice or noisy leaf, so each tree is ε-DP, and disjoint trees compose in parallel.",
        "dp_random_forest": "Splits are chosen by the exponential mechanism with Gini impurity over a fixed grid and leaves are noisy "
        "class counts, ε/(depth+1) each; levels and disjoint trees compose to ε.",
        "dp_gaussian_nb": "Class counts, per-class sums and sums of squares each get Laplace noise with ε/3 and sensitivities from the "
        "declared bounds; the model is a function of these noisy sums only, so it is ε-DP.",
        "dp_mean": "A noisy count and a noisy sum, ε/2 each; their ratio is post-processing.",
        "dp_boosting": "Each round's tree is drawn without looking at the data; each round spends ε/rounds on noisy leaf counts and "
        "on noisy sums of residuals clipped to a fixed range, leaves of a round are disjoint and rounds compose, so the model is ε-DP.",
    }
    family = next((k for k in summaries if model_key.startswith(k)), None)
    return summaries.get(family, get(model_key).description)


def model_bytes(trained: TrainedModel) -> bytes:
    buffer = io.BytesIO()
    pickle.dump(trained.model, buffer)
    return buffer.getvalue()
