"""DP model choice against each of its candidates alone at the full ε (issue 33).

``dp_choice_clf`` / ``dp_choice_reg`` spend a share of ε (``--share``, default the model's) on a
noisy held-out comparison of their candidates and refit the winner on every row with the rest.
Each cell compares that with every candidate trained alone at the full ε, on the same subset
and with the same seed, registry defaults and the declared schemas of ``sample_data/``
(as ``benchmarks/model_by_size.py``):

* Adult (classification): ``n`` rows drawn from the 32,561 training rows, test error on the
  16,281 test rows;
* California housing (regression): ``n`` rows drawn from the 20,640, normalised MSE (on the
  declared target range) on 4,000 other rows;
* the weak-additive analog of ``benchmarks/additive.py`` (classification, 2,000 rows, test
  error on 20,000 fresh rows), where the additive model beats boosting.

Each cell is the mean over ``--seeds`` draws (subset and noise); *picked* counts how often the
choice took each candidate; *regret* is the choice's error minus the best candidate's alone
(which nobody can know without looking at the data); *vs suggested* is the choice's error minus
that of the model the Train page suggests for the table's size (``dpcore.models.suggestion``).

    PYTHONPATH=. python benchmarks/model_choice.py [--sizes 1000 5000] [--epsilons 0.3 1 3] [--seeds 5] [--share S]
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd

from benchmarks._common import load_adult, markdown_table, normalised_mse, quiet_warnings, seeded
from benchmarks.additive import N_TEST, N_TRAIN, weak_additive
from benchmarks.additive import context as weak_context
from benchmarks.model_by_size import california, subset
from dpcore.models.choice import CANDIDATES, CHOICE_KEYS
from dpcore.models.registry import ModelContext, get
from dpcore.models.suggestion import suggested_model
from dpcore.tables.design import Design

SHORT = {"dp_boosting_clf": "boost", "dp_additive_clf": "additive", "dp_gaussian_nb": "NB", "dp_boosting_reg": "boost"}
SHORT["dp_additive_reg"] = "additive"


def _error(model, X_test: np.ndarray, y_test: np.ndarray, task: str, target_bounds) -> float:
    predicted = model.predict(X_test)
    if task == "classification":
        return float(np.mean(predicted != y_test))
    return normalised_mse(y_test, predicted, target_bounds)


def _fit(key: str, context: ModelContext, X: np.ndarray, y: np.ndarray, share: float | None):
    params = {"share": share} if share is not None and key in CHOICE_KEYS.values() else {}
    return seeded(get(key).make(replace(context, params=params)), int(context.random_state or 0)).fit(X, y)


def _cell(
    task: str, rows: int, contexts: list[ModelContext], draws: list[tuple], target_bounds, share: float | None
) -> dict[str, object]:
    """Mean error of the choice and of each candidate over the draws, with the choice's picks."""
    errors: dict[str, list[float]] = {key: [] for key in (CHOICE_KEYS[task], *CANDIDATES[task])}
    picks: Counter[str] = Counter()
    for context, (X, y, X_test, y_test) in zip(contexts, draws, strict=True):
        for key in errors:
            model = _fit(key, context, X, y, share)
            errors[key].append(_error(model, X_test, y_test, task, target_bounds))
            if key == CHOICE_KEYS[task]:
                picks[SHORT[model.chosen_]] += 1
    means = {key: float(np.mean(values)) for key, values in errors.items()}
    best = min(means[k] for k in CANDIDATES[task])
    suggested = suggested_model(task, rows, contexts[0].epsilon)
    assert suggested is not None
    return {
        "choice": means[CHOICE_KEYS[task]],
        **{SHORT[k]: means[k] for k in CANDIDATES[task]},
        "regret": means[CHOICE_KEYS[task]] - best,
        "vs suggested": f"{means[CHOICE_KEYS[task]] - means[suggested.key]:+.3f} ({SHORT[suggested.key]})",
        "picked": ", ".join(f"{name} {count}" for name, count in picks.most_common()),
    }


def run_tables(sizes: list[int], epsilons: list[float], seeds: int, share: float | None) -> pd.DataFrame:
    records = []
    tables: dict[str, tuple[Design, Design]] = {"Adult": load_adult(), "California": california()}
    for name, (train, test) in tables.items():
        for n in sizes:
            for epsilon in epsilons:
                parts = [subset(train, n, 1000 + s) for s in range(seeds)]
                contexts = [part.context(epsilon=epsilon, random_state=s) for s, part in enumerate(parts)]
                draws = [(part.X, part.y, test.X, test.y) for part in parts]
                row = {"table": name, "rows": n, "ε": epsilon}
                row |= _cell(train.task, n, contexts, draws, train.target_bounds, share)
                records.append(row)
                print(row, flush=True)
    for epsilon in epsilons:
        draws, contexts = [], []
        for s in range(seeds):
            rng = np.random.default_rng(1000 + s)
            X, y = weak_additive(N_TRAIN, rng)
            draws.append((X, y, *weak_additive(N_TEST, rng)))
            contexts.append(weak_context(epsilon, s))
        row = {"table": "weak additive", "rows": N_TRAIN, "ε": epsilon}
        row |= _cell("classification", N_TRAIN, contexts, draws, None, share)
        records.append(row)
        print(row, flush=True)
    return pd.DataFrame(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000])
    parser.add_argument("--epsilons", type=float, nargs="*", default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--share", type=float, default=None, help="share of ε for the comparison (default: the model's)")
    args = parser.parse_args()
    quiet_warnings()
    results = run_tables(args.sizes, args.epsilons, args.seeds, args.share)
    for table, task in (("Adult", "classification"), ("California", "regression"), ("weak additive", "classification")):
        columns = ["rows", "ε", "choice", *(SHORT[k] for k in CANDIDATES[task]), "regret", "vs suggested", "picked"]
        print(f"\n{table}\n")
        print(markdown_table(results.loc[results["table"] == table, columns]))


if __name__ == "__main__":
    main()
