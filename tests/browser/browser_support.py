"""Real-browser helpers: a ``streamlit run`` server on a free loopback port, and screenshots.

Screenshots and downloads are kept under ``test-artifacts/`` (ignored by git) for a person to look at.
"""

from __future__ import annotations

import atexit
import json
import os
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: What the warm parent imports once per test process: Streamlit's command line and every module the app's pages import.
_WARM_PARENT = r"""
import json, os, signal, sys
import dpstudio.__main__ as studio
import streamlit.web.cli
import streamlit.web.bootstrap
for name in sorted(os.listdir(os.path.join(os.path.dirname(studio.__file__), "support"))):
    if name.endswith(".py") and not name.startswith("_"):
        __import__("dpstudio.support." + name[:-3])


def reap(*_):
    # Waited for here, so each server's CPU time is added to this process's children's and on to the test run's.
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


signal.signal(signal.SIGCHLD, reap)
servers = []
print("ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.environ.clear()
        os.environ.update(request["env"])
        try:
            code = studio.main(request["args"])
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            code = 1
        os._exit(code or 0)
    servers.append(pid)
    print(pid, flush=True)
# The test process has ended: stop any server a test left running, and wait for them all.
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
for pid in servers:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
try:
    while True:
        os.wait()
except ChildProcessError:
    pass
"""


class _WarmParent:
    """A process that has imported Streamlit and the app once and forks a fresh server per test.

    A ``dpstudio`` server spends most of its start-up and its first page importing Streamlit,
    pandas, scikit-learn and the engine; every browser test started one. A fork of a process
    that has done that already is a new server with its own memory, ledger and port, and no
    state from another test (the parent never runs the app). Ends when the test process does
    (its stdin closes).
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WARM_PARENT],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "ready"
        atexit.register(self.close)

    def close(self) -> None:
        """Let the parent end (its stdin closed) and wait for it, so its servers' CPU time counts in the test run's."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def fork(self, args: list[str], env: dict[str, str]) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"args": args, "env": env}) + "\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())


_warm_parent: _WarmParent | None = None


class Server:
    """A forked server, stopped like a ``subprocess.Popen``: ``terminate()``, ``kill()``, ``wait(timeout)``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def _signal(self, number: int) -> None:
        try:
            os.kill(self.pid, number)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> None:
        """Until the warm parent has reaped the server (a zombie still answers ``kill(pid, 0)``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"server {self.pid}", timeout or 0)
            time.sleep(0.05)


def start_server(tmp_path: Path, *extra: str, ledger: str | None = None) -> tuple[Server, str]:
    """``dpstudio`` on a free port, its ledger a fresh file in ``tmp_path`` unless ``ledger`` names one (a file or URL)."""
    global _warm_parent
    if _warm_parent is None or _warm_parent.process.poll() is not None:
        _warm_parent = _WarmParent()
    port = _free_port()
    env = dict(os.environ, DPSTUDIO_LEDGER=ledger or str(tmp_path / "ledger.sqlite3"), PYTHONPATH=str(REPO))
    process = Server(_warm_parent.fork([f"--server.port={port}", "--server.address=127.0.0.1", *extra], env))
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("streamlit did not start within 60 s")


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_until_idle(page) -> None:
    """Wait until Streamlit has no run going (the state its own end-to-end tests wait on)."""
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for()


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


def open_sample(page, name: str, rows: str) -> None:
    """Pick the sample table ``name`` on the Data page and wait until its row count (``rows``) shows."""
    page.locator("[data-testid='stSelectbox']").first.click()
    page.get_by_role("option", name=name).click()
    page.get_by_text(rows, exact=False).first.wait_for()


def release_copy(page) -> None:
    """Press 'Release the copy' on the Export page, typing the confirmation word first when the page asks for it.

    The page asks when the copy is mostly noise: the bundled samples' default copies are, at any ε a fresh budget allows.
    """
    button = page.get_by_role("button", name="Release the copy")
    button.wait_for()  # drawn after the confirmation box, so the box is there by now if it is asked for
    confirmation = page.get_by_label("To release it anyway", exact=False)
    if confirmation.count():
        confirmation.fill("noise")
        confirmation.press("Enter")
        from playwright.sync_api import expect

        expect(button).to_be_enabled()
    button.click()
