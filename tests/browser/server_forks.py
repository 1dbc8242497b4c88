"""A parent for the browser tests' app servers: it imports the app's libraries once, then forks a server per test.

Started afresh, every browser test's ``dpstudio`` server imported Streamlit, pandas, scikit-learn,
Altair and the engine again: about 2.6 of the 4 CPU seconds to its first page, on two cores that
Chromium and the other test worker share. A fork of a process that has already imported them
skips that. The child is the server ``python -m dpstudio`` would be: its own session, its own
environment (the test's ledger), its output thrown away, Streamlit's command line run in it.

Nothing is imported here that starts threads or reads the environment at import time (JAX is
imported by the app only when a copy is made, in the child). Servers whose home folder is
replaced (sign-in secrets) are started afresh by :func:`browser_support.start_server` instead.

Protocol, one line each way: the test writes ``{"env": …, "args": […], "cwd": …}`` as JSON, the
parent answers the child's pid. End of input ends the parent (its children live on until killed).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import signal
import sys


def warm() -> None:
    """Import what a new server imports before its first page is drawn."""
    import streamlit.web.bootstrap  # noqa: F401
    import streamlit.web.cli  # noqa: F401

    import dpstudio.support

    for module in pkgutil.iter_modules(dpstudio.support.__path__, "dpstudio.support."):
        importlib.import_module(module.name)


def run_server(request: dict) -> None:
    """In the forked child: become the server of ``request`` and never return."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the parent's automatic reaping is not the server's
        nothing = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(nothing, fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        from dpstudio.__main__ import main

        code = main(request["args"]) or 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else 0
    finally:
        os._exit(code)


def serve() -> None:
    warm()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children that end are reaped at once: no zombies
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_server(request)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
