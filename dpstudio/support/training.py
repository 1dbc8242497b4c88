"""The Train page's glue: train on the session's table, show the model in the target's units, and the ε to spend (also on Groups)."""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.budget.accountant import LITTLE_EPSILON, SPENT_EPSILON, BudgetLedger, default_epsilon
from dpcore.budget.persons import per_row
from dpcore.explain import epsilon_problem
from dpcore.i18n import _, integer, percent, short
from dpcore.models.registry import ModelSpec
from dpcore.progress import time_left_text
from dpcore.tables.design import Design
from dpcore.tables.schema import Schema
from dpcore.training import Progress, TrainedModel, train
from dpstudio.support.readable import branches_text, leaf_text, number, split_text, subset_text
from dpstudio.support.state import StudioState

DEMO_SEED = 2024
BASELINE = "baseline_name"  # the trivial guess's name in a model's details (English; translated where shown)


def format_metric(value: float, task: str) -> str:
    """Errors in the target's units with thousands separators; accuracies as percentages."""
    if task == "classification":
        return percent(value, 1)
    return integer(value) if abs(value) >= 100 else short(float(f"{value:.4g}"))


def tree_dot(records: list[dict], schema: Schema, max_depth: int = 3, unit: str = "") -> str:
    """Graphviz source for the first ``max_depth`` levels of a tree (deeper nodes summarised), in the owner's units."""
    lines = [
        "digraph tree {",
        'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        "edge [fontsize=9];",
    ]
    by_id = {r["id"]: r for r in records}

    def label(node):
        count = "n ≈ ?" if node["noisy_count"] is None else f"n ≈ {integer(node['noisy_count'])}"
        if node.get("leaf"):
            return _("leaf") + f"\\n{leaf_text(node['value'], unit)}\\n{count}", "#e8f5e9"
        return f"{split_text(node['feature'], node['threshold'], schema)}?\\n{count}", "#e3f2fd"

    def visit(node_id, depth):
        node = by_id[node_id]
        text, colour = label(node)
        if depth >= max_depth and not node.get("leaf"):
            text, colour = "… " + _("subtree") + f"\\n{text}", "#f5f5f5"
        lines.append(f'n{node_id} [label="{_escape(text)}", fillcolor="{colour}"];')
        if node.get("leaf") or depth >= max_depth:
            return
        for child, edge in ((node["left"], _("yes")), (node["right"], _("no"))):
            lines.append(f'n{node_id} -> n{child} [label="{edge}"];')
            visit(child, depth + 1)

    if records:
        visit(records[0]["id"], 0)
    lines.append("}")
    return "\n".join(lines)


def _level_text(level: dict, schema: Schema) -> str:
    """One level of a boosting round in words, marked when the exponential mechanism picked it."""
    if "threshold" in level:
        text = split_text(level["feature"], level["threshold"], schema)
    elif "branch_per_category" in level:
        text = branches_text(level["feature"])
    else:
        text = subset_text(level["feature"], level.get("categories_left", []), schema)
    return _("picked: {split}").format(split=text) if level.get("picked") else text


def rounds_table(rounds: list[dict], schema: Schema, first: int = 8) -> pd.DataFrame:
    """The first boosting rounds: each level's split (random, or picked with noise), and the range of the leaf steps in the target's units.

    A regression model's steps are learned on the target scaled into [0, 1]; they are shown times
    the declared range, so a step reads as dollars or years. Classification steps are log-odds.
    """
    target = schema.target
    scale = (target.upper - target.lower) if target is not None and target.kind == "numeric" else 1.0
    unit = target.name if target is not None and target.kind == "numeric" else _("log-odds")
    rows = []
    for record in rounds[:first]:
        splits = [_level_text(level, schema) for level in record["levels"]]
        steps = np.asarray(record["leaf_steps"], dtype=float) * scale
        rows.append(
            {
                _("round"): record["round"] + 1,
                _("splits"): " · ".join(splits),
                _("smallest leaf step ({unit})").format(unit=unit): number(float(steps.min())),
                _("largest leaf step ({unit})").format(unit=unit): number(float(steps.max())),
            }
        )
    return pd.DataFrame(rows)


