"""Export: a randomized-response copy of the table for offline sale, with the buyer's privacy report."""

import json

import altair as alt
import streamlit as st

from dpcore.accountant import ADD_REMOVE, REPLACE_ONE, UNITS
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.release import (
    MECHANISMS,
    ReleasePlan,
    copy_epsilon,
    count_epsilon_for,
    default_plan,
    describe_plan,
    estimate_vs_truth,
    preview_release,
    release_table,
    usefulness,
    usefulness_summary,
)
from dpstudio.support.declaring import leak_summary, leaky_columns
from dpstudio.support.session import get_state, remember_release

state = get_state()
dataset = state.dataset
schema = dataset.schema
ledger = state.ledger()
st.title("5. Export")
st.write(
    "Sell a copy in which **every person can plausibly deny every value**: each sensitive cell is randomized on its own "
    "before the copy leaves. The buyer gets a privacy report that lets them undo the noise *on average* — population "
    "shares and means come back, individual rows do not."
)
row_count_epsilon = count_epsilon_for(ledger.unit)
if row_count_epsilon:
    st.info(
        f"This dataset's unit is **{UNITS[ADD_REMOVE]}**. A copy with one row per person would give away how many "
        f"people are in the table, so the copy is padded to a noisy row count (ε = {row_count_epsilon:g}, charged on top of "
        "the columns): a few filler rows are added, or a few real rows left out, and nobody can tell from the copy whether "
        "a person is in it. If being in the table is not itself sensitive, you can declare the unit "
        f"'{UNITS[REPLACE_ONE]}' on the Privacy page instead (every model spend then counts double).",
        icon=":material/info:",
    )
else:
    st.warning(
        f"This dataset's unit is **{UNITS[REPLACE_ONE]}**: the copy protects every value of every person (each can deny "
        "it) but has exactly one row per person, so it does not hide that a person is in the table. Sell it only where "
        "being in the table is not itself sensitive.",
        icon=":material/info:",
    )
with st.expander("Why the same table gives the same copy"):
    st.write(
        "If you handed out several independently randomized copies, a buyer holding two of them could average the noise "
        "away. So DP Studio keeps each released copy beside the budget ledger and hands out the **same** copy again for the "
        "same table and plan, at no extra cost. A **fresh** copy is a new release and is charged to the budget again."
    )

column_problems = [p for c in schema.columns for p in c.problems()]
if column_problems:
    st.error("Some declarations are incomplete: " + " ".join(column_problems) + " Fix them on the Data page.")
    st.stop()

st.subheader("The plan")
st.caption(
    "Per column: drop it, keep it (only for columns you declared public), the coin (yes/no columns, ε = ln 3), k-ary "
    "randomized response for categories, bins + k-ary or Laplace noise for numbers. Identifiers are dropped by default."
)
# The default shares what is left of the budget between the randomized columns; once a copy is out,
# its plan stays the default, so asking again hands out the same stored copy at no cost.
plan_key = (dataset.dataset_id, dataset.schema_key, ledger.unit)
available = ledger.remaining - row_count_epsilon
if plan_key in state.released_plans:
    base_plan = state.released_plans[plan_key]
    if state.release is None:
        st.info("A copy of this table was released earlier with the plan below: press **Release the copy** to get the "
                "same copy again, at no extra cost.", icon=":material/sync:")
elif available > 0.001:
    base_plan = default_plan(schema, budget=available)
else:
    st.error(
        f"Only ε = {max(ledger.remaining, 0):g} is left of this dataset's budget"
        + (f", less than the ε = {row_count_epsilon:g} its noisy row count needs" if row_count_epsilon else "")
        + ": a new copy cannot be made. Raise the budget on the Privacy page only if you accept a weaker promise."
    )
    st.stop()
edited = st.data_editor(
    base_plan.to_frame(),
    key=f"plan_editor_{dataset.fingerprint}_{dataset.schema_key}_{hash(base_plan.to_json())}",
    hide_index=True,
    width="stretch",
    disabled=["column"],
    column_config={
        "mechanism": st.column_config.SelectboxColumn("mechanism", options=list(MECHANISMS), required=True),
        "epsilon": st.column_config.NumberColumn("ε", min_value=0.0, format="%.3f"),
        "bins": st.column_config.NumberColumn("bins", min_value=2, step=1),
        "edges": st.column_config.TextColumn("bin edges", help="Optional public cut points, separated by |"),
        "missing": st.column_config.SelectboxColumn("missing values", options=["random", "category"]),
    },
)
try:
    plan = ReleasePlan.from_frame(edited)
