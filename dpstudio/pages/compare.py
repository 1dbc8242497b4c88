"""Compare: how much accuracy does privacy cost on this table, and which model should I use?"""

import time

import streamlit as st

from dpcore.evaluate import METRICS, summarise
from dpcore.exceptions import DataError
from dpcore.models.registry import KIND_LABELS, models_for
from dpstudio.support.comparing import (
    DEFAULT_MODELS,
    EPSILON_GRIDS,
    NOT_FOR_RELEASE,
    PRESETS,
    SweepSettings,
    best_of_ours,
    cache_key,
    chart_image,
    collect,
    comparison_chart,
    failed_models,
    interleaved,
    prepare,
    progress_text,
    published_reference,
    results_csv,
    run_one,
    seconds_left,
    summary_sentences,
)
from dpstudio.support.session import get_state
from dpstudio.support.state import load_sample

state = get_state()
dataset = state.dataset
schema = dataset.schema
st.title("4. Compare")
st.info(
    "This page spends **no privacy budget** because nothing on it leaves your screen: every figure is measured on "
    "your raw data, for your eyes only, and none of it is written into any release or buyer's report.",
    icon=":material/lock:",
)

problems = schema.problems(dataset.frame, need_target=True)
if problems:
    st.error("The table's declarations are not complete yet: " + " ".join(problems) + " Fix them on the Data page.")
    st.stop()
task = schema.task

st.subheader("One-click experiments")
preset_cols = st.columns(len(PRESETS))
for col, (preset_key, preset) in zip(preset_cols, PRESETS.items()):
    with col:
        st.caption(preset.note)
        if st.button(preset.title, key=f"preset_{preset_key}"):
            if dataset.name != preset.sample:
                state.dataset = load_sample(preset.sample, state.catalog())
            state.compare_settings = preset.settings
            state.compare_pending = True
            st.rerun()

st.subheader("Your own comparison")
st.write(f"Task: **{task}** (target '{schema.target.name}').")
settings = state.compare_settings
chosen = []
task_keys = {m.key for m in models_for(task)}
for kind in ("ours", "diffprivlib", "interpret", "non-private"):
    options = models_for(task, kinds=(kind,))
    if not options:
        continue
    labels = {m.key: m.name for m in options}
    standard = [k for k in labels if k in DEFAULT_MODELS]
    # Settings made for another table (another task) name none of these models: start from the standard set.
    remembered = [k for k in settings.models if k in labels] if settings is not None else []
    default = remembered if settings is not None and set(settings.models) & task_keys else standard
    chosen += st.multiselect(KIND_LABELS[kind], list(labels), default=default, format_func=labels.get, key=f"models_{kind}_{task}")

grid_name = st.radio("ε values", ["quick", "thorough", "custom"], horizontal=True,
                     format_func=lambda g: {"quick": "quick (4 values)", "thorough": "thorough (9 values)", "custom": "custom"}[g])
if grid_name == "custom":
    text = st.text_input("ε values, separated by commas", "0.1, 0.5, 1, 5")
    try:
        epsilons = tuple(sorted({float(v) for v in text.split(",") if v.strip()}))
        if not epsilons or min(epsilons) <= 0:
            raise ValueError
    except ValueError:
        st.error("Write positive numbers separated by commas, e.g. 0.1, 0.5, 1, 5.")
        st.stop()
else:
    epsilons = EPSILON_GRIDS[grid_name]
col_folds, col_reps, col_shuffle = st.columns(3)
n_folds = col_folds.number_input("Folds", 2, 10, 5)
repetitions = col_reps.number_input("Repetitions", 1, 10, 1)
shuffle = col_shuffle.checkbox("Shuffle rows before folding", value=True)
run_clicked = st.button("Run comparison", type="primary", disabled=not chosen)
if run_clicked:
    settings = SweepSettings(tuple(chosen), tuple(epsilons), int(n_folds), int(repetitions), bool(shuffle))
    state.compare_settings = settings
if settings is None:
    st.stop()

try:
    X, y, folds, context, problem, tasks = prepare(dataset, settings, state.count_noise, state.selection)
except DataError as error:
    st.error(str(error))
    st.stop()

metric = st.selectbox("Metric", list(METRICS[problem]), key="compare_metric")
unit = schema.target.name if problem == "regression" else ""
chart_slot = st.empty()


def draw(results):
    if results.empty:
        return None
    summary = summarise(results)
    chart = comparison_chart(summary, metric, unit, published_reference(dataset, settings, metric))
    chart_slot.altair_chart(chart, width="stretch")
    return summary, chart


if run_clicked or state.compare_pending:
    state.compare_pending = False
    todo = [t for t in tasks if cache_key(dataset, settings, t) not in state.compare_cache]
    progress = st.progress(0.0, text="Starting…")
    stop_slot = st.empty()
    stop_slot.button("Stop (keeps what has finished)", key="stop_compare")
    todo, measured = interleaved(todo), {}
    for done, task_item in enumerate(todo, start=1):
        start = time.perf_counter()
        run_one(state.compare_cache, cache_key(dataset, settings, task_item), task_item, X, y, folds, context, problem)
        measured.setdefault(task_item.model, []).append(time.perf_counter() - start)
        progress.progress(done / len(todo), text=progress_text(task_item, seconds_left(measured, todo[done:])))
        if done % max(1, len(todo) // 10) == 0:
            draw(collect(state.compare_cache, dataset, settings, tasks))
    progress.empty()
    stop_slot.empty()

results = collect(state.compare_cache, dataset, settings, tasks)
failed = failed_models(state.compare_cache, dataset, settings, tasks)
if failed:
    st.warning("Could not be fitted on this table and left out: " + ", ".join(failed) + ".")
if results.empty:
    st.write("Press **Run comparison** to start.")
    st.stop()
finished = sum(1 for t in tasks if cache_key(dataset, settings, t) in state.compare_cache)
if finished < len(tasks):
    st.warning(f"Partial results: {finished} of {len(tasks)} fits finished. Run again to complete them (finished fits are reused).")
summary, chart = draw(results)

sentences = summary_sentences(summary, metric, problem)
if sentences:
    st.markdown(" ".join(sentences))
best = best_of_ours(summary, metric, problem)
if best is not None:
    state.best_model[problem] = best

table = summary[summary["metric"] == metric][["name", "kind", "epsilon", "mean", "std", "runs", "fit_seconds"]]
st.dataframe(table, hide_index=True, width="stretch", column_config={
    "epsilon": st.column_config.NumberColumn("ε (blank: non-private)"),
    "mean": st.column_config.NumberColumn(f"{metric} (mean)", format="localized" if problem == "regression" else "percent"),
    "std": st.column_config.NumberColumn("spread (sd)", format="%.3g"),
    "fit_seconds": st.column_config.NumberColumn("seconds per fit", format="%.2f"),
})

st.caption(f"Downloads are marked: {NOT_FOR_RELEASE}.")
c1, c2, c3 = st.columns(3)
c1.download_button("Results (CSV)", results_csv(results), file_name="comparison_NOT_FOR_RELEASE.csv", mime="text/csv", key="dl_csv")
c2.download_button("Chart (PNG)", chart_image(chart, "png"), file_name="comparison_NOT_FOR_RELEASE.png", mime="image/png", key="dl_png")
c3.download_button("Chart (SVG)", chart_image(chart, "svg"), file_name="comparison_NOT_FOR_RELEASE.svg", mime="image/svg+xml", key="dl_svg")
