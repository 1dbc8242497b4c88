"""The Export page's sections: the unit notice, the plan editor, whether the copy is worth buying, the result and the check."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import streamlit as st

from dpcore.budget.accountant import ADD_REMOVE, REPLACE_ONE, UNITS, BudgetLedger, default_epsilon
from dpcore.i18n import _, short, short_left
from dpcore.release import (
    MECHANISMS,
    NOISE_CONFIRMATION,
    ReleasePlan,
    ReleaseResult,
    columns_budget,
    copy_costs,
    counted_rows_per_person,
    default_plan,
    estimate_vs_truth,
    mostly_noise,
    noise_advice,
    noise_confirmed,
    usefulness,
    usefulness_summary,
)
from dpcore.release.report import report_markdown
from dpcore.tables.schema import Schema
from dpstudio.support.charts import localized
from dpstudio.support.state import Dataset, StudioState


def plan_key(dataset: Dataset, ledger: BudgetLedger) -> tuple:
    """Which released plan belongs to this table: its dataset, its declarations and the unit of protection."""
    return (dataset.dataset_id, dataset.schema_key, ledger.unit)


def starting_plan(state: StudioState, ledger: BudgetLedger, synthetic: bool = False) -> tuple[ReleasePlan | None, str]:
    """The plan the editor starts from, and a sentence for the owner (an error when no copy can be made).

    For a synthetic copy the plan only names the columns and their bins (its ε is chosen apart),
    so the default plan serves even when no randomized copy fits the budget.

    Once a copy is out, its plan stays the default, so asking again hands out the same stored
    copy at no cost; otherwise the default copy spends a stated share of what is left
    (:func:`~dpcore.budget.accountant.default_epsilon`: half, the noisy row count of the add/remove unit
    included), shared between the randomized columns, so one click never spends it all.
    """
    released = state.released_plans.get(plan_key(state.dataset, ledger))
    if released is not None:
        return released, "" if state.release is not None else _(
            "A copy of this table was released earlier with the plan below: press **Release the copy** to get the same "
            "copy again, at no extra cost."
        )
    available = columns_budget(ledger, state.dataset.schema)
    row_count_epsilon = copy_costs(None, ledger.unit, state.dataset.schema)[1]
    if available > 0.001:
        # Half of what is left pays for the row count and the columns; when it cannot pay for the row count, the
        # columns get half of what the row count leaves.
        columns = default_epsilon(ledger.remaining) - row_count_epsilon
        return default_plan(state.dataset.schema, budget=columns if columns > 0.001 else default_epsilon(available)), ""
    if row_count_epsilon:
        sentence = _(
            "Only ε = {left} is left of this dataset's budget, less than the ε = {count} its noisy row count needs: a "
            "new copy cannot be made. Raise the budget on the Privacy page only if you accept a weaker promise."
        )
    else:
        sentence = _(
            "Only ε = {left} is left of this dataset's budget: a new copy cannot be made. Raise the budget on the "
            "Privacy page only if you accept a weaker promise."
        )
    if synthetic:
        return default_plan(state.dataset.schema), ""
    return None, sentence.format(left=short_left(max(ledger.remaining, 0)), count=short(row_count_epsilon))


def budget_problem(state: StudioState, ledger: BudgetLedger, plan: ReleasePlan) -> str | None:
    """A sentence when the plan costs more than is left (a plan released before is handed out again for free)."""
    cost = copy_costs(plan, ledger.unit, state.dataset.schema)[0]
    if cost > ledger.remaining + 1e-9 and state.released_plans.get(plan_key(state.dataset, ledger)) != plan:
        return _(
            "This plan costs ε = {cost} per person, more than the {left} left: lower the ε of some columns or drop them."
        ).format(cost=short(float(f"{cost:.3g}")), left=short(float(f"{max(ledger.remaining, 0):.3g}")))
    return None


def cost_metrics(plan: ReleasePlan, ledger: BudgetLedger, schema: Schema) -> None:
    k = counted_rows_per_person(schema)
    cost, row_count_epsilon = copy_costs(plan, ledger.unit, schema)
    left, right = st.columns(2)
    how = _("The columns' ε plus the noisy row count's") if row_count_epsilon else _("The columns' ε")
    if k > 1:
        how += _(", times {k}: a person's up to {k} rows add up").format(k=k)
    left.metric(_("ε per person in this copy"), short(float(f"{cost:.3g}")), help=how)
    right.metric(_("Budget left for this dataset"), short(float(f"{ledger.remaining:.3g}")))


def unit_notice(ledger: BudgetLedger, schema: Schema) -> None:
    """What the dataset's unit of protection means for a copy (padding, or an exact row count)."""
    row_count_epsilon = copy_costs(None, ledger.unit, schema)[1]
    if row_count_epsilon:
        st.info(
            _(
                "This dataset's unit is **{unit}**. A copy with one row per person would give away how many "
                "people are in the table, so the copy is padded to a noisy row count (ε = {count}, charged on top of "
                "the columns): a few filler rows are added, or a few real rows left out, and nobody can tell from the copy whether "
                "a person is in it. If being in the table is not itself sensitive, you can declare the unit "
                "'{other}' on the Privacy page instead (every model spend then counts double)."
            ).format(unit=_(UNITS[ADD_REMOVE]), count=short(row_count_epsilon), other=_(UNITS[REPLACE_ONE])),
            icon=":material/info:",
        )
    else:
        st.warning(
            _(
                "This dataset's unit is **{unit}**: the copy protects every value of every person (each can deny "
                "it) but has exactly one row per person, so it does not hide that a person is in the table. Sell it only where "
                "being in the table is not itself sensitive."
            ).format(unit=_(UNITS[REPLACE_ONE])),
            icon=":material/info:",
        )
    with st.expander(_("Why the same table gives the same copy")):
        st.write(
            _(
                "If you handed out several independently randomized copies, a buyer holding two of them could average the noise "
                "away. So DP Studio keeps each released copy beside the budget ledger and hands out the **same** copy again for the "
                "same table and plan, at no extra cost. A **fresh** copy is a new release and is charged to the budget again."
            )
        )