def weights_table(records: list[dict], schema: Schema) -> pd.DataFrame:
    """A linear model's weights (from ``weights_as_records``), one row per feature and a column per output.

    Regression weights are learned on the target scaled into [0, 1]; they are shown times the
    declared range, so a weight reads in the target's units. Classification weights are log-odds.
    """
    target = schema.target
    scale = (target.upper - target.lower) if target is not None and target.kind == "numeric" else 1.0
    frame = pd.DataFrame(records)
    frame["weight"] = (frame["weight"] * scale).map(number)
    if frame["output"].nunique() == 1:
        return frame[["feature", "weight"]]
    return frame.pivot(index="feature", columns="output", values="weight").reset_index()


def _escape(text: str) -> str:
    return text.replace('"', '\\"')


def train_in_session(
    state: StudioState,
    key: str,
    epsilon: float,
    params: dict,
    encoding: str,
    seeded: bool,
    progress: Progress | None = None,
    delta: float | None = None,
) -> TrainedModel:
    """Train on the session's table with the engine's :func:`~dpcore.training.train` (which charges the ledger);
    ``delta`` is an approximate-DP model's δ (None for a pure ε-DP model)."""
    dataset = state.dataset
    seed = DEMO_SEED if seeded else None
    design = Design.from_table(dataset.frame, dataset.schema, encoding, random_state=seed)
    return train(
        design,
        key,
        epsilon,
        state.ledger(),
        params=params,
        count_noise=state.count_noise,
        selection=state.selection,
        seed=seed,
        progress=progress,
        delta=delta,
    )


def budget_sentence(ledger: BudgetLedger) -> str:
    """What is left, and what a model may spend of it when the dataset's unit makes a model count double."""
    mine = ledger.my_slice()
    if mine is not None:  # an analyst's: what is left of their slice
        text = _("Left of your slice of this dataset's budget: **ε = {left}** of {total}.").format(
            left=short(ledger.remaining), total=short(float(mine.epsilon))
        )
    else:
        text = _("Budget left for this dataset: **ε = {left}** of {total}.").format(
            left=short(ledger.remaining), total=short(ledger.total)
        )
    if ledger.cost(1.0) > 1:
        text += " " + _("A model counts double in this dataset's unit, so at most ε = {most} can go to a model.").format(
            most=short(ledger.available())
        )
    return text


def suggested_epsilon(ledger: BudgetLedger) -> float:
    """The ε offered for a model or a map: half of what is left in model terms, at most a quarter of the total."""
    return default_epsilon(ledger.available(), cap=max(ledger.total / 4 / ledger.cost(1.0), SPENT_EPSILON))


def _count_error(epsilon: float) -> str:
    """How far off a count is at ε, in people: the standard deviation of Laplace noise of scale 1/ε, √2/ε."""
    return integer(math.sqrt(2) / epsilon)


def budget_notice(ledger: BudgetLedger, offered: float, when_spent: str) -> None:
    """Said once, at the top of a page, before its controls: the budget is spent, or so little is left that the
    ``offered`` ε gives mostly noise (:func:`epsilon_input` then says only what is left).

    ``when_spent`` completes "The budget is spent: …". Both sentences name the way out; an analyst's, their owner.
    """
    if ledger.available() < SPENT_EPSILON and ledger.my_slice() is not None:
        st.error(
            _("Your slice is spent: {when_spent} on this dataset. Ask the dataset's owner for a larger slice.").format(
                when_spent=when_spent
            ),
            icon=":material/block:",
        )
    elif ledger.available() < SPENT_EPSILON:
        st.error(
            _(
                "The budget is spent: {when_spent} on this dataset. Raise the total on the Privacy page only if you "
                "accept a weaker promise."
            ).format(when_spent=when_spent),
            icon=":material/block:",
        )
    elif offered < LITTLE_EPSILON and ledger.my_slice() is not None:  # the Privacy page is not an analyst's way out
        st.warning(
            _(
                "Only ε = {left} is left of your slice. At the ε offered here ({offered}) a noisy count is off by about "
                "±{people} people, so on most tables the result will be mostly noise. Ask the dataset's owner for a "
                "larger slice."
            ).format(left=short(float(f"{ledger.remaining:.3g}")), offered=short(offered), people=_count_error(offered)),
            icon=":material/warning:",
        )
    elif offered < LITTLE_EPSILON:
        st.warning(
            _(
                "Only ε = {left} is left of this dataset's budget. At the ε offered here ({offered}) a noisy count is "
                "off by about ±{people} people, so on most tables the result will be mostly noise. Raise the total "
                "deliberately on the Privacy page if you accept a weaker promise, or, if this table's people are not "
                "those of this dataset, declare it a separate dataset on the Data page."
            ).format(left=short(float(f"{ledger.remaining:.3g}")), offered=short(offered), people=_count_error(offered)),
            icon=":material/warning:",
        )


