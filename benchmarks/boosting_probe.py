"""Probe folds for choosing boosting's defaults: seeds the published benchmarks never use (issue 13).

Defaults are chosen here and then measured by ``boosting.py`` and ``small_tables.py`` on their
own seeds, so a default never fits the folds that report it. One table per call, any
estimator parameters as JSON:

    PYTHONPATH=. .venv/bin/python benchmarks/boosting_probe.py california 1 '{"count_floor": 0}'
    PYTHONPATH=. .venv/bin/python benchmarks/boosting_probe.py voting 1 '{"max_depth": 4}' --repetitions 20

California: shuffled 10-fold under seeds 5 … 4 + repetitions (MAE on the declared [0, 1] scale).
California, small: 500 random training rows and 4,000 test rows, 6 × repetitions draws (seeds 3000 …).
Long-tailed: ``wide_bounds.long_tailed`` under seeds 11 …, one per 5 repetitions, shuffled 10-fold
(MAE in the target's units).
Adult: the given split, seeds 500 … (accuracy). Nursery, Mushroom, Congressional Voting:
stratified 5-fold under seeds 700 … (accuracy). Prints the mean and its standard error.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _common import fit_and_score, load_adult, load_dataset, quiet_warnings
from boosting import california_unit
from sklearn.model_selection import KFold
from wide_bounds import CAP, long_tailed

from dpcore.evaluate import fold_indices
from dpcore.models.registry import ModelContext, get


def california(epsilon: float, params: dict, repetitions: int, key: str) -> list[float]:
    X, y = california_unit()
    scores = []
    for seed in range(5, 5 + repetitions):
        for k, (train, test) in enumerate(fold_indices(y, "regression", 10, True, seed)):
            context = ModelContext(
                n_features=8,
                epsilon=epsilon,
                bounds=(0.0, 1.0),
                target_bounds=(0.0, 1.0),
                random_state=seed * 100 + k,
                params=params,
            )
            model = get(key).make(context).fit(X[train], y[train])
            scores.append(float(np.abs(model.predict(X[test]) - y[test]).mean()))
    return scores


def california_small(epsilon: float, params: dict, repetitions: int, key: str, n: int = 500) -> list[float]:
    X, y = california_unit()
    scores = []
    for draw in range(6 * repetitions):
        order = np.random.default_rng(3000 + draw).permutation(len(y))
        train, test = order[:n], order[n : n + 4000]
        context = ModelContext(
            n_features=8, epsilon=epsilon, bounds=(0.0, 1.0), target_bounds=(0.0, 1.0), random_state=draw, params=params
        )
        scores.append(float(np.abs(get(key).make(context).fit(X[train], y[train]).predict(X[test]) - y[test]).mean()))
    return scores


def long_tailed_table(epsilon: float, params: dict, repetitions: int, key: str) -> list[float]:
    scores = []
    for seed in range(11, 11 + max(1, repetitions // 5)):
        X, y, lower, upper = long_tailed(20_000, seed)
        for k, (train, test) in enumerate(KFold(10, shuffle=True, random_state=seed).split(X)):
            context = ModelContext(
                n_features=4,
                epsilon=epsilon,
                bounds=(lower, upper),
                target_bounds=(0.0, CAP),
                random_state=seed * 10 + k,
                params=params,
            )
            scores.append(float(np.abs(get(key).make(context).fit(X[train], y[train]).predict(X[test]) - y[test]).mean()))
    return scores


def classification(name: str, epsilon: float, params: dict, repetitions: int, key: str) -> list[float]:
    if name == "adult":
        train, test = load_adult()
        return [fit_and_score(key, train, test, epsilon, 500 + rep, params)[0] for rep in range(repetitions)]
    data = load_dataset(name)
    scores = []
    for rep in range(repetitions):
        for k, (train, test) in enumerate(fold_indices(data.y, data.task, 5, True, 700 + rep)):
            model = get(key).make(data.context(epsilon, params=params, random_state=900 + 10 * rep + k))
            scores.append(float(np.mean(model.fit(data.X[train], data.y[train]).predict(data.X[test]) == data.y[test])))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "table", choices=["california", "california_small", "long_tailed", "adult", "nursery", "mushroom", "voting"]
    )
    parser.add_argument("epsilon", type=float)
    parser.add_argument("params", nargs="?", default="{}", help="estimator parameters as JSON")
    parser.add_argument("--repetitions", type=int, default=10, help="seeds (California: ×10 folds; small tables: ×5 folds)")
    parser.add_argument("--approximate", action="store_true", help="the (ε, δ) mode's registry entry")
    args = parser.parse_args()
    params = json.loads(args.params)
    quiet_warnings()
    regression = {"california": california, "california_small": california_small, "long_tailed": long_tailed_table}
    if args.table in regression:
        scores = regression[args.table](args.epsilon, params, args.repetitions, "dp_boosting_reg" + "_approx" * args.approximate)
    else:
        scores = classification(
            args.table, args.epsilon, params, args.repetitions, "dp_boosting_clf" + "_approx" * args.approximate
        )
    metric = "MAE" if args.table in regression else "accuracy"
    print(
        f"{args.table} ε={args.epsilon:g} {params}: {metric} {np.mean(scores):.4f} "
        f"(se {np.std(scores) / np.sqrt(len(scores)):.4f}, {len(scores)} fits)"
    )


if __name__ == "__main__":
    main()
