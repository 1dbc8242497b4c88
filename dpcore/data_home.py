"""Where DP Studio keeps its files on this machine: the ledger, and beside it workspaces and remembered costs."""

from __future__ import annotations

import os
from pathlib import Path

LEDGER_ENV = "DPSTUDIO_LEDGER"


def default_ledger_path() -> Path:
    """``$DPSTUDIO_LEDGER`` if set, else a per-user file under the XDG data directory."""
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "dpstudio" / "ledger.sqlite3"
