"""The Privacy page's sections: the unit of protection, the total budget (raising it needs typed consent), mechanisms, a demo."""

from __future__ import annotations

import altair as alt
import streamlit as st

from dpcore.budget.accountant import ADD_REMOVE, REPLACE_ONE, UNITS, BudgetLedger
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
from dpcore.i18n import N_, _, short, short_left
from dpstudio.support.charts import localized
from dpstudio.support.language import keyed
from dpstudio.support.state import StudioState


def unit_section(ledger: BudgetLedger) -> None:
    """The dataset's unit of protection; changing it after a spend needs typed consent."""
    st.subheader(_("Whom each release protects"))
    units = [ADD_REMOVE, REPLACE_ONE]
    unit = st.radio(
        _("Unit of protection for this dataset"),
        units,
        index=units.index(ledger.unit),
        format_func=lambda u: _capital(_(UNITS[u])),
        key=keyed("unit_choice"),
    )
    st.caption(
        _(
            "Models protect against adding or removing a person's row. A randomized copy on its own hides a person's values but not "
            "that they are in the table; under the add/remove unit it is padded to a noisy number of rows. Choosing 'values may "
            "change' counts every model spend twice (a changed row is one removed and one added)."
        )
    )
    if unit != ledger.unit:
        typed = ""
        if ledger.spends():
            phrase = _(CHANGE_UNIT)
            st.warning(
                _(
                    "Something was already released under the current unit: changing it changes what was promised for it. "
                    "Type **{phrase}** to confirm; the change is kept in the history."
                ).format(phrase=phrase),
                icon=":material/warning:",
            )
            typed = st.text_input(_("Confirmation"), key="unit_confirmation", placeholder=phrase)
            if typed.strip() and not _typed(typed, CHANGE_UNIT):
                st.caption(_("Type exactly: {phrase}").format(phrase=phrase))
        confirmed = not ledger.spends() or _typed(typed, CHANGE_UNIT)
        if st.button(_("Use this unit"), key="set_unit", disabled=not confirmed):
            try:
                ledger.set_unit(unit, confirm=True)
                st.rerun()
            except BudgetExceededError as error:
                st.error(str(error))


def budget_section(ledger: BudgetLedger) -> float:
    """The total ε from a harm level or typed; raising it needs typed consent. Returns the ε chosen."""
    st.subheader(_("How sensitive is this table?"))
    options = [*HARM_PRESETS, CUSTOM]
    preset = st.radio(_("Harm if a person's row were disclosed"), options, index=0, key=keyed("harm_preset"), format_func=_)
    if preset == CUSTOM:
        chosen, problem = epsilon_problem(
            st.text_input(_("Total ε"), value=short(ledger.total), key="custom_total"), name=_("The total ε")
        )
        if problem:
            st.error(problem + " " + _("The budget is unchanged."))
            chosen = ledger.total
    else:
        chosen = HARM_PRESETS[preset]
        st.write(_("Suggested total: **ε = {epsilon}**").format(epsilon=short(chosen)))
    st.info(one_person_sentence(chosen), icon=":material/person:")
    for warning in epsilon_warnings(chosen):
        st.warning(warning)

    raising = chosen > ledger.total
    confirmation = ""
    if raising:
        phrase = _(RAISE_BUDGET)
        st.warning(
            _(
                "This raises the total from ε = {old} to {new}: everyone in the dataset gets a weaker promise, "
                "including for what was already released. Type **{phrase}** to confirm; the change is kept in the history."
            ).format(old=short(ledger.total), new=short(chosen), phrase=phrase),
            icon=":material/warning:",
        )
        confirmation = st.text_input(_("Confirmation"), key="raise_confirmation", placeholder=phrase)
        if confirmation.strip() and not _typed(confirmation, RAISE_BUDGET):
            st.caption(_("Type exactly: {phrase}").format(phrase=phrase))
    ready = chosen != ledger.total and (not raising or _typed(confirmation, RAISE_BUDGET))
    if st.button(_("Set as this dataset's budget"), type="primary", disabled=not ready):
        try:
            ledger.set_total(
                chosen, confirm_raise=raising, reason="raised on the Privacy page" if raising else "lowered on the Privacy page"
            )
            st.rerun()
        except BudgetExceededError as error:
            st.error(str(error))
    st.write(
        _("Current budget: **ε = {total}**, spent {spent}, left {left}.").format(
            total=short(ledger.total), spent=short(ledger.spent), left=short_left(ledger.remaining)
        )
    )
    return chosen


