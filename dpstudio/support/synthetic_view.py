"""The Export page's synthetic copy: its settings, the paid-for copy, and the owner's free utility preview of both copies."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from dpcore.budget.accountant import BudgetLedger, default_epsilon
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import N_, _, fixed, short, short_left
from dpcore.progress import CostMemory, Progress, Stage, TimeLeft, time_left_text
from dpcore.release import ReleasePlan
from dpcore.synthetic import (
    DEFAULT_DELTA,
    SyntheticResult,
    studied_together,
    synthesize_table,
    synthetic_columns,
    trust_sentences,
    utility_preview,
)
from dpcore.synthetic.compare import CopyComparison, compare_copy, comparison_stages, remember_comparison_costs
from dpcore.synthetic.table import COPY
from dpcore.tables.schema import Schema
from dpstudio.support.language import keyed
from dpstudio.support.recipe_view import record_release, synthetic_step
from dpstudio.support.session import refuse_on_a_fresh_page, said_refusal
from dpstudio.support.state import StudioState

RANDOMIZED, SYNTHETIC = "randomized", "synthetic"
#: The preview's rows, by the names its table keeps (English: a CSV's values); shown translated.
COPIES = (N_("randomized copy"), N_("synthetic copy"), N_("real rows (reference)"), N_("most common class"))
RANDOMIZED_COPY, SYNTHETIC_COPY, REAL_ROWS, MOST_COMMON = COPIES
#: One colour per copy on every chart of the page (the preview's and the comparison's): the synthetic copy is always red,
#: the real rows (or "your table") always blue.
COPY_COLOURS = dict(zip(COPIES, ("#f58518", "#c8102e", "#4c78a8", "#9d9d9d"), strict=True))


def copy_colours(field: str, names: dict[str, str] | None = None, legend: bool = False) -> alt.Color:
    """``field``'s colours from :data:`COPY_COLOURS`; ``names`` maps the copies a chart shows to its labels for them."""
    names = names or {copy: _(copy) for copy in COPIES}
    shown = {label: COPY_COLOURS[copy] for copy, label in names.items()}
    scale = alt.Scale(domain=list(shown), range=list(shown.values()))
    return alt.Color(field, scale=scale, title=None, legend=alt.Legend() if legend else None)


def choose_kind() -> str:
    """The owner's choice between the two kinds of copy."""
    labels = {
        RANDOMIZED: _("Randomized copy: every real row, each value randomized on its own"),
        SYNTHETIC: _("Synthetic copy: invented rows drawn from a model of the table's noisy marginals"),
    }
    return str(
        st.radio(_("Which copy do you want to sell?"), list(labels), format_func=labels.__getitem__, key=keyed("copy_kind"))
    )


#: The smallest ε a synthetic copy can be made at (the settings' input starts there).
MIN_EPSILON = 0.01


def budget_notice(ledger: BudgetLedger) -> None:
    """Said once, above the plan, when too little is left for a new synthetic copy."""
    available = max(ledger.remaining, 0.0)
    if available < MIN_EPSILON:
        st.warning(
            _(
                "Only ε = {left} is left of this dataset's budget: a new copy cannot be made. Raise the budget on the "
                "Privacy page only if you accept a weaker promise."
            ).format(left=short_left(available))
        )


#: The owner's choice of method, each with its one plain sentence.
METHOD_SENTENCES = {
    "mst": N_("MST (fast): measures every column and a tree of pairs of columns; a copy in seconds."),
    "aim": N_(
        "AIM (adaptive): spends the budget round by round on what its model gets most wrong (a column, a pair of "
        "columns or a triple with the target; the buyer's report lists its picks), and takes longer (about twice "
        "MST's time on the bundled table, a minute or more on wide tables); on the tables measured so far it is not "
        "yet more accurate than MST."
    ),
}


def choose_method() -> str:
    """MST (fast) or AIM (adaptive), each said in one plain sentence."""
    return str(
        st.radio(
            _("How should the copy be made?"),
            list(METHOD_SENTENCES),
            format_func=lambda method: _(METHOD_SENTENCES[method]),
            key=keyed("synthetic_method"),
        )
    )


