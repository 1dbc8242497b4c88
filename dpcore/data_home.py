"""Where DP Studio keeps its files on this machine: the ledger, and beside it workspaces and remembered costs.

The ledger is a SQLite file by default, or a PostgreSQL database named by a ``postgresql://`` URL
(a team server, see :mod:`dpcore.budget.ledger_db`). The files kept beside it (stored copies,
workspaces, remembered costs) stay on this machine either way: next to the SQLite file, or under
the data directory in a folder named after the server and database (never its password).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

LEDGER_ENV = "DPSTUDIO_LEDGER"
SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_ledger(location: str | os.PathLike[str]) -> bool:
    """True when ``location`` names a PostgreSQL ledger (a URL) rather than a SQLite file."""
    return str(location).startswith(SERVER_SCHEMES)


def _data_directory() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "dpstudio"


def default_ledger() -> str:
    """``$DPSTUDIO_LEDGER`` if set (a file or a ``postgresql://`` URL), else a per-user file under the XDG data directory."""
    return os.environ.get(LEDGER_ENV) or str(_data_directory() / "ledger.sqlite3")


def default_ledger_path() -> Path:
    """Where the ledger's neighbouring files go for the default ledger (:func:`beside_ledger`)."""
    return beside_ledger(default_ledger())


def mask_password(location: str | os.PathLike[str]) -> str:
    """``location`` fit to show or log: a URL's password (``user:secret@``, ``password=…``) replaced by ``***``."""
    text = re.sub(r"(://[^/?#@:]*:)[^/?#@]*@", r"\1***@", str(location))
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1***", text)


def beside_ledger(location: str | os.PathLike[str]) -> Path:
    """The local path the ledger's neighbouring files are named after (``<it>-copies``, its folder's ``workspaces``).

    The SQLite file itself, or for a server ledger a name under the data directory made of its
    host, port and database (the same on every app process of one machine, without the password).
    """
    if not is_server_ledger(location):
        return Path(location)
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(str(location))
    name = "-".join(str(parts.get(key) or "") for key in ("host", "port", "dbname"))
    return _data_directory() / ("postgresql-" + re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_"))