def plan_editor(base_plan: ReleasePlan, dataset: Dataset) -> pd.DataFrame:
    """The plan as an editable table, one row per column."""
    return st.data_editor(
        base_plan.to_frame(),
        key=f"plan_editor_{dataset.fingerprint}_{dataset.schema_key}_{hash(base_plan.to_json())}",
        hide_index=True,
        width="stretch",
        disabled=["column"],
        column_config={
            "column": st.column_config.TextColumn(_("column")),
            "mechanism": st.column_config.SelectboxColumn(_("mechanism"), options=list(MECHANISMS), required=True),
            "epsilon": st.column_config.NumberColumn("ε", min_value=0.0, format="%.3f"),
            "bins": st.column_config.NumberColumn(_("bins"), min_value=2, step=1),
            "edges": st.column_config.TextColumn(_("bin edges"), help=_("Optional public cut points, separated by |")),
            "missing": st.column_config.SelectboxColumn(_("missing values"), options=["random", "category"]),
        },
    )


def worth_buying(plan: ReleasePlan, schema: Schema, n_rows: int) -> bool:
    """Per column, how far the buyer's estimates will be off: owner only. True when the copy is mostly noise."""
    st.subheader(_("Will it be worth buying? — owner only"))
    worth = usefulness(plan, schema, n_rows)
    noisy = mostly_noise(worth)
    if not worth.empty:
        summary = usefulness_summary(worth)
        if noisy:
            st.warning(summary + " " + noise_advice(worth), icon=":material/blur_on:")
        else:
            (st.warning if (worth["rating"] == "noise").any() else st.info)(summary, icon=":material/insights:")
        st.dataframe(
            worth[["column", "epsilon", "typical_error", "verdict"]],
            hide_index=True,
            width="stretch",
            column_config={
                "column": st.column_config.TextColumn(_("column")),
                "epsilon": st.column_config.NumberColumn("ε"),
                "typical_error": st.column_config.NumberColumn(_("typical error"), format="±%.3g"),
                "verdict": st.column_config.TextColumn(_("verdict")),
            },
        )
    return noisy


