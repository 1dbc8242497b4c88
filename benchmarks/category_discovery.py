"""Categories discovered privately (issue 28): which declared values come back, and how much falls into "(other)".

For every text column of the bundled Adult table (32,561 rows, 9 text columns) and California's
``ocean_proximity`` (20,640 rows), one click's discovery at the page's defaults (ε = 0.1 per column,
δ = 1e-6 for all of them) and at a wide table's share of the same budget (the 9 Adult columns
among 80, ε = 1/80 each), over 20 seeds: the number of declared categories found, and the share of
the column's present values that the found list sends to "(other)" (owner-only figure, computed
here on public sample data). Also one click's time on Adult.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/category_discovery.py`` (about 10 s)
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.tables.categories import other_shares, people_needed, stable_categories
from dpcore.tables.schema import Schema

RESULTS = Path(__file__).resolve().parent / "results"
SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"
SEEDS = range(20)


def _table(name: str) -> tuple[pd.DataFrame, Schema, list[str]]:
    frame = pd.read_csv(SAMPLES / f"{name}.csv")
    schema = Schema.from_json((SAMPLES / f"{name}.schema.json").read_text(encoding="utf-8"))
    columns = [c.name for c in schema.columns if c.kind == "categorical" and c.role in ("feature", "target")]
    return frame, schema, columns


def measure(name: str, epsilon: float, delta: float, split_over: int) -> list[dict]:
    """One row per column: declared, found (median, min–max) and the "(other)" share (median, max) over the seeds."""
    frame, schema, columns = _table(name)
    found_counts: dict[str, list[int]] = {c: [] for c in columns}
    shares: dict[str, list[float]] = {c: [] for c in columns}
    for seed in SEEDS:
        # A column's share of δ is δ/split_over, as when it is one of split_over columns discovered in one click.
        found, _threshold = stable_categories(frame, schema, columns, epsilon, delta * len(columns) / split_over, seed)
        for column in columns:
            spec = replace(schema[column], categories=found[column])
            found_counts[column].append(len(set(found[column]) & set(schema[column].categories)))
            shares[column].append(other_shares(frame, Schema([spec])).get(column, 1.0) if len(found[column]) >= 2 else 1.0)
    needed = people_needed(epsilon, delta, split_over)
    return [
        {
            "table": name,
            "column": c,
            "ε per column": epsilon,
            "people needed ≈": needed,
            "declared": len(schema[c].categories),
            "found (median)": float(np.median(found_counts[c])),
            "found (min–max)": f"{min(found_counts[c])}–{max(found_counts[c])}",
            "(other) share, median": f"{np.median(shares[c]):.2%}",
            "(other) share, max": f"{max(shares[c]):.2%}",
        }
        for c in columns
    ]


def main() -> None:
    rows = []
    for epsilon, split_over in ((0.1, 9), (1 / 80, 80)):
        rows += measure("adult", epsilon, 1e-6, split_over)
    rows += measure("california_housing", 0.1, 1e-6, 1)
    frame, schema, columns = _table("adult")
    start = time.perf_counter()
    stable_categories(frame, schema, columns, 0.1, 1e-6, 0)
    seconds = time.perf_counter() - start
    table = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "category_discovery.csv", index=False)
    text = table.to_markdown(index=False) + f"\n\nOne click on Adult's 9 text columns: {seconds:.2f} s.\n"
    (RESULTS / "category_discovery.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
