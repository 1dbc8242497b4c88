"""DP boosted trees against InterpretML's DP-EBM, measured in the same process (issue 7 targets).

* California Housing (StatLib form, every column scaled by the *declared* public bounds of
  sample_data/california_housing.schema.json, as the app does, shuffled 10-fold): MAE at
  ε ∈ {0.25, 1, 4, 16} on that [0, 1] target scale; DP-EBM gets δ = 1e-5 and the same bounds.
* Adult (the given train/test split, declared schema, ordinal categories): accuracy at ε ∈ {0.1, 1, 4}.
* Nursery (5 classes, shuffled 5-fold, the declared UCI value sets of _common.nursery_schema; DP-EBM
  cannot run on more than two classes): accuracy at ε = 1.
* Fit times and their ratio to DP-EBM's.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/boosting.py [--quick]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _common import ROOT, load_adult, load_dataset
from sklearn.model_selection import KFold

from dpcore.models.registry import ModelContext, get
from dpcore.tables.schema import load_schema

HERE = Path(__file__).resolve().parent
SHARED = HERE / "data"
RESULTS = HERE / "results"


def _timed_fit(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - start


def california_unit() -> tuple[np.ndarray, np.ndarray]:
    """The StatLib table scaled to [0, 1] by the declared public bounds (its nine columns are the
    schema's first nine, in the same order), clipped into them as the app does."""
    data = np.loadtxt(SHARED / "california_housing" / "cal_housing.data", delimiter=",")
    declared = load_schema(ROOT / "sample_data" / "california_housing.schema.json").columns[:9]
    lower = np.array([spec.lower for spec in declared], dtype=float)
    upper = np.array([spec.upper for spec in declared], dtype=float)
    unit = np.clip((data - lower) / (upper - lower), 0.0, 1.0)
    return unit[:, :8], unit[:, 8]


def california(epsilons, n_folds, seed):
    X, y = california_unit()
    rows = []
    for k, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(X)):
        for eps in epsilons:
            for key in ("dp_boosting_reg", "dp_boosting_reg_approx", "dp_ebm_reg"):
                context = ModelContext(
                    n_features=8, epsilon=eps, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0), random_state=seed + k
                )
                model, seconds = _timed_fit(get(key).make(context), X[train], y[train])
                rows.append(
                    {
                        "data": "California",
                        "model": key,
                        "epsilon": eps,
                        "fold": k,
                        "metric": "MAE",
                        "value": float(np.abs(model.predict(X[test]) - y[test]).mean()),
                        "fit_seconds": seconds,
                    }
                )
    return rows


def adult(epsilons, repetitions, seed):
    train, test = load_adult()
    rows = []
    for rep in range(repetitions):
        for eps in epsilons:
            for key in ("dp_boosting_clf", "dp_boosting_clf_approx", "dp_ebm_clf"):
                model, seconds = _timed_fit(get(key).make(train.context(eps, random_state=seed + rep)), train.X, train.y)
                rows.append(
                    {
                        "data": "Adult",
                        "model": key,
                        "epsilon": eps,
                        "fold": rep,
                        "metric": "accuracy",
                        "value": float(np.mean(model.predict(test.X) == test.y)),
                        "fit_seconds": seconds,
                    }
                )
    return rows


def nursery(n_folds, seed):
    design = load_dataset("nursery")  # declared UCI value sets, not the file's
    rows = []
    for k, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(design.X)):
        context = design.context(1.0, random_state=seed + k)
        for key in ("dp_boosting_clf", "dp_boosting_clf_approx"):
            model, seconds = _timed_fit(get(key).make(context), design.X[train], design.y[train])
            rows.append(
                {
                    "data": "Nursery",
                    "model": key,
                    "epsilon": 1.0,
                    "fold": k,
                    "metric": "accuracy",
                    "value": float(np.mean(model.predict(design.X[test]) == design.y[test])),
                    "fit_seconds": seconds,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer folds and repetitions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", default="boosting", help="results/<out>.{csv,md} (e.g. boosting_before for a run of an older tree)"
    )
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    rows = california((0.25, 1.0, 4.0, 16.0), 3 if args.quick else 10, args.seed)
    rows += adult((0.1, 1.0, 4.0), 1 if args.quick else 3, args.seed)
    rows += nursery(5, args.seed)
    results = pd.DataFrame(rows)
    results.to_csv(RESULTS / f"{args.out}.csv", index=False)
    results["role"] = results["model"].map(
        lambda m: "DP-EBM" if m.startswith("dp_ebm") else ("ours (ε, δ)" if m.endswith("_approx") else "ours (pure ε)")
    )
    summary = results.groupby(["data", "metric", "epsilon", "role"]).agg(
        mean=("value", "mean"), seconds=("fit_seconds", "median")
    )
    wide = summary.unstack("role")
    wide.columns = [f"{role} {what}" if what == "seconds" else role for what, role in wide.columns]
    wide = wide.reset_index()
    lower_is_better = wide["metric"] == "MAE"
    for ours in ("ours (pure ε)", "ours (ε, δ)"):
        beats = np.where(lower_is_better, wide[ours] <= wide["DP-EBM"], wide[ours] >= wide["DP-EBM"])
        wide[f"{ours} wins"] = np.where(wide["DP-EBM"].isna(), "n/a", np.where(beats, "yes", "no"))
    wide["time ratio (pure ε / EBM)"] = wide["ours (pure ε) seconds"] / wide["DP-EBM seconds"]
    columns = [
        "data",
        "metric",
        "epsilon",
        "ours (pure ε)",
        "ours (ε, δ)",
        "DP-EBM",
        "ours (pure ε) wins",
        "ours (ε, δ) wins",
        "ours (pure ε) seconds",
        "DP-EBM seconds",
        "time ratio (pure ε / EBM)",
    ]
    table = wide[columns].round(4)
    text = (
        "## DP boosted trees vs DP-EBM, same process\n\nDP-EBM and 'ours (ε, δ)' use δ = 1e-5; 'ours (pure ε)' has δ = 0.\n\n"
        + table.to_markdown(index=False)
        + "\n"
    )
    print(text)
    (RESULTS / f"{args.out}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
