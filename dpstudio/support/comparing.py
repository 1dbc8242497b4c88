"""The Compare page's engine glue: sweep settings, cached runs, charts and plain-word summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import altair as alt
import numpy as np
import pandas as pd

from dpcore.evaluate import Task, fold_indices, plan_sweep, run_task
from dpcore.i18n import N_, _, decimal, integer, percent, short
from dpcore.models.registry import ModelContext, get
from dpcore.published import CALIFORNIA_TARGET_RANGE, PAPER_A_EPSILONS, paper_a_table
from dpcore.tables.design import Design
from dpstudio.support.state import Dataset
from dpstudio.support.training import format_metric

EPSILON_GRIDS = {
    "quick": (0.25, 1.0, 4.0, 16.0),
    "thorough": tuple(float(f"{v:.3g}") for v in np.geomspace(0.05, 20, 9)),
}
#: The models a comparison starts with: ours (boosting first, the benchmarks' best; then the additive
#: model, which wins on small tables of weak additive signals), the DP mean or a DP linear baseline,
#: and one non-private reference per task.
DEFAULT_MODELS = (
    "dp_boosting_reg",
    "dp_boosting_clf",
    "dp_additive_reg",
    "dp_additive_clf",
    "dp_tree",
    "dp_forest",
    "dp_mean",
    "dpl_linear",
    "sk_tree_reg",
    "dp_random_forest",
    "dp_gaussian_nb",
    "dpl_gaussian_nb",
    "dpl_logistic",
    "sk_forest_clf",
)
# English in the CSV (machine-readable); ``_()`` where a person reads them.
NOT_FOR_RELEASE = N_("contains non-private reference figures — not for release")
OWNER_ONLY = N_("owner's eyes only — not differentially private")
ON_COPY = N_("measured on a differentially private synthetic copy")
#: What an analyst's Compare page says first: where its scores come from, and why they cost nothing.
ON_COPY_NOTE = N_(
    "Every score on this page is measured on **your synthetic copy** of the table: each model is trained on part of the "
    "copy and tested on the rest, never on the owner's rows. The copy was paid for from your slice when you made it, "
    "so this page spends **no privacy budget**. The scores show how the models do on data like the copy; on the real "
    "table they may differ as much as the copy differs from it."
)
NAME = "name"  # the results' column of model names (English; translated where shown)


@dataclass(frozen=True)
class SweepSettings:
    models: tuple[str, ...]
    epsilons: tuple[float, ...]
    n_folds: int = 5
    repetitions: int = 1
    shuffle: bool = True
    encoding: str = "ordinal"


@dataclass(frozen=True)
class ExperimentPreset:
    title: str
    sample: str
    settings: SweepSettings
    note: str


PRESETS = {
    "california": ExperimentPreset(
        N_("Paper A's California Housing table"),
        "California housing (sample)",
        SweepSettings(
            ("dp_tree", "dp_forest", "dp_tree_median", "dp_forest_median", "dp_mean", "sk_tree_reg", "sk_partitioned_forest"),
            tuple(float(e) for e in PAPER_A_EPSILONS),
            n_folds=10,
            shuffle=False,
        ),
        N_(
            "The published protocol (unshuffled 10-fold cross-validation, nine ε) on the bundled sample; "
            "published figures are drawn dashed, converted to dollars. Takes a few minutes."
        ),
    ),
    "adult_nb": ExperimentPreset(
        N_("Naive Bayes accuracy vs ε on Adult"),
        "Adult census income (sample)",
        SweepSettings(
            ("dp_gaussian_nb", "dpl_gaussian_nb", "sk_gaussian_nb"),
            (0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0, 31.6, 100.0),
            n_folds=5,
            repetitions=5,
        ),
        N_("The thesis's curve: DP Gaussian Naive Bayes from ε = 0.01 to 100, ours beside diffprivlib's."),
    ),
}


class PreparedSweep(NamedTuple):
    """Data, folds, model context, task and the list of fits of one sweep."""

    X: np.ndarray
    y: np.ndarray
    folds: list
    context: ModelContext
    problem: str
    tasks: list[Task]


def prepare(dataset: Dataset, settings: SweepSettings, count_noise="laplace", selection="gumbel") -> PreparedSweep:
    """Data, folds, model context and the task list for a sweep on the session's table."""
    design = Design.from_table(dataset.frame, dataset.schema, settings.encoding)
    folds = fold_indices(design.y, design.task, settings.n_folds, settings.shuffle, random_state=0)
    context = design.context(count_noise=count_noise, selection=selection)
    tasks = plan_sweep(settings.models, settings.epsilons, settings.n_folds, settings.repetitions)
    return PreparedSweep(design.X, design.y, folds, context, design.task, tasks)


