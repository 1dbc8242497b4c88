"""The Compare page's widgets: which models and ε values, the run with progress, the results table and downloads."""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd
import streamlit as st

from dpcore.i18n import N_, _
from dpcore.models.registry import KIND_LABELS, models_for
from dpstudio.support.comparing import (
    DEFAULT_MODELS,
    EPSILON_GRIDS,
    NOT_FOR_RELEASE,
    ON_COPY,
    PreparedSweep,
    SweepSettings,
    cache_key,
    chart_image,
    interleaved,
    progress_text,
    results_csv,
    run_one,
    seconds_left,
)
from dpstudio.support.language import keyed
from dpstudio.support.state import Dataset, StudioState

GRID_LABELS = {"quick": N_("quick (4 values)"), "thorough": N_("thorough (9 values)"), "custom": N_("custom")}


def choose_models(task: str, settings: SweepSettings | None, on_copy: bool = False) -> list[str]:
    """One multiselect per kind of model; remembered choices if they fit this task, else the standard set.

    ``on_copy``: the models are compared on an analyst's synthetic copy, where a non-private model is no owner's secret.
    """
    chosen: list[str] = []
    task_keys = {m.key for m in models_for(task)}
    for kind in ("ours", "diffprivlib", "interpret", "non-private"):
        labels = {m.key: _(m.name) for m in models_for(task, kinds=(kind,))}
        if not labels:
            continue
        standard = [k for k in labels if k in DEFAULT_MODELS]
        # Settings made for another table (another task) name none of these models: start from the standard set.
        fits = settings is not None and set(settings.models) & task_keys
        default = [k for k in settings.models if k in labels] if fits else standard
        label = _("non-private reference, on your copy") if on_copy and kind == "non-private" else _(KIND_LABELS[kind])
        chosen += st.multiselect(label, list(labels), default=default, format_func=labels.get, key=keyed(f"models_{kind}_{task}"))
    return chosen


def choose_epsilons() -> tuple[float, ...] | None:
    """The ε grid: a preset one, or the owner's own list (None, with a sentence, when it cannot be read)."""
    grid = st.radio(_("ε values"), list(GRID_LABELS), horizontal=True, format_func=lambda g: _(GRID_LABELS[g]))
    if grid != "custom":
        return EPSILON_GRIDS[grid]
    text = st.text_input(_("ε values, separated by semicolons"), "0.1; 0.5; 1; 5")
    try:  # semicolons, so that a decimal comma (0,5) reads as a number; commas still work when no value has one
        parts = text.split(";") if ";" in text else text.split(",")
        epsilons = tuple(sorted({float(v.strip().replace(",", ".")) for v in parts if v.strip()}))
    except ValueError:
        epsilons = ()
    if not epsilons or min(epsilons) <= 0:
        st.error(_("Write positive numbers separated by semicolons, e.g. 0.1; 0.5; 1; 5."))
        return None
    return epsilons


def run_with_progress(
    state: StudioState, dataset: Dataset, settings: SweepSettings, prepared: PreparedSweep, redraw: Callable[[], None]
) -> None:
    """Fit every task on ``dataset`` not yet cached, with a bar, time left and a Stop button; redraw the chart as results come.

    In an analyst's session ``dataset`` is their synthetic copy; the owner's table is refused, whatever the page asked.
    """
    if state.analyst and dataset.frame is state.dataset.frame:
        st.error(_("As an analyst you compare models on your synthetic copy, never on the owner's rows."))
        return
    X, y, folds, context, problem, tasks = prepared
    todo = interleaved([t for t in tasks if cache_key(dataset, settings, t) not in state.compare_cache])
    progress = st.progress(0.0, text=_("Starting…"))
    stop_slot = st.empty()
    stop_slot.button(_("Stop (keeps what has finished)"), key="stop_compare")
    measured: dict[str, list[float]] = {}
    for done, task in enumerate(todo, start=1):
        start = time.perf_counter()
        run_one(state.compare_cache, cache_key(dataset, settings, task), task, X, y, folds, context, problem)
        measured.setdefault(task.model, []).append(time.perf_counter() - start)
        progress.progress(done / len(todo), text=progress_text(task, seconds_left(measured, todo[done:])))
        if done % max(1, len(todo) // 10) == 0:
            redraw()
    progress.empty()
    stop_slot.empty()


def summary_table(summary: pd.DataFrame, metric: str, problem: str) -> None:
    table = summary[summary["metric"] == metric][["name", "kind", "epsilon", "mean", "std", "runs", "fit_seconds"]].copy()
    table["name"] = table["name"].map(_)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            "name": st.column_config.TextColumn(_("model")),
            "kind": st.column_config.TextColumn(_("kind")),
            "epsilon": st.column_config.NumberColumn(_("ε (blank: non-private)")),
            "mean": st.column_config.NumberColumn(
                _("{metric} (mean)").format(metric=_(metric)), format="localized" if problem == "regression" else "percent"
            ),
            "std": st.column_config.NumberColumn(_("spread (sd)"), format="%.3g"),
            "runs": st.column_config.NumberColumn(_("runs")),
            "fit_seconds": st.column_config.NumberColumn(_("seconds per fit"), format="%.2f"),
        },
    )


def downloads(results: pd.DataFrame, chart, on_copy: bool = False) -> None:
    """CSV and chart downloads, marked not for release (or, ``on_copy``, as measured on a synthetic copy); the chart
    images are drawn only when clicked."""
    st.caption(_("Downloads are marked: {marking}.").format(marking=_(ON_COPY if on_copy else NOT_FOR_RELEASE)))
    name = "comparison_on_synthetic_copy" if on_copy else "comparison_NOT_FOR_RELEASE"
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        _("Results (CSV)"),
        results_csv(results, on_copy),
        file_name=f"{name}.csv",
        mime="text/csv",
        key="dl_csv",
        on_click="ignore",
    )
    for column, image, mime in ((c2, "png", "image/png"), (c3, "svg", "image/svg+xml")):
        column.download_button(
            _("Chart ({kind})").format(kind=image.upper()),
            lambda image=image: chart_image(chart, image),
            file_name=f"{name}.{image}",
            mime=mime,
            key=f"dl_{image}",
            on_click="ignore",
        )
