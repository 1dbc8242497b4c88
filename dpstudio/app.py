"""DP Studio: learn from a sensitive table and sell a copy of it under differential privacy."""

from pathlib import Path

import streamlit as st

from dpcore.budget.accountant import UNITS
from dpcore.budget.slices import unowned
from dpcore.exceptions import DataError
from dpcore.i18n import _, integer, ngettext, short, short_left
from dpstudio.support.analyst_view import sidebar as analyst_sidebar
from dpstudio.support.declaring import leaky_columns
from dpstudio.support.earlier_work import note_in_browser
from dpstudio.support.heap import freeze_loaded_code
from dpstudio.support.language import language_switch, use_session_language
from dpstudio.support.session import get_state
from dpstudio.support.sign_in_view import gate, sign_out_control
from dpstudio.support.state import table_name

# Pages by absolute path, so the app opens the same from `dpstudio` and from the checkout's top-level app.py.
PAGES = Path(__file__).resolve().parent / "pages"
ANALYSTS_DO_NOT_SEE = ("groups.py",)

use_session_language()
st.set_page_config(page_title="DP Studio", page_icon=":material/lock:", layout="wide")
signed_in = gate()  # before the navigation: nobody sees the pages' names either; get_state gates each page again

try:
    state = get_state()
    state.ledger().exists()
except DataError as unreachable:  # a team server's ledger that cannot be reached: say so, and spend nothing
    st.error(str(unreachable), icon=":material/cloud_off:")
    st.stop()

pages = [
    ("data.py", _("1. Data"), ":material/table_view:"),
    ("privacy.py", _("2. Privacy"), ":material/shield:"),
    ("train.py", _("3. Train"), ":material/account_tree:"),
    ("compare.py", _("4. Compare"), ":material/monitoring:"),
    ("export.py", _("5. Export"), ":material/inventory_2:"),
    ("groups.py", _("6. Groups"), ":material/bubble_chart:"),
    ("attack.py", _("7. Attack"), ":material/crisis_alert:"),
]
if state.analyst:  # Groups is measured on the rows: the owner's only (it refuses an analyst's deep link too)
    pages = [page for page in pages if page[0] not in ANALYSTS_DO_NOT_SEE]
navigation = st.navigation(
    [st.Page(PAGES / name, title=title, icon=icon, default=name == "data.py") for name, title, icon in pages]
)


def owner_sidebar(state) -> None:
    """The dataset, its exact size (owner's eyes only), its budget, and the columns read from the data."""
    st.markdown("### " + _("Dataset"))
    ledger = state.ledger()
    if state.dataset.name != ledger.name:
        st.write(_("**{dataset}** — table {table}").format(dataset=table_name(ledger.name), table=table_name(state.dataset.name)))
    else:
        st.write(f"**{table_name(ledger.name)}**")
    st.caption(
        _("{rows} rows × {columns} columns (exact: owner's eyes only)").format(
            rows=integer(state.dataset.info["rows"]), columns=integer(state.dataset.info["columns"])
        )
    )
    if state.signed_in is not None and unowned(ledger):
        st.caption(_("No owner yet: created before sign-in (see the Privacy page)."))
    total, spent = ledger.total, ledger.spent
    st.markdown("### " + _("Privacy budget"))
    st.progress(
        min(spent / total, 1.0),
        text=_("ε spent {spent} of {total} — {left} left").format(
            spent=short(spent), total=short(total), left=short_left(ledger.remaining)
        ),
    )
    held = sum(float(s.left) for s in ledger.slices())
    if held:
        st.caption(_("Analysts' slices hold ε = {held} of what is left.").format(held=short(held)))
    schema = state.dataset.schema
    if schema.privacy_unit:
        who = _("Per person, counting up to {k} rows each, where {unit}.").format(
            k=schema.rows_per_person, unit=_(UNITS[ledger.unit])
        )
    else:
        who = _("Per person, where {unit}.").format(unit=_(UNITS[ledger.unit]))
    st.caption(
        who + " " + _("δ spent {spent} of {total}.").format(spent=short(ledger.spent_delta), total=short(ledger.total_delta))
    )
    leaks = leaky_columns(state.dataset.schema)
    if leaks:
        st.warning(
            ngettext(
                "{count} column read from the data: not differentially private yet (see the Data page).",
                "{count} columns read from the data: not differentially private yet (see the Data page).",
                len(leaks),
            ).format(count=len(leaks)),
            icon=":material/warning:",
        )


with st.sidebar:
    if signed_in is not None:
        sign_out_control(signed_in)
    if not state.analyst:
        note_in_browser(state)
    language_switch()
    if state.analyst:
        analyst_sidebar(state, state.ledger())
    else:
        owner_sidebar(state)

navigation.run()
freeze_loaded_code()  # after the page: what it imported is kept out of the collection after every run
