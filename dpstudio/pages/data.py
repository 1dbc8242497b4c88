"""Data: pick a sample or upload a CSV, declare each column, and see what the models will see."""

import streamlit as st

from dpcore.i18n import _, integer
from dpstudio.support import analyst_view, categories_view
from dpstudio.support import data_view as view
from dpstudio.support.earlier_work import offer_earlier_work
from dpstudio.support.session import get_state
from dpstudio.support.state import table_name
from dpstudio.support.uploading import file_facts

state = get_state()
st.title(_("1. Data"))
if state.analyst:
    analyst_view.data_page(state)
    st.stop()
st.write(
    _(
        "Choose the table to work on, then declare what each column is. Bounds and category lists must come from "
        "public knowledge (a data dictionary, the law, geography) — not from the data itself."
    )
)
offer_earlier_work(state)
view.choose_table(state)
dataset = state.dataset
st.caption(
    _("**{name}** — {rows} rows (exact count: owner's eyes only), {columns} columns, {facts}.").format(
        name=table_name(dataset.name),
        rows=integer(dataset.info["rows"]),
        columns=integer(dataset.info["columns"]),
        facts=file_facts(dataset.info),
    )
)
view.reading_questions(state)
view.dataset_identity(state)
view.carried_declarations(state)
view.declarations_editor(state)
view.privacy_unit_question(state)
view.fix_leaks(state)
view.bounds_fit(state)
categories_view.discover_categories(state)
categories_view.data_dictionary(state)
categories_view.schema_status(state)
categories_view.downloads(state)
view.owner_previews(state)
