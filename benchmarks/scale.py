"""How the DP partitioned forest's fit time and memory grow with the number of rows.

Fits the 25-tree forest (depth 5, ε = 1) on synthetic data with 8 features from 10⁴ to 10⁶
rows and prints seconds and peak memory. Target: 10⁶ rows in under 5 s with peak memory
under 2 GB on a 2-core machine.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/scale.py``
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np
import pandas as pd

from dpcore.models import DPPartitionedForest


def synthetic(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.random((n, 8))
    y = np.clip(0.4 * X[:, 0] + 0.3 * np.sin(6 * X[:, 1]) * X[:, 2] + 0.1 * rng.standard_normal(n) + 0.2, 0, 1)
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n in (10_000, 30_000, 100_000, 300_000, 1_000_000):
        if n > args.max_rows:
            break
        X, y = synthetic(n, rng)
        times = []
        for repeat in range(3):
            start = time.perf_counter()
            DPPartitionedForest(epsilon=1.0, random_state=repeat).fit(X, y)
            times.append(time.perf_counter() - start)
        seconds = sorted(times)[1]  # the median of three
        # Memory is traced in a separate fit: tracing slows numpy's allocations.
        tracemalloc.start()
        DPPartitionedForest(epsilon=1.0, random_state=0).fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append(
            {
                "rows": n,
                "fit seconds (median of 3)": round(seconds, 3),
                "peak MB during fit (tracemalloc)": round(peak / 2**20, 1),
            }
        )
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table["seconds per 10⁵ rows"] = (table["fit seconds (median of 3)"] / table["rows"] * 1e5).round(3)
    print()
    print(table.to_markdown(index=False))
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak resident memory of the whole process (data included): {max_rss:.0f} MB")


if __name__ == "__main__":
    main()
