"""DP-SGD (spec §10.1) against diffprivlib and non-private baselines: Adult, California Housing, fit speed.

1. Adult, the given split (sample_data/adult.csv for training, adult/adult_test.csv for testing,
   the declared schema, ordinal codes as in ``benchmarks/adult.py``): test accuracy at
   ε ∈ {0.1, 0.5, 1, 4}, δ = 1e-5 for the approximate-DP models; DP-SGD logistic vs
   diffprivlib's LogisticRegression (objective perturbation, pure ε), our boosted trees (pure ε
   and approximate) and scikit-learn's non-private logistic regression. ``--repetitions`` fits
   per (model, ε) with different seeds, medians. Target: DP-SGD ≥ diffprivlib at every ε ≥ 0.5.
2. California Housing (StatLib file normalised to [0, 1] as in ``reproduce_california.py``),
   shuffled 10-fold cross-validation, mean MAE on the normalised target: DP-SGD linear vs
   diffprivlib's LinearRegression vs scikit-learn's LinearRegression. Target: within 10 % of the
   non-private MAE at ε = 1.
3. Fit speed: DP-SGD logistic on Adult's training set, default 20 epochs, ε = 1, median of
   ``--speed-fits`` fits, beside diffprivlib's and scikit-learn's logistic regression in the
   same run (the machine is shared: read the ratios, not the seconds).

Every row of a table comes from the same process, split and folds. Registry defaults
throughout (nothing tuned here). Run: ``PYTHONPATH=. .venv/bin/python benchmarks/dpsgd.py``
(``--quick`` for a smoke run).
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

from _common import Report, fit_and_score, load_adult, quiet_warnings, seeded  # noqa: E402
from reproduce_california import load as load_california  # noqa: E402

from dpcore.evaluate import fold_indices, plan_sweep, run_sweep  # noqa: E402
from dpcore.models.registry import ModelContext, get  # noqa: E402

EPSILONS = [0.1, 0.5, 1.0, 4.0]
ADULT_MODELS = ["dp_sgd_logistic", "dpl_logistic", "dp_boosting_clf", "dp_boosting_clf_approx", "sk_logistic"]
CALIFORNIA_MODELS = ["dp_sgd_linear", "dpl_linear", "sk_linear"]
SPEED_MODELS = ["dp_sgd_logistic", "dpl_logistic", "sk_logistic"]


def _seed(seed: int, key: str, e: int, rep: int) -> int:
    return int(np.random.SeedSequence([seed, sum(map(ord, key)), e, rep]).generate_state(1)[0])


def adult_table(train, test, epsilons, repetitions, seed) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for key in ADULT_MODELS:
        spec = get(key)
        for e, eps in enumerate(epsilons if spec.private else [float("nan")]):
            for rep in range(repetitions):
                accuracy, seconds = fit_and_score(key, train, test, eps, _seed(seed, key, e, rep))
                rows.append({"model": key, "epsilon": eps, "repetition": rep, "accuracy": accuracy, "fit_seconds": seconds})
    results = pd.DataFrame(rows)
    medians = results.groupby(["model", "epsilon"], dropna=False)["accuracy"].median()
    table = []
    for key in ADULT_MODELS:
        spec = get(key)
        privacy = "non-private" if not spec.private else ("(ε, δ = 1e-5)" if spec.approximate else "pure ε")
        row = {"model": key, "privacy": privacy}
        for eps in epsilons:
            row[f"ε={eps:g}"] = float(medians[(key, eps)]) if spec.private else None
        row["no ε"] = (
            None
            if spec.private
            else float(
                medians[(key, float("nan"))]
                if (key, float("nan")) in medians
                else results.loc[results["model"] == key, "accuracy"].median()
            )
        )
        table.append(row)
    return results, pd.DataFrame(table)


def california_table(epsilons, seed) -> tuple[pd.DataFrame, pd.DataFrame]:
    X, y = load_california()
    folds = fold_indices(y, "regression", 10, shuffle=True, random_state=seed)
    context = ModelContext(n_features=X.shape[1], bounds=(0.0, 1.0), target_bounds=(0.0, 1.0))
    tasks = plan_sweep(CALIFORNIA_MODELS, epsilons, len(folds))
    results = run_sweep(tasks, X, y, folds, context, "regression", seed=seed)
    mae = results[results["metric"] == "MAE"]
    means = mae.groupby(["model", "epsilon"], dropna=False)["value"].mean()
    reference = float(mae.loc[mae["model"] == "sk_linear", "value"].mean())
    table = []
    for key in CALIFORNIA_MODELS:
        spec = get(key)
        privacy = "non-private" if not spec.private else ("(ε, δ = 1e-5)" if spec.approximate else "pure ε")
        row = {"model": key, "privacy": privacy}
        for eps in epsilons:
            row[f"ε={eps:g}"] = float(means[(key, eps)]) if spec.private else None
        row["no ε"] = None if spec.private else reference
        table.append(row)
    return results, pd.DataFrame(table)


def speed_table(train, fits, seed) -> pd.DataFrame:
    from dpcore.models._dpsgd_accounting import calibrate_noise, count_noise_for

    calibrate_noise.cache_clear()  # the first fit pays for the noise calibration, later ones find it cached
    count_noise_for.cache_clear()
    times, first = {}, {}
    for key in SPEED_MODELS:
        spec = get(key)
        seconds = []
        for rep in range(fits):
            context = replace(train.context(epsilon=1.0, random_state=seed + rep))
            model = seeded(spec.make(context), seed + rep)
            start = time.perf_counter()
            model.fit(train.X, train.y)
            seconds.append(time.perf_counter() - start)
        times[key], first[key] = float(np.median(seconds)), seconds[0]
    return pd.DataFrame(
        [
            {"model": k, "first fit (s)": first[k], "median fit (s)": v, "÷ dp_sgd_logistic": v / times["dp_sgd_logistic"]}
            for k, v in times.items()
        ]
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: ε ∈ {1}, 1 repetition, 2 speed fits")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--speed-fits", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20242)
    args = parser.parse_args(argv)
    quiet_warnings()
    epsilons, reps, speed_fits = EPSILONS, args.repetitions, args.speed_fits
    if args.quick:
        epsilons, reps, speed_fits = [1.0], 1, 2
    report = Report("dpsgd_quick" if args.quick else "dpsgd")
    started = time.perf_counter()

    train, test = load_adult()
    report.say(
        f"### Adult, given split: test accuracy (median of {reps} fits; train {len(train.y)}, test {len(test.y)} rows, "
        f"{train.n_features} features, ordinal codes)"
    )
    report.say()
    adult_results, adult = adult_table(train, test, epsilons, reps, args.seed)
    report.table(adult, digits=4)
    ours, theirs = adult.set_index("model").loc["dp_sgd_logistic"], adult.set_index("model").loc["dpl_logistic"]
    held = [
        f"ε = {eps:g}: {ours[f'ε={eps:g}']:.4f} vs {theirs[f'ε={eps:g}']:.4f} "
        + ("yes" if ours[f"ε={eps:g}"] >= theirs[f"ε={eps:g}"] else "NO")
        for eps in epsilons
        if eps >= 0.5
    ]
    report.say("Target, DP-SGD logistic ≥ diffprivlib's logistic at every ε ≥ 0.5: " + "; ".join(held) + ".")
    report.say()

    report.say("### California Housing, shuffled 10-fold: mean MAE on the normalised target")
    report.say()
    california_results, california = california_table(epsilons, args.seed)
    report.table(california, digits=4)
    reference = float(california.set_index("model").loc["sk_linear", "no ε"])
    if 1.0 in epsilons:
        at_one = float(california.set_index("model").loc["dp_sgd_linear", "ε=1"])
        report.say(
            f"Target, DP-SGD linear within 10 % of the non-private linear MAE at ε = 1: {at_one:.4f} vs "
            f"{reference:.4f}, ratio {at_one / reference:.3f} — {'yes' if at_one <= 1.1 * reference else 'NO'}."
        )
        report.say()

    t0 = time.perf_counter()
    speed = speed_table(train, speed_fits, args.seed)
    report.table(
        speed,
        f"Fit speed on Adult's training set ({len(train.y)} rows), ε = 1, DP-SGD 20 epochs, median of "
        f"{speed_fits} fits ({time.perf_counter() - t0:.0f} s; shared machine: compare the ratios)",
        digits=3,
    )
    report.say(f"Total run time: {time.perf_counter() - started:.0f} s")
    results = pd.concat([adult_results.assign(data="adult"), california_results.assign(data="california")], ignore_index=True)
    report.save(results)


if __name__ == "__main__":
    main()
