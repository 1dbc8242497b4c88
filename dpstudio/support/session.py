"""Access to the session's :class:`StudioState` (the only place pages touch ``st.session_state``)."""

from __future__ import annotations

import os
from typing import NoReturn, TypeVar

import streamlit as st

from dpcore.budget.accountant import LEDGER_ENV, OWNER
from dpcore.tables.dictionary import carry_declarations
from dpstudio.support import roles, workspace
from dpstudio.support.language import use_session_language
from dpstudio.support.sign_in_view import gate
from dpstudio.support.state import DEFAULT_SAMPLE, CarriedDeclarations, Dataset, StudioState, load_sample

STATE_KEY = "dp_studio"
T = TypeVar("T")


def get_state() -> StudioState:
    """This session's state: the workspace named in the URL if there is one, else the default sample.

    Nothing is opened before the sign-in gate lets the run go on (:func:`~dpstudio.support.sign_in_view.gate`):
    every page starts here, also when Streamlit runs a page without the app's entry point.

    The workspace token is put back into the URL on every run (switching pages clears it), so a
    reload at any moment reopens the same work. Every page starts here, so it also sets the
    session's language (which the app's entry point already did, unless a test runs a page alone).
    Who signed in is known before anything is opened: the default sample's new dataset is then
    recorded as theirs too.
    """
    use_session_language()
    signed_in = gate()
    held = st.session_state.get(STATE_KEY)
    if signed_in is not None and held is not None and held.owner != signed_in.subject:
        # Another person in a session that outlived a sign-out (a reconnect keeps it): nothing of the last one's.
        st.session_state.clear()
        use_session_language()
    if STATE_KEY not in st.session_state:
        state = StudioState(ledger_path=os.environ.get(LEDGER_ENV), signed_in=signed_in)
        token = st.query_params.get(workspace.QUERY_KEY)
        if roles.open_as_analyst(state, token):
            st.session_state[STATE_KEY] = state
        else:
            _open_as_owner(state, token)
    state = st.session_state[STATE_KEY]
    if signed_in is not None:
        state.signed_in = signed_in
    if state.analyst:
        roles.stop_unless_still_analyst(state)  # a revocation takes effect on the next click
    elif signed_in is not None and roles.not_theirs(state):
        _open_own_sample(state)
    if st.query_params.get(workspace.QUERY_KEY) != state.workspace:
        st.query_params[workspace.QUERY_KEY] = state.workspace
    return state


def _open_as_owner(state: StudioState, token: str | None) -> None:
    """The session's own workspace (``token``'s, if it is this person's), else the default sample in a new one."""
    dataset = workspace.load(state.ledger_path, token, state.catalog(), owner=state.owner) if token else None
    if dataset is None:
        _open_own_sample(state)
        return
    state.released_plans = workspace.load_released_plans(state.ledger_path, token)
    state.dataset, state.workspace = dataset, token
    st.session_state[STATE_KEY] = state


def _open_own_sample(state: StudioState) -> None:
    """The default sample, as the person's own dataset, in a new workspace."""
    workspace.prune(state.ledger_path)
    token = workspace.new_token()
    dataset = load_sample(DEFAULT_SAMPLE, state.catalog())
    workspace.save(state.ledger_path, token, dataset, owner=state.owner)
    state.dataset, state.workspace, state.role = dataset, token, OWNER
    st.session_state[STATE_KEY] = state


def remember(state: StudioState, table_changed: bool = False) -> None:
    """Keep the session's table and declarations in its workspace (see :mod:`dpstudio.support.workspace`).

    An owner's table shared with analysts is kept up to date too: they work with its latest declarations.
    """
    if state.analyst:
        return  # an analyst changes nothing of the owner's table or declarations
    workspace.save(state.ledger_path, state.workspace, state.dataset, table_changed, owner=state.owner)
    workspace.remember_declarations(state.ledger_path, state.dataset, owner=state.owner)
    if workspace.is_shared(state.ledger_path, state.dataset.dataset_id) and state.ledger().role() == OWNER:
        workspace.share(state.ledger_path, state.dataset, owner=state.owner, table_changed=table_changed)
    state.worked_in = state.workspace  # the sidebar has the browser remember it (earlier_work)


def use_dataset(state: StudioState, dataset: Dataset, carry_earlier: bool = False) -> None:
    """Make ``dataset`` the table in use, kept in the workspace; the last model and copy (of the old table) go.

    A copy kept across the switch was offered for download on the new table's Export page, under its name.
    With ``carry_earlier`` (a table read without a schema file), the owner's earlier declarations of the same
    dataset are carried over (:func:`~dpcore.tables.dictionary.carry_declarations`), and the Data page says so.
    """
    if carry_earlier and not dataset.is_sample:
        _carry_earlier_declarations(state, dataset)
    state.dataset, state.trained, state.release, state.copy_comparison, state.made_copy = dataset, None, None, None, None
    remember(state, table_changed=True)
    remember_result(state, "trained")


def _carry_earlier_declarations(state: StudioState, dataset: Dataset) -> None:
    earlier = workspace.earlier_declarations(state.ledger_path, dataset.dataset_id, owner=state.owner)
    if earlier is None:
        return
    schema, names = carry_declarations(dataset.schema, earlier)
    if names:
        read_again = [name for name in names if earlier[name].bounds_from_data]
        dataset.carried = CarriedDeclarations(names, read_again, dataset.schema)
        dataset.schema = dataset.base_schema = schema


def remember_result(state: StudioState, name: str) -> None:
    """Keep the session's paid-for or slow result ``name`` (``trained``, ``groups``, ``attacks``) in its workspace."""
    workspace.save_result(state.ledger_path, state.workspace, name, getattr(state, name))
    state.worked_in = state.workspace  # the sidebar has the browser remember it (earlier_work)


def recall_result(state: StudioState, name: str, kind: type[T]) -> T | None:
    """The session's result ``name``, picked up from the workspace when the session does not hold one.

    That covers a reload, and a run that a reload interrupted but that finished (and was
    charged) after all. Anything that is not a ``kind`` (a file of another code version) is None.
    """
    if getattr(state, name) is None:
        setattr(state, name, workspace.load_result(state.ledger_path, state.workspace, name))
    found = getattr(state, name)
    return found if isinstance(found, kind) else None


def remember_release(state: StudioState) -> None:
    workspace.save_released_plans(state.ledger_path, state.workspace, state.released_plans)


def refuse_on_a_fresh_page(state: StudioState, button: str, sentence: str) -> NoReturn:
    """Keep the ledger's refusal of ``button``'s spend and draw the page again.

    The page's figures were read when its run began; the refusal means the ledger moved since
    (another tab or analyst spent meanwhile), so the page is drawn again from the ledger as it
    is now, and :func:`said_refusal` says the sentence where the button is.
    """
    state.refusals[button] = sentence
    st.rerun()


def said_refusal(state: StudioState, button: str) -> None:
    """The refusal :func:`refuse_on_a_fresh_page` kept for ``button``, said once."""
    sentence = state.refusals.pop(button, None)
    if sentence:
        st.error(sentence)
