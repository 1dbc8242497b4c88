"""Earlier work in this browser: the workspaces an owner worked in, to reopen from the app's plain address.

A workspace is reached by the unguessable token in its address, so opening the app's plain
address starts a new one. The browser that did the work remembers its tokens in a cookie of
this site (``SameSite=Strict``, the same 30 days a workspace is kept); the Data page lists
them, so the way back needs no bookmark, and another browser, which holds none of the tokens,
sees nothing (privacy-tests.md #15).
"""

from __future__ import annotations

import re
from datetime import datetime

import streamlit as st
import streamlit.components.v1 as components

from dpcore.i18n import _, moment
from dpstudio.support import workspace
from dpstudio.support.state import StudioState, table_name

COOKIE = "dpstudio_workspaces"
#: How many earlier workspaces the browser remembers (the newest first).
REMEMBERED = 8
_TOKENS = re.compile(r"[A-Za-z0-9_-]{20,64}")


def browser_tokens() -> list[str]:
    """The workspace tokens this browser remembers, newest first (none when it sent no cookie)."""
    try:
        value = st.context.cookies.get(COOKIE, "")
    except Exception:  # no browser behind this run (a script or a test runner)
        return []
    return [token for token in str(value).split(".") if _TOKENS.fullmatch(token)]


def note_in_browser(state: StudioState) -> None:
    """Have the browser remember the session's workspace once the owner worked in it (once: the cookie it sent
    cannot change meanwhile). Called in the sidebar on every run, so a page that reruns at once still gets it."""
    token = state.workspace
    if state.worked_in != token or not _TOKENS.fullmatch(token or "") or state.noted_in_browser == token:
        return
    state.noted_in_browser = token
    tokens = [token, *(t for t in browser_tokens() if t != token)][:REMEMBERED]
    # Tokens hold only [A-Za-z0-9_-], so the value needs no quoting; the frame shares the app's origin.
    cookie = f"{COOKIE}={'.'.join(tokens)};path=/;max-age={workspace.KEEP_DAYS * 86400};SameSite=Strict"
    components.html(f"<script>document.cookie='{cookie}';</script>", height=0)


def offer_earlier_work(state: StudioState) -> None:
    """On the Data page: the other workspaces this browser worked in, each reopened with a click."""
    earlier = [k for k in workspace.kept(state.ledger_path, browser_tokens(), owner=state.owner) if k.token != state.workspace]
    if not earlier:
        return
    with st.expander(_("Earlier work in this browser ({count})").format(count=len(earlier)), icon=":material/history:"):
        st.caption(
            _("Each keeps its table, declarations and last results for {days} days after its last use.").format(
                days=workspace.KEEP_DAYS
            )
        )
        for number, kept in enumerate(earlier):
            left, right = st.columns([4, 1], vertical_alignment="center")
            left.write(
                _("**{table}** — last used {when}").format(
                    table=table_name(kept.table), when=moment(datetime.fromtimestamp(kept.used))
                )
            )
            if right.button(_("Reopen"), key=f"reopen_{number}"):
                dataset = workspace.load(state.ledger_path, kept.token, state.catalog(), owner=state.owner)
                if dataset is None:
                    st.error(_("That work could not be opened any more; it may have been removed."))
                    continue
                state.dataset, state.workspace = dataset, kept.token
                state.trained = state.releases = state.groups = state.attacks = None  # picked up from the reopened workspace
                state.released_plans = workspace.load_released_plans(state.ledger_path, kept.token)
                st.query_params[workspace.QUERY_KEY] = kept.token
                st.rerun()
