"""Adult in a PostgreSQL table, released and fitted on Spark over JDBC, beside the CSV file and the local read (issue 31).

A throw-away PostgreSQL cluster (Debian's ``postgresql``, ``tests/postgres_support.py``) holds
Adult's first ``--rows`` rows keyed by their line numbers; Spark (``local[2]``) reads it through
PostgreSQL's JDBC driver (Debian's ``libpostgresql-jdbc-java``). Each command is the command line's
own (``dpcore release`` / ``dpcore fit``, seeded), timed from its start to its exit, after one
warm-up Spark release (the JVM and the Python workers started). Every copy is compared, byte for
byte, with the local copy of the CSV file, and every Spark model's fitted state with the Spark
model's of the CSV file. Results: results/spark_jdbc.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import pandas as pd  # noqa: E402
from postgres_support import PostgresServer, load_adult, server_programs  # noqa: E402
from same_model import fitted_state  # noqa: E402

from benchmarks._common import RESULTS, markdown_table  # noqa: E402
from dpcore.backends import spark_database  # noqa: E402
from dpcore.cli import main  # noqa: E402
from dpcore.model_files import load_model  # noqa: E402


def _copy_bytes(path: Path) -> bytes:
    if path.is_dir():
        return (path / "header.csv").read_bytes() + b"".join(p.read_bytes() for p in sorted(path.glob("part-*.csv")))
    return path.read_bytes()


def run(rows: int) -> list[dict]:
    server = PostgresServer(server_programs())
    server.start()
    try:
        folder = Path(tempfile.mkdtemp(prefix="spark-jdbc-"))
        adult = load_adult(server, folder, rows)
        spark = ["--engine", "spark", "--master", "local[2]"]
        sources = {
            "CSV file, this machine": ([str(adult["csv"])], False),
            "PostgreSQL table, this machine (psycopg)": (["--source", adult["postgres"], "--table", adult["table"]], False),
            "CSV file, Spark": ([str(adult["csv"]), *spark], True),
            "PostgreSQL table, Spark over JDBC (1 connection, the default here)": (
                ["--source", adult["reader"], "--table", adult["table"], *spark],
                True,
            ),
            "PostgreSQL table, Spark over JDBC (4 connections)": (
                ["--source", adult["reader"], "--table", adult["table"], *spark],
                True,
            ),
            "PostgreSQL query, Spark over JDBC (1 connection)": (
                ["--source", adult["reader"], "--query", adult["ordered"], *spark],
                True,
            ),
        }
        ledger = ["--ledger", str(folder / "ledger.sqlite3"), "--seed", "7", "-q"]
        main(["release", *sources["CSV file, Spark"][0], "--schema", adult["schema"], "-o", str(folder / "warm"),
              "--report", str(folder / "warm.json"), *ledger, "--accept-noise", "--epsilon-budget", "500", "--fresh"])  # fmt: skip
        default_rows = spark_database.ROWS_PER_CONNECTION
        results = []
        for i, (name, (table, on_spark)) in enumerate(sources.items()):
            # Four ranges of the line numbers, as a table of a million rows would be read.
            spark_database.ROWS_PER_CONNECTION = 1_000 if "4 connections" in name else default_rows
            out = folder / (f"copy{i}" if on_spark else f"copy{i}.csv")
            start = time.perf_counter()
            code = main(["release", *table, "--schema", adult["schema"], "-o", str(out), "--report", str(folder / f"r{i}.json"),
                         *ledger, "--accept-noise", "--fresh"])  # fmt: skip
            released = time.perf_counter() - start
            fitted = None
            if on_spark:
                start = time.perf_counter()
                fit = main(["fit", *table, "--schema", adult["schema"], "--model", "dp_boosting", "--epsilon", "0.5",
                            *ledger, "-o", str(folder / f"m{i}.skops")])  # fmt: skip
                fitted = time.perf_counter() - start if fit == 0 else None
            results.append({"source": name, "exit": code, "release s": round(released, 1), "fit s": fitted, "copy": out})
        reference = _copy_bytes(results[0]["copy"])
        model = fitted_state(load_model(folder / "m2.skops"))
        for i, result in enumerate(results):
            result["copy = CSV's local copy"] = _copy_bytes(result.pop("copy")) == reference
            if result["fit s"] is not None:
                result["fit s"] = round(result["fit s"], 1)
                result["model = Spark CSV's"] = fitted_state(load_model(folder / f"m{i}.skops")) == model
        return results
    finally:
        server.stop()


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=32_561, help="Adult's first ROWS rows (default: all 32,561)")
    parser.add_argument("--quick", action="store_true", help="2,000 rows")
    args = parser.parse_args()
    rows = 2_000 if args.quick else args.rows
    results = run(rows)
    table = markdown_table(pd.DataFrame(results))
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark_jdbc.md").write_text(f"Adult, first {rows:,} rows\n\n{table}\n", encoding="utf-8")


if __name__ == "__main__":
    main_cli()
