"""What one pass over a Spark table costs: session start, a histogram job and a tree fit, local vs Spark local[2].

A probe for :class:`dpcore.backends.spark.SparkRows` (the full fit and release scaling lives in
``benchmarks/scale_spark.py``). On a synthetic Parquet table of ``--rows`` rows (four files, eight
numeric features, a numeric target) it measures in one process:

* the Spark session's start;
* one histogram job (per-feature 32-cell counts and fixed-point target sums in four keyed
  groups, as a forest's level pass does): locally over :func:`dpcore.backends.tables.read_rows_local`
  (reading included once), on Spark over the raw cells (first pass), over the rows kept by
  the executors (later passes), and over row groups read by pyarrow in the workers
  (:meth:`~dpcore.backends.spark.SparkRows.from_files`, a first pass);
* a depth-5 DP regression tree fitted with ``fit_rows`` on both, checked byte-identical.

Every figure is the median of ``--repeats`` runs. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/spark_rows.py --rows 1000000``
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.backends import tables
from dpcore.backends.rows import RowBatch, exact_bincount, fixed
from dpcore.mechanisms import keyed
from dpcore.models import DPRegressionTree
from dpcore.tables.design import Design
from dpcore.tables.schema import ColumnSpec, Schema

FEATURES = 8
CELLS = 32


def write_table(folder: Path, rows: int) -> Schema:
    rng = np.random.default_rng(0)
    for i in range(4):
        columns = {f"x{j}": rng.uniform(0, 100, rows // 4) for j in range(FEATURES)}
        columns["y"] = rng.normal(50, 20, rows // 4)
        pq.write_table(pa.table(columns), folder / f"part-{i}.parquet")
    return Schema(
        [*(ColumnSpec(f"x{j}", lower=0, upper=100) for j in range(FEATURES)), ColumnSpec("y", role="target", lower=0, upper=100)]
    )


def histogram_job(secret: bytes):  # noqa: ANN201
    def job(batch: RowBatch) -> np.ndarray:
        cell = np.minimum((batch.X / 100 * CELLS).astype(np.intp), CELLS - 1) + CELLS * np.arange(FEATURES)
        group = keyed.integers(secret, batch.key, 3, 4)[:, 0]
        index = (group[:, None] * CELLS * FEATURES + cell).ravel()
        size = 4 * CELLS * FEATURES
        return np.stack(
            [exact_bincount(index, None, size), exact_bincount(index, np.repeat(fixed(batch.y / 100), FEATURES), size)]
        )

    return job


def timed(function):  # noqa: ANN001, ANN201
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from dpcore.backends.spark import SparkRows, read_table, spark_session

    with tempfile.TemporaryDirectory() as folder:
        schema = write_table(Path(folder), args.rows)
        domain = Design.domain(schema)
        job = histogram_job(keyed.new_key(np.random.default_rng(1)))

        def tree() -> DPRegressionTree:
            return DPRegressionTree(
                epsilon=1.0, max_depth=5, bounds=domain.bounds, target_bounds=domain.target_bounds, random_state=3
            )

        start, session = timed(spark_session)
        figures: dict[str, list[float]] = {
            k: []
            for k in (
                "local read",
                "local job",
                "spark job, cells",
                "spark job, kept",
                "spark job, row groups by pyarrow",
                "local tree (read included)",
                "spark tree",
                "spark tree, row groups by pyarrow",
            )
        }
        for _ in range(args.repeats):
            seconds, local = timed(lambda: tables.read_rows_local(folder, schema))
            figures["local read"].append(seconds)
            seconds, expected = timed(lambda: local.aggregate(job))  # noqa: B023
            figures["local job"].append(seconds)
            rows = SparkRows(read_table(session, folder), schema)
            for label in ("spark job, cells", "spark job, kept"):
                seconds, total = timed(lambda: rows.aggregate(job))  # noqa: B023
                figures[label].append(seconds)
                assert np.array_equal(total, expected)
            seconds, total = timed(lambda: SparkRows.from_files(session, folder, schema).aggregate(job))
            figures["spark job, row groups by pyarrow"].append(seconds)
            assert np.array_equal(total, expected)
            seconds, on_one = timed(lambda: tree().fit_rows(tables.read_rows_local(folder, schema)))
            figures["local tree (read included)"].append(seconds)
            seconds, on_spark = timed(lambda: tree().fit_rows(SparkRows(read_table(session, folder), schema)))
            figures["spark tree"].append(seconds)
            assert pickle.dumps(on_one.tree_) == pickle.dumps(on_spark.tree_)
            seconds, on_spark = timed(lambda: tree().fit_rows(SparkRows.from_files(session, folder, schema)))
            figures["spark tree, row groups by pyarrow"].append(seconds)
            assert pickle.dumps(on_one.tree_) == pickle.dumps(on_spark.tree_)
        print(f"rows: {args.rows:,}; Spark session start: {start:.1f} s; medians of {args.repeats}")
        print("| step | seconds | rows/s |\n|---|---:|---:|")
        for label, values in figures.items():
            median = statistics.median(values)
            print(f"| {label} | {median:.2f} | {args.rows / median:,.0f} |")


if __name__ == "__main__":
    main()
