"""Dataset identity on tables from the wild: false positives on unrelated keyed tables, misses on the same people (issue 28).

Unrelated public tables (Adult, its test file — other people of the same census —, California
Housing, Mushroom, Nursery, Congressional Voting, white Wine Quality, Daily Demand) are dressed
as tables from the wild come: a key column first (a row number ``1..N``, or ``id_000001`` codes),
a ``split`` column (80 % ``train`` / 20 % ``test``, seeded) and a constant ``source`` column.
Every ordered pair of different tables (the first known to the ledger, the second opened) is a
false positive when its overlap reaches the attach threshold (:data:`dpcore.budget.datasets.ATTACH_OVERLAP`).
Every dressed table is then opened again as the same people — re-saved through a spreadsheet
(semicolons, numbers written to 12 significant digits), rows and columns reordered, headers
renamed, a 50 % extract, its key column dropped, renumbered after a shuffle, and two columns
edited in every row with their headers kept (:func:`two_columns_edited`) — and each is a miss
when its overlap stays below the threshold. Times are the sketch of the opened table and
its overlap with the known one (median of three), as the ledger does on every upload.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/identity.py [--quick] [--out identity]``
(another checkout's engine on PYTHONPATH measures that engine: the script uses only
``sketch_table``, ``overlap`` and ``ATTACH_OVERLAP``).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.budget.datasets import ATTACH_OVERLAP
from dpcore.budget.identity import overlap, sketch_table
from dpcore.tables.loading import read_csv_bytes, read_csv_path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
RESULTS = ROOT / "benchmarks" / "results"
TABLES = {
    "adult": ROOT / "sample_data" / "adult.csv",
    "adult_test": DATA / "adult" / "adult_test.csv",
    "california": ROOT / "sample_data" / "california_housing.csv",
    "mushroom": DATA / "mushroom" / "mushroom.csv",
    "nursery": DATA / "nursery" / "nursery.csv",
    "voting": DATA / "congressional_voting" / "house_votes_84.csv",
    "wine_white": DATA / "wine_quality" / "winequality-white_comma.csv",
    "daily_demand": DATA / "daily_demand_forecasting_orders" / "daily_demand_orders.csv",
}
KEYS = ("row number", "id_000001")


def dressed(frame: pd.DataFrame, key: str, seed: int) -> pd.DataFrame:
    """``frame`` with a key column first, a train/test marker and a constant column, as public tables often are."""
    rows = np.arange(1, len(frame) + 1)
    ids = rows if key == KEYS[0] else np.char.add("id_", np.char.zfill(rows.astype(str), 6))
    out = frame.reset_index(drop=True).copy()
    out.insert(0, "id", ids)
    out["split"] = np.where(np.random.default_rng(seed).random(len(out)) < 0.8, "train", "test")
    out["source"] = "public"
    return out


def resaved(frame: pd.DataFrame) -> pd.DataFrame:
    """A spreadsheet re-save: semicolons, numbers to 12 significant digits, read back by the app's reader."""
    text = frame.to_csv(index=False, sep=";", float_format="%.12g")
    return read_csv_bytes(text.encode("utf-8"))[0]


def two_columns_edited(frame: pd.DataFrame) -> pd.DataFrame:
    """The first two columns after the key edited in every row, headers kept: numbers + 0.001, text with a trailing '.'
    (as Adult's test file writes its incomes, ">50K.")."""
    out = frame.copy()
    for column in frame.columns[1:3]:
        values = frame[column]
        out[column] = values + 0.001 if pd.api.types.is_numeric_dtype(values.dtype) else values.astype("string") + "."
    return out


def variants(frame: pd.DataFrame, seed: int) -> dict[str, Callable[[], pd.DataFrame]]:
    rng = np.random.default_rng(seed)
    shuffled = lambda: frame.sample(frac=1.0, random_state=seed)  # noqa: E731
    return {
        "re-saved": lambda: resaved(frame),
        "reordered rows and columns": lambda: shuffled()[list(rng.permutation(frame.columns))],
        "renamed headers": lambda: frame.rename(columns=lambda c: f"Col {str(c).upper()}"),
        "50 % extract": lambda: frame.sample(frac=0.5, random_state=seed),
        "key column dropped": lambda: frame.drop(columns=["id"]),
        "renumbered after a shuffle": lambda: shuffled().assign(id=np.arange(1, len(frame) + 1)),
        "two columns edited, headers kept": lambda: two_columns_edited(frame),
    }


