"""Privacy: the dataset's budget, its unit of protection, its history, and what ε does."""

import streamlit as st

from dpcore.explain import PROMISE
from dpstudio.support import privacy_view as view
from dpstudio.support.session import get_state

state = get_state()
ledger = state.ledger()
st.title("2. Privacy")
st.write(
    f"**ε (epsilon)** is the privacy budget of the dataset **{ledger.name}**: the total privacy loss you accept for "
    "everyone in it, across everything you train or export. Smaller is more private and noisier. Every release spends "
    "part of it; when it is gone, nothing more can leave this screen."
)
st.info(PROMISE, icon=":material/verified_user:")
st.write(f"**Now:** {ledger.summary()}.")

view.unit_section(ledger)
chosen = view.budget_section(ledger)
view.mechanisms_section(state)
view.epsilon_demo(chosen, state.count_noise)

st.subheader("The dataset's history")
st.caption("Every total set, every spend and every recorded choice, oldest first. Nothing in it can be edited or deleted.")
history = ledger.history()
st.dataframe(history, hide_index=True, width="stretch")
st.download_button("Download the history (CSV)", ledger.history_csv(), file_name="budget_history.csv", mime="text/csv",
                   key="download_history")
