"""Whose session this is: the dataset's owner (today's app), or an analyst working on a table shared with them.

An analyst is a signed-in person holding a live slice of a dataset's budget
(:mod:`dpcore.budget.slices`). Their session opens the table the owner shared
(:func:`~dpstudio.support.workspace.load_shared`): the engine on the owner's server trains and
makes copies from it, charged to the analyst's slice, while the pages show the analyst only the
declarations (public by definition) and differentially private releases. Pages that show rows,
exact counts or owner-only figures refuse an analyst's session (:func:`owner_only`), also when
reached by a deep link before the app's navigation runs.
"""

from __future__ import annotations

import json

import streamlit as st

from dpcore.budget.accountant import ANALYST, OWNER
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import N_, _
from dpstudio.support import workspace
from dpstudio.support.state import StudioState

ANALYST_MARKER = "analyst.json"


def open_as_analyst(state: StudioState, token: str | None) -> bool:
    """Open the session on the latest dataset shared with the signed-in analyst; False when they hold no live slice.

    Their own workspace (named by ``token`` when it is theirs) keeps only their results.
    """
    if state.signed_in is None:
        return False
    catalog = state.catalog()
    for granted in catalog.granted_to(state.signed_in):
        dataset = workspace.load_shared(state.ledger_path, granted.dataset_id, catalog)
        if dataset is None:
            continue
        state.role, state.dataset = ANALYST, dataset
        state.workspace = token if _analysts_workspace(state, token) else workspace.new_token()
        _mark(state)
        return True
    return False


def _analysts_workspace(state: StudioState, token: str | None) -> bool:
    where = workspace.folder(state.ledger_path, token) if token else None
    try:
        meta = json.loads((where / ANALYST_MARKER).read_text(encoding="utf-8")) if where is not None else None
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("owner") == state.owner and meta.get("dataset_id") == state.dataset.dataset_id


def _mark(state: StudioState) -> None:
    where = workspace.folder(state.ledger_path, state.workspace)
    if where is None:
        return
    where.mkdir(parents=True, exist_ok=True)
    (where / ANALYST_MARKER).write_text(
        json.dumps({"owner": state.owner, "dataset_id": state.dataset.dataset_id}), encoding="utf-8"
    )


def stop_unless_still_analyst(state: StudioState) -> None:
    """Read the role from the ledger on every run: once the owner revokes the slice, the next click says so and stops."""
    if state.ledger().role() != ANALYST:
        st.warning(
            _(
                "Your slice of this dataset's budget was revoked by its owner: nothing more can be made from it. "
                "Ask the owner for a new slice, then sign in again."
            ),
            icon=":material/block:",
        )
        st.stop()


def not_theirs(state: StudioState) -> bool:
    """Read the role from the ledger on every run: True, with one sentence, when the signed-in person does not own the
    dataset in use (a table they opened belongs to someone else's dataset), so the session must open one of their own.

    The session's role is never trusted over the ledger's: a person who neither owns a dataset nor
    holds a slice of it sees none of its history, its analysts or its controls.
    """
    state.role = OWNER if state.ledger().role() == OWNER else ""
    if state.role == OWNER:
        return False
    st.warning(
        _(
            "The table you had open belongs to a dataset someone else owns, so it was closed and the sample opened as "
            "your own dataset. To work on their table, ask its owner for a slice of its budget."
        ),
        icon=":material/block:",
    )
    return True


#: What an analyst reads instead of any complaint about the owner's table: such a sentence is measured on the rows
#: (a column's text values, how many rows have a usable target), a fact about them that is not differentially private.
TABLE_DOES_NOT_FIT = N_("The owner's table does not fit its declarations; ask the owner.")


def refusal(state: StudioState, error: Exception) -> str:
    """The sentence a session shows for ``error``: in an analyst's, a complaint about the table becomes one fixed sentence.

    A refusal of the budget (:class:`~dpcore.exceptions.BudgetExceededError`) is about the ledger,
    not the rows, and stays as it is.
    """
    if state.analyst and isinstance(error, DataError) and not isinstance(error, BudgetExceededError):
        return _(TABLE_DOES_NOT_FIT)
    return str(error)


def rows_to_show(state: StudioState) -> int | None:
    """How many rows a page may say the table has: the exact count for its owner; for an analyst, the noisy count of the
    owner's published DP summary, or None when there is none (the page then says nothing of the table's size)."""
    if not state.analyst:
        return len(state.dataset.frame)
    summary = workspace.load_summary(state.ledger_path, state.dataset.dataset_id)
    return max(int(summary.rows), 1) if summary is not None else None


def owner_only(state: StudioState) -> None:
    """Stop an analyst's session on a page that shows the owner's rows or exact figures, with one sentence."""
    if state.analyst:
        st.info(
            _(
                "This page shows figures measured on the table's rows, which only the dataset's owner may see. As an "
                "analyst you can read the declarations, train models and make synthetic copies within your slice."
            ),
            icon=":material/lock:",
        )
        st.stop()
