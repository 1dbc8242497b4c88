"""Declared bounds much wider than the data: do our trees still split where the people are? (issue 13)

* California Housing (declared public bounds, as in boosting.py), then every normalised feature's
  range widened tenfold around the data: ``X_wide = 0.45 + X/10``, so the records fill a tenth of
  each declared range. Shuffled 10-fold, the first 3 folds; MAE on the [0, 1] target scale.
* A long-tailed synthetic table (20,000 rows): an income-like target (median ≈ 20,000) under a
  generous public cap of 1,000,000, and four features that crowd into small parts of their declared
  ranges (age 18-80 of 0-120; a log-normal "wealth" under a 10,000,000 cap; a coordinate inside
  400-450 of 0-1,000; one feature of pure noise over its whole range). MAE in the target's units.

Models: our DP boosted trees (pure ε), InterpretML's DP-EBM (δ = 1e-5; it spends a tenth of its
budget on private quantile bins) and the DP mean, at ε ∈ {1, 4}.

``--extra-trees`` measures DP ExtraTrees (the registry's defaults, 10 trees) in place of boosting and DP-EBM.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/wide_bounds.py [--extra-trees] [--out wide_bounds_before]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from boosting import california_unit
from sklearn.model_selection import KFold

from dpcore.models.registry import ModelContext, get

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = {"dp_boosting_reg": "ours (pure ε)", "dp_ebm_reg": "DP-EBM", "dp_mean": "DP mean"}
CAP = 1_000_000.0


def long_tailed(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, target and their declared bounds; everything public except the draws."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, n)
    wealth = np.exp(rng.normal(10.5, 1.2, n))
    coordinate = rng.normal(425, 8, n)
    noise = rng.uniform(0, 1000, n)
    logit = 0.5 * (age - 49) / 18 + 0.45 * (np.log(wealth) - 10.5) / 1.2 + 0.4 * np.sin((coordinate - 425) / 5)
    y = 20_000 * np.exp(logit + rng.normal(0, 0.45, n))
    X = np.column_stack([age, wealth, coordinate, noise])
    lower = np.array([0.0, 0.0, 0.0, 0.0])
    upper = np.array([120.0, 10_000_000.0, 1000.0, 1000.0])
    return X, np.minimum(y, CAP), lower, upper


def _fit(key: str, context: ModelContext, X, y):
    model = get(key).make(context)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - start


def run(epsilons, folds: int, seed: int) -> pd.DataFrame:
    X, y = california_unit()
    tables = {"California, declared bounds": (X, y), "California, ranges widened tenfold": (0.45 + X / 10, y)}
    rows = []
    splits = list(KFold(10, shuffle=True, random_state=seed).split(X))[:folds]
    for name, (features, target) in tables.items():
        for k, (train, test) in enumerate(splits):
            for eps in epsilons:
                for key in MODELS:
                    context = ModelContext(
                        n_features=8, epsilon=eps, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0), random_state=seed + k
                    )
                    model, seconds = _fit(key, context, features[train], target[train])
                    rows.append(
                        {
                            "data": name,
                            "unit": "[0, 1]",
                            "model": MODELS[key],
                            "epsilon": eps,
                            "fold": k,
                            "MAE": float(np.abs(model.predict(features[test]) - target[test]).mean()),
                            "fit_seconds": seconds,
                        }
                    )
    X, y, lower, upper = long_tailed(20_000, seed)
    for k, (train, test) in enumerate(list(KFold(10, shuffle=True, random_state=seed).split(X))[:folds]):
        for eps in epsilons:
            for key in MODELS:
                context = ModelContext(
                    n_features=4, epsilon=eps, bounds=(lower, upper), target_bounds=(0.0, CAP), random_state=seed + k
                )
                model, seconds = _fit(key, context, X[train], y[train])
                rows.append(
                    {
                        "data": "long-tailed synthetic (cap 1,000,000)",
                        "unit": "target units",
                        "model": MODELS[key],
                        "epsilon": eps,
                        "fold": k,
                        "MAE": float(np.abs(model.predict(X[test]) - y[test]).mean()),
                        "fit_seconds": seconds,
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=3, help="how many of the 10 shuffled folds")
    parser.add_argument("--out", default="wide_bounds", help="results/<out>.{csv,md}")
    parser.add_argument("--extra-trees", action="store_true", help="DP ExtraTrees and the DP mean only")
    args = parser.parse_args()
    global MODELS
    if args.extra_trees:
        MODELS = {"dp_extra_trees_reg": "DP ExtraTrees", "dp_mean": "DP mean"}
    RESULTS.mkdir(exist_ok=True)
    results = run((1.0, 4.0), args.folds, args.seed)
    results.to_csv(RESULTS / f"{args.out}.csv", index=False)
    table = results.pivot_table(index=["data", "epsilon"], columns="model", values="MAE", aggfunc="mean", sort=False)
    table = table[[m for m in MODELS.values()]]
    if "DP-EBM" in table:
        table["ours ≤ DP-EBM"] = np.where(table["ours (pure ε)"] <= table["DP-EBM"], "yes", "no")
    digits = table[list(MODELS.values())].abs().max(axis=1).map(lambda v: 1 if v > 100 else 4)
    shown = table.copy().astype(object)
    for index, d in digits.items():
        for column in MODELS.values():
            shown.loc[index, column] = f"{table.loc[index, column]:,.{d}f}"
    seconds = results.groupby("model")["fit_seconds"].median()
    text = (
        f"## Wide declared bounds (mean MAE over {args.folds} of 10 shuffled folds)\n\n"
        + shown.reset_index().to_markdown(index=False)
        + "\n\nMedian fit seconds: "
        + ", ".join(f"{m} {seconds[m]:.2f}" for m in MODELS.values())
        + "\n"
    )
    print(text)
    (RESULTS / f"{args.out}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
