"""What an upload costs before the Data page shows it: reading the file and suggesting its declarations.

For each table, in a child process per tree (``--tree NAME=PATH``, the code of that checkout), alternating trees
pair by pair: ``read_table_bytes`` of the file's bytes, then ``suggest_schema`` of the frame, timed in the child
(imports excluded). Tables: the two bundled samples, Adult widened to 76 columns (``wide_table.wide_adult``),
200,000 rows drawn from the Adult sample, and three generated exports of the kind found in the wild (amounts with
currency signs, dates, answer scales, True/False with gaps: ``wild_tables``). Medians of ``--repeats`` pairs.

Owner's eyes only: nothing is released. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/upload_reading.py --tree before=PATH_OF_AN_OLDER_CHECKOUT --tree after=.``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, markdown_table  # noqa: E402

CHILD = """
import json, sys, time
from pathlib import Path
from dpcore.tables.loading import read_table_bytes
from dpcore.tables.schema import suggest_schema
path = Path(sys.argv[1])
raw = path.read_bytes()
start = time.perf_counter()
frame, _info = read_table_bytes(raw, path.name)
read = time.perf_counter() - start
start = time.perf_counter()
suggest_schema(frame)
print(json.dumps({"read": read, "suggest": time.perf_counter() - start}))
"""


def wild_tables(folder: Path, seed: int = 11) -> list[Path]:
    """Three exports nobody made for the app: a shop's orders, a staff survey, a sensor log (generated, seeded)."""
    rng = np.random.default_rng(seed)
    n = 2400
    likert = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
    orders = pd.DataFrame(
        {
            "order_id": np.arange(100_001, 100_001 + n),
            "order_date": (pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")).strftime("%Y-%m-%d"),
            "amount": [f"${v:,.2f}" for v in rng.lognormal(4, 1, n)],
            "discount": [f"{v}%" for v in rng.choice([0, 5, 10, 15, 20], n)],
            "returned": rng.choice(["Yes", "No"], n, p=[0.1, 0.9]),
            "channel": rng.choice(["web", "Web", "store", "Phone"], n),
        }
    )
    survey = pd.DataFrame(
        {
            "Timestamp": (pd.Timestamp("2025-03-01") + pd.to_timedelta(rng.integers(0, 86_400 * 30, n), unit="s")).strftime(
                "%m/%d/%Y %H:%M:%S"
            ),
            "Department": rng.choice(["Sales", "Engineering", "HR", "Finance", "Support"], n),
            "Years at company": np.where(rng.random(n) < 0.05, np.nan, rng.gamma(2, 3, n).round(1)),
            "I feel valued at work": rng.choice(likert, n),
            "Overall satisfaction (1-10)": rng.integers(1, 11, n),
            "Salary band": rng.choice(["$40,000-$60,000", "$60,000-$80,000", "$80,000-$100,000", "$100,000+"], n),
        }
    )
    sensors = pd.DataFrame(
        {
            "station": rng.choice([f"ST{i:03d}" for i in range(40)], n),
            "lat": rng.uniform(-45.9, -34.1, n).round(5),
            "depth_m": -rng.gamma(2, 50, n).round(1),
            "reading_time": (pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 86_400 * 365, n), unit="s")).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
            "quality_flag": rng.choice([0, 1, 2, 4, 9], n),
            "alarm": rng.choice(["True", "False"], n),
        }
    )
    paths = []
    for name, frame in (("orders", orders), ("staff_survey", survey), ("ocean_sensors", sensors)):
        paths.append(folder / f"{name}.csv")
        frame.to_csv(paths[-1], index=False)
    return paths


def tables(folder: Path) -> list[Path]:
    from benchmarks.wide_table import wide_adult

    wide = folder / "wide_adult_76.csv"
    wide_adult(76)[0].to_csv(wide, index=False)
    adult = pd.read_csv(ROOT / "sample_data" / "adult.csv")
    drawn = folder / "adult_200k.csv"
    adult.sample(200_000, replace=True, random_state=0).to_csv(drawn, index=False)
    return [
        ROOT / "sample_data" / "adult.csv",
        ROOT / "sample_data" / "california_housing.csv",
        wide,
        drawn,
        *wild_tables(folder),
    ]


def timed(tree: Path, table: Path) -> dict[str, float]:
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(table)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in args.tree)]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for table in tables(Path(scratch)):
            found: dict[str, list[dict[str, float]]] = {name: [] for name, _path in trees}
            for _repeat in range(args.repeats):
                for name, path in trees:  # alternating trees, pair by pair
                    found[name].append(timed(path, table))
            for name, runs in found.items():
                rows.append(
                    {
                        "table": table.stem,
                        "tree": name,
                        "read s": float(np.median([r["read"] for r in runs])),
                        "suggest s": float(np.median([r["suggest"] for r in runs])),
                    }
                )
            print(markdown_table(pd.DataFrame(rows[-len(trees) :])), flush=True)
    print(markdown_table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