def cache_key(dataset: Dataset, settings: SweepSettings, task: Task) -> tuple:
    return (dataset.fingerprint, dataset.schema_key, settings.encoding, settings.n_folds, settings.shuffle, task.key)


def run_one(cache: dict, key: tuple, task: Task, X, y, folds, context, problem) -> list[dict]:
    """Fit one task unless cached; a model that fails on this table is cached as no rows."""
    if key not in cache:
        try:
            cache[key] = run_task(task, X, y, folds, context, problem)
        except Exception:  # a baseline library can refuse a table; the sweep goes on without it
            cache[key] = []
    return cache[key]


def failed_models(cache: dict, dataset: Dataset, settings: SweepSettings, tasks: list[Task]) -> list[str]:
    """Display names of the models that could not be fitted on this table."""
    keys = {task.model for task in tasks if cache.get(cache_key(dataset, settings, task)) == []}
    return [get(key).name for key in sorted(keys)]  # English names: the page shows them translated


def collect(cache: dict, dataset: Dataset, settings: SweepSettings, tasks: list[Task]) -> pd.DataFrame:
    rows = [row for task in tasks for row in cache.get(cache_key(dataset, settings, task), [])]
    return pd.DataFrame(rows)


def published_reference(dataset: Dataset, settings: SweepSettings, metric: str) -> pd.DataFrame | None:
    """Paper A's figures in the target's units, when the sweep is on California with MAE."""
    if metric != "MAE" or "California" not in dataset.name:
        return None
    lower, upper = CALIFORNIA_TARGET_RANGE
    table = paper_a_table()
    table = table[table["model"].isin(settings.models)]
    table = table.assign(
        mean=table["mae"] * (upper - lower), name=[_("{model} — published").format(model=_(get(m).name)) for m in table["model"]]
    )
    return table