def epsilon_input(ledger: BudgetLedger, label: str, key: str, refused: str) -> float | None:
    """What is left, and the ε typed to spend on one release: None when it cannot be spent.

    The budget's state (spent, or too little left) is said once at the top of the page by
    :func:`budget_notice`; this says only what is left, and refuses a typed ε in words
    (``refused`` completes "Nothing will be … or charged").
    """
    st.write(budget_sentence(ledger))
    if ledger.available() < SPENT_EPSILON:
        return None
    typed = st.text_input(label, value=short(suggested_epsilon(ledger)), key=key)
    epsilon, problem = epsilon_problem(typed, ledger.available())
    if problem:
        if ledger.my_slice() is not None:  # an analyst's way out is their owner
            problem += " " + _(
                "That is what is left of your slice: choose a smaller ε, or ask the dataset's owner for a larger slice."
            )
        st.error(problem + " " + _("Nothing will be {refused} or charged until it is fixed.").format(refused=refused))
    return epsilon


def _shown_delta(delta: float) -> float:
    """δ to three significant digits, rounded up: a spend is never shown smaller than it was."""
    exponent = math.floor(math.log10(delta)) - 2
    return float(Decimal(repr(delta)).quantize(Decimal(1).scaleb(exponent), rounding=ROUND_CEILING))


def spent_heading(what: str, epsilon: float, ledger: BudgetLedger, delta: float = 0.0) -> str:
    """A result's heading with its ε (and an approximate model's δ), and what that counts as where the dataset's unit
    makes it count double."""
    counted = ledger.cost(epsilon)
    spent = f"ε = {short(epsilon)}" if not delta else f"ε = {short(epsilon)}, δ = {short(_shown_delta(delta))}"
    label = (
        " " + _("(approximate DP)")
        if delta and _("approximate") not in what.lower() and "approximate" not in what.lower()
        else ""
    )
    counts = " " + _("(counts as {counted} in this dataset's unit)").format(counted=short(counted)) if counted != epsilon else ""
    return _("{what} — {spent} spent").format(what=what, spent=spent) + label + counts


# How many approximate models the prefilled δ leaves room for in the dataset's total δ.
MODELS_PER_DELTA = 10


