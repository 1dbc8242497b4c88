"""CPU time of the smooth-sensitivity median before and after its exact noise (benchmarks/README.md §24).

Per ``randomise`` call (rows of 25 answers, ε = 1, heavy-tailed and Laplace noise) and the fit of
the regression student ``dp_sa_student_reg`` (its one call: 100 queries × 100 blocks) on
California housing, numeric columns scaled to [0, 1], 80 % to train, ε = 1, seeds 0–4. *Before*
is a commit's ``dpcore`` (``git archive``), *after* this tree; each measurement runs in its own
subprocess, the two trees alternating. CPU seconds (``time.process_time``), medians.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/smooth_median_speed.py --before 1880317`` (about a minute).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CALLS = """
import json, time, numpy as np
from dpcore.mechanisms.smooth_median import SmoothMedian
rng = np.random.default_rng(0)
out = {}
for delta in (0.0, 1e-5):
    for rows in (1, 100, 10_000):
        x = rng.random((rows, 25))
        times = []
        for seed in range(max(3, 3000 // rows)):
            mechanism = SmoothMedian(1.0, delta, random_state=seed)
            start = time.process_time()
            mechanism.randomise(x)
            times.append(time.process_time() - start)
        out[f"{'laplace' if delta else 'heavy-tailed'} {rows}"] = float(np.median(times)) * 1e6
print(json.dumps(out))
"""

STUDENT = """
import json, sys, time, numpy as np, pandas as pd
from dpcore.models.registry import MODELS, ModelContext
frame = pd.read_csv(sys.argv[1])
y = frame["median_house_value"].to_numpy(float)
X = frame.drop(columns=["median_house_value"]).select_dtypes("number").fillna(0).to_numpy(float)
X = (X - X.min(0)) / (X.max(0) - X.min(0))
y = (y - y.min()) / (y.max() - y.min())
order = np.random.default_rng(0).permutation(len(X))
X, y = X[order], y[order]
n = len(X) * 4 // 5
context = ModelContext(n_features=X.shape[1], epsilon=1.0, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0), random_state=int(sys.argv[2]))
model = MODELS["dp_sa_student_reg"].make(context)
start = time.process_time()
model.fit(X[:n], y[:n])
seconds = time.process_time() - start
residual = ((model.predict(X[n:]) - y[n:]) ** 2).sum() / ((y[n:] - y[n:].mean()) ** 2).sum()
print(json.dumps({"seconds": seconds, "r2": 1 - residual}))
"""


def _run(tree: Path, code: str, *args: str) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    # cwd too: `python -c` puts the working folder first on sys.path.
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=tree, env=environment, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit whose dpcore is 'before'")
    args = parser.parse_args()
    data = str(ROOT / "sample_data" / "california_housing.csv")
    archive = subprocess.run(["git", "archive", args.before, "dpcore"], cwd=ROOT, capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as folder, tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
        trees = {"before": Path(folder), "after": ROOT}
        calls = {name: [_run(tree, CALLS) for _ in range(2)] for name, tree in trees.items()}
        print("| call | before µs | after µs |\n|:--|--:|--:|")
        for key in calls["before"][0]:
            before, after = (min(run[key] for run in calls[name]) for name in ("before", "after"))
            print(f"| {key} | {before:,.1f} | {after:,.1f} |")
        fits: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for seed in range(5):
            for name in ("before", "after") if seed % 2 == 0 else ("after", "before"):
                fits[name].append(_run(trees[name], STUDENT, data, str(seed)))
        seconds = {name: statistics.median(fit["seconds"] for fit in fits[name]) for name in fits}
        r2 = {name: statistics.median(fit["r2"] for fit in fits[name]) for name in fits}
        print(
            f"\nstudent fit: {seconds['before']:.4f} s → {seconds['after']:.4f} s "
            f"({seconds['after'] / seconds['before']:.2f}×), R² {r2['before']:.3f} → {r2['after']:.3f}"
        )


if __name__ == "__main__":
    main()
