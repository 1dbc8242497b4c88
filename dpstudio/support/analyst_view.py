"""What an analyst's session shows: the declarations, their own slice and spends, and synthetic copies within it.

Nothing here reads the table's rows for display: the declarations are public by definition (a
domain read from the data is not shown at all), the slice and spends come from the ledger, the
summary is the owner's DP release (:mod:`dpcore.release.summary`), and a synthetic copy is a
differentially private release charged to the analyst's slice.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _, integer, short, short_left
from dpcore.progress import CostMemory
from dpcore.release import default_plan
from dpcore.synthetic import SyntheticResult, copy_to_learn_from
from dpstudio.support import roles, workspace
from dpstudio.support.charts import localized
from dpstudio.support.session import recall_result, refuse_on_a_fresh_page, remember_result, said_refusal
from dpstudio.support.state import Dataset, StudioState, table_name

#: By absolute path, as the app registers its pages: a path relative to the running script is not found when the
#: app is opened as the checkout's top-level app.py.
EXPORT_PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "export.py")


def sidebar(state: StudioState, ledger: BudgetLedger) -> None:
    """The dataset's name, its declared column count, and the analyst's slice (never the table's row count)."""
    st.markdown("### " + _("Dataset"))
    st.write(f"**{table_name(ledger.name)}**")
    st.caption(_("{columns} columns declared · you are an analyst").format(columns=integer(len(state.dataset.schema.columns))))
    mine = ledger.my_slice()
    if mine is None:
        return
    granted, spent = float(mine.epsilon), float(mine.spent)
    st.markdown("### " + _("Your slice"))
    st.progress(
        min(spent / granted, 1.0) if granted else 1.0,
        text=_("ε spent {spent} of {total} — {left} left").format(
            spent=short(spent), total=short(granted), left=short_left(float(mine.left))
        ),
    )


def data_page(state: StudioState) -> None:
    """The declarations, read-only: what each column is and its public domain."""
    ledger = state.ledger()
    st.write(
        _(
            "The dataset **{dataset}** is shared with you as an analyst: you learn from its people through differentially "
            "private models and copies, and never see a row of it. Its declarations, public by definition, are below; "
            "only its owner can change them."
        ).format(dataset=table_name(ledger.name))
    )
    table = declarations_table(state)
    st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)  # every column at once
    summary_section(state)


def summary_section(state: StudioState) -> None:
    """The owner's DP summary: the noisy row count and a bar chart of each column's noisy counts."""
    summary = workspace.load_summary(state.ledger_path, state.dataset.dataset_id)
    st.subheader(_("A DP summary of the table"))
    if summary is None:
        st.caption(_("The owner has not published a DP summary of this table yet."))
        return
    st.write(
        _("About **{rows}** rows. Every count below is noisy (discrete Laplace, ε = {epsilon} for the whole summary).").format(
            rows=integer(summary.rows), epsilon=short(summary.epsilon)
        )
    )
    names = list(summary.columns)
    for start in range(0, len(names), 2):
        for place, name in zip(st.columns(2), names[start : start + 2], strict=False):
            bins = pd.DataFrame(summary.columns[name], columns=["bin", "count"])
            chart = (
                alt.Chart(bins)
                .mark_bar()
                .encode(
                    x=alt.X("bin:N", sort=None, title=None),
                    y=alt.Y("count:Q", title=_("noisy count")),
                    tooltip=[alt.Tooltip("bin:N", title=_("bin")), alt.Tooltip("count:Q", title=_("noisy count"))],
                )
                .properties(title=name, height=200)
            )
            place.altair_chart(localized(chart), width="stretch")


def declarations_table(state: StudioState) -> pd.DataFrame:
    """One row per column: its role, kind and declared domain; a domain read from the data is withheld."""
    roles = {
        "feature": _("feature"),
        "target": _("target"),
        "identifier": _("identifier"),
        "ignore": _("ignored"),
    }
    rows = []
    for column in state.dataset.schema.columns:
        if column.role in ("identifier", "ignore"):
            domain = ""
        elif column.bounds_from_data:
            domain = _("not shown: read from the data, not declared")
        elif column.kind == "numeric":
            domain = "" if column.lower is None or column.upper is None else f"{column.lower:g} – {column.upper:g}"
        else:
            domain = ", ".join(map(str, column.categories))
        rows.append(
            {
                _("column"): column.name,
                _("role"): roles.get(column.role, column.role),
                _("kind"): _("numeric") if column.kind == "numeric" else _("categorical"),
                _("declared bounds or categories"): domain,
            }
        )
    return pd.DataFrame(rows)