def comparison_chart(
    summary: pd.DataFrame, metric: str, unit: str, published: pd.DataFrame | None = None, on_copy: bool = False
) -> alt.Chart:
    """Metric vs ε (log axis): a line and spread band per DP model, a rule per non-private model.

    ``on_copy``: the scores were measured on a synthetic copy (an analyst's), and the chart says so instead of marking
    them the owner's.
    """
    data = summary[summary["metric"] == metric].copy()
    data["name"] = data["name"].map(_)
    data["low"] = data["mean"] - data["std"].fillna(0)
    data["high"] = data["mean"] + data["std"].fillna(0)
    reference = data[data["epsilon"].isna()]
    title_y = f"{_(metric)} ({unit})" if unit else _(metric)
    domain = _y_domain(data, metric)
    data["low"] = data["low"].clip(*domain)
    data["high"] = data["high"].clip(*domain)
    private = data[data["epsilon"].notna()]
    # Every layer shares this scale: a layer left to its own (the spread band: areas start from
    # zero by default) widened the shared axis back to zero and squeezed the lines together.
    y_scale = alt.Scale(domain=list(domain), zero=False, nice=False, clamp=True)
    y = alt.Y("mean:Q", title=title_y, scale=y_scale)
    x_scale = alt.Scale(type="log", nice=False)
    if not private.empty:
        x_scale = alt.Scale(type="log", nice=False, domain=[private["epsilon"].min() / 1.2, private["epsilon"].max() * 1.2])
    x = alt.X("epsilon:Q", scale=x_scale, title=_("ε (privacy budget, log scale)"))
    # No label limit: three "DP partitioned forest (…" entries must stay distinguishable.
    colour = alt.Color("name:N", title=_("model"), legend=alt.Legend(labelLimit=0, orient="bottom", columns=2, symbolOpacity=1))
    tooltip = [
        alt.Tooltip("name:N", title=_("model")),
        alt.Tooltip("epsilon:Q", title="ε"),
        alt.Tooltip("mean:Q", title=_(metric), format=",.4g"),
        alt.Tooltip("std:Q", title=_("spread (sd)"), format=",.3g"),
        alt.Tooltip("runs:Q", title=_("runs")),
    ]
    base = alt.Chart(private)
    # A model whose spread band is anywhere wider than a quarter of the chart (a wildly noisy
    # baseline) gets no band at all: it would hide the others.
    too_wide = (private["high"] - private["low"]) > 0.25 * (domain[1] - domain[0])
    narrow = private[~private["model"].isin(private.loc[too_wide, "model"])]
    layers = [
        alt.Chart(narrow)
        .mark_area(opacity=0.15)
        .encode(x=x, y=alt.Y("low:Q", title=title_y, scale=y_scale), y2="high:Q", color=colour),
        base.mark_line(clip=True).encode(x=x, y=y, color=colour),
        base.mark_point(filled=True, size=50, clip=True).encode(x=x, y=y, color=colour, tooltip=tooltip),
    ]
    if not reference.empty:
        layers.append(
            alt.Chart(reference)
            .mark_rule(strokeDash=[8, 4], strokeWidth=2)
            .encode(
                y=y,
                color=colour,
                tooltip=[
                    alt.Tooltip("name:N", title=_("non-private, on the copy") if on_copy else _("non-private (owner only)")),
                    alt.Tooltip("mean:Q", format=",.4g"),
                ],
            )
        )
    if published is not None and not private.empty:
        # Only the published points inside the sweep's ε range: the x axis stays the sweep's.
        published = published[published["epsilon"].between(private["epsilon"].min(), private["epsilon"].max())]
    if published is not None and not published.empty:
        layers.append(
            alt.Chart(published)
            .mark_line(strokeDash=[2, 3], opacity=0.7, clip=True)
            .encode(
                x=x,
                y=y,
                color=colour,
                tooltip=[alt.Tooltip("name:N"), alt.Tooltip("epsilon:Q"), alt.Tooltip("mean:Q", format=",.4g")],
            )
        )
    # The marking is part of the image itself, so a saved or forwarded chart still says what it is.
    # fit-x: the page's width, but 380 px for the plot itself (a plain "fit", Streamlit's default,
    # took the long legend out of the height and squeezed the plot to a strip).
    return alt.layer(*layers).properties(
        height=380,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
        title=alt.TitleParams(
            _("{metric} against ε — dashed rules: non-private references").format(metric=_(metric)),
            subtitle=[
                _("Trained and tested on your synthetic copy, not on the owner's rows")
                if on_copy
                else _("{marking}: measured on the owner's raw data").format(marking=_(OWNER_ONLY).upper())
            ],
            subtitleColor="#1b5e20" if on_copy else "#b00020",
            subtitleFontWeight="bold",
            subtitleFontSize=14,
        ),
    )


def _y_domain(data: pd.DataFrame, metric: str) -> tuple[float, float]:
    """A y range around the models' scores, never from zero, so their differences fill the chart.

    Accuracies run from a little below the weakest to a little above the best (0.76–0.85 fills
    the height instead of a tenth of it). Errors run from a little below the best model (or
    non-private reference) to a little above the DP mean, the floor every useful model beats
    (without it, the median model's worst): a model worse than that is drawn at the edge, and
    the table keeps its exact values.
    """
    lowest, highest = float(data["mean"].min()), float(data["mean"].max())
    if metric in ("MAE", "RMSE"):
        floor = data.loc[data["model"] == "dp_mean", "mean"]
        highest = float(floor.max()) if not floor.empty else float(data.groupby("model")["mean"].max().median())
        lowest = min(lowest, highest)
        margin = max(0.08 * (highest - lowest), 0.02 * highest)
        return max(0.0, lowest - margin), highest + margin
    margin = max(0.02, 0.1 * (highest - lowest))
    return max(0.0, lowest - margin), min(1.0, highest + margin)


