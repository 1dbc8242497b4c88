"""Access to the session's :class:`StudioState` (the only place pages touch ``st.session_state``)."""

from __future__ import annotations

import os

import streamlit as st

from dpcore.accountant import LEDGER_ENV
from dpstudio.support import workspace
from dpstudio.support.state import DEFAULT_SAMPLE, StudioState, load_sample

STATE_KEY = "dp_studio"


def get_state() -> StudioState:
    """This session's state: the workspace named in the URL if there is one, else the default sample.

    The workspace token is put back into the URL on every run (switching pages clears it), so a
    reload at any moment reopens the same work.
    """
    if STATE_KEY not in st.session_state:
        state = StudioState(ledger_path=os.environ.get(LEDGER_ENV))
        token = st.query_params.get(workspace.QUERY_KEY)
        dataset = workspace.load(state.ledger_path, token, state.catalog()) if token else None
        if dataset is None:
            workspace.prune(state.ledger_path)
            token = workspace.new_token()
            dataset = load_sample(DEFAULT_SAMPLE, state.catalog())
            workspace.save(state.ledger_path, token, dataset)
        else:
            state.trained = workspace.load_trained(state.ledger_path, token)
            state.released_plans = workspace.load_released_plans(state.ledger_path, token)
        state.dataset, state.workspace = dataset, token
        st.session_state[STATE_KEY] = state
    state = st.session_state[STATE_KEY]
    if st.query_params.get(workspace.QUERY_KEY) != state.workspace:
        st.query_params[workspace.QUERY_KEY] = state.workspace
    return state


def remember(state: StudioState, table_changed: bool = False) -> None:
    """Keep the session's table and declarations in its workspace (see :mod:`dpstudio.support.workspace`)."""
    workspace.save(state.ledger_path, state.workspace, state.dataset, table_changed)


def remember_model(state: StudioState) -> None:
    workspace.save_trained(state.ledger_path, state.workspace, state.trained)


def recall_model(state: StudioState) -> None:
    """Pick up a model that a run interrupted by a reload finished (and charged) after all."""
    if state.trained is None:
        state.trained = workspace.load_trained(state.ledger_path, state.workspace)


def remember_release(state: StudioState) -> None:
    workspace.save_released_plans(state.ledger_path, state.workspace, state.released_plans)
