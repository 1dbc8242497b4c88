"""Every registry classifier on Adult's given train/test split, accuracy and fit time vs ε, plus a speed table.

Data: sample_data/adult.csv (= adult.data, 32,561 rows) for training, shared
adult/adult_test.csv (= adult.test, 16,281 rows, labels' trailing '.' stripped) for testing,
with the declared schema sample_data/adult.schema.json: 13 features (fnlwgt ignored),
categoricals ordinal-coded over their declared categories (``--encoding onehot`` for one 0/1
column per level). Rows whose label is not declared are dropped.

1. Accuracy sweep: every classifier in the registry (ours, diffprivlib, InterpretML DP-EBM,
   non-private scikit-learn) at ε ∈ {0.1, 0.5, 1, 2, 4, 8} with registry defaults (tree
   ensembles 10 trees), ``--repetitions`` fits per (model, ε) with different seeds (default 3);
   median test accuracy and median fit time. Non-private models: ``--repetitions`` fits, no ε.
   DP-EBM is (ε, δ = 1e-5)-DP; the others pure ε-DP.
2. Speed: our 10-tree DP random forest and DP ExtraTrees vs scikit-learn's 10-tree ExtraTrees
   and diffprivlib's 10-tree random forest on Adult's training set at ε = 1, median of 5 fits
   each, one run, with the ratios.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/adult.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, fit_and_score, load_adult, plt, quiet_warnings, seeded  # noqa: E402

from dpcore.models.registry import get, models_for  # noqa: E402

EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]
SPEED_MODELS = ["dp_random_forest", "dp_extra_trees_clf", "sk_extra_trees_clf", "dpl_random_forest"]
SPEED_PAIRS = [
    ("dp_random_forest", "sk_extra_trees_clf"),
    ("dp_random_forest", "dpl_random_forest"),
    ("dp_extra_trees_clf", "sk_extra_trees_clf"),
    ("dp_extra_trees_clf", "dpl_random_forest"),
]


def seed_for(seed: int, key: str, eps_index: int, rep: int) -> int:
    return int(np.random.SeedSequence([seed, sum(map(ord, key)), eps_index, rep]).generate_state(1)[0])


def accuracy_sweep(train, test, epsilons, repetitions, seed, log) -> pd.DataFrame:
    rows = []
    for spec in models_for("classification"):
        t0 = time.perf_counter()
        grid = list(enumerate(epsilons)) if spec.private else [(-1, float("nan"))]
        for e, eps in grid:
            for rep in range(repetitions):
                accuracy, seconds = fit_and_score(
                    spec.key, train, test, eps, seed_for(seed, spec.key, e + 1, rep), params={"n_estimators": 10}
                )
                rows.append(
                    {
                        "model": spec.key,
                        "name": spec.name,
                        "kind": spec.kind,
                        "epsilon": eps,
                        "repetition": rep,
                        "accuracy": accuracy,
                        "fit_seconds": seconds,
                    }
                )
        log(f"  {spec.key}: {time.perf_counter() - t0:.1f} s")
    return pd.DataFrame(rows)


def wide(results: pd.DataFrame, column: str, epsilons, digits: int) -> pd.DataFrame:
    """Rows models, columns ε (non-private: one 'no ε' column); cells the median over repetitions."""
    med = results.groupby(["model", "epsilon"], dropna=False)[column].median()
    out = []
    for key in dict.fromkeys(results["model"]):
        spec = get(key)
        row = {"model": key, "kind": spec.kind}
        for eps in epsilons:
            row[f"ε={eps:g}"] = round(float(med[(key, eps)]), digits) if spec.private else None
        row["non-private"] = None if spec.private else round(float(results.loc[results["model"] == key, column].median()), digits)
        out.append(row)
    return pd.DataFrame(out)


def speed_table(train, fits: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    times = {}
    for key in SPEED_MODELS:
        spec = get(key)
        seconds = []
        for rep in range(fits):
            model = seeded(
                spec.make(train.context(epsilon=1.0, params={"n_estimators": 10}, random_state=seed + rep)), seed + rep
            )
            start = time.perf_counter()
            model.fit(train.X, train.y)
            seconds.append(time.perf_counter() - start)
        times[key] = float(np.median(seconds))
    table = pd.DataFrame([{"model": k, "kind": get(k).kind, "trees": 10, "median fit (s)": v} for k, v in times.items()])
    ratios = pd.DataFrame(
        [
            {
                "ours": a,
                "reference": b,
                "ours / reference": times[a] / times[b],
                "within 2×": "yes" if times[a] <= 2 * times[b] else "NO",
            }
            for a, b in SPEED_PAIRS
        ]
    )
    return table, ratios


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: ε ∈ {1, 4}, 1 repetition, 2 speed fits")
    parser.add_argument("--repetitions", type=int, default=3, help="fits per (model, ε); medians reported")
    parser.add_argument("--speed-fits", type=int, default=5)
    parser.add_argument("--encoding", choices=["ordinal", "onehot"], default="ordinal")
    parser.add_argument("--seed", type=int, default=20242)
    args = parser.parse_args(argv)
    quiet_warnings()
    epsilons, reps, speed_fits = EPSILONS, args.repetitions, args.speed_fits
    if args.quick:
        epsilons, reps, speed_fits = [1.0, 4.0], 1, 2

    report = Report("adult_quick" if args.quick else "adult")  # a smoke run never overwrites the full results
    started = time.perf_counter()
    train, test = load_adult(encoding=args.encoding)
    majority = pd.Series(train.y).value_counts().index[0]
    report.say("## Adult: every registry classifier, given train/test split")
    report.say()
    report.say(
        f"Train {len(train.y)} rows, test {len(test.y)} rows, {train.n_features} features ({args.encoding} encoding). "
        f"Majority class '{majority}': {np.mean(test.y == majority):.4f} of the test split "
        f"({np.mean(train.y == majority):.4f} of train). {reps} fits per (model, ε), medians; seed {args.seed}."
    )
    report.say()

    results = accuracy_sweep(train, test, epsilons, reps, args.seed, lambda text: print(text, file=sys.stderr, flush=True))
    report.table(wide(results, "accuracy", epsilons, 4), "Test accuracy (median over repetitions)", digits=4)
    report.table(wide(results, "fit_seconds", epsilons, 3), "Fit time in seconds (median over repetitions)", digits=3)

    report.say("### Targets (best DP classifier of ours on the test split)")
    report.say()
    medians = results.groupby(["model", "kind", "epsilon"], dropna=False)["accuracy"].median().reset_index()
    target_rows = []
    for eps, goal in ((1.0, 0.80), (4.0, 0.82)):
        if eps not in epsilons:
            continue
        at = medians[np.isclose(medians["epsilon"], eps)]
        ours = at[at["kind"] == "ours"].sort_values("accuracy", ascending=False).iloc[0]
        anyone = at.sort_values("accuracy", ascending=False).iloc[0]
        target_rows.append(
            {
                "ε": f"{eps:g}",
                "goal": goal,
                "best of ours": ours["model"],
                "accuracy": ours["accuracy"],
                "holds": "yes" if ours["accuracy"] >= goal else "NO",
                "best DP overall": f"{anyone['model']} ({anyone['accuracy']:.4f})",
            }
        )
    report.table(pd.DataFrame(target_rows), digits=4)

    t0 = time.perf_counter()
    speed, ratios = speed_table(train, speed_fits, args.seed)
    report.table(
        speed,
        f"Speed on Adult's training set ({len(train.y)} rows), ε = 1, median of {speed_fits} fits "
        f"({time.perf_counter() - t0:.0f} s)",
        digits=3,
    )
    report.table(ratios, "Speed ratios (ours ÷ reference; target: within 2×)", digits=2)
    report.say(f"Total run time: {time.perf_counter() - started:.0f} s")

    figure, (left, right) = plt.subplots(1, 2, figsize=(15, 5.5), gridspec_kw={"width_ratios": [2, 1]})
    styles = {"ours": "-", "diffprivlib": "--", "interpret": "-."}
    for key, group in medians.groupby("model"):
        spec = get(key)
        if spec.private:
            group = group.sort_values("epsilon")
            left.plot(group["epsilon"], group["accuracy"], styles[spec.kind], marker="o", label=f"{key} ({spec.kind})")
        else:
            left.axhline(group["accuracy"].iloc[0], linestyle=":", linewidth=1, color="grey")
            left.annotate(key, (max(epsilons), group["accuracy"].iloc[0]), fontsize=6, color="grey", ha="right", va="bottom")
    left.axhline(np.mean(test.y == majority), color="red", linewidth=1, label="majority class")
    left.set_xscale("log")
    left.set_xlabel("ε")
    left.set_ylabel("test accuracy (median)")
    left.set_title("Adult, given split (grey dotted: non-private)")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    right.barh(speed["model"], speed["median fit (s)"], color=["C0", "C0", "grey", "C1"])
    right.set_xlabel("median fit time (s), 10 trees, ε = 1")
    right.set_title("Speed on Adult's training set")
    figure.tight_layout()
    report.save(results, figure)


if __name__ == "__main__":
    main()
