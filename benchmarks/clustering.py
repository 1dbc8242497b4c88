"""DP grid density clustering (spec §10.4) against non-private DBSCAN, the truth, and diffprivlib's DP k-means.

Data:
* California Housing (sample_data/), longitude × latitude, and longitude × latitude × median
  income, with the bounds declared in sample_data/california_housing.schema.json.
* Synthetic blobs with known truth: scikit-learn's ``make_blobs``, four centres in [0, 100]²
  ((20, 20), (20, 75), (75, 30), (70, 80)), standard deviation 4, 20,000 rows, seed 2024;
  bounds [0, 100] declared.

For each ε in {0.1, 0.5, 1, 4} and ``--runs`` seeds (default 10): our map with its defaults
(resolution chosen privately from 5 % of ε, MinPts 5 or the noise floor, corner neighbours, Laplace
noise), the same with a declared grid (48 cells a side for California's map, 20 with income, 32
for the blobs), and diffprivlib's DP k-means at the same ε with k = the number of groups our map found (at
least 2; post-processing of the map, so a private choice). Scored on every row (owner's-eyes
figures, not a release) by the adjusted Rand index (ARI; rows in no group count as one group):

* against scikit-learn's DBSCAN on the same grid resolution (Eps = one cell side on the
  declared-bounds scale, MinPts 5), non-private;
* against the same grid without noise (threshold MinPts 5): what the noise alone costs;
* against the truth (blobs only);

with the share of rows that fall in a group, the number of groups, and the mean absolute
error of a cell's noisy count. Fit time of the map at 10⁶ rows (2-D and 4-D) is the median of
``--repeats`` fits (default 5), beside diffprivlib's and scikit-learn's k-means (one fit each).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/clustering.py`` (``--quick``: 2 runs, 10⁵ rows).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import DBSCAN, KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, Report, quiet_warnings  # noqa: E402

from dpcore.clustering import feature_matrix  # noqa: E402
from dpcore.models.clustering import DPGridDensityClustering  # noqa: E402
from dpcore.tables.loading import read_csv_path  # noqa: E402
from dpcore.tables.schema import load_schema  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 4.0)
BLOB_CENTRES = [[20, 20], [20, 75], [75, 30], [70, 80]]
MIN_PTS = 5


def data_sets(seed: int) -> dict[str, tuple[np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray | None, int]]:
    """``{name: (X in units, declared (lower, upper), truth or None, a declared resolution to try besides the automatic one)}``."""
    frame, _ = read_csv_path(ROOT / "sample_data" / "california_housing.csv")
    schema = load_schema(ROOT / "sample_data" / "california_housing.schema.json")
    out = {}
    for columns, declared in ((["longitude", "latitude"], 48), (["longitude", "latitude", "median_income"], 20)):
        bounds = (np.array([schema[c].bounds[0] for c in columns]), np.array([schema[c].bounds[1] for c in columns]))
        out["California " + " × ".join(columns)] = (feature_matrix(frame, schema, columns), bounds, None, declared)
    X, y = make_blobs(n_samples=20_000, centers=BLOB_CENTRES, cluster_std=4.0, random_state=seed)
    out["Blobs (4 centres, 20,000 rows)"] = (X, (np.zeros(2), np.full(2, 100.0)), y, 32)
    return out


def _unit(X: np.ndarray, bounds) -> np.ndarray:
    lower, upper = bounds
    return np.clip((X - lower) / (upper - lower), 0.0, 1.0)


def _dbscan(unit: np.ndarray, resolution: int, cache: dict) -> np.ndarray:
    if resolution not in cache:
        cache[resolution] = DBSCAN(eps=1.0 / resolution, min_samples=MIN_PTS).fit_predict(unit)
    return cache[resolution]


def _noiseless(X: np.ndarray, bounds, shape) -> tuple[np.ndarray, np.ndarray]:
    """The same grid without noise (labels per row, true counts), by fitting with an enormous ε and MinPts 5."""
    exact = DPGridDensityClustering(epsilon=1e9, bounds=bounds, resolution=list(shape), min_pts=MIN_PTS, random_state=0).fit(X)
    return exact.predict(X), np.rint(exact.noisy_counts_)


def run(name: str, X: np.ndarray, bounds, truth, declared: int, runs: int, seed: int) -> list[dict]:
    unit = _unit(X, bounds)
    dbscan_cache: dict = {}
    rows = []
    for e_index, epsilon in enumerate(EPSILONS):
        for run_index in range(runs):
            run_seed = int(np.random.SeedSequence([seed, e_index, run_index]).generate_state(1)[0])
            for resolution in (None, declared):
                started = time.perf_counter()
                model = DPGridDensityClustering(epsilon=epsilon, bounds=bounds, resolution=resolution, random_state=run_seed).fit(
                    X
                )
                seconds = time.perf_counter() - started
                labels = model.predict(X)
                reference = _dbscan(unit, model.grid_shape_[0], dbscan_cache)
                exact_labels, exact_counts = _noiseless(X, bounds, model.grid_shape_)
                common = {"data": name, "epsilon": epsilon, "run": run_index, "resolution": model.grid_shape_[0]}
                rows.append(
                    {
                        **common,
                        "method": "ours, " + ("automatic grid" if resolution is None else "declared grid"),
                        "groups": model.n_clusters_,
                        "in a group": float(np.mean(labels >= 0)),
                        "ARI vs DBSCAN": adjusted_rand_score(reference, labels),
                        "ARI vs noiseless grid": adjusted_rand_score(exact_labels, labels),
                        "ARI vs truth": adjusted_rand_score(truth, labels) if truth is not None else np.nan,
                        "cell MAE": float(np.mean(np.abs(model.noisy_counts_ - exact_counts))),
                        "seconds": seconds,
                    }
                )
                if resolution is not None:
                    continue
                # diffprivlib's DP k-means at the same ε, asked for as many groups as the automatic map found.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from diffprivlib.models import KMeans as DPKMeans

                    dp_kmeans = (
                        DPKMeans(n_clusters=max(model.n_clusters_, 2), epsilon=epsilon, bounds=(0.0, 1.0), random_state=run_seed)
                        .fit(unit)
                        .labels_
                    )
                rows.append(
                    {
                        **common,
                        "method": "diffprivlib k-means",
                        "groups": len(np.unique(dp_kmeans)),
                        "in a group": 1.0,
                        "ARI vs DBSCAN": adjusted_rand_score(reference, dp_kmeans),
                        "ARI vs noiseless grid": np.nan,
                        "ARI vs truth": adjusted_rand_score(truth, dp_kmeans) if truth is not None else np.nan,
                        "cell MAE": np.nan,
                        "seconds": np.nan,
                    }
                )
        print(f"  {name}: ε = {epsilon:g} done", flush=True)
    # Non-private references, once per resolution the map used (k = the truth's 4 for the blobs, else 8).
    for resolution, reference in dbscan_cache.items():
        kmeans = KMeans(n_clusters=4 if truth is not None else 8, n_init="auto", random_state=seed).fit_predict(unit)
        common = {"data": name, "epsilon": np.nan, "run": 0, "resolution": resolution}
        rows.append(
            {
                **common,
                "method": "scikit-learn DBSCAN",
                "groups": len(set(reference) - {-1}),
                "in a group": float(np.mean(reference >= 0)),
                "ARI vs DBSCAN": 1.0,
                "ARI vs truth": adjusted_rand_score(truth, reference) if truth is not None else np.nan,
            }
        )
        rows.append(
            {
                **common,
                "method": "scikit-learn k-means",
                "groups": len(np.unique(kmeans)),
                "in a group": 1.0,
                "ARI vs DBSCAN": adjusted_rand_score(reference, kmeans),
                "ARI vs truth": adjusted_rand_score(truth, kmeans) if truth is not None else np.nan,
            }
        )
    return rows


def timing(n_rows: int, repeats: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d, resolution in ((2, None), (2, 64), (4, 16), (4, 32)):
        centres = rng.random((5, d))
        X = centres[rng.integers(0, 5, n_rows)] + 0.05 * rng.standard_normal((n_rows, d))
        times, shape = [], None
        for r in range(repeats):
            started = time.perf_counter()
            model = DPGridDensityClustering(epsilon=1.0, resolution=resolution, random_state=r).fit(X)
            times.append(time.perf_counter() - started)
            shape = model.grid_shape_
        rows.append(
            {
                "rows": n_rows,
                "features": d,
                "grid": " × ".join(map(str, shape)),
                "method": "ours" + (" (automatic resolution)" if resolution is None else ""),
                "seconds (median)": float(np.median(times)),
            }
        )
        if d == 2 and resolution is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from diffprivlib.models import KMeans as DPKMeans

                started = time.perf_counter()
                DPKMeans(n_clusters=5, epsilon=1.0, bounds=(-1.0, 2.0), random_state=0).fit(X)
                rows.append(
                    {
                        "rows": n_rows,
                        "features": d,
                        "grid": "",
                        "method": "diffprivlib k-means (k = 5, one fit)",
                        "seconds (median)": time.perf_counter() - started,
                    }
                )
            started = time.perf_counter()
            KMeans(n_clusters=5, n_init=1, random_state=0).fit(X)
            rows.append(
                {
                    "rows": n_rows,
                    "features": d,
                    "grid": "",
                    "method": "scikit-learn k-means (k = 5, one fit)",
                    "seconds (median)": time.perf_counter() - started,
                }
            )
    return pd.DataFrame(rows)


def summary(results: pd.DataFrame, name: str) -> pd.DataFrame:
    part = results[(results["data"] == name) & results["epsilon"].notna()]
    table = (
        part.groupby(["epsilon", "method"], sort=False)
        .agg(
            resolution=("resolution", "median"),
            groups=("groups", "median"),
            in_group=("in a group", "mean"),
            ari_dbscan=("ARI vs DBSCAN", "mean"),
            ari_dbscan_sd=("ARI vs DBSCAN", "std"),
            ari_grid=("ARI vs noiseless grid", "mean"),
            ari_truth=("ARI vs truth", "mean"),
            cell_mae=("cell MAE", "mean"),
        )
        .reset_index()
    )
    table = table.rename(
        columns={
            "in_group": "share in a group",
            "ari_dbscan": "ARI vs DBSCAN",
            "ari_dbscan_sd": "(sd)",
            "ari_grid": "ARI vs noiseless grid",
            "ari_truth": "ARI vs truth",
            "cell_mae": "cell MAE",
        }
    )
    return table.dropna(axis=1, how="all")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 runs per ε, timing at 10^5 rows")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    quiet_warnings()
    runs, n_rows = (2, 100_000) if args.quick else (args.runs, 1_000_000)
    report = Report("clustering")
    started = time.perf_counter()
    results = []
    for name, (X, bounds, truth, declared) in data_sets(args.seed).items():
        results += run(name, X, bounds, truth, declared, runs, args.seed)
    results = pd.DataFrame(results)
    report.say(f"## DP grid density clustering ({runs} runs per ε; {time.perf_counter() - started:.0f} s)")
    report.say()
    for name in results["data"].unique():
        report.table(summary(results, name), title=name)
        references = results[(results["data"] == name) & results["epsilon"].isna()]
        cols = ["method", "resolution", "groups", "in a group", "ARI vs DBSCAN", "ARI vs truth"]
        report.table(
            references[[c for c in cols if references[c].notna().any()]],
            title=f"{name}: non-private references at the resolutions the map used",
        )
    report.table(timing(n_rows, args.repeats, args.seed), title=f"Fit time at {n_rows:,} rows (ε = 1)", digits=3)
    report.save(results)


if __name__ == "__main__":
    main()
