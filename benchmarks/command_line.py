"""The command line against a pandas round trip: start-up, dataset identification and a 1M-row release.

1. Draw ``--rows`` rows (default 1,000,000) from the bundled Adult sample with a seed and write
   them as one CSV in a temporary directory (about 100 MB).
2. For each code tree given (``--tree NAME=PATH``, default this checkout as ``after``), in
   alternating pairs, time in child processes:

   - ``dpcore --help`` (start-up);
   - dataset identification alone: :meth:`dpcore.budget.datasets.Catalog.identify` over the
     file's chunks, once against an empty ledger and once against a ledger that already holds
     the sample (the overlap pass reads the table again);
   - ``dpcore release`` of the file with the bundled schema and the default plan
     (``--accept-noise``: the timing is the point, not the copy's usefulness), on a fresh ledger;
   - a plain pandas round trip of the same file: ``read_csv`` then ``to_csv``.

   Each figure is the wall and the CPU (user + system) seconds of the child process.
3. Print one table per tree (medians over ``--trials`` pairs) and each release ÷ round trip.

Targets (issue 29): ``--help`` within 0.3 s; identification ≥ 5× faster than before; the
release at least as fast as the round trip.

Run: ``.venv/bin/python benchmarks/command_line.py --tree before=/path/to/older/checkout --tree after=.``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "adult.csv"
SCHEMA = ROOT / "sample_data" / "adult.schema.json"

IDENTIFY = """
import sys
from dpcore.budget.datasets import Catalog
from dpcore.tables.csv_reading import file_chunks
Catalog(sys.argv[2]).identify(file_chunks(sys.argv[1]))
"""
KNOWN = """
import sys
from dpcore.budget.datasets import Catalog
from dpcore.tables.csv_reading import file_chunks
Catalog(sys.argv[2]).open_table(file_chunks(sys.argv[1]), "adult", total_epsilon=10.0)
"""
ROUND_TRIP = """
import sys
import pandas as pd
pd.read_csv(sys.argv[1]).to_csv(sys.argv[2], index=False)
"""


def timed(command: list[str], tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` run in ``tree`` (its code first on the path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)), check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(tree: Path, table: Path, work: Path) -> dict[str, tuple[float, float]]:
    python = sys.executable
    for name in ("empty.sqlite3", "known.sqlite3", "release.sqlite3"):
        (work / name).unlink(missing_ok=True)
    subprocess.run(
        [python, "-c", KNOWN, str(SAMPLE), str(work / "known.sqlite3")],
        cwd=tree,
        env=dict(os.environ, PYTHONPATH=str(tree)),
        check=True,
    )
    return {
        "start-up (--help)": timed([python, "-m", "dpcore", "--help"], tree),
        "identification, empty ledger": timed([python, "-c", IDENTIFY, str(table), str(work / "empty.sqlite3")], tree),
        "identification, one known dataset": timed([python, "-c", IDENTIFY, str(table), str(work / "known.sqlite3")], tree),
        "release": timed(
            [
                python, "-m", "dpcore", "release", "--schema", str(SCHEMA), "-o", str(work / "copy.csv"),
                "--report", str(work / "report.json"), "--ledger", str(work / "release.sqlite3"), "--accept-noise", "-q", str(table),
            ],
            tree,
        ),
        "pandas round trip": timed([python, "-c", ROUND_TRIP, str(table), str(work / "pandas.csv")], tree),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a checkout to time (repeatable)")
    args = parser.parse_args()
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in args.tree)] or [("after", ROOT)]
    import numpy as np
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="dpcore-cli-bench-") as folder:
        work = Path(folder)
        table = work / "adult_rows.csv"
        sample = pd.read_csv(SAMPLE)
        sample.iloc[np.random.default_rng(0).integers(0, len(sample), args.rows)].to_csv(table, index=False)
        size = table.stat().st_size / 1e6
        results: dict[str, list[dict[str, tuple[float, float]]]] = {name: [] for name, _ in trees}
        for trial in range(args.trials):
            for name, tree in trees:  # alternating, so a change in the machine's load falls on every tree
                results[name].append(measure(tree, table, work))
                print(f"trial {trial + 1}, {name}: done", file=sys.stderr)
        print(f"{args.rows:,} rows ({size:.0f} MB), medians over {args.trials} pairs; load average {os.getloadavg()[0]:.1f}\n")
        print("| tree | step | wall s | CPU s |")
        print("|---|---|---:|---:|")
        for name, runs in results.items():
            for step in runs[0]:
                wall = statistics.median(run[step][0] for run in runs)
                cpu = statistics.median(run[step][1] for run in runs)
                print(f"| {name} | {step} | {wall:.2f} | {cpu:.2f} |")
        print("\n| tree | release ÷ round trip, wall (per pair) | CPU (per pair) |")
        print("|---|---|---|")
        for name, runs in results.items():
            walls = ", ".join(f"{run['release'][0] / run['pandas round trip'][0]:.2f}" for run in runs)
            cpus = ", ".join(f"{run['release'][1] / run['pandas round trip'][1]:.2f}" for run in runs)
            print(f"| {name} | {walls} | {cpus} |")


if __name__ == "__main__":
    main()
