"""The sign-in page, the sidebar's sign-out, and the refusal to serve other machines without sign-in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from dpcore.budget.signed_in import SignedIn
from dpcore.i18n import _
from dpstudio.support.sign_in import (
    auth_section,
    open_address_refusal,
    providers,
    sign_in_gaps,
    signed_in_from_claims,
    trusted_headers_refusal,
)


def gate() -> SignedIn | None:
    """Let the run go on only when it may: the address check, then sign-in; the signed-in person (None without sign-in).

    The app's entry point calls it before its navigation, and every page again through
    :func:`~dpstudio.support.session.get_state`: ``streamlit run dpstudio/app.py`` finds a
    ``pages/`` folder beside the script, and until a run reaches ``st.navigation`` Streamlit runs
    a deep link's page file on its own, without the entry point.
    """
    auth = auth_settings()
    stop_if_open_to_others(auth)
    return signed_in_or_sign_in_page(auth)


def auth_settings() -> Mapping[str, object]:
    """The ``[auth]`` section of the secrets Streamlit reads (empty when there is none).

    When Streamlit could read no secrets, the files themselves say whether there were none
    (empty) or one it could not read (:data:`~dpstudio.support.sign_in.UNREADABLE`, which closes the app).
    """
    if st.secrets.load_if_toml_exists():
        return st.secrets.get("auth", {})
    return auth_section([Path(name) for name in st.get_option("secrets.files")])


def stop_if_open_to_others(auth: Mapping[str, object]) -> None:
    """Refuse, in one sentence naming the ways out, to serve an address other machines reach without sign-in.

    The ``dpstudio`` command refuses before the server starts; this catches ``streamlit run`` given
    ``--server.address`` (or no address at all: Streamlit then listens on every interface), and an
    ``[auth]`` section that cannot sign anyone in, on any address.
    """
    address = st.get_option("server.address")
    refusal = open_address_refusal(address, auth)
    if refusal is not None:
        gaps = ", ".join(sign_in_gaps(auth))
        st.error(_(refusal).format(address=address or "0.0.0.0", gaps=gaps), icon=":material/lock_open:")
        st.stop()


def signed_in_or_sign_in_page(auth: Mapping[str, object]) -> SignedIn | None:
    """The signed-in person; with sign-in configured and nobody signed in, the sign-in page and nothing else.

    None when sign-in is not configured: the app on this machine alone opens as it always has.
    """
    names = providers(auth)
    if not names:
        return None
    refusal = trusted_headers_refusal(st.get_option("server.trustedUserHeaders"))
    if refusal is not None:
        st.error(_(refusal), icon=":material/lock_open:")
        st.stop()
    person = signed_in_from_claims(st.user.to_dict())
    if person is not None:
        return person
    st.title(_("Sign in to DP Studio"))
    st.write(_("This DP Studio is shared by a team: sign in with your organisation's account to open it."))
    for name in names:
        label = _("Sign in") if name == "default" else _("Sign in with {provider}").format(provider=name)
        if st.button(label, type="primary", icon=":material/login:", key=f"sign_in_{name}"):
            st.login(None if name == "default" else name)
    st.stop()


def sign_out_control(person: SignedIn) -> None:
    """Who is signed in, and the button that signs them out (in the sidebar)."""
    st.caption(_("Signed in as {who}").format(who=person.email or person.subject))
    if st.button(_("Sign out"), icon=":material/logout:", key="sign_out"):
        st.logout()
