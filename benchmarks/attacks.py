"""Attacks on Adult and California Housing (issue 18): what the non-private models leak, and that DP models do not.

Three experiments with :mod:`dpcore.attacks`, on the bundled samples (Adult: the 32,561 rows of
sample_data/adult.csv, income ≤/> 50K; California Housing: the 20,640 rows of
sample_data/california_housing.csv, median house value), each with its declared schema:

1. **Membership inference.** A fair coin per row makes it a member; each model is trained on
   the members (about half the rows) and attacked by the loss-threshold attack and by LiRA
   (online, fixed variance) with ``--references`` reference models on complementary random
   halves of all rows. The non-private references are scikit-learn's decision tree and random
   forest (10 trees); the DP models are every model of ours and of diffprivlib for the task (DP-EBM
   is left out: it takes minutes per fit) at ε ∈ {0.5, 1, 4}. For each: AUC ± 95 %, TPR at
   1 % FPR ± 95 %, the ceilings ε allows (AUC ``e^ε/(1+e^ε)``, TPR ``e^ε·1 %``), and the empirical
   ε lower bound (95 %, threshold chosen on one random half of the records, tested on the other).
   "Under the ceiling" means no figure is above its ceiling by more than its error and the
   empirical ε is at most ε.
2. **Audit.** Every DP model at a claimed ε = 1: ``--runs`` fits on a random 50-row sample and as
   many on the sample plus a made-up outlier (every feature at its declared maximum, the rarest
   label or the farther target bound), Clopper–Pearson lower bound on ε at 95 %; the same for
   two broken controls: 100 × ε while claiming ε, and the noise frozen (one seed reused) with 100 × ε. With
   ``--audit-seconds`` slower models get fewer runs (the table says how many).
3. **Reconstruction from the randomized copy.** The default plan at ε ∈ {0.5, 1, 4} per column on
   a random 5,000 rows; for every randomized-response column, how often the copy shows the true
   value against ``e^ε/(e^ε+k−1)``, and how often an attacker who knows every other column
   (gradient boosting, two-fold) guesses right from that alone and with the copy, against DP's
   ceiling ``min(e^ε·s₀, 1 − e^(−ε)(1 − s₀))``, ``s₀`` the same guess's success on a blank copy
   (the person's value replaced by a random one before randomising).

Also timed: the Attack page's quick settings on both samples.

Figures are measured on raw data: owner's eyes only, nothing is released. Results:
results/attacks.{md,csv,png} (``--quick``: results/attacks_quick.*, fewer models and runs).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/attacks.py [--quick]``
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, Report, plt, quiet_warnings  # noqa: E402

from dpcore.attacks import QUICK, AttackSettings, attack_membership, attack_reconstruction, audit_model  # noqa: E402
from dpcore.attacks.statistics import auc_ceiling, tpr_ceiling  # noqa: E402
from dpcore.attacks.summary import above_ceiling  # noqa: E402
from dpcore.models.registry import models_for  # noqa: E402
from dpcore.tables.design import Design  # noqa: E402
from dpcore.tables.loading import read_csv_path  # noqa: E402
from dpcore.tables.schema import load_schema  # noqa: E402

SAMPLES = {
    "Adult": ("adult.csv", "adult.schema.json"),
    "California Housing": ("california_housing.csv", "california_housing.schema.json"),
}
PLAIN = {"classification": ["sk_tree_clf", "sk_forest_clf"], "regression": ["sk_tree_reg", "sk_forest_reg"]}
QUICK_DP = {"classification": ["dp_boosting_clf", "dp_gaussian_nb"], "regression": ["dp_boosting_reg", "dp_tree"]}


def load(name: str) -> tuple[pd.DataFrame, Design]:
    csv, schema = SAMPLES[name]
    frame, _ = read_csv_path(ROOT / "sample_data" / csv)
    return frame, Design.from_table(frame, load_schema(ROOT / "sample_data" / schema))


def dp_models(task: str, quick: bool) -> list[str]:
    return QUICK_DP[task] if quick else [m.key for m in models_for(task, kinds=("ours", "diffprivlib"))]


def membership(
    report: Report, designs: dict[str, Design], epsilons: list[float], settings: AttackSettings, quick: bool, seed: int
) -> pd.DataFrame:
    rows = []
    for name, design in designs.items():
        keys = [(k, 1.0) for k in PLAIN[design.task]] + [(k, e) for k in dp_models(design.task, quick) for e in epsilons]
        for i, (key, epsilon) in enumerate(keys):
            started = time.perf_counter()
            result = attack_membership(design, key, epsilon, settings=settings, random_state=seed + i)
            model = result.models[0]
            for curve in model.curves:
                rows.append(
                    {
                        "data": name,
                        "model": model.name,
                        "key": key,
                        "DP": model.private,
                        "ε": model.epsilon if model.private else np.nan,
                        "attack": curve.attack,
                        "AUC": curve.auc,
                        "AUC ±": curve.auc_error,
                        "AUC ceiling": auc_ceiling(epsilon, model.delta) if model.private else np.nan,
                        "TPR@1%FPR": curve.tpr_at_low_fpr,
                        "TPR ±": curve.tpr_error,
                        "TPR ceiling": float(tpr_ceiling(0.01, epsilon, model.delta)) if model.private else np.nan,
                        "empirical ε ≥": curve.epsilon_lower,
                        "under ceiling": (not above_ceiling(model)) if model.private else None,
                        "references": model.n_references if curve.attack == "LiRA" else 0,
                        "members": result.n_members,
                        "seconds": time.perf_counter() - started,
                        "fpr": curve.fpr,
                        "tpr": curve.tpr,
                    }
                )
            print(f"  {name}: {model.name} ε={epsilon:g} done in {time.perf_counter() - started:.1f} s", flush=True)
    table = pd.DataFrame(rows)
    plain = table[~table["DP"]]
    report.say("## 1. Membership inference: the non-private models leak")
    report.say()
    report.table(
        plain[["data", "model", "attack", "AUC", "AUC ±", "TPR@1%FPR", "TPR ±", "empirical ε ≥", "references"]], digits=3
    )
    private = table[table["DP"]]
    report.say("## 1b. Every DP model stays under the ceiling its ε sets")
    report.say()
    report.say(
        f"{int(private.groupby(['data', 'key', 'ε'])['under ceiling'].all().sum())} of "
        f"{private.groupby(['data', 'key', 'ε']).ngroups} (model, ε) pairs are under the ceiling within statistical "
        "error (both attacks); the largest AUC, TPR at 1 % FPR and empirical ε over each model's two attacks:"
    )
    report.say()
    worst = (
        private.groupby(["data", "model", "ε"], sort=False)
        .agg(
            AUC=("AUC", "max"),
            AUC_ceiling=("AUC ceiling", "first"),
            TPR=("TPR@1%FPR", "max"),
            TPR_ceiling=("TPR ceiling", "first"),
            eps_lower=("empirical ε ≥", "max"),
            under=("under ceiling", "all"),
        )
        .reset_index()
    )
    worst.columns = [
        "data",
        "model",
        "ε",
        "max AUC",
        "AUC ceiling",
        "max TPR@1%FPR",
        "TPR ceiling",
        "max empirical ε ≥",
        "under ceiling",
    ]
    report.table(worst, digits=3)
    report.say(
        "The ceiling is the worst case ε allows for any attack and any table; these two attacks on these tables stay "
        "near chance even at ε = 4, where the ceiling is far away. What the table shows is that no DP model came "
        "near its ceiling, while the same attacks on the non-private models above are far from chance."
    )
    report.say()
    return table


def audit(report: Report, designs: dict[str, Design], runs: int, seconds: float | None, quick: bool, seed: int) -> pd.DataFrame:
    rows = []
    for name, design in designs.items():
        for i, key in enumerate(dp_models(design.task, quick)):
            started = time.perf_counter()
            result = audit_model(design, key, 1.0, n_runs=runs, n_rows=50, time_limit=seconds, random_state=seed + i)
            by = {run.label: run for run in result.controls}
            budget, frozen = by["broken: ε × 100"], by["broken: noise frozen"]
            rows.append(
                {
                    "data": name,
                    "model": result.name,
                    "claimed ε": 1.0,
                    "ε ≥ (as built)": result.model.lower_bound,
                    "ε ≥ (100 × ε)": budget.lower_bound,
                    "ε ≥ (noise frozen)": frozen.lower_bound,
                    "runs each way": result.model.n_runs,
                    "most this many runs can show": result.model.largest_certifiable,
                    "as built ≤ claim": result.passed,
                    "a control caught": bool(result.control_caught),
                    "seconds": time.perf_counter() - started,
                }
            )
            print(f"  audit {name}: {result.name} done in {time.perf_counter() - started:.1f} s", flush=True)
    table = pd.DataFrame(rows)
    report.say("## 2. Audit at a claimed ε = 1 (95 % Clopper–Pearson lower bounds)")
    report.say()
    report.say(
        f"As built, {int(table['as built ≤ claim'].sum())} of {len(table)} models stay at or below ε = 1; a broken "
        f"control exceeds ε = 1 for {int(table['a control caught'].sum())} of {len(table)}."
    )
    report.say()
    report.table(table.drop(columns=["claimed ε"]), digits=2)
    report.say(
        "The frozen control reuses one random seed on every fit and spends 100 × ε, so its model is a fixed "
        "function of its data: its outputs with and without the record are two fixed points, and the audit's "
        "event (chosen on pilot fits, on the prediction at the record or on the predictions at the record and "
        "8 rows of the sample together, whichever separates more on the pilot) tells them apart. The 100 × ε "
        "control with fresh noise is caught only where the privacy noise dominates the model's randomness; "
        "random structure (random split thresholds, partitions of the rows, random trees) is not scaled by "
        "any budget."
    )
    report.say()
    missed = table.loc[~table["a control caught"], "model"].tolist()
    if missed:
        report.say(
            "Not caught by either control: " + ", ".join(missed) + ": with the noise frozen, the record left the "
            "predictions the audit looks at unchanged."
        )
        report.say()
    return table


def reconstruction(
    report: Report, frames: dict[str, tuple[pd.DataFrame, Design]], epsilons: list[float], rows_: int, seed: int
) -> pd.DataFrame:
    rows = []
    for name, (frame, design) in frames.items():
        assert design.schema is not None
        for epsilon in epsilons:
            result = attack_reconstruction(
                frame, design.schema, epsilon=epsilon, max_rows=rows_, prior_rounds=10, random_state=seed
            )
            for c in result.columns:
                z = (c.copy_only - c.guarantee) / math.sqrt(c.guarantee * (1 - c.guarantee) / c.n)
                rows.append(
                    {
                        "data": name,
                        "ε": epsilon,
                        "column": c.column,
                        "k": c.k,
                        "column ε": c.epsilon,
                        "rows": c.n,
                        "guarantee": c.guarantee,
                        "copy alone": c.copy_only,
                        "z": z,
                        "informed, no copy": c.prior_only,
                        "blank copy": c.blank_copy,
                        "informed, with copy": c.with_copy,
                        "ceiling": c.ceiling,
                        "above ceiling": c.exceeds_ceiling,
                    }
                )
    table = pd.DataFrame(rows)
    report.say("## 3. Reconstruction from the randomized copy (default plan)")
    report.say()
    summary = (
        table.groupby(["data", "ε"])
        .agg(
            columns=("column", "count"),
            max_abs_z=("z", lambda z: float(np.max(np.abs(z)))),
            mean_gain=("informed, with copy", "mean"),
            mean_prior=("informed, no copy", "mean"),
            worst_margin=("ceiling", "min"),
            above=("above ceiling", "sum"),
        )
        .reset_index()
    )
    summary["worst margin to ceiling"] = (
        table.assign(margin=table["ceiling"] - table["informed, with copy"]).groupby(["data", "ε"])["margin"].min().to_numpy()
    )
    summary = summary.drop(columns=["worst_margin"])
    summary.columns = [
        "data",
        "ε per column",
        "columns",
        "max |z| copy vs guarantee",
        "informed, with copy (mean)",
        "informed, no copy (mean)",
        "columns above ceiling",
        "smallest ceiling − with copy",
    ]
    report.table(summary, digits=3)
    report.say("Per column at ε = 1:")
    report.say()
    report.table(table[table["ε"] == 1.0].drop(columns=["ε", "above ceiling"]), digits=3)
    return table


def _quick(what: str, frame: pd.DataFrame, design: Design) -> None:
    """One of the Attack page's quick runs, from the raw table as the page starts it."""
    schema = design.schema
    assert schema is not None
    dp = "dp_boosting_clf" if design.task == "classification" else "dp_boosting_reg"
    if what == "membership (quick)":
        attack_membership(Design.from_table(frame, schema), dp, 1.0, baseline=PLAIN[design.task][0], settings=QUICK)
    elif what == "reconstruction (quick)":
        attack_reconstruction(frame, schema, epsilon=1.0, max_rows=5_000, prior_rounds=10)
    else:
        audit_model(Design.from_table(frame, schema), dp, 1.0, n_runs=100, time_limit=25.0)