def noise_confirmation() -> bool:
    """For a copy that is mostly noise: the owner types the stated word to release it anyway (True once typed)."""
    word = _(NOISE_CONFIRMATION)
    typed = st.text_input(
        _("This copy is mostly noise. To release it anyway, type **{word}**:").format(word=word), key="noise_confirmation"
    )
    return noise_confirmed(typed)


def released(result: ReleaseResult) -> None:
    """What was charged, the three downloads and the buyer's report."""
    st.divider()
    if result.reused:
        st.info(
            _("This table and plan were released before: here is the same copy again, at no extra cost."), icon=":material/sync:"
        )
    else:
        st.success(_("Released: ε = {epsilon} per person charged to the budget.").format(epsilon=short(result.epsilon_charged)))
    if result.notes and not result.reused:  # counts of the private table, each labelled owner-only: never in the buyer's files
        st.caption(" ".join(map(str, result.notes)))
    c1, c2, c3 = st.columns(3)
    # The buyer's Markdown report is written in the language the page is in now (the JSON is always English).
    markdown = report_markdown(result.report)
    c1.download_button(
        _("Released table (CSV)"), result.csv, file_name="released.csv", mime="text/csv", key="dl_release_csv", on_click="ignore"
    )
    c2.download_button(
        _("Privacy report (JSON)"),
        json.dumps(result.report, indent=2, ensure_ascii=False),
        file_name="privacy_report.json",
        mime="application/json",
        key="dl_release_json",
        on_click="ignore",
    )
    c3.download_button(
        _("Privacy report (Markdown)"),
        markdown,
        file_name="privacy_report.md",
        mime="text/markdown",
        key="dl_release_md",
        on_click="ignore",
    )
    with st.expander(_("The buyer's report")):
        st.markdown(markdown)


def buyer_check(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, result: ReleaseResult, n_rows: int) -> None:
    """The buyer's debiased estimates beside the truth, for one column at a time: owner only.

    A column the plan's verdict calls mostly noise (:func:`~dpcore.release.usefulness`, for ``n_rows`` counted rows)
    gets that verdict beside its chart, where its estimates can stray far outside [0, 1].
    """
    st.subheader(_("Will the buyer's estimates be useful? — owner only"))
    st.caption(
        _("Compares the buyer's debiased estimates with the true shares in your table. For your eyes only: never exported.")
    )
    if plan.randomised_columns:
        column = st.selectbox(_("Column"), plan.randomised_columns, key="utility_column")
        check = estimate_vs_truth(frame, schema, plan, result.table, column)
        st.dataframe(check, hide_index=True, width="stretch")
        label = "category" if "category" in check.columns else check.columns[0]
        shares = check[label].tolist() != ["mean"]  # a Laplace column's check is its mean, in the column's units
        # A share is in [0, 1]: an estimate beyond it is pinned to the edge.
        share = alt.Scale(domain=[0, 1], clamp=True) if shares else alt.Undefined
        bars = (
            alt.Chart(check)
            .mark_bar(opacity=0.35)
            .encode(x=alt.X(f"{label}:N", title=column), y=alt.Y("truth:Q", title=_("share"), scale=share))
        )
        points = alt.Chart(check).mark_point(filled=True, color="black").encode(x=f"{label}:N", y="estimate:Q")
        errors = alt.Chart(check).mark_rule().encode(x=f"{label}:N", y="ci_lower:Q", y2="ci_upper:Q")
        title = _("Bars: truth (owner only); dots and lines: the buyer's estimate and 95 % interval")
        st.altair_chart(localized((bars + errors + points).properties(height=300, title=title)), width="stretch")
        worth = usefulness(plan, schema, n_rows)
        for sentence in worth.loc[(worth["column"] == column) & (worth["rating"] == "noise"), "verdict"]:
            st.warning(sentence, icon=":material/blur_on:")
