"""Sign-in with a real OpenID Connect provider: the sign-in page first, the app once signed in, the spend's signer in
the history, then sign-out back to the sign-in page.

The provider is ``oidc-provider-mock`` on a free localhost port (tests/oidc_support.py); the app is
``dpstudio`` with an ``[auth]`` section in the secrets of its (temporary) home folder. Its sign-in
form takes a subject: the test types Alice's, as a person types their name at a real provider.
"""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

import pytest
from oidc_support import EMAIL, SUBJECT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import free_port, screenshot, sign_in, start_server, stop_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def signed_in_server(tmp_path, oidc_provider):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = tmp_path / "home"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "secrets.toml").write_text(oidc_provider.secrets_toml(url), encoding="utf-8")
    process, url = start_server(tmp_path, port=port, home=home)
    yield url
    stop_server(process)


def test_sign_in_then_spend_then_sign_out(browser, signed_in_server, tmp_path, oidc_provider):
    from dpcore.budget.ledger_db import connect

    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    page = context.new_page()
    page.set_default_timeout(180_000)
    page.goto(signed_in_server)

    # Nobody signed in: the sign-in page and nothing of the table, on every page's address.
    page.get_by_text("Sign in to DP Studio").wait_for()
    wait_until_idle(page)
    assert page.get_by_text("Declare the columns").count() == 0 and page.get_by_role("link", name="3. Train").count() == 0
    screenshot(page, "sign_in_page")
    page.goto(f"{signed_in_server}/train")
    page.get_by_text("Sign in to DP Studio").wait_for()
    wait_until_idle(page)
    assert page.get_by_text("Training spends budget", exact=False).count() == 0

    sign_in(page, SUBJECT)

    page.get_by_text("Declare the columns").wait_for()
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_text(f"Signed in as {EMAIL}").wait_for()
    screenshot(page, "signed_in")

    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Training spends budget", exact=False).wait_for()
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Inside the model").wait_for()
    with closing(connect(tmp_path / "ledger.sqlite3")) as conn:
        # the person is the provider's issuer and subject together: a subject alone is unique only within its provider
        person = (f"{oidc_provider.url}|{SUBJECT}", EMAIL)
        assert conn.execute("SELECT subject, email FROM spends").fetchall() == [person]
        # the sample's dataset was opened for Alice: its budget's creation is hers too
        assert conn.execute("SELECT subject, email FROM totals").fetchall() == [person]

    page.get_by_role("link", name="2. Privacy").click()
    page.get_by_text("The dataset's history").first.wait_for()
    wait_until_idle(page)
    history = page.locator("[data-testid='stDataFrame']").filter(has_text="spend").first
    history.get_by_text(EMAIL).first.wait_for(state="attached")  # the grid's accessible table holds every cell
    history.scroll_into_view_if_needed()
    screenshot(page, "signed_in_history")

    sidebar.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click()  # the provider asks before it ends its session
    page.get_by_text("Sign in to DP Studio").wait_for()
    wait_until_idle(page)
    assert page.get_by_text("Signed in as", exact=False).count() == 0
    screenshot(page, "signed_out")
    context.close()


def test_a_deep_link_to_a_page_asks_to_sign_in_when_streamlit_runs_the_package_script(browser, tmp_path, oidc_provider):
    """``streamlit run dpstudio/app.py`` (the script beside ``pages/``): a fresh server's first visitor opening
    ``/attack`` or ``/export`` directly gets the sign-in page, not the page run on its own."""
    import os
    import subprocess
    import time
    import urllib.request

    from browser_support import REPO

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = tmp_path / "home"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "secrets.toml").write_text(oidc_provider.secrets_toml(url), encoding="utf-8")
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO), DPSTUDIO_LEDGER=str(tmp_path / "ledger.sqlite3"))
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "dpstudio" / "app.py"), f"--server.port={port}",
         "--server.address=127.0.0.1", "--server.headless=true", "--browser.gatherUsageStats=false"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert time.time() < deadline, "streamlit did not start within 60 s"
                time.sleep(0.3)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(180_000)
        for linked in ("attack", "export"):
            page.goto(f"{url}/{linked}")
            page.get_by_text("Sign in to DP Studio").wait_for()
            wait_until_idle(page)
            assert page.get_by_role("heading", name="Attack").count() == 0
            assert page.get_by_text("Declare the columns").count() == 0 and page.get_by_text("ε spent").count() == 0
        screenshot(page, "deep_link_sign_in")
        page.context.close()
    finally:
        stop_server(process)


def test_a_half_configured_sign_in_keeps_the_app_closed_on_loopback(browser, tmp_path, oidc_provider):
    """[auth] without its client secret: streamlit run app.py on 127.0.0.1 (as behind the README's proxy) shows one
    refusal naming the missing key, never the secrets, instead of opening the table to whoever the proxy serves."""
    import os
    import subprocess
    import time
    import urllib.request

    from browser_support import REPO

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = tmp_path / "home"
    (home / ".streamlit").mkdir(parents=True)
    toml = "".join(line for line in oidc_provider.secrets_toml(url).splitlines(True) if not line.startswith("client_secret"))
    (home / ".streamlit" / "secrets.toml").write_text(toml, encoding="utf-8")
    cookie_secret = next(line for line in toml.splitlines() if line.startswith("cookie_secret")).split('"')[1]
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO), DPSTUDIO_LEDGER=str(tmp_path / "ledger.sqlite3"))
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), f"--server.port={port}",
         "--server.address=127.0.0.1", "--server.headless=true"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert time.time() < deadline, "streamlit did not start within 60 s"
                time.sleep(0.3)
        page = browser.new_context(viewport={"width": 1400, "height": 700}).new_page()
        page.set_default_timeout(180_000)
        page.goto(f"{url}/data")
        refusal = page.get_by_text("DP Studio stays closed", exact=False)
        refusal.wait_for()
        wait_until_idle(page)
        assert "(client_secret)" in refusal.inner_text() and cookie_secret not in page.content()
        assert page.get_by_text("Declare the columns").count() == 0 and page.get_by_role("button", name="Sign in").count() == 0
        screenshot(page, "sign_in_half_configured")
        page.context.close()
    finally:
        stop_server(process)
