"""Compare: how much accuracy does privacy cost on this table, and which model should I use?"""

import streamlit as st

from dpcore.evaluate import METRICS, summarise
from dpcore.exceptions import DataError
from dpstudio.support import compare_view as view
from dpstudio.support.comparing import (
    PRESETS,
    SweepSettings,
    best_of_ours,
    cache_key,
    collect,
    comparison_chart,
    failed_models,
    prepare,
    published_reference,
    summary_sentences,
)
from dpstudio.support.session import get_state, use_dataset
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
                use_dataset(state, load_sample(preset.sample, state.catalog()))
            state.compare_settings = preset.settings
            state.compare_pending = True
            st.rerun()

st.subheader("Your own comparison")
st.write(f"Task: **{task}** (target '{schema.target.name}').")
settings = state.compare_settings
chosen = view.choose_models(task, settings)
epsilons = view.choose_epsilons()
if epsilons is None:
    st.stop()
col_folds, col_reps, col_shuffle = st.columns(3)
n_folds = col_folds.number_input("Folds", 2, 10, 5)
repetitions = col_reps.number_input("Repetitions", 1, 10, 1)
shuffle = col_shuffle.checkbox("Shuffle rows before folding", value=True)
run_clicked = st.button("Run comparison", type="primary", disabled=not chosen)
if run_clicked:
    settings = state.compare_settings = SweepSettings(tuple(chosen), epsilons, int(n_folds), int(repetitions), bool(shuffle))
if settings is None:
    st.stop()

try:
    prepared = prepare(dataset, settings, state.count_noise, state.selection)
except DataError as error:
    st.error(str(error))
    st.stop()

problem, tasks = prepared.problem, prepared.tasks
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
    view.run_with_progress(state, settings, prepared, lambda: draw(collect(state.compare_cache, dataset, settings, tasks)))

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

view.summary_table(summary, metric, problem)
view.downloads(results, chart)