def page_timing(report: Report, frames: dict[str, tuple[pd.DataFrame, Design]]) -> pd.DataFrame:
    """The Attack page's quick settings, end to end from the raw table (as the page runs them)."""
    rows = []
    for name, (frame, design) in frames.items():
        for what in ("membership (quick)", "reconstruction (quick)", "audit (quick)"):
            started = time.perf_counter()
            _quick(what, frame, design)
            rows.append({"data": name, "attack": what, "seconds": time.perf_counter() - started})
    table = pd.DataFrame(rows)
    report.say("## 4. The Attack page's quick settings (seconds, 2-core machine)")
    report.say()
    report.table(table, digits=1)
    return table


def figure(table: pd.DataFrame) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, (name, part) in zip(axes, table.groupby("data", sort=False), strict=False):
        for _, row in part[
            (~part["DP"]) | ((part["ε"] == 1.0) & part["key"].str.startswith("dp_boosting") & ~part["key"].str.endswith("approx"))
        ].iterrows():
            label = f"{row['model']}{'' if not row['DP'] else ', ε = 1'} — {row['attack']}"
            ax.plot(row["fpr"], row["tpr"], label=label, linestyle="-" if not row["DP"] else "--")
        grid = np.linspace(0, 1, 400)
        ax.plot(grid, tpr_ceiling(grid, 1.0), color="black", linestyle=":", label="ceiling of ε = 1")
        ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8, label="chance")
        ax.set(title=name, xlabel="false-positive rate", ylabel="true-positive rate", xlim=(0, 1), ylim=(0, 1))
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Membership inference: non-private trees vs DP boosting at ε = 1")
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: two DP models per task, ε ∈ {1}, few runs")
    parser.add_argument("--references", type=int, default=8, help="LiRA reference models per attacked model (even)")
    parser.add_argument("--runs", type=int, default=200, help="audit fits each way per model")
    parser.add_argument(
        "--audit-seconds",
        type=float,
        default=None,
        help="time limit of one model's audit (default none: the same runs for every model, so the "
        "figures do not depend on the machine's load)",
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    quiet_warnings()
    report = Report("attacks_quick" if args.quick else "attacks")
    started = time.perf_counter()
    frames = {name: load(name) for name in SAMPLES}
    designs = {name: design for name, (_, design) in frames.items()}
    epsilons = [1.0] if args.quick else [0.5, 1.0, 4.0]
    settings = AttackSettings(
        max_rows=6_000 if args.quick else None, n_references=4 if args.quick else args.references, time_limit=120.0
    )
    report.say("# Attacks on Adult and California Housing (issue 18)")
    report.say()
    report.say(
        "Owner's eyes only: every figure is measured on the raw sample tables; nothing is released and no budget "
        "is charged. Produced by `benchmarks/attacks.py`" + (" --quick" if args.quick else "") + f" (seed {args.seed})."
    )
    report.say()
    members = membership(report, designs, epsilons, settings, args.quick, args.seed)
    audits = audit(report, designs, 50 if args.quick else args.runs, args.audit_seconds, args.quick, args.seed)
    copies = reconstruction(report, frames, epsilons, 2_000 if args.quick else 5_000, args.seed)
    timing = page_timing(report, frames)
    report.say(f"Total time: {time.perf_counter() - started:.0f} s.")
    results = pd.concat(
        [
            members.drop(columns=["fpr", "tpr"]).assign(experiment="membership"),
            audits.assign(experiment="audit"),
            copies.assign(experiment="reconstruction"),
            timing.assign(experiment="page timing"),
        ],
        ignore_index=True,
    )
    report.save(results, figure(members))


if __name__ == "__main__":
    main()