@dataclass(frozen=True)
class CopySettings:
    """What the owner chose for a synthetic copy: ε, the noise and its δ, the method and AIM's declared workload."""

    epsilon: float
    noise: str
    delta: float
    method: str = "mst"
    workload: list[list[str]] | None = None


def choose_workload(columns: list[str], target: str | None) -> list[list[str]] | None:
    """AIM's workload from the columns the buyer will study together (None: AIM's default, every pair and triple)."""
    studied = st.multiselect(
        _("Columns the buyer will study together (optional)"),
        columns,
        key=keyed("synthetic_workload"),
        placeholder=_("Every pair of columns"),
        help=_(
            "AIM then spends its rounds on the relations among these columns only: every pair of them, and each pair "
            "with the target. They come out markedly better; every other relation, and a model of the target trained "
            "on the copy, come out worse. Choose them for what the buyer will do, never from what you see in the table."
        ),
    )
    if len(studied) < 2:
        return None
    workload = studied_together(studied, target)
    st.caption(
        _("AIM will favour {count} relations among the {columns} columns chosen.").format(
            count=len(workload), columns=len(studied)
        )
    )
    return workload


def settings(
    ledger: BudgetLedger, methods: bool = True, schema: Schema | None = None, plan: ReleasePlan | None = None
) -> CopySettings | None:
    """The synthetic copy's settings (None when too little is left: :func:`budget_notice` said so).

    Without ``methods`` the copy is MST's, with no choice offered; with them and the ``schema`` and
    ``plan``, an AIM copy's workload may be declared among the copy's columns.
    """
    available = max(ledger.remaining, 0.0)
    if available < MIN_EPSILON:
        return None
    method = choose_method() if methods else "mst"
    left, right = st.columns(2)
    offered = min(max(default_epsilon(available, cap=1.0), MIN_EPSILON), available)  # leaves room for the other pages
    epsilon = float(
        left.number_input(
            _("ε of the whole copy, per person"),
            min_value=MIN_EPSILON,
            max_value=float(available),
            value=float(offered),
            step=0.1,
            format="%.2f",
            key="synthetic_epsilon",
        )
    )
    if method == "aim":
        noise = "gaussian"
        right.caption(_("Noise: Gaussian (δ = 1e-6), the only noise AIM adds."))
    else:
        noise = str(
            right.radio(
                _("Noise"),
                ["gaussian", "laplace"],
                key=keyed("synthetic_noise"),
                horizontal=True,
                format_func={"gaussian": _("Gaussian (δ = 1e-6)"), "laplace": _("Laplace (δ = 0)")}.__getitem__,
            )
        )
    delta = DEFAULT_DELTA if noise == "gaussian" else 0.0
    measured = {
        "mst": _(
            "The copy measures each column's counts and a tree of pairs of columns (the pairs chosen privately), and the "
            "target's pair with every column when the schema declares a target, over your declared categories and bins; "
            "every row is then invented from a model of those noisy counts."
        ),
        "aim": _(
            "The copy measures each column's counts, then, round by round, the column, pair of columns or triple with "
            "the target that its model gets most wrong (chosen privately; on a small table or at a small ε, often single "
            "columns again), over your declared categories and bins; every row is then invented from a model of those "
            "noisy counts."
        ),
    }
    st.caption(
        measured[method]
        + " "
        + _("The plan above only says which columns the copy holds and their bins: its per-column ε is for the randomized copy.")
    )
    workload = None
    if method == "aim" and schema is not None and plan is not None:
        columns = [c.name for c in synthetic_columns(schema, plan)]
        target = schema.target.name if schema.target is not None and schema.target.name in columns else None
        workload = choose_workload(columns, target)
    return CopySettings(epsilon, noise, delta, method, workload)


