"""The randomized copy of a 1,000,000-row table read from PostgreSQL against the same rows read from a CSV file (issue 31).

1. Write ``--rows`` synthetic rows (:func:`release_throughput.generate`: two identifiers,
   categorical and numeric columns, about 100 bytes a row) to a CSV file in a temporary folder.
2. Start a throw-away PostgreSQL cluster (Debian's ``initdb``/``pg_ctl``, a unix socket:
   ``tests/postgres_support.py``) and ``COPY`` the same file into a table whose ``line`` column
   numbers the rows in the file's order (an identity column, its primary key).
3. Release the copy with the command line in a child process, ``--trials`` pairs, taking turns
   (CSV first, then PostgreSQL, so a change in the shared machine's load hits both alike):

   * ``dpcore release rows.csv …``
   * ``dpcore release --source postgresql+psycopg://… --query "SELECT <columns> FROM rows ORDER BY line" …``

   the same schema, default plan, seed and ``--fresh``, each with a new ledger (so each run
   identifies its dataset as a first release does). Wall seconds and the child's CPU seconds
   (the database server's own CPU is not counted) are reported with their medians and the
   PostgreSQL ÷ CSV ratio. Target: wall ratio ≤ 1.5. The copies are checked to be identical.

Run: ``nice -n 10 env PYTHONPATH=. .venv/bin/python benchmarks/sql_release.py [--rows 1000000 --trials 3]``
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pandas as pd  # noqa: E402
from postgres_support import PostgresServer, server_programs  # noqa: E402
from release_throughput import generate, synthetic_schema  # noqa: E402

from benchmarks._common import RESULTS, markdown_table  # noqa: E402

TYPES = {"numeric": "double precision", "categorical": "text"}


def load_postgres(server: PostgresServer, source: Path) -> str:
    """``COPY`` the CSV file into the table ``rows``, numbered by ``line`` in the file's order; the query that reads it back."""
    import psycopg

    schema = synthetic_schema()
    columns = ", ".join(f'"{c.name}" {TYPES[c.kind]}' for c in schema.columns)
    names = ", ".join(f'"{c.name}"' for c in schema.columns)
    with psycopg.connect(server.url(), autocommit=True) as connection:
        connection.execute(f"CREATE TABLE rows (line bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, {columns})".encode())
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY rows ({names}) FROM STDIN WITH (FORMAT csv, HEADER true)".encode()) as copy,
        ):
            with open(source, "rb") as lines:
                while block := lines.read(1 << 20):
                    copy.write(block)
        connection.execute(b"VACUUM ANALYZE rows")
    return f"SELECT {names} FROM rows ORDER BY line"


def timed_release(table: list[str], common: list[str], folder: Path, name: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``dpcore release`` in a child process (the interpreter's start included)."""
    arguments = [*table, *common, "-o", str(folder / f"{name}.csv"), "--report", str(folder / f"{name}.json")]
    arguments += ["--ledger", str(folder / f"{name}.sqlite3")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"dpcore release failed ({name}):\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trials", type=int, default=3, help="CSV / PostgreSQL pairs (default 3)")
    parser.add_argument("--chunksize", type=int, default=None, help="rows per chunk (default: the engine's)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the server on a kill too
    programs = server_programs()
    if programs is None:
        sys.exit("PostgreSQL's server programs are not installed: apt-get install postgresql")
    with tempfile.TemporaryDirectory(prefix="dpcore-sql-bench-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # the server runs as Debian's postgres user under root
        source = folder / "rows.csv"
        started = time.perf_counter()
        generate(source, args.rows)
        (folder / "rows.schema.json").write_text(synthetic_schema().to_json(), encoding="utf-8")
        print(f"wrote {args.rows:,} rows, {source.stat().st_size / 1e6:,.0f} MB, in {time.perf_counter() - started:.1f} s")
        server = PostgresServer(programs)
        try:
            server.start()
            started = time.perf_counter()
            query = load_postgres(server, source)
            print(f"COPY into PostgreSQL: {time.perf_counter() - started:.1f} s")
            url = server.url().replace("postgresql://", "postgresql+psycopg://", 1)
            common = ["--schema", str(folder / "rows.schema.json"), "--seed", "7", "--accept-noise", "--fresh", "-q"]
            common += ["--epsilon-budget", "100"]
            if args.chunksize:
                common += ["--chunksize", str(args.chunksize)]
            sides = {"CSV file": [str(source)], "PostgreSQL": ["--source", url, "--query", query]}
            timings: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for trial in range(args.trials):
                for side, table in sides.items():
                    name = f"{'csv' if side == 'CSV file' else 'postgres'}{trial}"
                    timings[side].append(timed_release(table, common, folder, name))
                    wall, cpu = timings[side][-1]
                    print(f"[{trial + 1}] {side}: {wall:.1f} s wall, {cpu:.1f} s CPU (load average {os.getloadavg()[0]:.1f})")
                same = (folder / f"csv{trial}.csv").read_bytes() == (folder / f"postgres{trial}.csv").read_bytes()
                print(f"[{trial + 1}] the two copies are {'identical' if same else 'DIFFERENT'}")
                if not same:
                    return 1
        finally:
            server.stop()
    rows = []
    for side, pairs in timings.items():
        walls, cpus = zip(*pairs)
        rows.append({"read from": side, "median wall s": statistics.median(walls), "median CPU s": statistics.median(cpus)})
    wall_ratio = statistics.median(p[0] / c[0] for p, c in zip(timings["PostgreSQL"], timings["CSV file"]))
    cpu_ratio = statistics.median(p[1] / c[1] for p, c in zip(timings["PostgreSQL"], timings["CSV file"]))
    table = markdown_table(pd.DataFrame(rows), digits=1)
    summary = f"PostgreSQL ÷ CSV, median over {args.trials} pairs: wall {wall_ratio:.2f}x (target <= 1.5x), CPU {cpu_ratio:.2f}x"
    print(table)
    print(summary)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sql_release.md").write_text(f"{args.rows:,} rows\n\n{table}\n\n{summary}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
