"""Subsample and aggregate (issue 14): answers per query at ε = 1, and the student against our boosting.

Same process and the same splits for every row:

* Adult, the given train/test split, declared schema: accuracy of the noisy vote on 2 000 test
  rows (the first 2 000), each answered at ε = 1; the blocks' plain majority (no noise, not DP)
  and one tree fitted on all the rows (not DP) show what the noise and the splitting cost.
* California Housing (StatLib form, scaled by the declared bounds, shuffled 10-fold): MAE on the
  [0, 1] target scale of the noisy median on 300 test rows per fold, each answered at ε = 1, pure
  (heavy-tailed noise) and (ε = 1, δ = 1e-6 per query, Laplace noise), and of the noisy mean of the
  blocks (Laplace at sensitivity 1/k); the plain median of the blocks (not DP) beside them.
* The student (labels m = 100 public random points once, ε/m each) against DP boosting at the same
  total ε (pure ε-DP both), on both tables.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/subsample_aggregate.py [--quick]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import RESULTS, load_adult
from boosting import california_unit
from sklearn.model_selection import KFold
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dpcore.models.registry import ModelContext, get
from dpcore.models.subsample_aggregate import SubsampleAggregateClassifier, SubsampleAggregateRegressor

ADULT_QUERIES, CALIFORNIA_QUERIES = 2000, 300


def _rows_adult(repetitions: int, student_epsilons, seed: int) -> list[dict]:
    train, test = load_adult()
    queries, truth = test.X[:ADULT_QUERIES], test.y[:ADULT_QUERIES]
    rows = []
    for rep in range(repetitions):
        for blocks in (30, 100, 300):
            start = time.perf_counter()
            teacher = SubsampleAggregateClassifier(
                n_blocks=blocks, epsilon=1.0, bounds=train.bounds, classes=train.classes, random_state=seed + rep
            ).fit(train.X, train.y)
            answers = teacher.predict(queries)
            seconds = time.perf_counter() - start
            votes = teacher.votes(teacher._unit(queries))
            majority = np.asarray(train.classes, dtype=object)[votes.argmax(axis=1)]
            rows += [
                {
                    "data": "Adult",
                    "what": f"noisy vote, ε = 1 per query, k = {blocks}",
                    "rep": rep,
                    "accuracy": np.mean(answers == truth),
                    "seconds": seconds,
                },
                {
                    "data": "Adult",
                    "what": f"plain majority of the blocks (not DP), k = {blocks}",
                    "rep": rep,
                    "accuracy": np.mean(majority == truth),
                },
            ]
        tree = DecisionTreeClassifier(max_depth=5, min_samples_leaf=10, random_state=rep).fit(train.X, train.y)
        rows.append(
            {
                "data": "Adult",
                "what": "one tree on all rows (not DP)",
                "rep": rep,
                "accuracy": np.mean(tree.predict(queries) == truth),
            }
        )
        for eps in student_epsilons:
            for key in ("dp_sa_student_clf", "dp_boosting_clf"):
                start = time.perf_counter()
                model = get(key).make(train.context(eps, random_state=seed + rep)).fit(train.X, train.y)
                rows.append(
                    {
                        "data": "Adult",
                        "what": f"{key} at total ε = {eps:g}",
                        "rep": rep,
                        "accuracy": np.mean(model.predict(test.X) == test.y),
                        "seconds": time.perf_counter() - start,
                    }
                )
    return rows


def _rows_california(n_folds: int, student_epsilons, seed: int) -> list[dict]:
    X, y = california_unit()
    rows = []
    for fold, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(X)):
        queries, truth = X[test][:CALIFORNIA_QUERIES], y[test][:CALIFORNIA_QUERIES]
        for delta, aggregate, label in (
            (0.0, "median", "median, pure ε, heavy-tailed noise"),
            (1e-6, "median", "median, (ε, δ = 1e-6), Laplace noise"),
            (0.0, "mean", "mean, pure ε, Laplace noise at 1/k"),
        ):
            start = time.perf_counter()
            teacher = SubsampleAggregateRegressor(
                n_blocks=100, epsilon=1.0, delta=delta, aggregate=aggregate, random_state=seed + fold
            ).fit(X[train], y[train])
            answers = teacher.predict(queries)
            rows.append(
                {
                    "data": "California",
                    "what": f"noisy {label}, ε = 1 per query",
                    "rep": fold,
                    "MAE": np.abs(answers - truth).mean(),
                    "seconds": time.perf_counter() - start,
                }
            )
        plain = np.median(teacher.block_answers(queries), axis=1)
        rows.append(
            {
                "data": "California",
                "what": "plain median of the blocks (not DP)",
                "rep": fold,
                "MAE": np.abs(plain - truth).mean(),
            }
        )
        tree = DecisionTreeRegressor(max_depth=5, min_samples_leaf=10, random_state=fold).fit(X[train], y[train])
        rows.append(
            {
                "data": "California",
                "what": "one tree on all rows (not DP)",
                "rep": fold,
                "MAE": np.abs(tree.predict(queries) - truth).mean(),
            }
        )
        for eps in student_epsilons:
            for key, params in (("dp_sa_student_reg", {}), ("dp_sa_student_reg", {"aggregate": "mean"}), ("dp_boosting_reg", {})):
                context = ModelContext(
                    n_features=8,
                    epsilon=eps,
                    bounds=(0.0, 1.0),
                    target_bounds=(0.0, 1.0),
                    random_state=seed + fold,
                    params=params,
                )
                start = time.perf_counter()
                model = get(key).make(context).fit(X[train], y[train])
                rows.append(
                    {
                        "data": "California",
                        "what": f"{key}{' (mean)' if params else ''} at total ε = {eps:g}",
                        "rep": fold,
                        "MAE": np.abs(model.predict(X[test]) - y[test]).mean(),
                        "seconds": time.perf_counter() - start,
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 folds and 1 repetition instead of 10 and 3")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    student_epsilons = (1.0, 4.0, 16.0)
    rows = _rows_adult(1 if args.quick else 3, student_epsilons, args.seed)
    rows += _rows_california(3 if args.quick else 10, student_epsilons, args.seed)
    results = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    results.to_csv(RESULTS / "subsample_aggregate.csv", index=False)
    table = (
        results.groupby(["data", "what"], sort=False)
        .agg(accuracy=("accuracy", "mean"), MAE=("MAE", "mean"), seconds=("seconds", "median"), runs=("rep", "count"))
        .reset_index()
        .round(4)
    )
    text = "## Subsample and aggregate, same process\n\n" + table.to_markdown(index=False) + "\n"
    text += f"\nTotal time: {time.perf_counter() - started:.0f} s.\n"
    print(text)
    (RESULTS / "subsample_aggregate.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
