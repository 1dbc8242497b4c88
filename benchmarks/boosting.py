"""DP boosted trees against InterpretML's DP-EBM, measured in the same process (issue 7 targets).

* California Housing (StatLib form, every column min-max normalised, shuffled 10-fold): MAE at
  ε ∈ {0.25, 1, 4, 16}; DP-EBM gets δ = 1e-5 and declared bounds [0, 1].
* Adult (the given train/test split, declared schema, ordinal categories): accuracy at ε ∈ {0.1, 1, 4}.
* Nursery (5 classes, shuffled 5-fold; DP-EBM cannot run on more than two classes): accuracy at ε = 1.
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
from _common import load_adult
from sklearn.model_selection import KFold

from dpcore.design import Design
from dpcore.models.registry import ModelContext, get
from dpcore.schema import ColumnSpec, Schema

HERE = Path(__file__).resolve().parent
SHARED = HERE / "data"
RESULTS = HERE / "results"


def _timed_fit(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - start


def california(epsilons, n_folds, seed):
    data = np.loadtxt(SHARED / "california_housing" / "cal_housing.data", delimiter=",")
    unit = (data - data.min(axis=0)) / (data.max(axis=0) - data.min(axis=0))
    X, y = unit[:, :8], unit[:, 8]
    rows = []
    for k, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(X)):
        for eps in epsilons:
            for key in ("dp_boosting_reg", "dp_boosting_reg_approx", "dp_ebm_reg"):
                context = ModelContext(n_features=8, epsilon=eps, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0), random_state=seed + k)
                model, seconds = _timed_fit(get(key).make(context), X[train], y[train])
                rows.append({"data": "California", "model": key, "epsilon": eps, "fold": k, "metric": "MAE",
                             "value": float(np.abs(model.predict(X[test]) - y[test]).mean()), "fit_seconds": seconds})
    return rows


def adult(epsilons, repetitions, seed):
    train, test = load_adult()
    rows = []
    for rep in range(repetitions):
        for eps in epsilons:
            for key in ("dp_boosting_clf", "dp_boosting_clf_approx", "dp_ebm_clf"):
                model, seconds = _timed_fit(get(key).make(train.context(eps, random_state=seed + rep)), train.X, train.y)
                rows.append({"data": "Adult", "model": key, "epsilon": eps, "fold": rep, "metric": "accuracy",
                             "value": float(np.mean(model.predict(test.X) == test.y)), "fit_seconds": seconds})
    return rows


def nursery(n_folds, seed):
    frame = pd.read_csv(SHARED / "nursery" / "nursery.csv", dtype=str)
    # The category lists are read from the file (sorted), not declared: a shortcut kept so the stored results
    # stay reproducible. The values are public (nursery.names); _common.nursery_schema() declares them in
    # the UCI order, which would change the ordinal codes and so the published figures.
    schema = Schema([ColumnSpec(c, "feature", "categorical", categories=sorted(frame[c].unique())) for c in frame.columns])
    schema["class"].role = "target"
    design = Design.from_table(frame, schema)
    rows = []
    for k, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(design.X)):
        context = design.context(1.0, random_state=seed + k)
        for key in ("dp_boosting_clf", "dp_boosting_clf_approx"):
            model, seconds = _timed_fit(get(key).make(context), design.X[train], design.y[train])
            rows.append({"data": "Nursery", "model": key, "epsilon": 1.0, "fold": k, "metric": "accuracy",
                         "value": float(np.mean(model.predict(design.X[test]) == design.y[test])), "fit_seconds": seconds})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer folds and repetitions")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    rows = california((0.25, 1.0, 4.0, 16.0), 3 if args.quick else 10, args.seed)
    rows += adult((0.1, 1.0, 4.0), 1 if args.quick else 3, args.seed)
    rows += nursery(5, args.seed)
    results = pd.DataFrame(rows)
    results.to_csv(RESULTS / "boosting.csv", index=False)
    results["role"] = results["model"].map(
        lambda m: "DP-EBM" if m.startswith("dp_ebm") else ("ours (ε, δ)" if m.endswith("_approx") else "ours (pure ε)")
    )
    summary = results.groupby(["data", "metric", "epsilon", "role"]).agg(mean=("value", "mean"), seconds=("fit_seconds", "median"))
    wide = summary.unstack("role")
    wide.columns = [f"{role} {what}" if what == "seconds" else role for what, role in wide.columns]
    wide = wide.reset_index()
    lower_is_better = wide["metric"] == "MAE"
    for ours in ("ours (pure ε)", "ours (ε, δ)"):
        beats = np.where(lower_is_better, wide[ours] <= wide["DP-EBM"], wide[ours] >= wide["DP-EBM"])
        wide[f"{ours} wins"] = np.where(wide["DP-EBM"].isna(), "n/a", np.where(beats, "yes", "no"))
    wide["time ratio (pure ε / EBM)"] = wide["ours (pure ε) seconds"] / wide["DP-EBM seconds"]
    columns = ["data", "metric", "epsilon", "ours (pure ε)", "ours (ε, δ)", "DP-EBM", "ours (pure ε) wins", "ours (ε, δ) wins",
               "ours (pure ε) seconds", "DP-EBM seconds", "time ratio (pure ε / EBM)"]
    table = wide[columns].round(4)
    text = (
        "## DP boosted trees vs DP-EBM, same process\n\nDP-EBM and 'ours (ε, δ)' use δ = 1e-5; 'ours (pure ε)' has δ = 0.\n\n"
        + table.to_markdown(index=False) + "\n"
    )
    print(text)
    (RESULTS / "boosting.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
