"""Compare: how much accuracy does privacy cost on this table, and which model should I use?

The owner compares on the table's rows, for their eyes only. An analyst compares on their own
synthetic copy (train and test on the copy): post-processing of a release already charged to their
slice, so it is free and shows nothing more of the rows than the copy does.
"""

import streamlit as st

from dpcore.evaluate import METRICS, summarise
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpstudio.support import analyst_view
from dpstudio.support import compare_view as view
from dpstudio.support.charts import localized
from dpstudio.support.comparing import (
    ON_COPY_NOTE,
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
from dpstudio.support.language import keyed
from dpstudio.support.readable import task_name
from dpstudio.support.session import get_state, use_dataset
from dpstudio.support.state import load_sample

state = get_state()
st.title(_("4. Compare"))
if state.analyst:
    # An analyst compares on their own synthetic copy, never on the owner's rows: post-processing of a paid release.
    dataset = analyst_view.copy_to_compare(state)
    st.info(_(ON_COPY_NOTE), icon=":material/verified_user:")
else:
    dataset = state.dataset
    st.info(
        _(
            "This page spends **no privacy budget** because nothing on it leaves your screen: every figure is measured on "
            "your raw data, for your eyes only, and none of it is written into any release or buyer's report."
        ),
        icon=":material/lock:",
    )
schema = dataset.schema

problems = schema.problems(dataset.frame, need_target=True)
if problems:
    st.error(
        _("The table's declarations are not complete yet:") + " " + " ".join(problems) + " " + _("Fix them on the Data page.")
    )
    st.stop()
task = schema.task

if not state.analyst:  # the presets open a bundled sample in place of the table: the owner's choice only
    st.subheader(_("One-click experiments"))
    preset_cols = st.columns(len(PRESETS))
    for col, (preset_key, preset) in zip(preset_cols, PRESETS.items()):
        with col:
            st.caption(_(preset.note))
            if st.button(_(preset.title), key=f"preset_{preset_key}"):
                if dataset.name != preset.sample:
                    use_dataset(state, load_sample(preset.sample, state.catalog()))
                state.compare_settings = preset.settings
                state.compare_pending = True
                st.rerun()

st.subheader(_("Your own comparison"))
st.write(_("Task: **{task}** (target '{target}').").format(task=task_name(task), target=schema.target.name))
settings = state.compare_settings
chosen = view.choose_models(task, settings, on_copy=state.analyst)
epsilons = view.choose_epsilons()
if epsilons is None:
    st.stop()
col_folds, col_reps, col_shuffle = st.columns(3)
n_folds = col_folds.number_input(_("Folds"), 2, 10, 5)
repetitions = col_reps.number_input(_("Repetitions"), 1, 10, 1)
shuffle = col_shuffle.checkbox(_("Shuffle rows before folding"), value=True)
run_clicked = st.button(_("Run comparison"), type="primary", disabled=not chosen)
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
metric = st.selectbox(_("Metric"), list(METRICS[problem]), key=keyed("compare_metric"), format_func=_)
unit = schema.target.name if problem == "regression" else ""
chart_slot = st.empty()


def draw(results):
    if results.empty:
        return None
    summary = summarise(results)
    chart = comparison_chart(summary, metric, unit, published_reference(dataset, settings, metric), on_copy=state.analyst)
    chart_slot.altair_chart(localized(chart), width="stretch")
    return summary, chart


if run_clicked or state.compare_pending:
    state.compare_pending = False
    view.run_with_progress(
        state, dataset, settings, prepared, lambda: draw(collect(state.compare_cache, dataset, settings, tasks))
    )

results = collect(state.compare_cache, dataset, settings, tasks)
failed = failed_models(state.compare_cache, dataset, settings, tasks)
if failed:
    st.warning(
        _("Could not be fitted on this table and left out: {models}.").format(models=", ".join(_(name) for name in failed))
    )
if results.empty:
    st.write(_("Press **Run comparison** to start."))
    st.stop()
finished = sum(1 for t in tasks if cache_key(dataset, settings, t) in state.compare_cache)
if finished < len(tasks):
    st.warning(
        _("Partial results: {finished} of {total} fits finished. Run again to complete them (finished fits are reused).").format(
            finished=finished, total=len(tasks)
        )
    )
summary, chart = draw(results)

sentences = summary_sentences(summary, metric, problem)
if sentences:
    st.markdown(" ".join(sentences))
best = best_of_ours(summary, metric, problem)
if best is not None and not state.analyst:  # the Train page's suggestion speaks of a comparison on the owner's rows
    state.best_model[problem] = best

view.summary_table(summary, metric, problem)
view.downloads(results, chart, on_copy=state.analyst)
