"""The Privacy page's sections: the unit of protection, the total budget (raising it needs typed consent), mechanisms, a demo."""

from __future__ import annotations

import altair as alt
import streamlit as st

from dpcore.accountant import ADD_REMOVE, REPLACE_ONE, UNITS, BudgetLedger
from dpcore.exceptions import BudgetExceededError
from dpcore.explain import (
    HARM_PRESETS,
    MECHANISM_NOTES,
    coin_demo,
    epsilon_problem,
    epsilon_warnings,
    noisy_count_demo,
    one_person_sentence,
)
from dpstudio.support.state import StudioState


def unit_section(ledger: BudgetLedger) -> None:
    """The dataset's unit of protection; changing it after a spend needs typed consent."""
    st.subheader("Whom each release protects")
    units = [ADD_REMOVE, REPLACE_ONE]
    unit = st.radio("Unit of protection for this dataset", units, index=units.index(ledger.unit), format_func=lambda u: UNITS[u].capitalize(),
                    key="unit_choice")
    st.caption(
        "Models protect against adding or removing a person's row. A randomized copy on its own hides a person's values but not "
        "that they are in the table; under the add/remove unit it is padded to a noisy number of rows. Choosing 'values may "
        "change' counts every model spend twice (a changed row is one removed and one added)."
    )
    if unit != ledger.unit:
        typed = ""
        if ledger.spends():
            st.warning(
                "Something was already released under the current unit: changing it changes what was promised for it. "
                "Type **change the unit** to confirm; the change is kept in the history.", icon=":material/warning:",
            )
            typed = st.text_input("Confirmation", key="unit_confirmation", placeholder="change the unit")
            if typed.strip() and typed.strip().lower() != "change the unit":
                st.caption("Type exactly: change the unit")
        confirmed = not ledger.spends() or typed.strip().lower() == "change the unit"
        if st.button("Use this unit", key="set_unit", disabled=not confirmed):
            try:
                ledger.set_unit(unit, confirm=True)
                st.rerun()
            except BudgetExceededError as error:
                st.error(str(error))


def budget_section(ledger: BudgetLedger) -> float:
    """The total ε from a harm level or typed; raising it needs typed consent. Returns the ε chosen."""
    st.subheader("How sensitive is this table?")
    options = [*HARM_PRESETS, "Custom"]
    preset = st.radio("Harm if a person's row were disclosed", options, index=0, key="harm_preset")
    if preset == "Custom":
        chosen, problem = epsilon_problem(st.text_input("Total ε", value=f"{ledger.total:g}", key="custom_total"), name="The total ε")
        if problem:
            st.error(problem + " The budget is unchanged.")
            chosen = ledger.total
    else:
        chosen = HARM_PRESETS[preset]
        st.write(f"Suggested total: **ε = {chosen:g}**")
    st.info(one_person_sentence(chosen), icon=":material/person:")
    for warning in epsilon_warnings(chosen):
        st.warning(warning)

    raising = chosen > ledger.total
    confirmation = ""
    if raising:
        st.warning(
            f"This raises the total from ε = {ledger.total:g} to {chosen:g}: everyone in the dataset gets a weaker promise, "
            "including for what was already released. Type **raise the budget** to confirm; the change is kept in the history.",
            icon=":material/warning:",
        )
        confirmation = st.text_input("Confirmation", key="raise_confirmation", placeholder="raise the budget")
        if confirmation.strip() and confirmation.strip().lower() != "raise the budget":
            st.caption("Type exactly: raise the budget")
    ready = chosen != ledger.total and (not raising or confirmation.strip().lower() == "raise the budget")
    if st.button("Set as this dataset's budget", type="primary", disabled=not ready):
        try:
            ledger.set_total(chosen, confirm_raise=raising, reason="raised on the Privacy page" if raising else "lowered on the Privacy page")
            st.rerun()
        except BudgetExceededError as error:
            st.error(str(error))
    st.write(f"Current budget: **ε = {ledger.total:g}**, spent {ledger.spent:g}, left {ledger.remaining:g}.")
    return chosen


def mechanisms_section(state: StudioState) -> None:
    """The noise and selection mechanisms the models use."""
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


def epsilon_demo(chosen: float, noise: str) -> None:
    """Twenty noisy releases of a toy count, and the coin on made-up answers."""
    st.subheader("See what ε does")
    st.write(f"Twenty releases of a public toy count of **120 people** at ε = {chosen:g}, with {noise} noise:")
    draws = noisy_count_demo(chosen, noise=noise)
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
