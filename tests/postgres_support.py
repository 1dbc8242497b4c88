"""A throw-away PostgreSQL server for the tests: Debian's ``initdb`` and ``pg_ctl`` in a temporary folder.

The server listens on a unix socket in that folder only (no TCP), trusts every local user, and
runs without fsync (a test never survives a power cut). It is started once per test session (once
per xdist worker) by the ``postgres_server`` fixture and stopped at the end. ``initdb`` refuses to
run as root, so under root the cluster belongs to the ``postgres`` user that Debian's package creates.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

INSTALL = "apt-get install postgresql"
SUPERUSER = "dpstudio"
DATABASE = "dpstudio_test"


def server_programs() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: Debian's newest ``/usr/lib/postgresql/<major>/bin``, else the PATH's."""
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if found:
        newest = max(found, key=lambda path: [int(part) for part in re.findall(r"\d+", path)])
        return Path(newest).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """A running throw-away cluster; :meth:`fresh_ledger` hands each test a schema of its own."""

    def __init__(self, programs: Path) -> None:
        self.programs = programs
        self.folder = Path(tempfile.mkdtemp(prefix="dpstudio-pg-"))
        self.port = _free_port()
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to Debian's postgres user
            self.folder.chmod(0o755)
            shutil.chown(self.folder, "postgres", "postgres")
            self.run_as = ["runuser", "-u", "postgres", "--"]

    def start(self) -> None:
        data = self.folder / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses='' -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(data), "-l", str(self.folder / "server.log"), "-w", "-o", options, "start")
        self._admin(f"CREATE DATABASE {DATABASE}", database="postgres")

    def _run(self, program: str, *arguments: str) -> None:
        command = [*self.run_as, str(self.programs / program), *arguments]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def url(self, database: str = DATABASE, schema: str | None = None) -> str:
        """A ``postgresql://`` URL of the server (through its socket), optionally with ``schema`` first on the search path."""
        url = f"postgresql://{SUPERUSER}@/{database}?host={self.folder}&port={self.port}"
        return url + (f"&options=-csearch_path%3D{schema}" if schema else "")

    def _admin(self, statement: str, database: str = DATABASE) -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(statement.encode())

    def fresh_ledger(self) -> str:
        """The URL of an empty schema of its own: a ledger no other test has touched."""
        schema = "t_" + uuid.uuid4().hex[:16]
        self._admin(f"CREATE SCHEMA {schema}")
        return self.url(schema=schema)

    def restart(self) -> None:
        """Restart the server, dropping every connection to it (as a team server's maintenance would)."""
        log = str(self.folder / "server.log")  # else the new server would hold our pipe open
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-l", log, "-m", "fast", "-w", "restart")

    def stop(self) -> None:
        try:
            if (self.folder / "data" / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for this test session; fails with the way to install one when it is missing."""
    programs = server_programs()
    if programs is None:
        pytest.fail(f"PostgreSQL's server programs (initdb, pg_ctl) are not installed: {INSTALL}", pytrace=False)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg is not installed: pip install -r requirements.txt", pytrace=False)
    server = PostgresServer(programs)
    try:
        server.start()
        yield server
    finally:
        server.stop()