except DataError as error:
    st.error(str(error))
    st.stop()

description = describe_plan(plan, schema)
st.dataframe(description, hide_index=True, width="stretch")
problems = [p for p in plan.problems(schema)]
remaining = ledger.remaining
col_a, col_b = st.columns(2)
copy_cost = copy_epsilon(plan, ledger.unit)
col_a.metric("ε per person in this copy", f"{copy_cost:.3g}",
             help="The columns' ε" + (f" plus ε = {row_count_epsilon:g} for the noisy row count" if row_count_epsilon else ""))
col_b.metric("Budget left for this dataset", f"{remaining:.3g}")
if copy_cost > remaining + 1e-9 and state.released_plans.get(plan_key) != plan:
    problems.append(
        f"This plan costs ε = {copy_cost:.3g} per person, more than the {max(remaining, 0):.3g} left: lower the ε of "
        "some columns or drop them."
    )
if leaky_columns(schema):
    st.warning(leak_summary(schema) + " Declare their domains on the Data page to release them.", icon=":material/warning:")
if problems:
    st.error(" ".join(problems))
    st.stop()

st.subheader("Will it be worth buying? — owner only")
worth = usefulness(plan, schema, len(dataset.frame))
if not worth.empty:
    summary = usefulness_summary(worth)
    (st.warning if (worth["rating"] == "noise").any() else st.info)(summary, icon=":material/insights:")
    st.dataframe(worth[["column", "epsilon", "typical_error", "verdict"]], hide_index=True, width="stretch",
                 column_config={"typical_error": st.column_config.NumberColumn("typical error", format="±%.3g")})

st.subheader("Preview — owner only")
st.caption("The first rows as a buyer would see them, with fresh noise; this preview is not the released copy and never leaves this screen.")
st.dataframe(preview_release(dataset.frame, schema, plan, 8), hide_index=True, width="stretch")

fresh = st.checkbox("Make a fresh copy (a new release, charged to the budget again)", value=False)
if st.button("Release the copy", type="primary"):
    try:
        with st.spinner("Randomizing every cell…"):
            state.release = release_table(dataset.frame, schema, plan, ledger=ledger, fresh=fresh, label="Export: randomized copy")
        state.released_plans[plan_key] = plan
        remember_release(state)
        st.rerun()
    except BudgetExceededError as error:
        st.error(str(error))
    except DataError as error:
        st.error(str(error))
    except Exception:
        st.error("The copy could not be made from this table; nothing was charged. Check the plan and the declarations.")

result = state.release
if result is None:
    st.stop()
st.divider()
if result.reused:
    st.info("This table and plan were released before: here is the same copy again, at no extra cost.", icon=":material/sync:")
else:
    st.success(f"Released: ε = {result.epsilon_charged:g} per person charged to the budget.")
c1, c2, c3 = st.columns(3)
c1.download_button("Released table (CSV)", result.csv, file_name="released.csv", mime="text/csv", key="dl_release_csv")
c2.download_button("Privacy report (JSON)", json.dumps(result.report, indent=2, ensure_ascii=False),
                   file_name="privacy_report.json", mime="application/json", key="dl_release_json")
c3.download_button("Privacy report (Markdown)", result.markdown, file_name="privacy_report.md", mime="text/markdown", key="dl_release_md")
with st.expander("The buyer's report"):
    st.markdown(result.markdown)

st.subheader("Will the buyer's estimates be useful? — owner only")
st.caption("Compares the buyer's debiased estimates with the true shares in your table. For your eyes only: never exported.")
if plan.randomised_columns:
    column = st.selectbox("Column", plan.randomised_columns, key="utility_column")
    check = estimate_vs_truth(dataset.frame, schema, plan, result.table, column)
    st.dataframe(check, hide_index=True, width="stretch")
    label = "category" if "category" in check.columns else check.columns[0]
    bars = alt.Chart(check).mark_bar(opacity=0.35).encode(x=alt.X(f"{label}:N", title=column), y=alt.Y("truth:Q", title="share"))
    points = alt.Chart(check).mark_point(filled=True, color="black").encode(x=f"{label}:N", y="estimate:Q")
    errors = alt.Chart(check).mark_rule().encode(x=f"{label}:N", y="ci_lower:Q", y2="ci_upper:Q")
    st.altair_chart((bars + errors + points).properties(height=300, title="Bars: truth (owner only); dots and lines: the buyer's estimate and 95 % interval"),
                    width="stretch")
