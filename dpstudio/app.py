"""DP Studio: learn from a sensitive table and sell a copy of it under differential privacy."""

import streamlit as st

from dpcore.accountant import UNITS
from dpstudio.support.declaring import leaky_columns
from dpstudio.support.session import get_state

st.set_page_config(page_title="DP Studio", page_icon=":material/lock:", layout="wide")

pages = [
    st.Page("pages/data.py", title="1. Data", icon=":material/table_view:", default=True),
    st.Page("pages/privacy.py", title="2. Privacy", icon=":material/shield:"),
    st.Page("pages/train.py", title="3. Train", icon=":material/account_tree:"),
    st.Page("pages/compare.py", title="4. Compare", icon=":material/monitoring:"),
    st.Page("pages/export.py", title="5. Export", icon=":material/inventory_2:"),
    st.Page("pages/groups.py", title="6. Groups", icon=":material/bubble_chart:"),
    st.Page("pages/attack.py", title="7. Attack", icon=":material/crisis_alert:"),
]
navigation = st.navigation(pages)

state = get_state()
with st.sidebar:
    st.markdown("### Dataset")
    ledger = state.ledger()
    st.write(f"**{ledger.name}**" + (f" — table {state.dataset.name}" if state.dataset.name != ledger.name else ""))
    st.caption(f"{state.dataset.info['rows']:,} rows × {state.dataset.info['columns']} columns (exact: owner's eyes only)")
    total, spent = ledger.total, ledger.spent
    st.markdown("### Privacy budget")
    st.progress(min(spent / total, 1.0), text=f"ε spent {spent:g} of {total:g} — {max(total - spent, 0):g} left")
    schema = state.dataset.schema
    counting = f", counting up to {schema.rows_per_person} rows each" if schema.privacy_unit else ""
    st.caption(f"Per person{counting}, where {UNITS[ledger.unit]}. δ spent {ledger.spent_delta:g} of {ledger.total_delta:g}.")
    leaks = leaky_columns(state.dataset.schema)
    if leaks:
        st.warning(f"{len(leaks)} column(s) read from the data: not differentially private yet (see the Data page).",
                   icon=":material/warning:")

navigation.run()
