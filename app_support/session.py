"""Access to the session's :class:`StudioState` (the only place pages touch ``st.session_state``)."""

from __future__ import annotations

import os

import streamlit as st

from app_support.state import DEFAULT_SAMPLE, StudioState, load_sample
from dpcore.accountant import LEDGER_ENV

STATE_KEY = "dp_studio"


def get_state() -> StudioState:
    """This session's state, opened on the default sample the first time."""
    if STATE_KEY not in st.session_state:
        state = StudioState(ledger_path=os.environ.get(LEDGER_ENV))
        state.dataset = load_sample(DEFAULT_SAMPLE, state.catalog())
        st.session_state[STATE_KEY] = state
    return st.session_state[STATE_KEY]