def privacy_page(state: StudioState) -> None:
    """The analyst's slice (granted, spent, left), the dataset's composed total, and their own spends."""
    ledger = state.ledger()
    st.write(_("**Dataset:** {dataset}. {summary}.").format(dataset=table_name(ledger.name), summary=ledger.summary()))
    mine = ledger.my_slice()
    if mine is not None:
        left, middle, right = st.columns(3)
        left.metric(_("Your slice (ε)"), short(float(mine.epsilon)))
        middle.metric(_("Spent (ε)"), short(float(mine.spent)))
        right.metric(_("Left (ε)"), short(float(mine.left)))
        st.caption(
            _("δ of your slice: {delta}, of which {spent} spent. Granted by {owner}.").format(
                delta=f"{float(mine.delta):g}", spent=f"{float(mine.spent_delta):g}", owner=mine.granted_by or _("the owner")
            )
        )
    st.subheader(_("Your spends"))
    history = ledger.history()
    who = state.signed_in.subject if state.signed_in is not None else ""
    own = history[(history["event"] == "spend") & (history["by"] == who)]
    own = own[["when (UTC)", "what", "ε in the dataset's unit", "δ in the dataset's unit"]]
    if own.empty:
        st.caption(_("Nothing spent yet."))
    else:
        st.dataframe(
            own, hide_index=True, width="stretch", column_config={name: st.column_config.Column(_(name)) for name in own.columns}
        )


def export_page(state: StudioState) -> None:
    """A synthetic copy made within the analyst's slice (MST, over the declared domains), and its downloads."""
    # Here, not at the top: the synthetic view brings the model library, which the first page never needs.
    from dpstudio.support import synthetic_view as synthetic

    ledger = state.ledger()
    schema = state.dataset.schema
    st.write(
        _(
            "Make a **synthetic copy** of the table: no row in it is a real person's, the rows are invented from a model of "
            "the table's noisy counts over the declared categories and bounds, and its ε is charged to your slice."
        )
    )
    if ledger.remaining < synthetic.MIN_EPSILON:
        st.warning(
            _(
                "Only ε = {left} is left of your slice: a new copy cannot be made. Ask the dataset's owner for a larger slice."
            ).format(left=short_left(max(ledger.remaining, 0.0)))
        )
    plan = default_plan(schema)
    problems = [*plan.problems(schema), *[p for c in schema.columns for p in c.problems()]]
    if problems or schema.read_from_data():
        st.error(_("The owner's declarations are not complete yet, so no copy can be made: ask the owner."))
        return
    chosen = synthetic.settings(ledger, methods=False)
    if chosen is not None:
        key = synthetic.settings_key(state, plan, chosen)
        if synthetic.copy_button(state, chosen, key):
            try:
                with synthetic.progress_bar() as progress:
                    state.release = synthetic.synthesize(state, ledger, plan, chosen, progress=progress, costs=CostMemory())
                synthetic.copy_made(state, key)
                remember_result(state, "release")  # the copy Compare trains and tests on, kept across a reload
                st.rerun()
            except (BudgetExceededError, DataError) as error:
                refuse_on_a_fresh_page(state, "synthetic copy", roles.refusal(state, error))
            except Exception:
                st.error(_("The synthetic copy could not be made; nothing was charged. Ask the owner to check the declarations."))
        said_refusal(state, "synthetic copy")
    if isinstance(recall_result(state, "release", SyntheticResult), SyntheticResult):
        synthetic.made(state.release, owner=False)


def copy_to_compare(state: StudioState) -> Dataset:
    """The analyst's own synthetic copy of the dataset, as the table their Compare page trains and tests on.

    Only the copy is read (its numbers at their public bins' midpoints, :func:`~dpcore.synthetic.copy_for_models`):
    whatever Compare measures on it is post-processing of a release already charged to the analyst's slice. Without
    a copy of this dataset the page says how to make one, and stops.
    """
    copy = recall_result(state, "release", SyntheticResult)
    if copy is None or copy.dataset_id != state.dataset.dataset_id:
        st.write(
            _(
                "As an analyst you compare models on your own synthetic copy of the table, never on its rows. Make a copy "
                "on the Export page first (its ε is charged to your slice); comparing on it then costs nothing more."
            )
        )
        st.page_link(EXPORT_PAGE, label=_("Make a synthetic copy"), icon=":material/inventory_2:")
        st.stop()
    if state.compared_copy is None or state.compared_copy[0] is not copy:
        try:
            frame, schema = copy_to_learn_from(copy.table, copy.report, state.dataset.schema)
        except DataError as error:
            st.error(str(error))
            st.stop()
        on_copy = replace(
            state.dataset,
            name=_("your synthetic copy"),
            frame=frame,
            info={"rows": len(frame), "columns": frame.shape[1]},
            base_schema=schema,
            schema=schema,
        )
        state.compared_copy = (copy, on_copy)
    return state.compared_copy[1]
