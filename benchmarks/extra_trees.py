"""DiffPETs (ε-DP ExtraTrees) sweeps, after the DiffPETs paper (shared/spec/reproduction.md, paper B).

Classification — Mushroom, Nursery, Congressional Voting, all features categorical (declared
value sets, ordinal codes); ε ∈ {0.5, 0.75, 1} with t = {10, 10, 5} trees, height h = d/2 (the
model's default), accuracy. Regression — white Wine Quality and Daily Demand Orders, declared
numeric bounds; ε ∈ {0.1, …, 1.0}, t = 10, MSE on the target scaled to [0, 1] by its declared
bounds.

Protocol: 10 repetitions; each repetition draws its own shuffled 5-fold split (stratified for
classification) — ``--protocol holdout`` uses one shuffled 70/30 split per repetition instead.
A repetition's score is the mean over its folds; tables show mean ± sd over repetitions.

Models (registry keys): ours ``dp_extra_trees_clf`` / ``dp_extra_trees_reg`` and
``dp_random_forest`` (classification), diffprivlib's ``dpl_random_forest`` and ``dpl_logistic``
(classification) or ``dpl_linear`` (regression; also shown as ``dpl_linear+clip``, the same fitted
models with predictions clipped to the declared target bounds — free post-processing, without
which its functional mechanism's occasional wild coefficients dominate the MSE), the
``dp_mean`` floor (regression), and non-private scikit-learn ExtraTrees / random forest (the
registry fixes them at 10 trees, also for Voting). Every DP tree ensemble gets
``n_estimators = t``; everything else is the registry default (not tuned).

Run time: about 5 minutes of CPU; the five data sets are swept in ``--jobs`` (default 2)
worker processes, which changes no result (every fit's seed is derived from the task), only
the wall time and the fit times recorded in the CSV.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/extra_trees.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEMAND_TARGET_BOUNDS,
    WINE_QUALITY_BOUNDS,
    Report,
    clipped_regression_sweep,
    load_dataset,
    plt,
    quiet_warnings,
    repeated_sweep,
)

from dpcore.models.registry import get  # noqa: E402

CLASSIFICATION = {"mushroom": 10, "nursery": 10, "voting": 5}  # data set → t (trees)
REGRESSION = {"wine": 10, "demand": 10}
# Public facts about the data sets (UCI pages / shared/data/README.md), for the table titles.
SHAPES = {"mushroom": (8124, 22), "nursery": (12960, 8), "voting": (435, 16), "wine": (4898, 11), "demand": (60, 12)}
MAJORITY = {"mushroom": 4208 / 8124, "nursery": 4320 / 12960, "voting": 267 / 435}
TARGET_BOUNDS = {"wine": WINE_QUALITY_BOUNDS, "demand": DEMAND_TARGET_BOUNDS}
CLF_EPSILONS = [0.5, 0.75, 1.0]
REG_EPSILONS = [round(0.1 * i, 1) for i in range(1, 11)]
CLF_MODELS = [
    "dp_extra_trees_clf",
    "dp_random_forest",
    "dpl_random_forest",
    "dpl_logistic",
    "sk_extra_trees_clf",
    "sk_forest_clf",
]
REG_MODELS = ["dp_extra_trees_reg", "dpl_linear", "dpl_linear+clip", "dp_mean", "sk_extra_trees_reg", "sk_forest_reg"]


def spec_of(key: str):
    """Registry entry of ``key``; ``"<key>+clip"`` is that model with predictions clipped to the target bounds."""
    return get(key.removesuffix("+clip"))


def number(value: float, digits: int) -> str:
    """Fixed decimals, or scientific notation for the diverging figures (≥ 1000)."""
    return f"{value:.2e}" if abs(value) >= 1000 else f"{value:.{digits}f}"


def per_repetition(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean over folds per (model, ε, repetition)."""
    rows = results[results["metric"] == metric]
    return rows.groupby(["dataset", "model", "epsilon", "repetition"], dropna=False)["value"].mean().reset_index()


