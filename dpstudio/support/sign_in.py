"""Who may open the app: served to other machines only with sign-in configured, and sign-in itself.

DP Studio shows the owner's raw table, so an address other machines can reach must not open it
to whoever finds the port. Sign-in is OpenID Connect through Streamlit's ``st.login`` (Authlib),
configured in the ``[auth]`` section of ``.streamlit/secrets.toml``: Streamlit's own format, with
``redirect_uri``, ``cookie_secret`` and one provider's ``client_id``, ``client_secret`` and
``server_metadata_url``, either in ``[auth]`` itself or in named ``[auth.NAME]`` sections.

The checks read plain mappings and import no Streamlit, so the launcher refuses an open address
before Streamlit starts; the app repeats the check for ``streamlit run app.py``.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from dpcore.budget.signed_in import SignedIn
from dpcore.i18n import N_

#: The address the app listens on unless told otherwise (``dpstudio/streamlit.toml`` says the same).
LOOPBACK = "127.0.0.1"
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
OPEN_ADDRESS_REFUSED = N_(
    "DP Studio will not serve {address} to other machines without sign-in: configure sign-in in "
    ".streamlit/secrets.toml (an [auth] section, see the README), or serve on 127.0.0.1 behind a TLS reverse proxy."
)
SIGN_IN_INCOMPLETE = N_(
    "DP Studio stays closed: sign-in in .streamlit/secrets.toml cannot work yet ({gaps}). Complete the [auth] "
    "section (see the README; cookie_secret needs at least 32 random characters), or remove it to use DP Studio "
    "on this machine alone."
)
HEADERS_SIGN_IN_REFUSED = N_(
    "DP Studio stays closed: server.trustedUserHeaders lets any request's headers say who is signed in, over "
    "sign-in's signed cookie. Remove that setting (DP Studio signs people in itself, through [auth])."
)
#: The environment variable naming, separated by commas, who may claim a dataset created before sign-in was turned on:
#: e-mail addresses (matched when the provider verified them) or issuer-qualified subjects ("<iss>|<sub>").
CLAIMERS_ENV = "DPSTUDIO_CLAIMERS"
#: What :func:`auth_section` gives for a secrets file it cannot read (never its text: it holds secrets).
UNREADABLE: Mapping[str, object] = MappingProxyType({})
#: Shorter cookie secrets can be guessed offline from one signed cookie, and a guessed one signs anyone in.
MIN_COOKIE_SECRET = 32


def claimers(environ: Mapping[str, str] | None = None) -> list[str]:
    """Who the server lets claim a dataset created before sign-in (:data:`CLAIMERS_ENV`); empty when it names nobody."""
    return [
        name.strip() for name in (os.environ if environ is None else environ).get(CLAIMERS_ENV, "").split(",") if name.strip()
    ]


def is_loopback(address: str | None) -> bool:
    """True when only this machine can reach ``address``; an empty address means every interface.

    A host name other than ``localhost`` counts as reachable from elsewhere: what it resolves to
    can change after the check. ``localhost`` counts only while every address it resolves to is
    a loopback one (``/etc/hosts`` may say otherwise); shorthand such as ``127.1`` or ``0``, which
    the server may read as another address, is refused rather than guessed at.
    """
    if not address:
        return False
    address = address.strip().strip("[]")
    if address.lower() == "localhost":
        try:
            resolved = {info[4][0] for info in socket.getaddrinfo(address, None)}
        except (OSError, UnicodeError):
            return False
        return bool(resolved) and all(is_loopback(found.split("%")[0]) for found in resolved)
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def providers(auth: Mapping[str, object]) -> list[str]:
    """The sign-in providers an ``[auth]`` section configures, by the name ``st.login`` takes ("default" for the flat form).

    Empty when sign-in is not configured: ``redirect_uri`` and ``cookie_secret`` are needed by
    every provider, and a provider needs all of :data:`PROVIDER_KEYS`.
    """
    if not isinstance(auth, Mapping) or not all(auth.get(key) for key in ("redirect_uri", "cookie_secret")):
        return []
    named = [
        name
        for name, section in auth.items()
        if isinstance(section, Mapping) and "_" not in name and all(section.get(key) for key in PROVIDER_KEYS)
    ]
    flat = ["default"] if all(auth.get(key) for key in PROVIDER_KEYS) and "default" not in named else []
    return flat + named


def sign_in_gaps(auth: Mapping[str, object]) -> list[str]:
    """The keys (``[auth]``'s or ``[auth.NAME]``'s) that keep a present ``[auth]`` section from signing anyone in.

    Empty when there is no ``[auth]`` section, or when it works. A section that is there but does
    not work must not pass for "no sign-in wanted": behind the reverse proxy the README
    recommends, the app on 127.0.0.1 would then open to everyone the proxy serves. Only key
    names are given, never their values.
    """
    if auth is UNREADABLE:
        return ["secrets.toml"]
    if not isinstance(auth, Mapping):
        return ["auth"]
    if not auth:
        return []
    gaps = [key for key in ("redirect_uri", "cookie_secret") if not _filled(auth.get(key))]
    secret = auth.get("cookie_secret")
    if _filled(secret) and len(str(secret).strip()) < MIN_COOKIE_SECRET:
        gaps.append("cookie_secret")
    # Tables named with an underscore are settings (client_kwargs), not providers: Streamlit refuses such names.
    sections = {name: value for name, value in auth.items() if isinstance(value, Mapping) and "_" not in name}
    if any(key in auth for key in PROVIDER_KEYS) or not sections:
        gaps += [key for key in PROVIDER_KEYS if not _filled(auth.get(key))]
    for name, section in sections.items():
        gaps += [f"auth.{name}.{key}" for key in PROVIDER_KEYS if not _filled(section.get(key))]
    return gaps


def _filled(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def secrets_files(cwd: Path | None = None) -> list[Path]:
    """Streamlit's default secrets files, in the order it merges them (the working folder's wins)."""
    return [Path.home() / ".streamlit" / "secrets.toml", (cwd or Path.cwd()) / ".streamlit" / "secrets.toml"]


def auth_section(files: list[Path]) -> Mapping[str, object]:
    """The ``[auth]`` section as Streamlit will read it from ``files``: empty when none is there, :data:`UNREADABLE` when a file cannot be read."""
    merged: dict[str, object] = {}
    for path in files:
        try:
            merged.update(tomllib.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return UNREADABLE  # it may hold [auth]: fail closed, as for a section that cannot work
    return merged.get("auth", {})


def open_address_refusal(address: str | None, auth: Mapping[str, object]) -> str | None:
    """The ``N_`` sentence refusing to serve ``address`` (its ``{address}`` and ``{gaps}`` to fill in), or None when it is safe.

    Safe means sign-in works, or there is no ``[auth]`` section and only this machine can reach
    the address. An ``[auth]`` section that cannot work closes the app on every address
    (:func:`sign_in_gaps`).
    """
    if sign_in_gaps(auth):
        return SIGN_IN_INCOMPLETE
    if is_loopback(address) or providers(auth):
        return None
    return OPEN_ADDRESS_REFUSED


def address_from_flags(flags: list[str], default: str | None = LOOPBACK) -> str | None:
    """The ``--server.address`` the last of ``flags`` gives (as Streamlit's command line reads them), else ``default``."""
    address = default
    for index, flag in enumerate(flags):
        if flag.startswith("--server.address="):
            address = flag.split("=", 1)[1]
        elif flag == "--server.address" and index + 1 < len(flags):
            address = flags[index + 1]
    return address


def signed_in_from_claims(claims: Mapping[str, object]) -> SignedIn | None:
    """The person an identity provider's claims name, or None when nobody is signed in.

    The person is their issuer and subject together (``"<iss>|<sub>"``): a ``sub`` is unique only
    within its provider, and several providers may be configured, so a subject alone would let one
    provider's user act as another's. Their e-mail counts as verified only when the
    ``email_verified`` claim is exactly ``true``. Only Streamlit's own signed cookie sets
    ``is_logged_in`` to True; a header mapped in by ``server.trustedUserHeaders`` is text (refused
    anyway, see :func:`trusted_headers_refusal`). Claims without an issuer or a subject name nobody:
    the sign-in page again, not a traceback.
    """
    issuer, subject, email = claims.get("iss"), claims.get("sub"), claims.get("email")
    if claims.get("is_logged_in") is not True or not isinstance(subject, str) or not subject.strip():
        return None
    if not isinstance(issuer, str) or not issuer.strip():
        return None
    return SignedIn(
        subject=f"{issuer.strip()}|{subject}",
        email=email if isinstance(email, str) else "",
        email_verified=claims.get("email_verified") is True,
    )


def trusted_headers_refusal(trusted_headers: object) -> str | None:
    """The ``N_`` sentence refusing sign-in while ``server.trustedUserHeaders`` maps request headers into ``st.user``.

    Streamlit lays those headers over the signed cookie's claims, so whoever reaches the port
    could send ``sub``, ``email`` or ``is_logged_in`` of their choosing: into the gate, and into
    the ledger's record of who spent.
    """
    return HEADERS_SIGN_IN_REFUSED if trusted_headers else None