@contextmanager
def progress_bar(place: Any = st) -> Iterator[Progress]:
    """A progress bar with the engine's measured time left ("measuring the time left…" until it is measured),
    gone when the work ends (a full bar saying "about 1 s left" stayed under the preview's results).

    In a ``place`` (an ``st.empty()``) the bar replaces what the place held, at once. The engine may say the
    time left from a thread of its own while a model compiles (:meth:`~dpcore.progress.TimeLeft.beating`): that
    thread then draws on this page's run.
    """
    bar = place.progress(0.0, text=_("Starting…"))
    page_run = get_script_run_ctx()

    def show(fraction: float, seconds_left: float | None, sentence: str) -> None:
        if page_run is not None and get_script_run_ctx(suppress_warning=True) is None:
            add_script_run_ctx(threading.current_thread(), page_run)
        bar.progress(min(max(fraction, 0.0), 1.0), text=f"{sentence} — {time_left_text(seconds_left)}")

    try:
        yield show
    finally:
        bar.empty()


def make_copy(state: StudioState, ledger: BudgetLedger, plan: ReleasePlan, chosen: CopySettings) -> None:
    """The button that makes (and charges) the ``chosen`` synthetic copy, then the copy made and its comparison.

    One bar runs from the first pair counted to the comparison's last model (MST, or AIM, whose rounds show
    their time left). The bar takes the last copy's place on the page while a new copy is made, so the last
    copy is never offered for download beside the bar of the next. (A container in that place would not do:
    a container keeps the last run's elements on screen until the run ends.)
    """
    key = settings_key(state, plan, chosen)
    clicked = copy_button(state, chosen, key)
    place = st.empty()
    if clicked:
        _make(state, ledger, plan, chosen, place, key)
    said_refusal(state, "synthetic copy")
    if not clicked and isinstance(state.release, SyntheticResult):
        with place.container():
            made(state.release)
            beside_the_table(state)


def copy_button(state: StudioState, chosen: CopySettings, key: str) -> bool:
    """The button that makes a copy, with what it spends on it; once the copy of these settings is on the page, a
    new one needs the owner's tick (a second click had spent the budget again without a word)."""
    cost = (
        _("Make the synthetic copy (spends ε = {epsilon}, δ = {delta})").format(
            epsilon=short(chosen.epsilon), delta=f"{chosen.delta:g}"
        )
        if chosen.delta
        else _("Make the synthetic copy (spends ε = {epsilon})").format(epsilon=short(chosen.epsilon))
    )
    fresh = True
    if state.made_copy == key and isinstance(state.release, SyntheticResult):
        st.info(
            _(
                "This copy is made: it is below, and downloading it again costs nothing. Another copy with the same "
                "settings is a new release, charged to the budget again."
            ),
            icon=":material/check_circle:",
        )
        fresh = st.checkbox(_("Make a fresh copy (a new release, charged to the budget again)"), key=FRESH_COPY)
    return st.button(cost, type="primary", disabled=not fresh)


#: The tick that allows a second copy of the same settings (cleared once that copy is made).
FRESH_COPY = "synthetic_fresh_copy"


def copy_made(state: StudioState, key: str) -> None:
    """The copy in ``state.release`` is the one of settings ``key``: the next one of them needs a new tick."""
    state.made_copy = key
    st.session_state.pop(FRESH_COPY, None)


def _make(state: StudioState, ledger: BudgetLedger, plan: ReleasePlan, chosen: CopySettings, place: Any, key: str) -> None:
    costs = CostMemory()
    try:
        with progress_bar(place) as progress:
            comparing = comparison_stages(state.dataset.frame, state.dataset.schema, plan, costs)
            work = TimeLeft([Stage(COPY, 1), *comparing], progress)
            state.release = synthesize(state, ledger, plan, chosen, costs=costs, work=work)
            # Kept before the comparison, whose bar a click elsewhere may stop: the copy is charged and made.
            copy_made(state, key)
            record_release(state, synthetic_step(state.release))
            state.copy_comparison = _compared(state, plan, state.release, work)
            remember_comparison_costs(work, costs)
        st.rerun()
    except (BudgetExceededError, DataError) as error:
        refuse_on_a_fresh_page(state, "synthetic copy", str(error))
    except Exception:
        st.error(
            _("The synthetic copy could not be made from this table; nothing was charged. Check the plan and the declarations.")
        )


