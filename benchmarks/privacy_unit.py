"""People with several rows (issue 20): accuracy and MAE against the contribution bound k at a fixed per-person ε.

The table: a panel of yearly records built from Adult's training file (sample_data/adult.csv,
32,561 rows, one per person). Each original row becomes one person ``p<row number>`` with
``m`` ~ uniform{1, …, 5} rows (about 97,600 rows, 3 per person on average), drawn once with
``--panel-seed``: the person is seen in ``m`` consecutive years ``j = 0 … m−1``, and the census
record is the one of year ``c`` ~ uniform{0, …, m−1} (so the panel's ages are not older on
average than the census's, and the test file's people look like the training people):

* ``age`` = original age + (j − c), clipped to the declared [17, 90];
* ``hours-per-week`` = the original in year c, the original + a uniform integer in [−3, 3]
  (drawn per row) in the other years, clipped to the declared [1, 99];
* every other column (income, the target, included) is copied unchanged.

Rows are then put in a random order (same seed), so no model sees a person's rows together.

Tasks, both evaluated on the Adult test file (benchmarks/data/adult/adult_test.csv: 16,281
other people, one row each, labels' '.' stripped), so no person is in both train and test:

* classification: income (> 50K) with the declared schema (13 features, fnlwgt ignored) —
  accuracy of ``dp_boosting_clf`` and ``dp_random_forest`` (registry defaults; the forest with 10 trees);
* regression: **age** from the other 12 features and income — MAE in years of
  ``dp_boosting_reg`` (age is the column the yearly copies change most; hours-per-week was
  tried and no model beats predicting its median, MAE 7.45 h, so it shows nothing).

At each per-person ε (default 1 and 4) and each repetition, every model is fitted under:

* **bound k** for k ∈ {1, 2, 3, 5, 8}: the schema declares ``person_id`` as the privacy unit with
  ``rows_per_person = k``; ``Design.from_table`` keeps at most k random rows per person (a fresh
  draw per repetition) and the registry builds the model at ε/k per row (group privacy);
* **per-row ε/5, no bound** (the honest alternative without a unit column: every person has at
  most 5 rows, so charge 5 rows' worth): all rows at ε/5 per row. It is the same computation
  as k = 5 (no row is over the bound), and the script checks the predictions are identical;
* **naive per-row ε** — NOT private at the stated ε: the unit column ignored, all rows at ε
  per row, so a person with 5 rows is protected only at 5ε;
* **non-private** references (scikit-learn random forests, 10 trees, from the registry) on all
  rows and on one row per person (the k = 1 subset).

The same model seed is used for every condition of a (model, ε, repetition), so conditions
differ only in their rows and budget. Medians and the inter-quartile range over
``--repetitions`` (default 8). Results: results/privacy_unit.{md,csv,png}
(``--quick``: results/privacy_unit_quick.*, k ∈ {1, 3, 5}, ε = 1, 1 repetition).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/privacy_unit.py [--quick]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, adult_frames, adult_schema, plt, quiet_warnings, seeded  # noqa: E402

from dpcore.models.registry import get  # noqa: E402
from dpcore.tables.design import Design  # noqa: E402
from dpcore.tables.schema import ColumnSpec, Schema  # noqa: E402

UNIT = "person_id"
MAX_ROWS = 5  # each person has 1 … MAX_ROWS rows in the panel
HOURS_JITTER = 3  # later years' hours-per-week move by a uniform integer in [−3, 3]
KS = [1, 2, 3, 5, 8]
EPSILONS = [1.0, 4.0]
TASKS = {  # task → (target column, DP models, non-private reference, metric)
    "classification": ("income", ["dp_boosting_clf", "dp_random_forest"], "sk_forest_clf", "accuracy"),
    "regression": ("age", ["dp_boosting_reg"], "sk_forest_reg", "MAE (years)"),
}
PARAMS = {"n_estimators": 10}  # the random forests' tree count, as in benchmarks/adult.py
NAIVE, HONEST = "naive: ε per row, all rows", f"per row ε/{MAX_ROWS}, all rows"


# --- the panel -----------------------------------------------------------------------------


def make_panel(original: pd.DataFrame, schema: Schema, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """The yearly panel (see the module docstring) and each original person's number of rows."""
    rng = np.random.default_rng(seed)
    rows_each = rng.integers(1, MAX_ROWS + 1, size=len(original))
    source = np.repeat(np.arange(len(original)), rows_each)
    year = np.arange(len(source)) - np.repeat(np.cumsum(rows_each) - rows_each, rows_each)
    panel = original.iloc[source].reset_index(drop=True)
    panel.insert(0, UNIT, [f"p{i}" for i in source])
    age_lo, age_hi = schema["age"].bounds
    hours_lo, hours_hi = schema["hours-per-week"].bounds
    census_year = np.repeat(rng.integers(0, rows_each), rows_each)  # which of the m years is the census record
    age = pd.to_numeric(panel["age"]) + (year - census_year)
    jitter = np.where(year != census_year, rng.integers(-HOURS_JITTER, HOURS_JITTER + 1, size=len(panel)), 0)
    hours = pd.to_numeric(panel["hours-per-week"]) + jitter
    panel["age"] = np.clip(age, age_lo, age_hi).astype(int)
    panel["hours-per-week"] = np.clip(hours, hours_lo, hours_hi).astype(int)
    return panel.iloc[rng.permutation(len(panel))].reset_index(drop=True), rows_each


