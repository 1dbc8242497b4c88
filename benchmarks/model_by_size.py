"""Which model suits a table of a given size: our boosting against the additive model and naive Bayes (issue 33).

The Train page suggests a model from the table's size and the ε about to be spent. The
suggestion must come from measurements on public tables, not from the owner's data, so this
benchmark trains each candidate on random subsets of a public table at several sizes and ε,
with registry defaults and the declared schemas in ``sample_data/``:

* Adult (classification, the given split): ``n`` rows drawn from the 32,561 training rows,
  accuracy on the 16,281 test rows;
* California housing (regression): ``n`` rows drawn from the 20,640, normalised MSE (on the
  declared target range) on 4,000 other rows.

Each cell is the median over ``--seeds`` draws (the subset and the model's noise both change
with the seed). The last column names the model with the best median and, in brackets, its
margin over the runner-up.

    PYTHONPATH=. python benchmarks/model_by_size.py [--sizes 300 1000 3000 10000] [--epsilons 0.3 1 3] [--seeds 3]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._common import fit_and_score, load_adult, markdown_table, quiet_warnings
from dpcore.tables.design import Design
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import load_schema

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = {
    "classification": ("dp_boosting_clf", "dp_additive_clf", "dp_gaussian_nb"),
    "regression": ("dp_boosting_reg", "dp_additive_reg"),
}


def california() -> tuple[Design, Design]:
    frame, _ = read_csv_path(ROOT / "sample_data" / "california_housing.csv")
    schema = load_schema(ROOT / "sample_data" / "california_housing.schema.json")
    order = np.random.default_rng(12345).permutation(len(frame))
    test = frame.iloc[order[:4000]].reset_index(drop=True)
    train = frame.iloc[order[4000:]].reset_index(drop=True)
    return Design.from_table(train, schema, "ordinal"), Design.from_table(test, schema, "ordinal")


def subset(design: Design, n: int, seed: int) -> Design:
    rows = np.random.default_rng(seed).choice(len(design.y), size=min(n, len(design.y)), replace=False)
    return replace(design, X=design.X[rows], y=design.y[rows], n_rows=len(rows))


def run(tables: dict[str, tuple[Design, Design]], sizes, epsilons, seeds: int) -> pd.DataFrame:
    records = []
    for name, (train, test) in tables.items():
        for n in sizes:
            for epsilon in epsilons:
                row = {"table": name, "rows": n, "ε": epsilon, "ε·rows": epsilon * n}
                for key in CANDIDATES[train.task]:
                    scores = [fit_and_score(key, subset(train, n, 1000 + s), test, epsilon, s)[0] for s in range(seeds)]
                    row[key] = float(np.median(scores))
                scored = {k: row[k] for k in CANDIDATES[train.task]}
                ranked = sorted(scored, key=scored.get, reverse=train.task == "classification")
                row["best"] = f"{ranked[0]} ({abs(scored[ranked[0]] - scored[ranked[1]]):.3f})"
                records.append(row)
                print(row, flush=True)
    return pd.DataFrame(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[300, 1000, 3000, 10000])
    parser.add_argument("--epsilons", type=float, nargs="*", default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    quiet_warnings()
    tables = {"Adult": load_adult(), "California": california()}
    results = run(tables, args.sizes, args.epsilons, args.seeds)
    for name, (train, _test) in tables.items():
        columns = ["rows", "ε", "ε·rows", *CANDIDATES[train.task], "best"]
        print(f"\n{name}\n")
        print(markdown_table(results.loc[results["table"] == name, columns]))


if __name__ == "__main__":
    main()