def synthesize(
    state: StudioState, ledger: BudgetLedger, plan: ReleasePlan, chosen: CopySettings, **progress: Any
) -> SyntheticResult:
    """The ``chosen`` copy of the table in use, charged to ``ledger`` (``progress``: the engine's ``progress``, ``work``
    and ``costs``); the owner's Export page and an analyst's make it alike."""
    return synthesize_table(
        state.dataset.frame,
        state.dataset.schema,
        plan,
        epsilon=chosen.epsilon,
        delta=chosen.delta,
        noise=chosen.noise,
        ledger=ledger,
        label="Export: synthetic copy",
        method=chosen.method,
        workload=chosen.workload,
        **progress,
    )


def _compared(state: StudioState, plan: ReleasePlan, result: SyntheticResult, work: TimeLeft) -> tuple | None:
    """The copy and its owner-only comparison with the table (None when it cannot be made: the copy stands without it)."""
    try:
        return result, compare_copy(state.dataset.frame, state.dataset.schema, plan, result.table, work=work)
    except Exception:
        return None


def made(result: SyntheticResult, owner: bool = True) -> None:
    """What was charged, the three downloads, what to trust, and the buyer's report (and, for the ``owner``, their notes)."""
    st.divider()
    st.success(
        _("Synthetic copy made: ε = {epsilon}, δ = {delta} per person charged to the budget.").format(
            epsilon=f"{result.epsilon_charged:g}", delta=f"{result.delta_charged:g}"
        )
    )
    if result.notes and owner:  # counts of the private table
        st.caption(" ".join(result.notes))
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        _("Synthetic table (CSV)"),
        result.csv,
        file_name="synthetic.csv",
        mime="text/csv",
        key="dl_synthetic_csv",
        on_click="ignore",
    )
    c2.download_button(
        _("Privacy report (JSON)"),
        json.dumps(result.report, indent=2, ensure_ascii=False),
        file_name="synthetic_report.json",
        mime="application/json",
        key="dl_synthetic_json",
        on_click="ignore",
    )
    c3.download_button(
        _("Privacy report (Markdown)"),
        result.markdown,
        file_name="synthetic_report.md",
        mime="text/markdown",
        key="dl_synthetic_md",
        on_click="ignore",
    )
    can, cannot = trust_sentences(result.report)
    left, right = st.columns(2)
    left.markdown("**" + _("The buyer can trust") + "**\n\n" + "\n".join(f"- {s}" for s in can))
    right.markdown("**" + _("The buyer cannot trust") + "**\n\n" + "\n".join(f"- {s}" for s in cannot))
    st.dataframe(result.first_rows(8), hide_index=True, width="stretch")
    with st.expander(_("The buyer's report")):
        st.markdown(result.markdown)


def settings_key(state: StudioState, plan: ReleasePlan, chosen: CopySettings) -> str:
    """A copy's settings as one key: the table's declarations, the copy's columns and cells, and the choices (a kept
    preview, a made copy). The plan's per-column ε is the randomized copy's, and moves with what is left: not part of it."""
    cells = [[column.name, list(column.labels)] for column in synthetic_columns(state.dataset.schema, plan)]
    return json.dumps([state.dataset.declared_key, cells, chosen.epsilon, chosen.noise, chosen.method, chosen.workload])


def preview(state: StudioState, plan: ReleasePlan, chosen: CopySettings) -> None:
    """The owner's utility preview of both copies at the ``chosen`` ε, the synthetic one as chosen: free, never released."""
    st.subheader(_("Utility preview: both copies at ε = {epsilon} — owner only, free").format(epsilon=f"{chosen.epsilon:g}"))
    st.caption(
        _(
            "A simulation on your own rows, for your eyes only: both copies are made from 80 % of the rows with this plan "
            "and ε, compared with the truth, and a model trained on each copy is tested on the other 20 % of real rows. "
            "Nothing from it is released and nothing is charged; the real copy gets fresh noise."
        )
    )
    kept: dict[str, Any] = state.utility_previews
    st.caption(_("The synthetic copy is simulated with {method}, the method chosen above.").format(method=chosen.method.upper()))
    key = settings_key(state, plan, chosen)
    if st.button(_("Run the utility preview"), key="run_utility_preview"):
        dataset = state.dataset
        try:
            with progress_bar() as progress:
                kept[key] = utility_preview(
                    dataset.frame,
                    dataset.schema,
                    plan,
                    chosen.epsilon,
                    delta=chosen.delta,
                    noise=chosen.noise,
                    unit=state.ledger().unit,
                    method=chosen.method,
                    workload=chosen.workload,
                    progress=progress,
                    costs=CostMemory(),
                )
        except DataError as error:
            st.error(str(error))
        except Exception:
            st.error(_("The preview could not be computed for this table. Check the plan and the declarations."))
    table = kept.get(key)
    if table is not None:
        show_preview(table, accuracy_words(state.dataset.schema))