def summary_sentences(summary: pd.DataFrame, metric: str, task: str, at_epsilon: float = 1.0) -> list[str]:
    """A few sentences a stakeholder can read: the best DP model near ε = 1 against references."""
    data = summary[summary["metric"] == metric]
    private = data[data["epsilon"].notna()]
    if private.empty:
        return []
    eps = private["epsilon"].iloc[np.argmin(np.abs(np.log(private["epsilon"].to_numpy()) - math.log(at_epsilon)))]
    at = private[private["epsilon"] == eps]
    lower_is_better = task == "regression"
    best = at.loc[at["mean"].idxmin() if lower_is_better else at["mean"].idxmax()]
    out = [
        _("At ε = {epsilon}, the most accurate private model is **{model}** ({metric} {score}).").format(
            epsilon=short(eps), model=_(best.at[NAME]), metric=_(metric), score=format_metric(best["mean"], task)
        )
    ]
    if get(best["model"]).approximate:
        out[0] += " " + _("It is approximate DP: its promise also allows a small probability δ = 1e-5 of failure.")
    references = data[data["epsilon"].isna()]
    if not references.empty:
        ref = references.loc[references["mean"].idxmin() if lower_is_better else references["mean"].idxmax()]
        out.append(
            _relative(best, ref, metric, lower_is_better, _("the best non-private model, {model}").format(model=_(ref.at[NAME])))
        )
    floor = at[at["model"] == "dp_mean"]
    if lower_is_better and not floor.empty and best["model"] != "dp_mean":
        out.append(
            _relative(best, floor.iloc[0], metric, lower_is_better, _("the DP mean baseline (which ignores every feature)"))
        )
    return out


def best_of_ours(summary: pd.DataFrame, metric: str, task: str) -> str | None:
    """Key of our model with the best mean score in this (owner-only) comparison."""
    ours = summary[(summary["metric"] == metric) & (summary["kind"] == "ours")]
    if ours.empty:
        return None
    return ours.loc[ours["mean"].idxmin() if task == "regression" else ours["mean"].idxmax(), "model"]


def _relative(model, reference, metric, lower_is_better, label) -> str:
    if lower_is_better:
        change = (model["mean"] - reference["mean"]) / reference["mean"]
        sentence = (
            _("Its error is {share} above {reference} ({score}).")
            if change > 0
            else _("Its error is {share} below {reference} ({score}).")
        )
        return sentence.format(share=percent(abs(change)), reference=label, score=format_metric(reference["mean"], "regression"))
    gap = (model["mean"] - reference["mean"]) * 100
    sentence = (
        _("Its {metric} is {points} points below {reference} ({score}).")
        if gap < 0
        else _("Its {metric} is {points} points above {reference} ({score}).")
    )
    return sentence.format(metric=_(metric), points=decimal(abs(gap), 1), reference=label, score=percent(reference["mean"], 1))


def chart_image(chart: alt.Chart, fmt: str) -> bytes:
    """The chart as PNG or SVG bytes (rendered locally by vl-convert)."""
    import vl_convert as vlc

    # Off the page there is no container to fit: a fixed plot width, the legend around it.
    spec = chart.properties(width=720, autosize=alt.AutoSizeParams(type="pad")).to_json()
    if fmt == "png":
        return vlc.vegalite_to_png(spec, scale=2)
    return vlc.vegalite_to_svg(spec).encode("utf-8")


def results_csv(results: pd.DataFrame, on_copy: bool = False) -> bytes:
    """The tidy results, headed and marked on every row: measured on raw data (not for release), or on a synthetic copy."""
    if on_copy:
        return (f"# {ON_COPY}\n" + results.assign(marking=ON_COPY).to_csv(index=False)).encode("utf-8")
    header = f"# {NOT_FOR_RELEASE}; measured on the owner's raw data\n"
    return (header + results.assign(marking=OWNER_ONLY).to_csv(index=False)).encode("utf-8")


def interleaved(tasks: list[Task]) -> list[Task]:
    """The tasks round-robin over models, so every model's fit time is measured early."""
    by_model: dict[str, list[Task]] = {}
    for task in tasks:
        by_model.setdefault(task.model, []).append(task)
    queues = list(by_model.values())
    out = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def seconds_left(measured: dict[str, list[float]], remaining: list[Task]) -> float:
    """Time left from measured per-fit times: each model's own mean, or the slowest mean seen for a model not yet fitted."""
    means = {model: sum(times) / len(times) for model, times in measured.items() if times}
    fallback = max(means.values(), default=1.0)
    return sum(means.get(task.model, fallback) for task in remaining)


def progress_text(task: Task, left: float) -> str:
    when = (
        _("about {seconds} s left").format(seconds=integer(left))
        if left < 120
        else _("about {minutes} min left").format(minutes=integer(left / 60))
    )
    if task.epsilon != task.epsilon:  # a non-private model: no ε
        return _("Fitted {model}, fold {fold} — {when}").format(model=_(get(task.model).name), fold=task.fold + 1, when=when)
    return _("Fitted {model} at ε = {epsilon}, fold {fold} — {when}").format(
        model=_(get(task.model).name), epsilon=short(task.epsilon), fold=task.fold + 1, when=when
    )