def delta_input(ledger: BudgetLedger, spec: ModelSpec, epsilon: float | None) -> float | None:
    """An approximate-DP model's δ per person: typed, prefilled with a tenth of the dataset's total δ or what is left if less.

    A tenth, so the usual total of 1e-5 pays for ten approximate models rather than being used up by the first.

    None (with a sentence) when the dataset allows no δ, or the typed δ is unusable or does not fit;
    also None for a pure ε-DP model, which spends no δ.
    """
    if not spec.approximate:
        return None
    if ledger.total_delta == 0:
        st.error(
            _(
                "This model is approximate DP and needs a δ above 0, but this dataset's budget allows δ = 0 only (pure "
                "ε-DP). Choose a pure ε-DP model, or give the dataset a δ on the Privacy page."
            )
        )
        return None
    left = ledger.available_delta(epsilon or 1.0)
    if left <= 0:
        st.error(
            _(
                "Nothing is left of this dataset's δ budget: choose a pure ε-DP model, or raise δ on the Privacy page "
                "only if you accept a weaker promise."
            )
        )
        return None
    typed = st.text_input(
        _("δ to spend on this model (approximate DP)"),
        value=f"{min(ledger.total_delta / MODELS_PER_DELTA, left):.2g}",
        key=f"train_delta_{spec.key}",
        help=_(
            "The small probability that the ε promise fails. Keep it well below one over the number "
            "of people in the table; 1e-5 is usual."
        ),
    )
    try:
        delta = float(typed.strip().replace(",", "."))
    except ValueError:
        delta = float("nan")
    if not 0 < delta < 1:
        st.error(_("Write δ as a number between 0 and 1, such as 1e-5. Nothing will be trained or charged until it is fixed."))
        return None
    if delta > left:
        st.error(
            _(
                "δ = {delta} does not fit in what is left of this dataset's δ budget (at most δ = {left} at this ε). "
                "Nothing will be trained or charged until it is fixed."
            ).format(delta=f"{delta:g}", left=f"{left:.3g}")
        )
        return None
    return delta


def per_person_note(what: str, epsilon: float, rows_per_person: int, rows_over_bound: int) -> str:
    """How a release with a person's up to k rows was fitted (the rows left out are counted on raw rows: owner only)."""
    row_epsilon = short(float(f"{per_row(epsilon, 0.0, rows_per_person)[0]:.3g}"))
    if what == "map":
        sentence = _(
            "Counting up to {k} rows per person: {dropped} rows were left out at random, and the map was fitted at "
            "ε = {row_epsilon} per row so that each person gets ε = {epsilon} (owner only)."
        )
    else:
        sentence = _(
            "Counting up to {k} rows per person: {dropped} rows were left out at random, and the model was fitted at "
            "ε = {row_epsilon} per row so that each person gets ε = {epsilon} (owner only)."
        )
    return sentence.format(k=rows_per_person, dropped=integer(rows_over_bound), row_epsilon=row_epsilon, epsilon=short(epsilon))


def progress_text(name: str, elapsed: float, seconds_left: float | None) -> tuple[float, str]:
    """The bar's fill and caption while a model trains: the time elapsed, and the time left once it is measured.

    The time left comes from :func:`dpcore.training.fit_with_progress`: measured on the fit's own
    rounds, or None ("measuring the time left…") before then, or when a guess made beforehand has
    run out.
    """
    if seconds_left is None:
        return min(elapsed / (elapsed + 30.0), 0.9), _("Training {name}: {elapsed} s, {left}").format(
            name=name, elapsed=integer(elapsed), left=time_left_text(None)
        )
    share = elapsed / (elapsed + seconds_left) if elapsed + seconds_left > 0 else 0.0
    return min(share, 0.99), _("Training {name}: {elapsed} s, {left}").format(
        name=name, elapsed=integer(elapsed), left=time_left_text(seconds_left)
    )


def baseline_verdict(trained: TrainedModel) -> tuple[str, bool] | None:
    """A sentence comparing the model with a trivial guess, and whether the model does no better."""
    baseline = trained.details.get("baseline", {})
    if not baseline or not trained.metrics:
        return None
    pairs = ", ".join(f"{_(m)} {format_metric(v, trained.task)}" for m, v in baseline.items())
    first = next(iter(trained.metrics))
    # A tie is no better: a classifier that gives every row the most common class scores exactly the guess's accuracy.
    worse = (
        (trained.metrics[first] >= baseline[first])
        if trained.task == "regression"
        else (trained.metrics[first] <= baseline[first])
    )
    sentence = _("For comparison, {baseline} gives {pairs} (owner only).").format(
        baseline=_(trained.details[BASELINE]), pairs=pairs
    )
    confusion = trained.details.get("confusion")
    if confusion is not None and int((confusion.to_numpy().sum(axis=0) > 0).sum()) == 1 and len(confusion) > 1:
        worse = True
        sentence += " " + _("It predicts the same class for every held-out row.")
    return sentence, worse
