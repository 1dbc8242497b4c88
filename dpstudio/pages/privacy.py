"""Privacy: the dataset's budget, its unit of protection, its history, and what ε does."""

import streamlit as st

from dpcore.explain import PROMISE
from dpcore.i18n import _
from dpstudio.support import analyst_view, recipe_view, slices_view
from dpstudio.support import privacy_view as view
from dpstudio.support.session import get_state
from dpstudio.support.state import table_name

state = get_state()
ledger = state.ledger()
st.title(_("2. Privacy"))
if state.analyst:
    analyst_view.privacy_page(state)
    st.stop()
st.write(
    _(
        "**ε (epsilon)** is the privacy budget of the dataset **{dataset}**: the total privacy loss you accept for "
        "everyone in it, across everything you train or export. Smaller is more private and noisier. Every release spends "
        "part of it; when it is gone, nothing more can leave this screen."
    ).format(dataset=table_name(ledger.name))
)
st.info(_(PROMISE), icon=":material/verified_user:")
st.write(_("**Now:** {summary}.").format(summary=ledger.summary()))
slices_view.claim_section(state, ledger)

view.unit_section(ledger)
chosen = view.budget_section(ledger)
view.mechanisms_section(state)
view.epsilon_demo(chosen, state.count_noise)
slices_view.slices_section(state, ledger)

st.subheader(_("The dataset's history"))
st.caption(_("Every total set, every spend and every recorded choice, oldest first. Nothing in it can be edited or deleted."))
history = ledger.history()
history["event"] = history["event"].map(lambda event: _(event) if isinstance(event, str) else event)
# The CSV keeps its English headers (a machine-readable file); the table on screen is labelled in the reader's language.
st.dataframe(
    history, hide_index=True, width="stretch", column_config={name: st.column_config.Column(_(name)) for name in history.columns}
)  # names: accountant.HISTORY_HEADERS
st.download_button(
    _("Download the history (CSV)"),
    ledger.history_csv(),
    file_name="budget_history.csv",
    mime="text/csv",
    key="download_history",
    on_click="ignore",
)

recipe_view.runs_section(ledger.history())  # the events in English, as recorded
recipe_view.save_section(state, ledger)
