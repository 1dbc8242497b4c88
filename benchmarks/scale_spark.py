"""Fit and release on 10⁶–10⁸ rows: the local backend against Spark local[2], in the same run.

1. Generate a synthetic Parquet table per size (``--rows``) into ``--data`` (kept between runs):
   files of at most 10⁷ rows, eight numeric features in [0, 1], a numeric target, and two
   categorical columns for the release. Generation is chunked and not timed.
2. For every size and backend, in a fresh child process (so its peak memory is its own):
   * **fit**: the DP partitioned forest of ``benchmarks/scale.py`` (25 trees, depth 5, ε = 1)
     through :meth:`~dpcore.models.DPPartitionedForest.fit_rows`, reading included: locally
     :func:`dpcore.backends.tables.read_rows_local`, on Spark
     :class:`dpcore.backends.spark.SparkRows` over the Parquet folder;
   * **release**: the randomized-response copy of the same table (default plan) written as CSV,
     locally and on Spark.
   Each prints seconds, rows per second, the Python driver's peak resident memory and (Spark)
   the JVM's, which in local mode also hosts the executors.
3. Print one table per step, and the Spark/local time ratio per size.

Targets (issue #17): a forest fit on 10⁸ rows on local[2] under 10 minutes with the driver under
2 GB and within 1.5× of the local backend where that still fits in memory; the release of 10⁸
rows under 15 minutes.

Run (about an hour with 10⁸; nothing else should load the machine):
``PYTHONPATH=. .venv/bin/python benchmarks/scale_spark.py --rows 1000000 10000000 100000000``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FILE_ROWS = 10_000_000
CHUNK_ROWS = 2_000_000
FEATURES = [f"x{i}" for i in range(8)]
REGIONS = ["north", "south", "east", "west", "centre"]
PLANS = ["basic", "plus", "premium"]
FOREST = {"n_estimators": 25, "max_depth": 5, "epsilon": 1.0, "random_state": 2024}


def schema_dict() -> dict:
    columns = [{"name": f, "role": "feature", "kind": "numeric", "lower": 0.0, "upper": 1.0} for f in FEATURES]
    columns += [
        {"name": "region", "role": "feature", "kind": "categorical", "categories": REGIONS},
        {"name": "plan", "role": "feature", "kind": "categorical", "categories": PLANS},
        {"name": "spend", "role": "target", "kind": "numeric", "lower": 0.0, "upper": 1.0},
    ]
    return {"columns": columns}


def generate(folder: Path, n_rows: int) -> Path:
    """The table of ``n_rows`` rows as Parquet files in ``folder/table``, its schema beside (made once)."""
    done = folder / "_complete"
    if done.exists():
        return folder
    (folder / "table").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(n_rows)
    written = 0
    part = 0
    while written < n_rows:
        in_file = min(FILE_ROWS, n_rows - written)
        with pq.ParquetWriter(folder / "table" / f"part-{part:05d}.parquet", _arrow_schema()) as writer:
            left = in_file
            while left:
                m = min(CHUNK_ROWS, left)
                writer.write_table(_chunk(rng, m), row_group_size=1_000_000)
                left -= m
        written += in_file
        part += 1
    (folder / "schema.json").write_text(json.dumps(schema_dict()))
    done.touch()
    return folder


def _arrow_schema() -> pa.Schema:
    fields = [pa.field(f, pa.float32()) for f in FEATURES]
    fields += [pa.field("region", pa.string()), pa.field("plan", pa.string()), pa.field("spend", pa.float32())]
    return pa.schema(fields)


def _chunk(rng: np.random.Generator, m: int) -> pa.Table:
    X = rng.random((m, len(FEATURES)), dtype=np.float32)
    y = np.clip(0.4 * X[:, 0] + 0.3 * np.sin(6 * X[:, 1]) * X[:, 2] + 0.1 * rng.standard_normal(m, dtype=np.float32) + 0.2, 0, 1)
    columns = [pa.array(X[:, j]) for j in range(X.shape[1])]
    columns.append(
        pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(REGIONS), m, dtype=np.int32)), pa.array(REGIONS)).cast(
            pa.string()
        )
    )
    columns.append(
        pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(PLANS), m, dtype=np.int32)), pa.array(PLANS)).cast(
            pa.string()
        )
    )
    columns.append(pa.array(y.astype(np.float32)))
    return pa.Table.from_arrays(columns, schema=_arrow_schema())


# -- one measurement, in a child process -------------------------------------------------------------


class DescendantMemory:
    """Samples the resident memory of this process's descendants (the JVM in Spark's local mode) twice a second."""

    def __init__(self) -> None:
        import threading

        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.5):
            parents: dict[int, int] = {}
            rss: dict[int, float] = {}
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    parents[int(entry.name)] = int(fields[1])
                    rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
                except (OSError, IndexError, ValueError):
                    continue
            total = 0.0
            for pid in rss:
                p = parents.get(pid)
                while p not in (None, 0, 1, me):
                    p = parents.get(p)
                if p == me:
                    total += rss[pid]
            self.peak_mb = max(self.peak_mb, total)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mb


def measure(step: str, engine: str, folder: Path, out: Path) -> dict:
    from dpcore.tables.schema import Schema

    children = DescendantMemory()

    schema = Schema.from_json((folder / "schema.json").read_text())
    started = time.perf_counter()
    session = None
    if engine == "spark":
        from dpcore.backends.spark import spark_session

        session = spark_session("local[2]")
        started_work = time.perf_counter()
    else:
        started_work = started
    if step == "fit":
        rows = _fit(engine, folder, schema, session)
    else:
        rows = _release(engine, folder, schema, session, out)
    finished = time.perf_counter()
    result = {
        "step": step,
        "engine": engine,
        "rows": rows,
        "seconds": finished - started_work,
        "session_seconds": started_work - started,
        "driver_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if session is not None:
        session.stop()
    jvm = children.stop()
    if engine == "spark":
        result["jvm_peak_mb"] = jvm  # the JVM and the Python workers it starts, sampled
    return result


def _fit(engine: str, folder: Path, schema, session) -> int:  # noqa: ANN001
    from dpcore.backends.tables import read_rows_local
    from dpcore.models import DPPartitionedForest
    from dpcore.tables.design import Design

    domain = Design.domain(schema)
    if engine == "spark":
        from dpcore.backends.spark import SparkRows

        rows = SparkRows.from_files(session, str(folder / "table"), schema)
    else:
        rows = read_rows_local(str(folder / "table"), schema)
    model = DPPartitionedForest(bounds=domain.bounds, target_bounds=domain.target_bounds, **FOREST)
    model.fit_rows(rows)
    return int(sum(pq.ParquetFile(p).metadata.num_rows for p in sorted((folder / "table").glob("*.parquet"))))


def _release(engine: str, folder: Path, schema, session, out: Path) -> int:  # noqa: ANN001
    from dpcore.release import default_plan

    plan = default_plan(schema)
    if engine == "spark":
        from dpcore.release.spark import release_on_spark

        result = release_on_spark(session, str(folder / "table"), out / "spark_copy", schema, plan, random_state=2024)
    else:
        from dpcore.release import release_files

        result = release_files(str(folder / "table"), out / "local_copy.csv", schema, plan, random_state=2024)
    return int(result.n_rows)


# -- the run -------------------------------------------------------------------------------------------


def run_child(step: str, engine: str, folder: Path, out: Path) -> dict:
    command = [sys.executable, __file__, "--child", step, engine, str(folder), str(out)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"step": step, "engine": engine, "error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict], step: str) -> str:
    lines = [
        "| rows | backend | seconds | rows/s | driver peak (MB) | JVM + workers peak (MB) | Spark ÷ local |",
        "|---|---|---|---|---|---|---|",
    ]
    by_size: dict[int, dict[str, dict]] = {}
    for r in results:
        if r["step"] == step and "error" not in r:
            by_size.setdefault(r["rows"], {})[r["engine"]] = r
    for n in sorted(by_size):
        for engine in ("local", "spark"):
            r = by_size[n].get(engine)
            if r is None:
                continue
            ratio = ""
            if engine == "spark" and "local" in by_size[n]:
                ratio = f"{r['seconds'] / by_size[n]['local']['seconds']:.2f}"
            jvm = f"{r['jvm_peak_mb']:.0f}" if "jvm_peak_mb" in r else "—"
            lines.append(
                f"| {n:.0e} | {engine} | {r['seconds']:.1f} | {n / r['seconds']:,.0f} | {r['driver_peak_mb']:.0f} | {jvm} | {ratio} |"
            )
    failed = [r for r in results if r["step"] == step and "error" in r]
    lines += [f"\n{r['engine']} failed: {r['error']}" for r in failed]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        step, engine, folder, out = sys.argv[2:6]
        print(json.dumps(measure(step, engine, Path(folder), Path(out))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--data", type=Path, default=Path("/tmp/dpstudio_scale"))
    parser.add_argument("--steps", nargs="+", default=["fit", "release"], choices=["fit", "release"])
    parser.add_argument("--engines", nargs="+", default=["local", "spark"], choices=["local", "spark"])
    parser.add_argument(
        "--skip-local-above",
        type=float,
        default=1e9,
        help="run the local backend only up to this many rows (it holds the table in memory)",
    )
    args = parser.parse_args()
    results = []
    for n in (int(r) for r in args.rows):
        started = time.perf_counter()
        folder = generate(args.data / f"rows_{n}", n)
        print(f"# {n:,} rows ready in {time.perf_counter() - started:.0f} s", flush=True)
        for step in args.steps:
            for engine in args.engines:
                if engine == "local" and n > args.skip_local_above:
                    continue
                out = args.data / f"out_{n}_{step}_{engine}"
                out.mkdir(parents=True, exist_ok=True)
                result = run_child(step, engine, folder, out)
                print(json.dumps(result), flush=True)
                results.append(result)
    for step in args.steps:
        print(f"\n### {step}\n")
        print(table(results, step))


if __name__ == "__main__":
    main()