def schemas(task: str) -> tuple[Schema, Schema]:
    """(schema of the panel, with the unit column as an identifier; schema of the test file)."""
    target = TASKS[task][0]
    test = adult_schema()
    if target != "income":
        test["income"].role = "feature"
        test[target].role = "target"
    panel = Schema(
        [*test.columns, ColumnSpec(UNIT, role="identifier", kind="categorical", source="person number (benchmark panel)")]
    )
    return panel, test


def with_unit(schema: Schema, k: int | None) -> Schema:
    """``schema`` declaring the unit column with at most ``k`` rows per person (``None``: no unit declared)."""
    return Schema(schema.columns, privacy_unit=UNIT if k else None, rows_per_person=k or 1)


# --- fitting -------------------------------------------------------------------------------


def seed_for(*parts: int | str) -> int:
    words = [p if isinstance(p, int) else sum(map(ord, p)) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def score(task: str, truth: np.ndarray, predicted: np.ndarray) -> float:
    if task == "classification":
        return float(np.mean(predicted == truth))
    return float(np.mean(np.abs(np.asarray(predicted, float) - truth)))


def fit_predict(key: str, design: Design, test: Design, epsilon: float, seed: int) -> tuple[np.ndarray, float]:
    model = seeded(get(key).make(design.context(epsilon, params=PARAMS, random_state=seed)), seed)
    start = time.perf_counter()
    model.fit(design.X, design.y)
    return model.predict(test.X), time.perf_counter() - start


def run(
    panel: pd.DataFrame, test_frame: pd.DataFrame, ks, epsilons, repetitions: int, seed: int, log
) -> tuple[pd.DataFrame, list[dict]]:
    """Every (task, repetition, model, ε, condition): one row of results; plus the ε/5 = k=5 identity checks."""
    rows, checks = [], []
    for task, (_, models, reference, metric) in TASKS.items():
        panel_schema, test_schema = schemas(task)
        test = Design.from_table(test_frame, test_schema)
        everyone = Design.from_table(panel, with_unit(panel_schema, None))
        assert everyone.feature_names == test.feature_names
        for rep in range(repetitions):
            t0 = time.perf_counter()
            bounded = {
                k: Design.from_table(panel, with_unit(panel_schema, k), random_state=seed_for(seed, "subset", k, rep))
                for k in sorted({1, *ks})  # k = 1 also trains the non-private one-row-per-person reference
            }
            fits = []  # (condition, k, model, ε per person, design, ε per row, model seed)
            for key in models:
                for e, eps in enumerate(epsilons):
                    model_seed = seed_for(seed, key, e, rep)  # the same for every condition: differences are not seed noise
                    fits += [(f"bound k={k}", k, key, eps, bounded[k], eps / k, model_seed) for k in ks]
                    fits += [
                        (HONEST, None, key, eps, everyone, eps / MAX_ROWS, model_seed),
                        (NAIVE, None, key, eps, everyone, eps, model_seed),
                    ]
            ref_seed = seed_for(seed, reference, rep)
            fits += [
                ("non-private, all rows", None, reference, np.nan, everyone, np.nan, ref_seed),
                ("non-private, one row per person", None, reference, np.nan, bounded[1], np.nan, ref_seed),
            ]
            predictions = {}
            for condition, k, key, eps, design, row_eps, model_seed in fits:
                # A design's context takes the ε per person; without a unit column the engine counts each row as a
                # person, so the honest alternative asks for ε/5 and the naive one for ε.
                budget = row_eps if condition == HONEST else eps
                predicted, seconds = fit_predict(key, design, test, budget if get(key).private else 1.0, model_seed)
                predictions[condition, key, eps] = predicted
                rows.append(
                    {
                        "task": task,
                        "metric": metric,
                        "model": key,
                        "kind": get(key).kind,
                        "condition": condition,
                        "k": k,
                        "epsilon_per_person": eps,
                        "epsilon_per_row": row_eps,
                        "rows_used": len(design.y),
                        "repetition": rep,
                        "value": score(task, test.y, predicted),
                        "fit_seconds": seconds,
                    }
                )
            if MAX_ROWS in ks:
                for key in models:
                    for eps in epsilons:
                        same = np.array_equal(predictions[HONEST, key, eps], predictions[f"bound k={MAX_ROWS}", key, eps])
                        checks.append({"task": task, "model": key, "ε": eps, "repetition": rep, "identical": same})
            log(f"  {task}, repetition {rep + 1}/{repetitions}: {time.perf_counter() - t0:.1f} s")
    return pd.DataFrame(rows), checks


# --- tables and chart ----------------------------------------------------------------------


def spread(values: pd.Series, digits: int) -> str:
    q1, med, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    return f"{med:.{digits}f} ({q1:.{digits}f}–{q3:.{digits}f})" if len(values) > 1 else f"{med:.{digits}f}"


def condition_order(ks) -> list[str]:
    return [f"bound k={k}" for k in ks] + [HONEST, NAIVE, "non-private, all rows", "non-private, one row per person"]


def figures_table(results: pd.DataFrame, eps: float, ks) -> pd.DataFrame:
    """One row per condition at per-person ``eps`` (non-private rows have no ε); cells median (IQR)."""
    private = results[results["epsilon_per_person"] == eps]
    public = results[results["epsilon_per_person"].isna()]
    out = []
    for condition in condition_order(ks):
        part = pd.concat([private[private["condition"] == condition], public[public["condition"] == condition]])
        if part.empty:
            continue
        first = part.iloc[0]
        row = {
            "condition": condition,
            "ε per row": "—" if np.isnan(first["epsilon_per_row"]) else f"{first['epsilon_per_row']:.3g}",
            "ε per person really spent": _really_spent(condition, eps),
            "rows used": f"{int(part['rows_used'].median()):,}",
        }
        for key, sub in part.groupby("model", sort=False):
            metric = sub["metric"].iloc[0]
            short = "acc." if metric == "accuracy" else "MAE"
            label = f"{key} {short}" if get(key).private else f"non-private RF {short}"
            row[label] = spread(sub["value"], 4 if metric == "accuracy" else 3)
        out.append(row)
    return pd.DataFrame(out).fillna("")  # a non-private reference has its own column per task


def _really_spent(condition: str, eps: float) -> str:
    if condition.startswith("non-private"):
        return "not private"
    if condition == NAIVE:
        return f"up to {MAX_ROWS * eps:g} — NOT ε-DP per person"
    return f"{eps:g}"


def panel_table(rows_each: np.ndarray, ks) -> pd.DataFrame:
    n_rows = int(rows_each.sum())
    out = []
    for k in ks:
        kept = int(np.minimum(rows_each, k).sum())
        out.append(
            {
                "k": k,
                "rows kept": f"{kept:,}",
                "rows left out": f"{n_rows - kept:,}",
                "share kept": f"{kept / n_rows:.1%}",
                "people with rows left out": f"{int((rows_each > k).sum()):,}",
                "ε per row at ε = 1": f"{1 / k:.3g}",
            }
        )
    return pd.DataFrame(out)


def chart(results: pd.DataFrame, epsilons, ks) -> plt.Figure:
    keys = list(dict.fromkeys(results.loc[results["kind"] != "non-private", "model"]))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        sub = results[results["model"] == key]
        metric = sub["metric"].iloc[0]
        for i, eps in enumerate(epsilons):
            colour = f"C{i}"
            bound = sub[(sub["epsilon_per_person"] == eps) & sub["k"].notna()]
            q = bound.groupby("k")["value"].quantile([0.25, 0.5, 0.75]).unstack()
            ax.errorbar(
                q.index,
                q[0.5],
                yerr=[q[0.5] - q[0.25], q[0.75] - q[0.5]],
                marker="o",
                color=colour,
                capsize=3,
                label=f"bound k, ε = {eps:g} per person",
            )
            naive = sub[(sub["epsilon_per_person"] == eps) & (sub["condition"] == NAIVE)]["value"].median()
            ax.axhline(
                naive, color=colour, linestyle=":", label=f"naive ε = {eps:g} per row (NOT private: up to {MAX_ROWS * eps:g})"
            )
        task = sub["task"].iloc[0]
        reference = results[(results["task"] == task) & (results["condition"] == "non-private, all rows")]["value"].median()
        ax.axhline(reference, color="grey", linestyle="--", label="non-private random forest, all rows")
        ax.axvline(MAX_ROWS, color="lightgrey", linewidth=0.8)
        ax.set_xticks(list(ks))
        ax.set_xlabel("k, the most rows counted per person")
        ax.set_ylabel("test accuracy" if metric == "accuracy" else "test MAE of age (years)")
        ax.set_title(f"{key} ({'income' if metric == 'accuracy' else 'age'})")
        ax.legend(fontsize=7)
    fig.suptitle(f"Adult as a yearly panel (1–{MAX_ROWS} rows per person): medians and quartiles over repetitions")
    fig.tight_layout()
    return fig


# --- main ----------------------------------------------------------------------------------


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: k ∈ {1, 3, 5}, ε = 1, 1 repetition")
    parser.add_argument("--repetitions", type=int, default=8, help="fits per (model, ε, condition); medians reported")
    parser.add_argument("--panel-seed", type=int, default=20, help="seed of the panel (rows per person, jitter, order)")
    parser.add_argument("--seed", type=int, default=2020, help="seed of the row subsets and the models")
    args = parser.parse_args(argv)
    quiet_warnings()
    ks, epsilons, reps = KS, EPSILONS, args.repetitions
    if args.quick:
        ks, epsilons, reps = [1, 3, 5], [1.0], 1

    report = Report("privacy_unit_quick" if args.quick else "privacy_unit")  # a smoke run never overwrites the full results
    started = time.perf_counter()
    original, test = adult_frames()
    panel, rows_each = make_panel(original, schemas("classification")[0], args.panel_seed)
    counts = np.bincount(rows_each, minlength=MAX_ROWS + 1)[1:]

    report.say("## People with several rows: Adult as a yearly panel")
    report.say()
    report.say(
        f"{len(rows_each):,} people (Adult's training rows), {len(panel):,} rows: "
        + ", ".join(f"{c:,} with {m} row{'s' if m > 1 else ''}" for m, c in enumerate(counts, start=1))
        + f" (rows per person uniform on 1–{MAX_ROWS}, panel seed {args.panel_seed}). The census record is a random "
        "one of a person's years c; year j has age + (j − c), "
        f"hours-per-week ± up to {HOURS_JITTER} in the other years. Test: Adult's test file, {len(test):,} other people, "
        f"one row each. {reps} repetition(s), medians (inter-quartile range); seed {args.seed}."
    )
    report.say()
    report.table(panel_table(rows_each, ks), "What each bound keeps")

    results, checks = run(panel, test, ks, epsilons, reps, args.seed, print)
    for eps in epsilons:
        report.table(
            figures_table(results, eps, ks), f"Per-person ε = {eps:g}: test accuracy (income) and MAE (age, years)", digits=4
        )
    if checks:
        same = sum(c["identical"] for c in checks)
        report.say(
            f"Per-row ε/{MAX_ROWS} on all rows (no unit column) gave predictions identical to the bound k = {MAX_ROWS} "
            f"in {same} of {len(checks)} fits" + ("." if same == len(checks) else " — NOT all: an engine difference.")
        )
        report.say()
    fits = results[results["kind"] != "non-private"].groupby(["model", "condition"])["fit_seconds"].median().unstack()
    report.table(
        fits.reindex(columns=[c for c in condition_order(ks) if c in fits.columns]).reset_index(), "Median fit seconds", digits=3
    )
    report.say(f"Whole run: {time.perf_counter() - started:.0f} s.")
    report.save(results, chart(results, epsilons, ks))


if __name__ == "__main__":
    main()