def summary_table(reps: pd.DataFrame, models: list[str], epsilons: list[float], digits: int) -> pd.DataFrame:
    """Rows ε, columns models: 'mean ± sd' over repetitions (non-private: same figure on every row)."""
    stats = reps.groupby(["model", "epsilon"], dropna=False)["value"].agg(["mean", "std"]).reset_index()
    table = {"ε": [f"{e:g}" for e in epsilons]}
    for key in models:
        spec = spec_of(key)
        mine = stats[stats["model"] == key]
        cells = []
        for eps in epsilons:
            row = mine if not spec.private else mine[np.isclose(mine["epsilon"], eps)]
            cells.append("—" if row.empty else f"{number(row['mean'].iloc[0], digits)} ± {number(row['std'].iloc[0], digits)}")
        table[f"{key}{'' if spec.private else ' (non-private)'}"] = cells
    return pd.DataFrame(table)


def plot(axis, reps: pd.DataFrame, models: list[str], title: str, ylabel: str) -> None:
    stats = reps.groupby(["model", "epsilon"], dropna=False)["value"].agg(["mean", "std"]).reset_index()
    for key in models:
        spec = spec_of(key)
        mine = stats[stats["model"] == key].sort_values("epsilon")
        if mine.empty:
            continue
        if spec.private:
            axis.errorbar(mine["epsilon"], mine["mean"], yerr=mine["std"], marker="o", capsize=3, label=f"{key} ({spec.kind})")
        else:
            axis.axhline(
                mine["mean"].iloc[0],
                linestyle="--",
                linewidth=1,
                color="grey" if "extra" in key else "black",
                label=f"{key} (non-private)",
            )
    axis.set_title(title)
    axis.set_xlabel("ε")
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)


