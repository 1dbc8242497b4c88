"""Safe by default: DP Studio listens on 127.0.0.1, and refuses to serve other machines without sign-in."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
from conftest import APP_TIMEOUT, REPO

from dpstudio.support.sign_in import (
    UNREADABLE,
    address_from_flags,
    auth_section,
    is_loopback,
    open_address_refusal,
    providers,
    sign_in_gaps,
    signed_in_from_claims,
)

AUTH = {
    "redirect_uri": "http://studio.example.org/oauth2callback",
    "cookie_secret": "a long random secret of more than 32 characters",
    "client_id": "dpstudio",
    "client_secret": "s3cret",
    "server_metadata_url": "https://login.example.org/.well-known/openid-configuration",
}
SIGN_IN_TOML = "[auth]\n" + "".join(f'{key} = "{value}"\n' for key, value in AUTH.items())


def _dpstudio(tmp_path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m dpstudio ARGS`` from ``tmp_path`` (its ``.streamlit/secrets.toml`` the one read), home there too."""
    env = dict(os.environ, HOME=str(tmp_path), PYTHONPATH=str(REPO), DPSTUDIO_LEDGER=str(tmp_path / "ledger.sqlite3"))
    return subprocess.run(
        [sys.executable, "-m", "dpstudio", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.168.1.20", "studio.example.org", ""])
def test_the_app_refuses_to_start_on_an_open_address_without_sign_in(tmp_path, address):
    done = _dpstudio(tmp_path, f"--server.address={address}", "--server.port=1")
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.count("\n") == 1  # one sentence, no traceback, no server
    assert "without sign-in" in done.stderr
    assert ".streamlit/secrets.toml" in done.stderr and "127.0.0.1 behind a TLS reverse proxy" in done.stderr
    assert (address or "0.0.0.0") in done.stderr


def test_the_refusal_is_said_in_the_owners_language(tmp_path):
    env_language = {"LANGUAGE": "vi", "LANG": "vi_VN.UTF-8"}
    env = dict(os.environ, HOME=str(tmp_path), PYTHONPATH=str(REPO), **env_language)
    done = subprocess.run(
        [sys.executable, "-m", "dpstudio", "--server.address", "0.0.0.0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "0.0.0.0" in done.stderr and "without sign-in" not in done.stderr


def test_by_default_it_listens_on_loopback_only():
    settings = tomllib.loads((REPO / "dpstudio" / "streamlit.toml").read_text(encoding="utf-8"))
    assert settings["server"]["address"] == "127.0.0.1"
    assert is_loopback(address_from_flags([f"--server.address={settings['server']['address']}", "--server.port=8600"]))
    assert address_from_flags(["--server.address=127.0.0.1", "--server.address", "0.0.0.0"]) == "0.0.0.0"


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1", True), ("127.0.1.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("[::]", False), ("0", False), ("127.1", False), ("0x7f000001", False),
     ("::ffff:0.0.0.0", False), ("10.0.0.5", False), ("studio.example.org", False), ("", False), (None, False)],
)  # fmt: skip
def test_only_addresses_no_other_machine_can_reach_count_as_loopback(address, loopback):
    assert is_loopback(address) is loopback


def test_sign_in_counts_as_configured_only_when_streamlit_can_use_it():
    assert providers(AUTH) == ["default"]
    named = {key: AUTH[key] for key in ("redirect_uri", "cookie_secret")} | {
        "okta": {key: AUTH[key] for key in ("client_id", "client_secret", "server_metadata_url")}
    }
    assert providers(named) == ["okta"]
    assert providers({key: value for key, value in AUTH.items() if key != "cookie_secret"}) == []
    assert providers({key: value for key, value in AUTH.items() if key != "server_metadata_url"}) == []
    assert open_address_refusal("0.0.0.0", AUTH) is None
    assert open_address_refusal("0.0.0.0", {}) is not None and open_address_refusal("127.0.0.1", {}) is None


def test_the_secrets_are_read_where_streamlit_reads_them(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".streamlit").mkdir(parents=True)
    (work / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "secrets.toml").write_text(SIGN_IN_TOML, encoding="utf-8")
    files = [home / ".streamlit" / "secrets.toml", work / ".streamlit" / "secrets.toml"]
    assert providers(auth_section(files)) == ["default"]
    (work / ".streamlit" / "secrets.toml").write_text('[auth]\nredirect_uri = "x"\n', encoding="utf-8")
    assert providers(auth_section(files)) == []  # the working folder's [auth] replaces the home one's, as in Streamlit
    (work / ".streamlit" / "secrets.toml").write_text("[auth\n", encoding="utf-8")
    assert auth_section(files) is UNREADABLE and sign_in_gaps(UNREADABLE) == ["secrets.toml"]
    (work / ".streamlit" / "secrets.toml").unlink()
    (home / ".streamlit" / "secrets.toml").unlink()
    assert auth_section(files) == {} and sign_in_gaps({}) == []


HALF_CONFIGURED = [
    ({key: value for key, value in AUTH.items() if key != "client_secret"}, ["client_secret"]),
    ({key: value for key, value in AUTH.items() if key != "cookie_secret"}, ["cookie_secret"]),
    (AUTH | {"cookie_secret": "short"}, ["cookie_secret"]),
    ({key: value for key, value in AUTH.items() if key != "server_metadata_url"}, ["server_metadata_url"]),
    (AUTH | {"client_secret": "   "}, ["client_secret"]),
    ({"redirect_uri": AUTH["redirect_uri"], "cookie_secret": AUTH["cookie_secret"], "okta": {"client_id": "x"}},
     ["auth.okta.client_secret", "auth.okta.server_metadata_url"]),
    ({"redirect_uri": AUTH["redirect_uri"], "cookie_secret": AUTH["cookie_secret"]},
     ["client_id", "client_secret", "server_metadata_url"]),
    ({key: value for key, value in AUTH.items() if key != "redirect_uri"} | {"my_idp": {}}, ["redirect_uri"]),
    ({"redirect_uri": AUTH["redirect_uri"], "cookie_secret": AUTH["cookie_secret"],
      "my_idp": {key: AUTH[key] for key in ("client_id", "client_secret", "server_metadata_url")}},
     ["client_id", "client_secret", "server_metadata_url"]),  # a name Streamlit refuses is no provider
]  # fmt: skip


@pytest.mark.parametrize(("auth", "gaps"), HALF_CONFIGURED)
def test_a_half_configured_sign_in_closes_the_app_on_every_address(auth, gaps):
    """Behind the README's reverse proxy the app listens on 127.0.0.1: a sign-in that cannot work must not open it to all."""
    assert sign_in_gaps(auth) == gaps
    for address in ("127.0.0.1", "::1", "0.0.0.0"):
        refusal = open_address_refusal(address, auth)
        assert refusal is not None and "stays closed" in refusal
    assert sign_in_gaps(AUTH) == [] and open_address_refusal("127.0.0.1", AUTH) is None
    with_settings = AUTH | {"client_kwargs": {"prompt": "login"}, "expose_tokens": ["id"]}
    assert sign_in_gaps(with_settings) == [] and providers(with_settings) == ["default"]


def test_the_launcher_refuses_a_half_configured_sign_in_naming_keys_never_values(tmp_path):
    (tmp_path / ".streamlit").mkdir()
    toml = SIGN_IN_TOML.replace(f'cookie_secret = "{AUTH["cookie_secret"]}"', 'cookie_secret = "guessable"')
    (tmp_path / ".streamlit" / "secrets.toml").write_text(toml, encoding="utf-8")
    done = _dpstudio(tmp_path, "--server.port=1")  # on 127.0.0.1, the default
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "(cookie_secret)" in done.stderr
    assert "guessable" not in done.stderr and AUTH["client_secret"] not in done.stderr
    (tmp_path / ".streamlit" / "secrets.toml").write_text(SIGN_IN_TOML + "[auth\n", encoding="utf-8")
    done = _dpstudio(tmp_path, "--server.port=1")
    assert done.returncode == 2 and "(secrets.toml)" in done.stderr and AUTH["client_secret"] not in done.stderr


def test_with_sign_in_configured_an_open_address_passes_the_check(tmp_path, monkeypatch):
    """The launcher's check lets it through (the server itself is started by the browser tests, on loopback)."""
    from dpstudio import __main__ as launcher

    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(SIGN_IN_TOML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    started = []
    monkeypatch.setattr("streamlit.web.cli.main", lambda: started.append(list(sys.argv)) or 0)
    monkeypatch.setattr(launcher, "_register_pages_ourselves", lambda: None)
    assert launcher.main(["--server.address=0.0.0.0"]) == 0
    assert started and started[0][-1] == "--server.address=0.0.0.0"


def test_on_loopback_without_sign_in_the_app_opens_as_before(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT).run()
    assert not at.exception and not at.error
    assert "Declare the columns" in [subheader.value for subheader in at.subheader]
    assert not [button for button in at.sidebar.button if button.label == "Sign out"]


def test_streamlit_run_on_an_open_address_without_sign_in_shows_the_refusal_only(tmp_path, monkeypatch):
    """``streamlit run app.py --server.address 0.0.0.0`` bypasses the launcher: the app itself refuses to open."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT).run()
    finally:
        config.set_option("server.address", before)
    assert not at.exception
    assert [error.value for error in at.error] == [
        "DP Studio will not serve 0.0.0.0 to other machines without sign-in: configure sign-in in .streamlit/secrets.toml "
        "(an [auth] section, see the README), or serve on 127.0.0.1 behind a TLS reverse proxy."
    ]
    assert not at.subheader and not at.sidebar.markdown


def test_streamlit_run_with_a_half_configured_sign_in_shows_the_refusal_only(tmp_path, monkeypatch):
    """A missing client secret would let Streamlit fail only at the first sign-in; the app stays closed from the start."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT)
    at.secrets["auth"] = {key: value for key, value in AUTH.items() if key != "client_secret"}
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "stays closed" in at.error[0].value and "(client_secret)" in at.error[0].value
    assert AUTH["cookie_secret"] not in at.error[0].value
    assert not at.subheader and not at.sidebar.markdown and not at.button


@pytest.mark.parametrize(
    "claims",
    [{"is_logged_in": "true", "sub": "mallory"}, {"is_logged_in": 1, "sub": "mallory"}, {"is_logged_in": True, "sub": ""},
     {"is_logged_in": True, "sub": None, "email": "a@example.org"}, {"is_logged_in": True, "sub": ["x"]}, {"sub": "alice"}],
)  # fmt: skip
def test_only_the_signed_cookies_claims_with_a_subject_sign_someone_in(claims):
    """A header mapped into st.user is text: "true" is not Streamlit's True; no subject names nobody (no traceback)."""
    assert signed_in_from_claims(claims) is None
    person = signed_in_from_claims({"is_logged_in": True, "iss": "https://id.example", "sub": "alice", "email": ["not", "text"]})
    assert person is not None and (person.subject, person.email) == ("https://id.example|alice", "")


def test_a_person_is_their_issuer_and_subject_and_only_a_verified_email_counts():
    """A sub is unique only within its provider; an e-mail the provider did not verify matches no grant."""
    alice = signed_in_from_claims({"is_logged_in": True, "iss": "https://id.example", "sub": "alice", "email": "a@x.org"})
    other = signed_in_from_claims(
        {"is_logged_in": True, "iss": "https://other.example", "sub": "alice", "email": "a@x.org", "email_verified": True}
    )
    assert alice is not None and other is not None and alice.subject != other.subject
    assert alice.subject == "https://id.example|alice" and not alice.email_verified and other.email_verified
    for unverified in ("true", 1, None):
        claims = {"is_logged_in": True, "iss": "https://id.example", "sub": "a", "email_verified": unverified}
        assert signed_in_from_claims(claims).email_verified is False  # type: ignore[union-attr]
    assert signed_in_from_claims({"is_logged_in": True, "sub": "alice"}) is None  # no issuer: nobody


def test_sign_in_stays_closed_while_request_headers_may_say_who_is_signed_in(tmp_path, monkeypatch):
    """server.trustedUserHeaders lays headers over the signed cookie: anyone reaching the port could name themselves."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT)
    at.secrets["auth"] = AUTH
    before = config.get_option("server.trustedUserHeaders")
    config.set_option("server.trustedUserHeaders", {"X-Forwarded-Email": "email", "X-Sub": "sub"})
    try:
        at.run()
    finally:
        config.set_option("server.trustedUserHeaders", before)
    assert not at.exception
    assert len(at.error) == 1 and "server.trustedUserHeaders" in at.error[0].value
    assert not at.button and not at.sidebar.markdown
    at.run()  # without the setting: the sign-in page, and still nothing else
    assert not at.error and [button.label for button in at.button] == ["Sign in"] and not at.sidebar.markdown


def _signed_in_app(tmp_path, monkeypatch, person, token: str | None = None):
    """The app with sign-in configured, ``person`` signed in (the claims Streamlit's cookie would give), at ``?workspace=token``."""
    from streamlit.testing.v1 import AppTest

    from dpcore.budget.signed_in import SignedIn

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    monkeypatch.setattr("dpstudio.support.sign_in_view.signed_in_from_claims", lambda claims: SignedIn(*person))
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT)
    at.secrets["auth"] = AUTH
    if token is not None:
        at.query_params["workspace"] = token
    return at.run()


def test_a_workspace_link_opens_only_for_the_person_who_made_it(tmp_path, monkeypatch):
    """The token rides in every address bar and shared link; with sign-in, it opens its signer's raw table only."""
    alice = _signed_in_app(tmp_path, monkeypatch, ("alice-sub", "alice@example.org"))
    assert not alice.exception and not alice.error
    token = alice.query_params["workspace"]
    assert alice.session_state["dp_studio"].workspace == token

    bob = _signed_in_app(tmp_path, monkeypatch, ("bob-sub", "bob@example.org"), token)
    assert not bob.exception and not bob.error
    assert bob.session_state["dp_studio"].workspace != token and bob.query_params["workspace"] != token

    again = _signed_in_app(tmp_path, monkeypatch, ("alice-sub", "alice@example.org"), token)
    assert again.session_state["dp_studio"].workspace == token


def test_earlier_work_lists_and_reopens_only_the_signers_workspaces(tmp_path):
    from dpcore.budget.datasets import Catalog
    from dpstudio.support import workspace
    from dpstudio.support.state import DEFAULT_SAMPLE, load_sample

    ledger = tmp_path / "ledger.sqlite3"
    catalog = Catalog(ledger)
    dataset = load_sample(DEFAULT_SAMPLE, catalog)
    mine, theirs, local = workspace.new_token(), workspace.new_token(), workspace.new_token()
    workspace.save(ledger, mine, dataset, owner="alice-sub")
    workspace.save(ledger, theirs, dataset, owner="bob-sub")
    workspace.save(ledger, local, dataset)
    assert [kept.token for kept in workspace.kept(ledger, [mine, theirs, local], owner="alice-sub")] == [mine]
    assert workspace.load(ledger, mine, catalog, owner="alice-sub") is not None
    assert workspace.load(ledger, theirs, catalog, owner="alice-sub") is None
    assert workspace.load(ledger, local, catalog, owner="alice-sub") is None  # made before sign-in: nobody's to claim
    assert workspace.load(ledger, mine, catalog) is None and workspace.load(ledger, local, catalog) is not None


def test_a_datasets_earlier_declarations_are_carried_only_for_the_person_who_made_them(tmp_path):
    import dataclasses

    from dpcore.budget.datasets import Catalog
    from dpcore.tables.schema import Schema
    from dpstudio.support import workspace
    from dpstudio.support.state import DEFAULT_SAMPLE, load_sample

    ledger = tmp_path / "ledger.sqlite3"
    dataset = dataclasses.replace(load_sample(DEFAULT_SAMPLE, Catalog(ledger)), is_sample=False)  # as if uploaded
    workspace.remember_declarations(ledger, dataset, owner="alice-sub")
    assert workspace.earlier_declarations(ledger, dataset.dataset_id, owner="alice-sub") == dataset.schema
    assert workspace.earlier_declarations(ledger, dataset.dataset_id, owner="bob-sub") is None
    assert workspace.earlier_declarations(ledger, dataset.dataset_id) is None  # nobody's before sign-in
    assert workspace.earlier_declarations(ledger, "../../etc", owner="alice-sub") is None  # not an id of ours
    bobs = dataclasses.replace(dataset, schema=Schema.from_dict(dataset.schema.to_dict()))
    bobs.schema.columns[0].lower, bobs.schema.columns[0].bounds_from_data = -1.0, True  # read from Bob's data
    workspace.remember_declarations(ledger, bobs, owner="bob-sub")  # the same people's table, opened by Bob
    assert workspace.earlier_declarations(ledger, dataset.dataset_id, owner="alice-sub") == dataset.schema  # not his
    kept_for_bob = workspace.earlier_declarations(ledger, dataset.dataset_id, owner="bob-sub")
    assert kept_for_bob.columns[0].lower is None  # a domain read from the data is never kept on disk
    kept = next(f for f in (tmp_path / "declarations").iterdir() if "alice-sub" in f.read_text())
    for broken in (b"[1, 2]", b'{"owner": "alice-sub", "schema": {"columns": 3}}', b"{cut sho"):
        kept.write_bytes(broken)
        assert workspace.earlier_declarations(ledger, dataset.dataset_id, owner="alice-sub") is None


def test_a_session_that_outlives_a_sign_out_keeps_nothing_for_the_next_person(tmp_path, monkeypatch):
    """A reconnect keeps a session across a sign-out and someone else's sign-in: the next person starts afresh."""
    from streamlit.testing.v1 import AppTest

    from dpcore.budget.signed_in import SignedIn

    alices = _signed_in_app(tmp_path, monkeypatch, ("alice-sub", "alice@example.org")).session_state["dp_studio"]
    monkeypatch.setattr("dpstudio.support.sign_in_view.signed_in_from_claims", lambda claims: SignedIn("bob-sub"))
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT)
    at.secrets["auth"] = AUTH
    at.session_state["dp_studio"] = alices
    at.query_params["workspace"] = alices.workspace
    at.run()
    assert not at.exception
    state = at.session_state["dp_studio"]
    assert state is not alices and state.workspace != alices.workspace and state.signed_in == SignedIn("bob-sub")


def test_localhost_counts_as_loopback_only_while_it_resolves_to_loopback(monkeypatch):
    def resolving_to(*addresses):
        return lambda host, port: [(None, None, None, "", (address, 0)) for address in addresses]

    monkeypatch.setattr("socket.getaddrinfo", resolving_to("127.0.0.1", "::1"))
    assert is_loopback("localhost") and open_address_refusal("localhost", {}) is None
    monkeypatch.setattr("socket.getaddrinfo", resolving_to("127.0.0.1", "192.168.1.20"))  # an edited /etc/hosts
    assert not is_loopback("localhost") and open_address_refusal("localhost", {}) is not None
    monkeypatch.setattr("socket.getaddrinfo", resolving_to())
    assert not is_loopback("LOCALHOST")

    def unresolvable(host, port):
        raise OSError("no resolver")

    monkeypatch.setattr("socket.getaddrinfo", unresolvable)
    assert not is_loopback("localhost")  # fails closed


_ADDRESS_STREAMLIT_WOULD_SERVE = """
import sys
from streamlit import config
from streamlit.web import bootstrap
from dpstudio import __main__ as launcher

def serve(main_script_path, is_hello, args, flag_options):
    print("SERVES", config.get_option("server.address"))

bootstrap.run = serve
launcher._register_pages_ourselves = lambda: None
sys.exit(launcher.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "args",
    [[], ["--server.address", "127.0.0.1"], ["--server.address=::1"], ["--server.address=0.0.0.0", "--server.address=::1"]],
)
def test_the_address_the_launcher_checks_is_the_one_streamlit_serves(tmp_path, args):
    """An address from STREAMLIT_SERVER_ADDRESS or a config.toml (working folder or home) must not slip past the check."""
    for folder in (tmp_path, tmp_path / "home"):
        (folder / ".streamlit").mkdir(parents=True)
        (folder / ".streamlit" / "config.toml").write_text('[server]\naddress = "0.0.0.0"\n', encoding="utf-8")
    env = dict(os.environ, HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), STREAMLIT_SERVER_ADDRESS="0.0.0.0")
    done = subprocess.run(
        [sys.executable, "-c", _ADDRESS_STREAMLIT_WOULD_SERVE, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    served = done.stdout.split("SERVES ")[-1].strip()
    assert served == address_from_flags(["--server.address=127.0.0.1", *args]) and is_loopback(served)


@pytest.mark.parametrize("page", ["data", "privacy", "train", "compare", "export", "groups", "attack"])
def test_a_deep_link_to_a_page_run_without_the_entry_point_still_asks_to_sign_in(tmp_path, monkeypatch, page):
    """``streamlit run dpstudio/app.py`` finds ``pages/`` beside the script: until a run reaches st.navigation,
    Streamlit runs a linked page's file on its own. The page itself must stop at the same gate."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_file(str(REPO / "dpstudio" / "app.py"), default_timeout=APP_TIMEOUT)
    at.secrets["auth"] = AUTH
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    assert [button.label for button in at.button] == ["Sign in"]
    assert "dp_studio" not in at.session_state and not at.dataframe and not at.sidebar.markdown
