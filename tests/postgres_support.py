"""A throw-away PostgreSQL server for the tests: Debian's ``initdb`` and ``pg_ctl`` in a temporary folder.

The server listens on a unix socket in that folder, where it trusts every local user, and on
127.0.0.1, where a user must give a password (Spark's JDBC driver cannot use a unix socket:
:meth:`PostgresServer.reader` makes such a user); it runs without fsync (a test never survives a power cut). It is started once per test session (once
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
SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"
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
        self._run(
            "initdb",
            "-D",
            str(data),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--no-sync",
        )
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
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

    def reader(self, schema: str, password: str, user: str = "reader") -> str:
        """A ``postgresql+psycopg://`` URL over TCP for ``user`` (made once, with ``password``), who may read ``schema``."""
        from psycopg import sql

        with psycopg_connection(self.url()) as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone() is None:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(user), sql.Literal(password)))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), sql.Identifier(user)))
            conn.execute(
                sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(schema), sql.Identifier(user))
            )
        return f"postgresql+psycopg://{user}:{password}@127.0.0.1:{self.port}/{DATABASE}"

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


def psycopg_connection(url: str):  # noqa: ANN201
    import psycopg

    return psycopg.connect(url, autocommit=True)


def load_adult(server: PostgresServer, folder: Path, rows: int) -> dict:
    """Adult's first ``rows`` rows as a CSV file and a PostgreSQL table keyed by each row's line number in the file.

    A PostgreSQL table has no row order of its own (a heap may be read from any page), while a
    seeded copy draws each row's noise in the order the rows come. The table therefore keeps each
    row's line number (from 0) in the CSV file as ``line``, its primary key: a table is read in
    that key's order (``SqlSource.order_key``), and ``ordered`` reads the CSV's columns in the
    same order without it. The table lives in a schema of its own; ``reader`` is a URL over TCP
    with a password (for Spark's JDBC driver), ``postgres`` one through the socket.
    """
    import sqlalchemy as sa

    from dpcore.tables.loading import read_csv_path

    lines = (SAMPLE_DATA / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "adult.csv").write_text("".join(lines[: rows + 1]), encoding="utf-8")
    frame, _info = read_csv_path(folder / "adult.csv")
    schema = "adult_" + uuid.uuid4().hex[:12]
    postgres = server.url().replace("postgresql://", "postgresql+psycopg://", 1)
    engine = sa.create_engine(postgres)
    with engine.begin() as connection:
        connection.execute(sa.text(f"CREATE SCHEMA {schema}"))
    frame.rename_axis("line").to_sql("adult", engine, schema=schema, index=True, chunksize=2_000, method="multi")
    with engine.begin() as connection:
        connection.execute(sa.text(f"ALTER TABLE {schema}.adult ADD PRIMARY KEY (line)"))
    engine.dispose()
    columns = ", ".join(f'"{name}"' for name in frame.columns)
    return {
        "csv": folder / "adult.csv",
        "schema": str(SAMPLE_DATA / "adult.schema.json"),
        "postgres": postgres,
        "reader": server.reader(schema, "s3cret-Pw!"),
        "password": "s3cret-Pw!",
        "table": f"{schema}.adult",
        "ordered": f"SELECT {columns} FROM {schema}.adult ORDER BY line",
        "frame": frame,
    }


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