def sweep_one(name: str, reps_n: int, protocol: str, clf_eps: list, reg_eps: list, seed: int):
    """One data set's whole sweep (run in a worker process): (name, results, per-repetition scores, seconds)."""
    quiet_warnings()
    t0 = time.perf_counter()
    data = load_dataset(name)
    if name in CLASSIFICATION:
        results = repeated_sweep(data, CLF_MODELS, clf_eps, reps_n, protocol, seed, params={"n_estimators": CLASSIFICATION[name]})
        results.insert(0, "dataset", data.name)
        return name, results, per_repetition(results, "accuracy"), time.perf_counter() - t0
    trees = REGRESSION[name]
    fitted_by_sweep = [m for m in REG_MODELS if not m.startswith("dpl_linear")]
    results = repeated_sweep(data, fitted_by_sweep, reg_eps, reps_n, protocol, seed, params={"n_estimators": trees})
    span = data.target_bounds[1] - data.target_bounds[0]
    mse = results[results["metric"] == "RMSE"].copy()
    mse["metric"] = "MSE (normalised)"
    mse["value"] = (mse["value"] / span) ** 2
    clipped = clipped_regression_sweep(data, "dpl_linear", reg_eps, reps_n, protocol, seed, params={"n_estimators": trees})
    results = pd.concat([results, mse, clipped], ignore_index=True)
    results.insert(0, "dataset", data.name)
    return name, results, per_repetition(results, "MSE (normalised)"), time.perf_counter() - t0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 repetitions, holdout, fewer ε")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument(
        "--protocol",
        choices=["cv5", "holdout"],
        default="cv5",
        help="cv5: a fresh shuffled 5-fold split per repetition; holdout: a fresh 70/30 split per repetition",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="data sets swept in parallel processes (results do not depend on it; fit times in the CSV do)",
    )
    parser.add_argument("--seed", type=int, default=20240)
    args = parser.parse_args(argv)
    quiet_warnings()
    reps_n, protocol = args.repetitions, args.protocol
    clf_eps, reg_eps = CLF_EPSILONS, REG_EPSILONS
    if args.quick:
        reps_n, protocol, clf_eps, reg_eps = 2, "holdout", [0.5, 1.0], [0.1, 0.5, 1.0]

    report = Report("extra_trees_quick" if args.quick else "extra_trees")  # a smoke run never overwrites the full results
    started = time.perf_counter()
    report.say("## DiffPETs sweeps (paper B)")
    report.say()
    split_text = "a fresh shuffled 5-fold split" if protocol == "cv5" else "a fresh shuffled 70/30 split"
    report.say(
        f"{reps_n} repetitions, each on {split_text} (stratified for classification); "
        "cells are mean ± sd over repetitions of the per-repetition mean. Seed "
        f"{args.seed}. Non-private models: scikit-learn, 10 trees, same splits."
    )
    report.say()

    # Longest sweeps first so two workers finish together; results are shown in the fixed order below.
    order = ["nursery", "mushroom", "wine", "voting", "demand"]
    work = [(name, reps_n, protocol, clf_eps, reg_eps, args.seed) for name in order]
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            done = {name: out for name, *out in pool.map(sweep_one, *zip(*work))}
    else:
        done = {name: out for name, *out in (sweep_one(*w) for w in work)}

    all_results = []
    figure, axes = plt.subplots(2, 3, figsize=(16, 9))
    panels = iter(axes.ravel())
    checks = []
    for name, trees in CLASSIFICATION.items():
        results, reps, seconds = done[name]
        data_name, shape = results["dataset"].iloc[0], SHAPES[name]
        report.table(
            summary_table(reps, CLF_MODELS, clf_eps, 3),
            f"{data_name} ({shape[0]} × {shape[1]}), accuracy; t = {trees}, h = d/2 = {max(1, shape[1] // 2)}; "
            f"majority class {MAJORITY[name]:.3f} (worker time {seconds:.0f} s)",
        )
        if name in ("mushroom", "nursery"):
            means = reps.groupby(["model", "epsilon"])["value"].mean()
            for eps in clf_eps:
                checks.append((data_name, eps, means[("dp_extra_trees_clf", eps)], means[("dpl_random_forest", eps)]))
        plot(next(panels), reps, CLF_MODELS, f"{data_name} (t = {trees})", "accuracy")
        all_results.append(results)

    for name, trees in REGRESSION.items():
        results, reps, seconds = done[name]
        data_name, shape = results["dataset"].iloc[0], SHAPES[name]
        report.table(
            summary_table(reps, REG_MODELS, reg_eps, 4),
            f"{data_name} ({shape[0]} × {shape[1]}), MSE on the target scaled by its declared bounds "
            f"{TARGET_BOUNDS[name]}; t = {trees}, h = d/2 = {max(1, shape[1] // 2)} (worker time {seconds:.0f} s)",
            digits=4,
        )
        axis = next(panels)
        plot(
            axis,
            reps,
            [m for m in REG_MODELS if m != "dpl_linear"],
            f"{data_name} (t = {trees}; dpl_linear clipped)",
            "MSE (normalised target)",
        )
        axis.set_yscale("log")
        all_results.append(results)

    for axis in panels:
        axis.axis("off")
    report.say("### Target: DiffPETs at least as accurate as diffprivlib's random forest (Mushroom, Nursery, every ε)")
    report.say()
    report.table(
        pd.DataFrame(
            [
                {
                    "data set": d,
                    "ε": f"{e:g}",
                    "dp_extra_trees_clf": o,
                    "dpl_random_forest": t,
                    "holds": "yes" if o >= t else "NO",
                }
                for d, e, o, t in checks
            ]
        )
    )
    report.say(f"Total run time: {time.perf_counter() - started:.0f} s ({args.jobs} worker process(es))")
    figure.suptitle("DiffPETs sweeps: ours vs diffprivlib vs scikit-learn (mean ± sd over repetitions)")
    figure.tight_layout()
    report.save(pd.concat(all_results, ignore_index=True), figure)


if __name__ == "__main__":
    main()
