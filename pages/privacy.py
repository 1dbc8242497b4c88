"""Privacy: choose the dataset's total ε, the mechanisms, and see what ε does."""

import altair as alt
import streamlit as st

from app_support.session import get_state
from dpcore.exceptions import BudgetExceededError
from dpcore.explain import HARM_PRESETS, MECHANISM_NOTES, coin_demo, epsilon_warnings, noisy_count_demo, one_person_sentence

state = get_state()
ledger = state.ledger()
st.title("2. Privacy")
st.write(
    "**ε (epsilon)** is the privacy budget of this table: the total privacy loss you accept for everyone in it, "
    "across everything you train or export. Smaller is more private and noisier. Every release spends part of it; "
    "when it is gone, nothing more can leave this screen."
)

st.subheader("How sensitive is this table?")
options = [*HARM_PRESETS, "Custom"]
preset = st.radio("Harm if a person's row were disclosed", options, index=0, key="harm_preset")
if preset == "Custom":
    chosen = st.number_input("Total ε", min_value=0.001, max_value=100.0, value=float(ledger.total), step=0.1, format="%.3f")
else:
    chosen = HARM_PRESETS[preset]
    st.write(f"Suggested total: **ε = {chosen:g}**")

st.info(one_person_sentence(chosen), icon=":material/person:")
st.caption(
    "The budget belongs to this table's contents: reloading or re-saving it keeps what was spent. Editing rows makes a "
    "new table with a budget of its own — the people in both tables are then protected by the sum of the two budgets, "
    "so edit before you release anything, not after."
)
for warning in epsilon_warnings(chosen):
    st.warning(warning)

col_set, col_info = st.columns([1, 3])
with col_set:
    if st.button("Set as this table's budget", type="primary", disabled=chosen == ledger.total):
        try:
            ledger.set_total(chosen)
            st.rerun()
        except BudgetExceededError as error:
            st.error(str(error))
with col_info:
    st.write(f"Current budget: **ε = {ledger.total:g}**, spent {ledger.spent:g}, left {ledger.remaining:g}.")
    if ledger.spent > 0:
        st.caption("Raising the total after releases weakens the promise made to the people in the table: decide it once.")

st.subheader("Mechanisms")
st.write("Where an algorithm allows a choice, the models and exports use what you pick here.")
col_a, col_b = st.columns(2)
with col_a:
    state.count_noise = st.radio(
        "Noise for numbers and counts", ["laplace", "geometric"], index=["laplace", "geometric"].index(state.count_noise),
        format_func=lambda k: {"laplace": "Laplace", "geometric": "Geometric (discrete Laplace)"}[k],
    )
    st.caption(MECHANISM_NOTES[state.count_noise])
with col_b:
    state.selection = st.radio(
        "How choices are made (e.g. a tree's splits)", ["gumbel", "permute_and_flip"],
        index=["gumbel", "permute_and_flip"].index(state.selection),
        format_func=lambda k: {"gumbel": "Exponential mechanism", "permute_and_flip": "Permute-and-flip"}[k],
    )
    st.caption(MECHANISM_NOTES[state.selection])
st.caption("Exports: " + MECHANISM_NOTES["coin"] + " " + MECHANISM_NOTES["k-ary"])

st.subheader("See what ε does")
st.write(f"Twenty releases of a public toy count of **120 people** at ε = {chosen:g}, with {state.count_noise} noise:")
draws = noisy_count_demo(chosen, noise=state.count_noise)
chart = (
    alt.Chart(draws)
    .mark_circle(size=90)
    .encode(
        x=alt.X("released count:Q", title="released count", scale=alt.Scale(zero=False)),
        y=alt.Y("draw:O", title="draw", axis=None),
        tooltip=["draw", "released count"],
    )
    + alt.Chart(draws.head(1)).mark_rule(color="red", strokeDash=[4, 4]).encode(x="true count:Q")
).properties(height=220, title="Each dot is one release; the dashed line is the true count")
st.altair_chart(chart, width="stretch")
st.write("What the coin does to twenty made-up yes/no answers (each answer kept 3 times in 4):")
st.dataframe(coin_demo().set_index("person").T, width="stretch")

st.subheader("What has been spent on this table")
spends = ledger.to_frame()
if spends.empty:
    st.write("Nothing yet.")
else:
    st.dataframe(spends, hide_index=True, width="stretch")
