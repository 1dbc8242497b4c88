"""The Privacy page's analysts section: the owner grants slices of the dataset's budget, sees them spent, revokes them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.budget.accountant import OWNER, BudgetLedger, Slice
from dpcore.budget.slices import may_claim, unowned
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import N_, _, short
from dpstudio.support import workspace
from dpstudio.support.sign_in import claimers
from dpstudio.support.state import StudioState

NO_OWNER_YET = N_(
    "This dataset was created before sign-in was turned on, so it has no owner: everyone who signs in and opens it acts "
    "as its owner. A person this server names may claim it; from then on it is theirs alone, and the claim is a line of "
    "its history."
)
#: The δ a new slice is offered: what one synthetic copy with Gaussian noise spends (dpcore.synthetic.DEFAULT_DELTA).
OFFERED_SLICE_DELTA = 1e-6


def claim_section(state: StudioState, ledger: BudgetLedger) -> None:
    """On a server where people sign in, a dataset created before sign-in has no owner: say so, and offer the people the
    server names (:func:`~dpstudio.support.sign_in.claimers`) to claim it, a line of its history."""
    if state.signed_in is None or not unowned(ledger):
        return
    st.warning(_(NO_OWNER_YET), icon=":material/person_off:")
    allowed = claimers()
    if not may_claim(state.signed_in, allowed):
        st.caption(_("This server does not name you among the people who may claim it: ask its administrator."))
        return
    if st.button(_("Claim this dataset as its owner"), key="claim_dataset", icon=":material/how_to_reg:"):
        try:
            ledger.claim_ownership(allowed)
        except BudgetExceededError as error:
            st.error(str(error))
            return
        st.rerun()


def slices_section(state: StudioState, ledger: BudgetLedger) -> None:
    """Grant an analyst a slice, list the slices with what each spent and has left, revoke one, publish a DP summary.

    Shown to the owner where people sign in (an analyst needs an account to be told apart).
    """
    if state.signed_in is None or ledger.role() != OWNER:
        return
    st.subheader(_("Analysts and their slices"))
    st.write(
        _(
            "Give a colleague a slice of this dataset's budget: signed in with that e-mail address, they can train models "
            "and make synthetic copies from this table within their slice, and never see a row of it, an exact count or "
            "any figure marked owner only. Slices are part of the total: what they hold is kept from your own spends "
            "until it is spent or revoked."
        )
    )
    _grant_form(state, ledger)
    _slices_and_revoking(state, ledger)
    _summary_form(state, ledger)


def _slices_and_revoking(state: StudioState, ledger: BudgetLedger) -> None:
    slices = ledger.slices()
    if not slices:
        return
    st.dataframe(slices_table(slices), hide_index=True, width="stretch")
    live = [s for s in slices if s.live]
    if live:
        left, right = st.columns([3, 1])
        chosen = left.selectbox(
            _("Slice to revoke"), live, format_func=lambda s: f"{s.analyst} (ε = {short(float(s.epsilon))})", key="revoke_slice"
        )
        right.write("")
        if right.button(_("Revoke"), key="revoke_slice_button", icon=":material/block:"):
            try:
                revoke_slice(state, ledger, chosen.grant_id)
                st.rerun()
            except BudgetExceededError as error:
                st.error(str(error))


def revoke_slice(state: StudioState, ledger: BudgetLedger, grant_id: int) -> None:
    """Revoke a slice; once no slice of the dataset is live, the table kept for its analysts is deleted."""
    ledger.revoke(grant_id, reason="revoked on the Privacy page")
    if not any(s.live for s in ledger.slices()):
        workspace.unshare(state.ledger_path, state.dataset.dataset_id)


def _grant_form(state: StudioState, ledger: BudgetLedger) -> None:
    with st.form("grant_slice", clear_on_submit=True):
        email = st.text_input(_("The analyst's e-mail address"), key="slice_email")
        left, right = st.columns(2)
        epsilon = left.number_input(
            _("ε of the slice"),
            min_value=0.001,
            value=float(min(0.5, max(ledger.remaining, 0.001))),
            step=0.1,
            format="%.3f",
            key="slice_epsilon",
        )
        delta = right.number_input(
            _("δ of the slice"),
            min_value=0.0,
            max_value=0.01,
            value=OFFERED_SLICE_DELTA if ledger.total_delta >= OFFERED_SLICE_DELTA else 0.0,
            format="%.1e",
            key="slice_delta",
        )
        if st.form_submit_button(_("Grant the slice"), type="primary"):
            if "@" not in email or not email.strip():
                st.error(_("Write the analyst's e-mail address, as their sign-in gives it. Nothing was granted."))
                return
            try:
                ledger.grant(email.strip(), float(epsilon), float(delta))
            except BudgetExceededError as error:
                st.error(str(error))
                return
            # The analyst's sessions work from this table and these declarations, on this server.
            workspace.share(state.ledger_path, state.dataset, owner=state.owner)
            st.rerun()


#: The ε a DP summary is offered at, at most: a noisy count then errs by a few dozen people per bin on a table of
#: twenty columns (sensitivity 21), which keeps a histogram's shape on tables of a few thousand rows.
OFFERED_SUMMARY_EPSILON = 0.2


def _summary_form(state: StudioState, ledger: BudgetLedger) -> None:
    """Release, once and charged to the total, a DP summary every analyst of the dataset starts from."""
    from dpcore.release.summary import dp_summary

    kept = workspace.load_summary(state.ledger_path, state.dataset.dataset_id)
    st.markdown("**" + _("A DP summary for analysts") + "**")
    st.caption(
        _(
            "A noisy row count and a noisy histogram of each declared column, made once from your budget (not from any "
            "slice) and shown to every analyst of this dataset on their Data page."
        )
        + (" " + _("Published at ε = {epsilon}.").format(epsilon=short(kept.epsilon)) if kept is not None else "")
    )
    left, right = st.columns([3, 1])
    epsilon = left.number_input(
        _("ε of the summary"),
        min_value=0.001,
        value=float(max(min(OFFERED_SUMMARY_EPSILON, ledger.remaining / 2), 0.001)),
        step=0.05,
        format="%.3f",
        key="summary_epsilon",
    )
    right.write("")
    if right.button(_("Publish the summary"), key="publish_summary", icon=":material/bar_chart:"):
        try:
            summary = dp_summary(state.dataset.frame, state.dataset.schema, float(epsilon), ledger)
        except (BudgetExceededError, DataError) as error:
            st.error(str(error))
            return
        workspace.share(state.ledger_path, state.dataset, owner=state.owner)
        workspace.save_summary(state.ledger_path, state.dataset.dataset_id, summary)
        st.rerun()


def slices_table(slices: list[Slice]) -> pd.DataFrame:
    """One row per slice: to whom, when, the slice, what it spent and has left, and whether it was revoked."""
    return pd.DataFrame(
        [
            {
                _("analyst"): s.analyst,
                _("granted (UTC)"): s.granted[:19],
                _("ε of the slice"): float(s.epsilon),
                _("ε spent"): float(s.spent),
                _("ε left"): float(s.left),
                _("δ of the slice"): float(s.delta),
                _("δ spent"): float(s.spent_delta),
                _("revoked (UTC)"): s.revoked[:19],
            }
            for s in slices
        ]
    )