def timed_overlap(known, opened: pd.DataFrame, repeats: int) -> tuple[float, float]:
    """The overlap of ``opened`` with the ``known`` sketch, and the median seconds of sketch + overlap."""
    times, share = [], 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        share = overlap(known, sketch_table(opened), [opened])
        times.append(time.perf_counter() - start)
    return share, float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one key style, no repeats (a smoke run)")
    parser.add_argument("--out", default="identity", help="results/<out>.{csv,md}")
    parser.add_argument(
        "--timing",
        action="store_true",
        help="only time opening the dressed Adult and California against each other (fastest of 7)",
    )
    args = parser.parse_args()
    if args.timing:
        return print_timing()
    repeats = 1 if args.quick else 3
    keys = KEYS[:1] if args.quick else KEYS
    raw = {name: read_csv_path(path)[0] for name, path in TABLES.items()}
    rows = []
    for key in keys:
        tables = {name: dressed(frame, key, seed) for seed, (name, frame) in enumerate(raw.items())}
        sketches = {name: sketch_table(frame) for name, frame in tables.items()}
        for known, opened in itertools.permutations(tables, 2):
            share, seconds = timed_overlap(sketches[known], tables[opened], repeats)
            rows.append(
                {
                    "kind": "unrelated",
                    "key": key,
                    "known": known,
                    "opened": opened,
                    "variant": "",
                    "overlap": share,
                    "wrong": share >= ATTACH_OVERLAP,
                    "seconds": seconds,
                }
            )
        for seed, (name, frame) in enumerate(tables.items()):
            for variant, make in variants(frame, seed).items():
                share, seconds = timed_overlap(sketches[name], make(), repeats)
                rows.append(
                    {
                        "kind": "same people",
                        "key": key,
                        "known": name,
                        "opened": name,
                        "variant": variant,
                        "overlap": share,
                        "wrong": share < ATTACH_OVERLAP,
                        "seconds": seconds,
                    }
                )
        print(f"{key}: done", flush=True)
    results = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    results.to_csv(RESULTS / f"{args.out}.csv", index=False)
    report = summary(results)
    (RESULTS / f"{args.out}.md").write_text(report, encoding="utf-8")
    print(report)


def print_timing() -> None:
    """CPU seconds to sketch a dressed table and measure its overlap with a known one, the fastest of seven runs
    (CPU time, not wall-clock: the machine is shared, and other people's jobs stretch the wall clock)."""
    tables = {name: dressed(read_csv_path(TABLES[name])[0], KEYS[0], seed) for seed, name in enumerate(("adult", "california"))}
    for opened, known in (("adult", "california"), ("california", "adult"), ("adult", "adult")):
        sketch = sketch_table(tables[known])
        times = []
        for _ in range(7):
            start = time.process_time()
            overlap(sketch, sketch_table(tables[opened]), [tables[opened]])
            times.append(time.process_time() - start)
        print(f"open {opened} ({len(tables[opened]):,} rows) against {known}: {min(times):.3f} s of CPU")


def summary(results: pd.DataFrame) -> str:
    """The Markdown tables: error rates by kind and key, the misses by variant, the worst unrelated pairs."""
    lines = [
        f"Attach threshold {ATTACH_OVERLAP:g}.",
        "",
        "| kind | key column | trials | wrong | rate | largest unrelated / smallest same-people overlap | median s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (kind, key), group in results.groupby(["kind", "key"], sort=False):
        extreme = group["overlap"].max() if kind == "unrelated" else group["overlap"].min()
        lines.append(
            f"| {'false positive' if kind == 'unrelated' else 'false negative'} ({kind}) | {key} | {len(group)} | "
            f"{int(group['wrong'].sum())} | {group['wrong'].mean():.1%} | {extreme:.2f} | {group['seconds'].median():.3f} |"
        )
    same = results[results["kind"] == "same people"]
    lines += ["", "| same-people variant | trials | missed | smallest overlap |", "|---|---:|---:|---:|"]
    for variant, group in same.groupby("variant", sort=False):
        lines.append(f"| {variant} | {len(group)} | {int(group['wrong'].sum())} | {group['overlap'].min():.2f} |")
    worst = results[results["kind"] == "unrelated"].nlargest(5, "overlap")
    lines += ["", "| largest unrelated overlaps: known | opened | key | overlap |", "|---|---|---|---:|"]
    lines += [f"| {r.known} | {r.opened} | {r.key} | {r.overlap:.2f} |" for r in worst.itertuples()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
