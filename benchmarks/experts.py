"""The course report's experiment, made DP (issue 14): experts on two parts, weights on the third.

California Housing (StatLib form, scaled by the declared bounds), shuffled 10-fold. Inside each
training fold the ensemble splits the rows 4:4:2 by secret draws (the report's split): expert 1
learns from the first 40 %, expert 2 from the second, and the weights come from noisy losses on
the last 20 %. Every row of the table is measured on the same held-out fold, in one process:

* each expert alone (the ensemble's own fitted experts, so the same rows and the same noise);
* the ensemble (batch and streaming weights);
* the plain average of the two experts (weights fixed at 1/2: no ε spent on weights);
* one expert of the same kind fitted on the whole training fold at the same ε (what splitting costs).

Two pairs of experts: the default pair (DP boosting + a DP regression tree, unlike experts) and
two DP boosting models (alike experts). ε ∈ {0.25, 1, 4, 16}, pure ε-DP, MAE on the [0, 1] target.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/experts.py [--quick]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import RESULTS
from boosting import california_unit
from sklearn.base import clone
from sklearn.model_selection import KFold

from dpcore.models import DPBoostingRegressor, DPRegressionTree
from dpcore.models.multiplicative_weights import MultiplicativeWeightsEnsemble

PAIRS = {
    "boosting + tree": [DPBoostingRegressor(), DPRegressionTree(max_depth=6)],
    "boosting + boosting": [DPBoostingRegressor(), DPBoostingRegressor()],
}


def _mae(model, X, y) -> float:
    return float(np.abs(np.asarray(model.predict(X)) - y).mean())


def run(epsilons, n_folds: int, seed: int) -> pd.DataFrame:
    X, y = california_unit()
    rows = []
    for fold, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(X)):
        for pair, experts in PAIRS.items():
            for eps in epsilons:
                common = {"experts": experts, "epsilon": eps, "bounds": (0.0, 1.0), "target_bounds": (0.0, 1.0)}
                batch = MultiplicativeWeightsEnsemble(**common, random_state=seed + fold).fit(X[train], y[train])
                stream = MultiplicativeWeightsEnsemble(**common, form="streaming", random_state=seed + fold).fit(
                    X[train], y[train]
                )
                first, second = batch.experts_
                average = (first.predict(X[test]) + second.predict(X[test])) / 2
                whole = clone(first).set_params(random_state=seed + fold).fit(X[train], y[train])
                base = {"pair": pair, "epsilon": eps, "fold": fold}
                rows += [
                    base | {"what": "expert 1 alone (40 %)", "MAE": _mae(first, X[test], y[test])},
                    base | {"what": "expert 2 alone (40 %)", "MAE": _mae(second, X[test], y[test])},
                    base
                    | {"what": "ensemble, batch weights", "MAE": _mae(batch, X[test], y[test]), "weight 1": batch.weights_[0]},
                    base
                    | {
                        "what": "ensemble, streaming weights",
                        "MAE": _mae(stream, X[test], y[test]),
                        "weight 1": stream.weights_[0],
                    },
                    base | {"what": "plain average (no weights)", "MAE": float(np.abs(average - y[test]).mean())},
                    base | {"what": "expert 1's model on all rows", "MAE": _mae(whole, X[test], y[test])},
                ]
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 folds instead of 10")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    results = run((0.25, 1.0, 4.0, 16.0), 3 if args.quick else 10, args.seed)
    RESULTS.mkdir(exist_ok=True)
    results.to_csv(RESULTS / "experts.csv", index=False)
    order = list(dict.fromkeys(results["what"]))
    wide = results.pivot_table(index=["pair", "epsilon"], columns="what", values="MAE", aggfunc="mean")[order]
    weights = results.pivot_table(index=["pair", "epsilon"], columns="what", values="weight 1", aggfunc="mean")
    wide["batch weight of expert 1"] = weights["ensemble, batch weights"]
    best_expert = wide[["expert 1 alone (40 %)", "expert 2 alone (40 %)"]].min(axis=1)
    wide["batch beats each expert"] = np.where(wide["ensemble, batch weights"] < best_expert, "yes", "no")
    text = (
        "## Experts by multiplicative weights on California (4:4:2), same process, MAE on [0, 1]\n\n"
        + wide.reset_index().round(4).to_markdown(index=False)
        + f"\n\nTotal time: {time.perf_counter() - started:.0f} s.\n"
    )
    print(text)
    (RESULTS / "experts.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