def mechanisms_section(state: StudioState) -> None:
    """The noise and selection mechanisms the models use."""
    st.subheader(_("Mechanisms"))
    st.write(_("Where an algorithm allows a choice, the models and exports use what you pick here."))
    col_a, col_b = st.columns(2)
    with col_a:
        state.count_noise = st.radio(
            _("Noise for numbers and counts"),
            ["laplace", "geometric"],
            index=["laplace", "geometric"].index(state.count_noise),
            format_func=lambda k: {"laplace": _("Laplace"), "geometric": _("Geometric (discrete Laplace)")}[k],
        )
        st.caption(_(MECHANISM_NOTES[state.count_noise]))
    with col_b:
        state.selection = st.radio(
            _("How choices are made (e.g. a tree's splits)"),
            ["gumbel", "permute_and_flip"],
            index=["gumbel", "permute_and_flip"].index(state.selection),
            format_func=lambda k: {"gumbel": _("Exponential mechanism"), "permute_and_flip": _("Permute-and-flip")}[k],
        )
        st.caption(_(MECHANISM_NOTES[state.selection]))
    coin, k_ary = MECHANISM_NOTES["coin"], MECHANISM_NOTES["k-ary"]
    st.caption(_("Exports:") + " " + _(coin) + " " + _(k_ary))


def epsilon_demo(chosen: float, noise: str) -> None:
    """Twenty noisy releases of a toy count, and the coin on made-up answers."""
    st.subheader(_("See what ε does"))
    noise_name = {"laplace": _("Laplace"), "geometric": _("Geometric (discrete Laplace)")}.get(noise, noise)
    st.write(
        _("Twenty releases of a public toy count of **120 people** at ε = {epsilon}, with {noise} noise:").format(
            epsilon=short(chosen), noise=noise_name
        )
    )
    draws = noisy_count_demo(chosen, noise=noise)
    chart = (
        alt.Chart(draws)
        .mark_circle(size=90)
        .encode(
            x=alt.X("released count:Q", title=_("released count"), scale=alt.Scale(zero=False)),
            y=alt.Y("draw:O", title=_("draw"), axis=None),
            tooltip=[alt.Tooltip("draw", title=_("draw")), alt.Tooltip("released count", title=_("released count"))],
        )
        + alt.Chart(draws.head(1)).mark_rule(color="red", strokeDash=[4, 4]).encode(x="true count:Q")
    ).properties(height=220, title=_("Each dot is one release; the dashed line is the true count"))
    st.altair_chart(localized(chart), width="stretch")
    st.write(_("What the coin does to twenty made-up yes/no answers (each answer kept 3 times in 4):"))
    coin = coin_demo().replace({"no": _("no"), "yes": _("yes")}).set_index("person")
    coin = coin.rename(columns={"true answer": _("true answer"), "released answer": _("released answer")})
    st.dataframe(coin.rename_axis(_("person")).T, width="stretch")


CUSTOM = N_("Custom")
#: What the owner types to confirm (in either language: a switch mid-way does not trap them).
CHANGE_UNIT, RAISE_BUDGET = N_("change the unit"), N_("raise the budget")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _typed(text: str, phrase: str) -> bool:
    """Whether the owner typed the confirmation ``phrase`` (its English or its translation)."""
    return text.strip().lower() in {phrase.lower(), _(phrase).lower()}