def accuracy_words(schema: Schema) -> str:
    """What the train-on-copy figure measures: a class guessed right, or for a number target, its bin."""
    if schema.target is not None and schema.target.kind == "numeric":
        return _("share of held-out real rows whose target bin is guessed right")
    return _("accuracy on held-out real rows")


def show_preview(table: pd.DataFrame, accuracy: str | None = None) -> None:
    """The preview's table and chart (owner only); ``accuracy`` names the train-on-copy figure (:func:`accuracy_words`)."""
    accuracy_title = accuracy or _("accuracy on held-out real rows")
    names = {"one-way TV": _("single-column error (TV)"), "two-way TV": _("pair error (TV)"), "accuracy": accuracy_title}
    order = [_(c) for c in COPIES if c in set(table["copy"])]
    shown = table.assign(measure=table["measure"].map(names), copy=table["copy"].map(_))
    wide = shown.pivot(index="measure", columns="copy", values="value").reindex(columns=order)
    st.dataframe(
        wide.map(lambda v: "—" if pd.isna(v) else fixed(v, 3)).rename_axis(index=_("measure"), columns=_("copy")), width="stretch"
    )
    errors = shown[table["measure"] != "accuracy"]
    chart = (
        alt.Chart(errors)
        .mark_bar()
        .encode(
            x=alt.X("copy:N", title=None),
            y=alt.Y("value:Q", title=_("distance from the truth (0 = perfect, 1 = useless)")),
            color=copy_colours("copy:N"),
            column=alt.Column("measure:N", title=None),
        )
        .properties(width=220, height=220, title=_("Owner-only simulation: marginal error of each copy"))
    )
    st.altair_chart(chart)
    trained = shown[table["measure"] == "accuracy"]
    if not trained.empty:
        st.altair_chart(
            alt.Chart(trained)
            .mark_bar()
            .encode(
                y=alt.Y("copy:N", title=None, sort="-x", axis=alt.Axis(labelLimit=300)),
                x=alt.X("value:Q", title=accuracy_title, scale=alt.Scale(domain=[0, 1])),
                color=copy_colours("copy:N"),
            )
            # A step per bar, not a height: a stretched chart's fixed height was squeezed to a sliver.
            .properties(height=alt.Step(36), title=_("Owner-only simulation: train on the copy, test on real rows")),
            width="stretch",
        )
        # Said here, before the button that spends, and again beside the copy once it is made.
        no_better_than_guessing(dict(zip(table.loc[table["measure"] == "accuracy", "copy"], trained["value"], strict=True)))


def no_better_than_guessing(scores: dict[str, float]) -> None:
    """Owner only: a warning when a model trained on a copy (``scores`` by :data:`COPIES` name, with the most common
    class's) does no better than always guessing the most common value of the target."""
    guess = scores.get(MOST_COMMON)
    useless = [copy for copy in (SYNTHETIC_COPY, RANDOMIZED_COPY) if guess is not None and scores.get(copy, 1.0) <= guess]
    if useless:
        st.warning(
            _(
                "Owner only, measured on your rows: a model trained on {copies} does no better than always guessing "
                "the most common value of the target. At this ε, such a copy is worth nothing for predicting it: a "
                "larger ε, fewer columns or coarser bins give each count more of the budget."
            ).format(copies=_("either copy") if len(useless) == 2 else _("the {copy}").format(copy=_(useless[0]))),
            icon=":material/warning:",
        )


