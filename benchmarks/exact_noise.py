"""Speed and accuracy before and after exact noise (discrete Laplace / discrete Gaussian on a grid), in one run.

*Before* is the tree of commit ``--before`` (default ``04b4f72``, the last one with float
noise), extracted with ``git archive`` into a temporary folder; *after* is this working tree.
Each measurement runs in a fresh subprocess per tree, the two trees alternating, so both see
the same machine load; the table gives the medians over ``--repetitions`` seeded runs. Times
are the process's CPU seconds (``time.process_time``), which another job on the machine
changes far less than wall-clock seconds.

Measured on Adult (sample_data/adult.csv for training, the shared adult.test for testing,
declared schema):

* models at ε = 1, registry defaults (10 trees): fit seconds and test accuracy, for every one
  of ours whose noise goes through the Laplace, Gaussian or geometric mechanism;
* the **randomized copy** of all 32,552 rows with every numeric column released through
  keyed Laplace noise at ε = 1 each (the rest by the default plan): seconds, and the Laplace
  columns' mean absolute error as a share of their declared range;
* the **synthetic copy**'s private step (:func:`dpcore.synthetic.measure.measure`, MST's
  noisy marginals with Gaussian noise at ε = 1, δ = 1e-5): seconds, and the mean absolute
  noise of every measured cell in units of the nominal σ (√(2/π) ≈ 0.798 for exact Gaussian noise). Private-PGM's fit, which reads only these measurements and takes a
  minute or more, does not change and is left out.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/exact_noise.py`` (about 5 minutes;
``--repetitions 1`` for a smoke run).

``--draws`` times the mechanisms' calls instead (about a minute): µs per ``randomise`` call of
Laplace (ε = 1, Δ = 1), Gaussian (ρ = 0.5, Δ = 1) and geometric (ε = 1) on arrays of 1, 10,
1000 and 10⁶ zeros, each call the first of a freshly built seeded mechanism (its building not
timed), the median of many calls; *float* is the tree of ``--float-tree`` (default ``13fdcdb``,
float noise rounded to a grid), *exact* this one, each in its own subprocess, the two
alternating twice and the faster median kept.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = [
    "dp_random_forest",
    "dp_extra_trees_clf",
    "dp_gaussian_nb",
    "dp_boosting_clf",
    "dp_boosting_clf_approx",
    "dp_sgd_logistic",
    "dp_sa_student_clf",
    "dp_experts_clf",
]
TASKS = [*MODELS, "randomized copy", "synthetic measurements"]


def measure_model(key: str, seed: int) -> tuple[float, float]:
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import load_adult, quiet_warnings, seeded

    from dpcore.models.registry import get

    quiet_warnings()
    train, test = load_adult()
    model = seeded(get(key).make(train.context(epsilon=1.0, params={"n_estimators": 10}, random_state=seed)), seed)
    start = time.process_time()
    model.fit(train.X, train.y)
    seconds = time.process_time() - start
    return seconds, float(np.mean(model.predict(test.X) == test.y))


def measure_randomized_copy(seed: int) -> tuple[float, float]:
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import adult_schema

    from dpcore.release import default_plan, release_table
    from dpcore.tables.loading import read_csv_path

    frame, _unused = read_csv_path(ROOT / "sample_data" / "adult.csv")
    schema = adult_schema()
    plan = default_plan(schema)
    numeric = {c.name: c for c in schema.columns if c.kind == "numeric"}
    for entry in plan.columns:
        if entry.column in numeric and entry.mechanism != "drop":
            entry.mechanism, entry.epsilon = "laplace", 1.0
    start = time.process_time()
    result = release_table(frame, schema, plan, random_state=seed)
    seconds = time.process_time() - start
    errors = []
    for entry in plan.columns:
        if entry.mechanism == "laplace":
            spec = numeric[entry.column]
            truth = np.clip(np.asarray(frame[entry.column], dtype=float), spec.lower, spec.upper)
            released = np.asarray(result.table[entry.column], dtype=float)
            # The copy's rows are in a secret order, so the error is between distributions: the mean gap of the
            # sorted columns (Wasserstein-1), as a share of the declared range.
            errors.append(np.mean(np.abs(np.sort(released) - np.sort(truth))) / (spec.upper - spec.lower))
    return seconds, float(np.mean(errors))


def measure_synthetic(seed: int) -> tuple[float, float]:
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import adult_schema

    from dpcore.release import default_plan
    from dpcore.synthetic.budget import Calibration
    from dpcore.synthetic.domain import encode, synthetic_columns
    from dpcore.synthetic.measure import marginal, measure
    from dpcore.tables.loading import read_csv_path

    frame, _unused = read_csv_path(ROOT / "sample_data" / "adult.csv")
    schema = adult_schema()
    columns = synthetic_columns(schema, default_plan(schema))
    shape = tuple(c.size for c in columns)
    rng = np.random.default_rng(seed)
    cells = encode(frame, columns, rng)
    calibration = Calibration(1.0, 1e-5, "gaussian", "add/remove", 1, len(columns))
    start = time.process_time()
    measurements = measure(cells, shape, calibration, rng)
    seconds = time.process_time() - start
    # The noise in units of its nominal σ: √(2/π) ≈ 0.798 for Gaussian noise of that σ, whichever pairs were chosen.
    errors = np.concatenate([np.abs(m.noisy - marginal(cells, shape, m.clique)) / m.stddev for m in measurements])
    return seconds, float(np.mean(errors))


DRAW_SIZES = (1, 10, 1000, 10**6)
DRAW_CALLS = {1: 3000, 10: 3000, 1000: 600, 10**6: 7}


def time_draws() -> dict[str, float]:
    """Median µs of one call per (mechanism, size), each call on a freshly built seeded mechanism."""
    import numpy as np

    from dpcore.mechanisms import Gaussian, Geometric, Laplace

    makers = {
        "laplace": lambda seed: Laplace(1.0, 1.0, random_state=seed),
        "gaussian": lambda seed: Gaussian(0.5, 1.0, random_state=seed),
        "geometric": lambda seed: Geometric(1.0, random_state=seed),
    }
    medians = {}
    for name, make in makers.items():
        for size in DRAW_SIZES:
            values = np.zeros(size, dtype=np.int64 if name == "geometric" else float)
            make(0).randomise(values)  # imports and caches warm
            seconds = []
            for seed in range(DRAW_CALLS[size]):
                mechanism = make(seed)
                start = time.perf_counter()
                mechanism.randomise(values)
                seconds.append(time.perf_counter() - start)
            medians[f"{name} {size}"] = statistics.median(seconds) * 1e6
    return medians


def draws_table(float_tree: str) -> None:
    """Float against exact noise, µs per call, in one run (see the module's docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        before = Path(folder)
        archive = subprocess.run(["git", "archive", float_tree, "dpcore"], cwd=ROOT, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(before, filter="data")
        runs: dict[str, list[dict[str, float]]] = {"float": [], "exact": []}
        for _round in range(2):
            for name, tree in (("float", before), ("exact", ROOT)):
                command = [sys.executable, str(Path(__file__)), "--worker", "draws"]
                environment = {**os.environ, "PYTHONPATH": str(tree)}
                done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, check=True)
                runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("| mechanism | values | float µs | exact µs | exact / float |")
    print("|:--|--:|--:|--:|--:|")
    for key in runs["float"][0]:
        fast, slow = min(r[key] for r in runs["float"]), min(r[key] for r in runs["exact"])
        name, size = key.split()
        print(f"| {name} | {int(size):,} | {fast:,.1f} | {slow:,.1f} | {slow / fast:.2f} |")


def worker(task: str, seed: int) -> None:
    if task == "draws":
        print(json.dumps(time_draws()))
        return
    if task == "randomized copy":
        seconds, score = measure_randomized_copy(seed)
    elif task == "synthetic measurements":
        seconds, score = measure_synthetic(seed)
    else:
        seconds, score = measure_model(task, seed)
    print(json.dumps({"seconds": seconds, "score": score}))


def run(tree: Path, task: str, seed: int) -> dict[str, float]:
    command = [sys.executable, str(tree / "benchmarks" / "exact_noise.py"), "--worker", task, "--seed", str(seed)]
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="04b4f72")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", default=TASKS)
    parser.add_argument("--worker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", action="store_true", help="time the mechanisms' calls, float against exact")
    parser.add_argument("--float-tree", default="13fdcdb")
    args = parser.parse_args()
    if args.draws:
        draws_table(args.float_tree)
        return
    if args.worker:
        worker(args.worker, args.seed)
        return
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        before = Path(folder)
        archive = subprocess.run(
            ["git", "archive", args.before, "dpcore", "benchmarks", "sample_data"], cwd=ROOT, capture_output=True, check=True
        )
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(before, filter="data")
        shutil.copy(Path(__file__), before / "benchmarks" / "exact_noise.py")  # each tree runs its own copy
        rows = []
        for task in args.tasks:
            results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for seed in range(args.repetitions):
                for name, tree in (
                    (("before", before), ("after", ROOT)) if seed % 2 == 0 else (("after", ROOT), ("before", before))
                ):
                    results[name].append(run(tree, task, seed))
            row = {"task": task}
            for name in ("before", "after"):
                row[f"seconds {name}"] = statistics.median(r["seconds"] for r in results[name])
                row[f"score {name}"] = statistics.median(r["score"] for r in results[name])
            row["time ratio"] = row["seconds after"] / row["seconds before"]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    import pandas as pd

    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4f"))
    print(f"\nTotal {time.perf_counter() - started:.0f} s; {args.repetitions} seeded runs per cell, medians.")


if __name__ == "__main__":
    main()
