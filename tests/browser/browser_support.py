"""Real-browser helpers: a ``streamlit run`` server on a free loopback port, and screenshots.

Screenshots and downloads are kept under ``test-artifacts/`` (ignored by git) for a person to look at.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(
    tmp_path: Path, *extra: str, ledger: str | None = None, port: int | None = None, home: Path | None = None
) -> tuple[ServerProcess, str]:
    """``dpstudio`` on a free port, its ledger a fresh file in ``tmp_path`` unless ``ledger`` names one (a file or URL).

    ``home`` replaces the home folder, whose ``.streamlit/secrets.toml`` then configures the server
    (sign-in); ``port`` is given when the secrets must name the app's address before it starts.
    The server is forked from a parent that has imported the app's libraries (``server_forks.py``),
    except with a ``home`` of its own, which is started afresh.
    """
    port = port or free_port()
    env = dict(os.environ, DPSTUDIO_LEDGER=ledger or str(tmp_path / "ledger.sqlite3"), PYTHONPATH=str(REPO))
    args = [f"--server.port={port}", "--server.address=127.0.0.1", *extra]
    process: ServerProcess | None = None
    if home is None:
        process = _forked_server(env, args)
    if process is None:
        if home is not None:
            env["HOME"] = str(home)
        process = subprocess.Popen(
            [sys.executable, "-m", "dpstudio", *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180  # a loaded machine imports the app slowly; a quiet one answers in seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("streamlit did not start within 180 s")


class ForkedServer:
    """A server forked by this worker's ``server_forks.py`` parent: killed and waited for by its pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> None:
        """Until the pid is gone (the parent reaps its children as they end)."""
        deadline = time.monotonic() + (timeout if timeout is not None else 3600)
        while Path(f"/proc/{self.pid}").exists():
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"server {self.pid}", timeout or 0)
            time.sleep(0.05)


ServerProcess = subprocess.Popen | ForkedServer
_FORKS: dict[str, subprocess.Popen] = {}


def _forked_server(env: dict[str, str], args: list[str]) -> ForkedServer | None:
    """A server forked with ``env`` and ``args`` (None when the parent cannot be had: the caller starts one afresh)."""
    parent = _FORKS.get("parent")
    if parent is None or parent.poll() is not None:
        parent = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("server_forks.py"))],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        _FORKS["parent"] = parent
    assert parent.stdin is not None and parent.stdout is not None
    try:
        parent.stdin.write(json.dumps({"env": env, "args": args, "cwd": str(REPO)}) + "\n")
        parent.stdin.flush()
        # A parent that answers nothing (stuck importing on a starved machine) is dropped, not waited on for ever.
        answered, _unused, _unused = select.select([parent.stdout], [], [], FORK_ANSWER_SECONDS)
        answer = parent.stdout.readline() if answered else ""
    except OSError:
        answer = ""
    if not answer.strip().isdigit():
        parent.kill()
        _FORKS.pop("parent", None)
        return None
    return ForkedServer(int(answer))


#: How long a forking parent may take to answer (its first answer follows its imports).
FORK_ANSWER_SECONDS = 180


def start_signed_in_server(tmp_path: Path, provider, ledger: str | None = None) -> tuple[subprocess.Popen, str]:
    """:func:`start_server` with sign-in through ``provider`` (the test's OpenID Connect provider) in its secrets."""
    port = free_port()
    home = tmp_path / "home"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "secrets.toml").write_text(provider.secrets_toml(f"http://127.0.0.1:{port}"), encoding="utf-8")
    return start_server(tmp_path, port=port, home=home, ledger=ledger)


def stop_server(process: ServerProcess) -> None:
    """Kill the server: its ledger commits every charge as it happens, and a polite stop waits seconds for its sessions."""
    process.kill()
    process.wait(timeout=20)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def sign_in(page, subject: str) -> None:
    """Press the app's "Sign in" and authorize ``subject`` on the test's OpenID Connect provider's own page."""
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Authorize Client").wait_for()
    page.get_by_placeholder("sub").fill(subject)
    page.get_by_role("button", name="Authorize").click()


def wait_until_idle(page) -> None:
    """Wait until Streamlit has no run going (the state its own end-to-end tests wait on)."""
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for()


#: Streamlit's data editor draws rows of 35 px under a header row as tall: the middle of the first row.
FIRST_ROW = 35 + 17


def type_in_declarations(page, row: int, column: int, value: str, shows: str) -> None:
    """Type ``value`` into the declarations grid's cell at ``row`` (0 = the first column of the table) and ``column``
    (0 = "column", 3 = "lower", 4 = "upper"), as a person does: click the row's name, arrow keys to the cell, Enter
    opens its editor, type, Enter. The grid is a canvas; only the row's height is known, so the keys find the column.
    Returns once the grid's text (its accessible table) ``shows`` what was typed and the run it started is over.
    """
    from playwright.sync_api import expect

    grid = page.locator("[data-testid='stDataFrame']").filter(has_text="may be missing").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 20, box["y"] + FIRST_ROW + 35 * row)
    for _step in range(column):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    editor = page.locator("input.gdg-input")
    editor.wait_for()
    editor.fill(value)
    editor.press("Enter")
    editor.wait_for(state="detached")
    expect(grid).to_contain_text(shows, timeout=180_000)
    wait_until_idle(page)