def beside_the_table(state: StudioState) -> None:
    """The synthetic copy made beside the real rows, column by column and pair by pair (owner only, free)."""
    kept = state.copy_comparison
    if kept is None or kept[0] is not state.release:
        return
    comparison: CopyComparison = kept[1]
    st.subheader(_("The copy beside your table — owner only, free"))
    st.caption(
        _(
            "What a buyer will check before paying: does the copy look like the table? Computed from your real rows, so it "
            "is for your eyes only and never leaves this screen; nothing is charged. Average distance from your table: "
            "{one_way} for single columns, {two_way} for pairs of columns (0 = the same, 1 = nothing in common)."
        ).format(one_way=fixed(comparison.one_way_error, 3), two_way=fixed(comparison.two_way_error, 3))
    )
    names = list(dict.fromkeys(comparison.shares["column"]))
    column = st.selectbox(_("Column to compare"), names, key="copy_comparison_column")
    sources = {"real": _("your table"), "copy": _("the synthetic copy")}
    chosen = comparison.shares[comparison.shares["column"] == column]
    long = chosen.melt(id_vars=["cell", "position"], value_vars=list(sources), var_name="source", value_name="share")
    long["source"] = long["source"].map(sources)
    order = list(chosen.sort_values("position")["cell"])
    st.altair_chart(
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("cell:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30, labelLimit=160)),
            xOffset=alt.XOffset("source:N", sort=list(sources.values())),
            y=alt.Y("share:Q", title=_("share of the rows"), axis=alt.Axis(format="%")),
            color=copy_colours("source:N", {REAL_ROWS: sources["real"], SYNTHETIC_COPY: sources["copy"]}, legend=True),
            tooltip=["cell:N", "source:N", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(height=260, title=_("'{column}': your table and the copy").format(column=column)),
        width="stretch",
    )
    if len(comparison.pairs):
        both_ways = pd.concat(
            [comparison.pairs, comparison.pairs.rename(columns={"first": "second", "second": "first"})], ignore_index=True
        )
        # Every column's name on both axes, however many (Vega hides labels that would overlap, which left a wide
        # table's map with one name in two or three): a smaller font for many columns instead.
        every_label = alt.Axis(labelOverlap=False, labelFontSize=max(8, min(12, 600 // max(len(names), 1))), labelLimit=160)
        st.altair_chart(
            alt.Chart(both_ways)
            .mark_rect()
            .encode(
                x=alt.X("first:N", sort=names, title=None, axis=every_label),
                y=alt.Y("second:N", sort=names, title=None, axis=every_label),
                color=alt.Color(
                    "error:Q",
                    title=_("pair error"),
                    scale=alt.Scale(scheme="orangered", domain=[0, max(0.1, float(comparison.pairs["error"].max()))]),
                ),
                tooltip=["first:N", "second:N", alt.Tooltip("error:Q", format=".3f")],
            )
            .properties(
                height=alt.Step(max(10, min(24, 600 // max(len(names), 1)))),
                title=_("How far each pair of columns is from your table (0 = the same, 1 = nothing in common)"),
            ),
            width="stretch",
        )
    if len(comparison.accuracy):
        trained = comparison.accuracy.assign(**{"trained on": comparison.accuracy["trained on"].map(_)})
        st.altair_chart(
            alt.Chart(trained)
            .mark_bar()
            .encode(
                y=alt.Y("trained on:N", title=None, sort=None, axis=alt.Axis(labelLimit=300)),
                x=alt.X("accuracy:Q", title=accuracy_words(state.dataset.schema), scale=alt.Scale(domain=[0, 1])),
                color=copy_colours("trained on:N"),
                tooltip=["trained on:N", alt.Tooltip("accuracy:Q", format=".3f")],
            )
            .properties(
                height=alt.Step(36),
                title=_("Train on the copy, test on real rows (the copy saw those rows too, so it leans a little its way)"),
            ),
            width="stretch",
        )
        no_better_than_guessing(dict(zip(comparison.accuracy["trained on"], comparison.accuracy["accuracy"], strict=True)))
