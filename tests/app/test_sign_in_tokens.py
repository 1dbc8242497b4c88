"""ID tokens that sign-in must refuse: one issued to another application, and one that has expired.

``st.login`` hides the token from the app: Streamlit's ``/oauth2callback`` exchanges the code and
calls Authlib's ``authorize_access_token``, which validates the ID token with
``parse_id_token`` (signature against the provider's JWKS, ``iss``, ``exp`` with a two-minute
leeway, ``nonce``, and the audience: an ``aud`` other than this app's client id needs an ``azp``
naming this app, OpenID Connect Core §3.1.3.7), and on any error signs nobody in. These tests build that client
exactly as Streamlit does (Streamlit's own ``_create_oauth_client``, from an ``[auth]`` secrets
section) and hand its ``parse_id_token`` real tokens from the real provider the test command
starts: the one a browser would bring back is accepted, the other two are refused.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from oidc_support import CLIENT_ID, EMAIL, SUBJECT


@pytest.fixture
def streamlit_client(monkeypatch, tmp_path):
    """A function giving Streamlit's OAuth client for ``[auth]`` pointed at a provider, as its callback builds it."""
    from streamlit.runtime import secrets as secrets_module
    from streamlit.web.server.starlette import starlette_auth_routes

    def client_for(provider) -> object:
        path = tmp_path / "secrets.toml"
        path.write_text(provider.secrets_toml("http://127.0.0.1:8501"), encoding="utf-8")
        monkeypatch.setattr("streamlit.config.get_option", _with_secrets_files(str(path)))
        monkeypatch.setattr("streamlit.auth_util.secrets_singleton", secrets_module.Secrets())  # reads only that file
        client, _redirect = starlette_auth_routes._create_oauth_client("default")
        return client

    return client_for


def _with_secrets_files(path: str):
    from streamlit import config

    original = config.get_option

    def get_option(key: str):
        return [path] if key == "secrets.files" else original(key)

    return get_option


def _claims(id_token: str) -> dict:
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_token_issued_to_this_app_is_accepted(oidc_provider, streamlit_client):
    client = streamlit_client(oidc_provider)
    token = oidc_provider.token_for(CLIENT_ID, nonce="n-1")
    user = asyncio.run(client.parse_id_token(token, nonce="n-1"))
    assert (user["sub"], user["email"], user["aud"]) == (SUBJECT, EMAIL, [CLIENT_ID])


def test_a_token_issued_to_another_application_is_refused(oidc_provider, streamlit_client):
    from joserfc.errors import MissingClaimError

    client = streamlit_client(oidc_provider)
    token = oidc_provider.token_for("another-app", nonce="n-2")  # same provider, same person, signed by the same key
    assert _claims(token["id_token"])["aud"] == ["another-app"]
    with pytest.raises(MissingClaimError, match="azp"):  # Authlib's audience check: aud ≠ our client id, no azp for us
        asyncio.run(client.parse_id_token(token, nonce="n-2"))


def test_an_expired_token_is_refused(oidc_provider_expired, streamlit_client):
    from joserfc.errors import ExpiredTokenError

    client = streamlit_client(oidc_provider_expired)
    token = oidc_provider_expired.token_for(CLIENT_ID, nonce="n-3")
    claims = _claims(token["id_token"])
    assert claims["aud"] == [CLIENT_ID] and claims["exp"] < claims["iat"] - 120  # expired beyond Authlib's leeway
    with pytest.raises(ExpiredTokenError):
        asyncio.run(client.parse_id_token(token, nonce="n-3"))