def _uploader(page, label: str):
    return (
        page.locator("[data-testid='stFileUploader']")
        .filter(has_text=label)
        .locator("[data-testid='stFileUploaderDropzoneInput']")
    )


def table_uploader(page):
    """Choose 'My own CSV file' on the Data page and return the table's uploader once the page has drawn it.

    Found by its label and only after the rerun: until then the first uploader on the page is the
    data dictionary's, and a table given to it was lost (a flaky upload on a busy machine).
    """
    page.get_by_text("My own CSV file").click()
    uploader = _uploader(page, "Upload a table")
    uploader.wait_for(state="attached")
    wait_until_idle(page)
    return uploader


def schema_uploader(page):
    """The uploader of a schema file saved from DP Studio (shown with the table's, after 'My own CSV file')."""
    return _uploader(page, "Optional: a schema file")


def upload_census(page, table: Path) -> None:
    """Upload ``table`` (Adult's columns) as a new dataset 'census' on the Data page, then Adult's schema."""
    table_uploader(page).set_input_files(str(table))
    page.get_by_text("A new dataset 'census' was created", exact=False).wait_for()
    wait_until_idle(page)
    schema_uploader(page).set_input_files(str(REPO / "sample_data" / "adult.schema.json"))
    page.get_by_text("The schema is complete", exact=False).wait_for()
    wait_until_idle(page)


def raise_total(page, total: str) -> None:
    """On the Privacy page, raise the dataset's total to ε = ``total``, typing the confirmation a raise asks for."""
    page.get_by_role("link", name="2. Privacy").click()
    page.get_by_text("Harm if a person's row were disclosed").wait_for()
    page.get_by_text("Custom", exact=True).click()
    box = page.get_by_label("Total ε")
    box.fill(total)
    box.press("Enter")
    confirmation = page.get_by_label("Confirmation")
    confirmation.wait_for()
    wait_until_idle(page)
    confirmation.fill("raise the budget")
    confirmation.press("Enter")
    wait_until_idle(page)
    page.get_by_role("button", name="Set as this dataset's budget").click()
    page.get_by_text(f"Current budget: ε = {total},", exact=False).wait_for()
    wait_until_idle(page)


def grant_slice(page, email: str, epsilon: str):
    """On the Privacy page, grant ``email`` a slice of ε = ``epsilon``; returns the table of slices, once it lists them."""
    page.get_by_label("The analyst's e-mail address").fill(email)
    page.get_by_label("ε of the slice").fill(epsilon)
    page.get_by_role("button", name="Grant the slice").click()
    slices = page.locator("[data-testid='stDataFrame']").filter(has_text="granted (UTC)")
    slices.get_by_text(email).first.wait_for(state="attached")
    wait_until_idle(page)
    return slices


def pick_model(page, name: str) -> None:
    """Open the Train page and pick the model ``name`` from its list, found by its label.

    (The first drop-down clicked at once after the link was sometimes still the Data page's, and the
    model never came; a full run failed on it.)
    """
    page.get_by_role("link", name="3. Train").click()
    page.get_by_role("combobox", name="Model", exact=True).click()
    page.get_by_role("option", name=name, exact=True).click()


def open_sample(page, name: str, rows: str) -> None:
    """Pick the sample table ``name`` on the Data page and wait until its row count (``rows``) shows."""
    page.locator("[data-testid='stSelectbox']").first.click()
    page.get_by_role("option", name=name).click()
    page.get_by_text(rows, exact=False).first.wait_for()


def release_copy(page) -> None:
    """Press 'Release the copy' on the Export page, typing the confirmation word first when the page asks for it.

    The page asks when the copy is mostly noise: the bundled samples' default copies are, at any ε a fresh budget allows.
    """
    from playwright.sync_api import expect

    button = page.get_by_role("button", name="Release the copy")
    button.wait_for()
    # A word typed while the page still runs can be reset by that run's end, and on a loaded machine the box can be
    # drawn by a later run than the button's (the button then stayed disabled for minutes): each round waits for
    # the page to be idle, then types the word if the box asks for it, until the button is enabled.
    for _attempt in range(4):
        wait_until_idle(page)
        if button.is_enabled():
            break
        confirmation = page.get_by_label("To release it anyway", exact=False)
        if confirmation.count():
            confirmation.fill("noise")
            confirmation.press("Enter")
    expect(button).to_be_enabled()
    button.click()
