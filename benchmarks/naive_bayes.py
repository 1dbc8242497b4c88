"""DP Gaussian Naive Bayes accuracy vs ε (the thesis's figure; shared/spec/reproduction.md).

ε on a log grid from 10⁻² to 10² (``--points``, default 17: quarter decades), ``--runs`` fits
per ε and model (default 50; the thesis used 200), accuracy averaged. Ours
(``dp_gaussian_nb``) beside diffprivlib's GaussianNB (``dpl_gaussian_nb``, what the thesis
used) and scikit-learn's (``sk_gaussian_nb``, non-private, fitted once).

Data:
* Adult, numeric columns only (age, education-num, capital-gain, capital-loss,
  hours-per-week) with the bounds declared in sample_data/adult.schema.json; the given
  train/test split (adult.data / adult.test).
* White Wine Quality binarised (quality ≥ 7 → "yes"), 11 physico-chemical features with
  bounds declared from public knowledge (see _common.WINE_BOUNDS); one fixed stratified
  70/30 split (seeded); runs differ only in the models' noise.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/naive_bayes.py`` (``--quick``; ``--runs 200`` for
the thesis's count).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, fit_and_score, load_adult, load_dataset, plt, quiet_warnings, splits  # noqa: E402

DP_MODELS = ["dp_gaussian_nb", "dpl_gaussian_nb"]
REFERENCE = "sk_gaussian_nb"


def data_sets(seed: int):
    adult_train, adult_test = load_adult(numeric_only=True)
    wine = load_dataset("wine_binary")
    ((train, test),) = splits(wine.y, wine.task, "holdout", seed)
    wine_train = replace(wine, name=f"{wine.name} (train 70 %)", X=wine.X[train], y=wine.y[train])
    wine_test = replace(wine, name=f"{wine.name} (test 30 %)", X=wine.X[test], y=wine.y[test])
    return {"Adult (5 numeric columns)": (adult_train, adult_test), "White Wine (quality ≥ 7)": (wine_train, wine_test)}


def run_seed(seed: int, model_index: int, eps_index: int, run: int) -> int:
    return int(np.random.SeedSequence([seed, model_index, eps_index, run]).generate_state(1)[0])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 9 grid points, 5 runs")
    parser.add_argument("--runs", type=int, default=50, help="fits per ε and model (thesis: 200)")
    parser.add_argument("--points", type=int, default=17, help="log-grid points from 1e-2 to 1e2 (>= 9)")
    parser.add_argument("--seed", type=int, default=20241)
    args = parser.parse_args(argv)
    quiet_warnings()
    runs, points = (5, 9) if args.quick else (args.runs, max(9, args.points))
    epsilons = np.logspace(-2, 2, points)

    report = Report("naive_bayes_quick" if args.quick else "naive_bayes")  # a smoke run never overwrites the full results
    started = time.perf_counter()
    report.say("## Gaussian Naive Bayes accuracy vs ε (thesis figure)")
    report.say()
    report.say(
        f"{points} ε on a log grid 1e-2 … 1e2, {runs} runs per ε and DP model (mean ± sd of test accuracy); seed {args.seed}."
    )
    report.say()

    rows = []
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for axis, (title, (train, test)) in zip(axes, data_sets(args.seed).items()):
        t0 = time.perf_counter()
        reference, _ = fit_and_score(REFERENCE, train, test, 1.0, args.seed)
        majority = pd.Series(train.y).value_counts().index[0]
        majority_rate = float(np.mean(test.y == majority))
        for m, key in enumerate(DP_MODELS):
            for e, eps in enumerate(epsilons):
                for run in range(runs):
                    accuracy, seconds = fit_and_score(key, train, test, float(eps), run_seed(args.seed, m, e, run))
                    rows.append(
                        {
                            "dataset": title,
                            "model": key,
                            "epsilon": float(eps),
                            "run": run,
                            "accuracy": accuracy,
                            "fit_seconds": seconds,
                        }
                    )
        rows.append(
            {"dataset": title, "model": REFERENCE, "epsilon": np.nan, "run": 0, "accuracy": reference, "fit_seconds": np.nan}
        )
        frame = pd.DataFrame([r for r in rows if r["dataset"] == title and r["model"] in DP_MODELS])
        stats = frame.groupby(["model", "epsilon"])["accuracy"].agg(["mean", "std"]).reset_index()
        table = {"ε": [f"{e:.3g}" for e in epsilons]}
        for key in DP_MODELS:
            mine = stats[stats["model"] == key].sort_values("epsilon")
            table[key] = [f"{a:.3f} ± {s:.3f}" for a, s in zip(mine["mean"], mine["std"])]
            axis.plot(mine["epsilon"], mine["mean"], marker="o", markersize=3, label=key)
            axis.fill_between(mine["epsilon"], mine["mean"] - mine["std"], mine["mean"] + mine["std"], alpha=0.2)
        better = stats.pivot(index="epsilon", columns="model", values="mean")
        table["ours − diffprivlib"] = [f"{d:+.3f}" for d in (better["dp_gaussian_nb"] - better["dpl_gaussian_nb"])]
        report.table(
            pd.DataFrame(table),
            f"{title}: train {len(train.y)}, test {len(test.y)}, d = {train.n_features}; {REFERENCE} (non-private) "
            f"{reference:.3f}; majority class {majority_rate:.3f} ({time.perf_counter() - t0:.0f} s)",
        )
        axis.axhline(reference, linestyle="--", color="black", linewidth=1, label=f"{REFERENCE} (non-private)")
        axis.axhline(majority_rate, linestyle=":", color="grey", linewidth=1, label="majority class")
        axis.set_xscale("log")
        axis.set_xlabel("ε")
        axis.set_ylabel("test accuracy")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)

    report.say(f"Total run time: {time.perf_counter() - started:.0f} s")
    figure.suptitle(f"DP Gaussian NB: mean ± sd over {runs} runs per ε")
    figure.tight_layout()
    report.save(pd.DataFrame(rows), figure)


if __name__ == "__main__":
    main()
