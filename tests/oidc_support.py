"""A real OpenID Connect provider for the sign-in tests: ``oidc-provider-mock`` on a free localhost port.

It is started once per test session (once per xdist worker) by the ``oidc_provider`` fixture, in
a thread of the test process, and stopped at the end: the test command needs nothing else. It
is a full provider (discovery document, JWKS, authorization-code flow with PKCE, RS256-signed ID
tokens, end-session endpoint); its sign-in form asks only for a subject, so a browser test signs
in by typing one. Any client id and secret are accepted, which lets a test ask for a token
issued to *another* application.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

INSTALL = "pip install -r requirements-dev.txt"
#: The person the tests sign in as: the provider's subject and the e-mail its claims give.
SUBJECT = "alice-7f3a"
EMAIL = "alice@example.org"
#: A second person, for the data room's analyst (tests/browser/test_roles_browser.py).
ANALYST_SUBJECT = "bob-19c2"
ANALYST_EMAIL = "bob@example.org"
CLIENT_ID = "dpstudio"
CLIENT_SECRET = "dpstudio-test-secret"


@dataclass(frozen=True)
class OidcProvider:
    """A running provider: its issuer URL, and how to configure an app to sign in with it."""

    url: str

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def secrets_toml(self, app_url: str, client_id: str = CLIENT_ID) -> str:
        """The ``[auth]`` section of ``.streamlit/secrets.toml`` for an app served at ``app_url``."""
        return (
            "[auth]\n"
            f'redirect_uri = "{app_url}/oauth2callback"\n'
            f'cookie_secret = "{secrets.token_hex(32)}"\n'
            f'client_id = "{client_id}"\n'
            f'client_secret = "{CLIENT_SECRET}"\n'
            f'server_metadata_url = "{self.metadata_url}"\n'
        )

    def add_person(self, subject: str, email: str) -> None:
        """Make the provider know ``subject``, with a verified ``email``, from now on (its ``PUT /users/<sub>``)."""
        import httpx

        answer = httpx.put(f"{self.url}/users/{subject}", json={"email": email, "email_verified": True}, timeout=30)
        assert answer.status_code == 204, answer.text[:500]

    def token_for(self, client_id: str, subject: str = SUBJECT, nonce: str | None = None) -> dict:
        """Go through the authorization-code flow as ``client_id`` and return the provider's token response.

        As a browser would: the authorization request, the provider's form answered with
        ``subject``, then the code exchanged at the token endpoint with the client's secret.
        """
        import httpx

        redirect_uri = "http://localhost/callback"
        with httpx.Client(base_url=self.url, timeout=30) as client:
            metadata = client.get("/.well-known/openid-configuration").json()
            query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": "openid email"}
            if nonce:
                query["nonce"] = nonce
            answer = client.post(urlsplit(metadata["authorization_endpoint"]).path, params=query, data={"sub": subject})
            assert answer.status_code in (302, 303), answer.text[:500]
            code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
            token = client.post(
                urlsplit(metadata["token_endpoint"]).path,
                data={"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri},
                auth=(client_id, CLIENT_SECRET),
            )
            assert token.status_code == 200, token.text[:500]
            return token.json()


def _user_claims():
    from oidc_provider_mock import User

    return [
        User(sub=SUBJECT, claims={"email": EMAIL, "email_verified": True, "name": "Alice Nguyen"}),
        User(sub=ANALYST_SUBJECT, claims={"email": ANALYST_EMAIL, "email_verified": True, "name": "Bob Tran"}),
    ]


def _server(token_max_age: timedelta) -> Iterator[OidcProvider]:
    try:
        from oidc_provider_mock import run_server_in_thread
    except ImportError:
        pytest.fail(f"the sign-in tests need oidc-provider-mock: {INSTALL}")
    with run_server_in_thread(port=0, user_claims=_user_claims(), access_token_max_age=token_max_age) as server:
        host = re.sub(r"^0\.0\.0\.0$|^::$", "localhost", str(server.host))
        yield OidcProvider(url=f"http://{'localhost' if host in ('127.0.0.1', '::1') else host}:{server.server_port}")


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProvider]:
    """An OpenID Connect provider on a free localhost port, for the whole session; ID tokens last an hour."""
    yield from _server(timedelta(hours=1))


@pytest.fixture(scope="session")
def oidc_provider_expired() -> Iterator[OidcProvider]:
    """A second provider whose ID tokens expired ten minutes before they were issued (past Authlib's two-minute leeway)."""
    yield from _server(timedelta(minutes=-10))
