"""Attack: show a stakeholder what differential privacy protects, by attacking the owner's own table.

Four attacks, each a section over one function of :mod:`dpcore.attacks`: who was in the training
data (membership inference), who was in a synthetic copy (membership inference on the copy), what
the randomized copy gives away (reconstruction), and whether a model keeps its promise (an
empirical audit).
Everything here is measured on the raw rows for the owner's eyes only and charges no budget. An analyst's
session shows instead what their slice's ε allows any attacker (:mod:`dpstudio.support.ceiling_view`), which needs no data.
"""

import streamlit as st

from dpcore.i18n import _
from dpstudio.support import attack_view as view
from dpstudio.support import ceiling_view, copy_attack_view
from dpstudio.support.session import get_state

state = get_state()
st.title(_("Attack"))
if state.analyst:  # the attacks are scored against the rows; an analyst sees what ε allows, which needs no data
    ceiling_view.attack_page(state)
    st.stop()
dataset = state.dataset
st.info(_(view.PAGE_NOTE), icon=":material/lock:")

problems = dataset.schema.problems(dataset.frame, need_target=True)
if problems:
    st.error(
        _("The table's declarations are not complete yet:") + " " + " ".join(problems) + " " + _("Fix them on the Data page.")
    )
    st.stop()

held = view.results(state)
members, synthetic, copy, audit = st.tabs(
    [
        _("Who was in the training data?"),
        _("Who was in a synthetic copy?"),
        _("Guessing values back from the copy"),
        _("Does a model keep its promise?"),
    ]
)
with members:
    view.membership_section(state, held)
with synthetic:
    copy_attack_view.copy_membership_section(state, held)
with copy:
    view.reconstruction_section(state, held)
with audit:
    view.audit_section(state, held)

st.divider()
view.summary_download(dataset, held)
