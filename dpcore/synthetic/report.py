"""The synthetic copy's privacy report: what was measured, with what noise, and what the copy can be trusted for.

The report holds declarations, the noise's parameters and the pairs the exponential mechanism
chose (a private output, free to publish), never a count of the private table.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from dpcore.budget.accountant import UNITS
from dpcore.i18n import _
from dpcore.synthetic.budget import Calibration
from dpcore.synthetic.domain import SyntheticColumn
from dpcore.synthetic.measure import Measurement

REPORT_FORMAT = "dpcore-synthetic-copy/1"
KINDS = {1: "one-way", 2: "two-way", 3: "three-way"}
METHOD_SENTENCES = {
    "mst": "MST: noisy one-way marginals, a spanning tree of pairs chosen by the exponential mechanism, their "
    "noisy two-way marginals; rows drawn from a Private-PGM graphical model fitted to them",
    "aim": "AIM: noisy one-way marginals, then rounds each measuring the workload marginal (every pair, the target's "
    "triples) the model got most wrong, chosen by the exponential mechanism; rows drawn from a Private-PGM graphical "
    "model fitted to them",
}


def build_report(
    columns: list[SyntheticColumn],
    dropped: list[str],
    calibration: Calibration,
    measurements: list[Measurement],
    rows: int,
    public_rows: bool,
    seeded: bool,
    persons: bool,
    method: str = "mst",
    declared: list[tuple[int, ...]] | None = None,
) -> dict[str, Any]:
    """The machine-readable report of a new synthetic copy (``method``: ``"mst"`` or ``"aim"``; ``declared``: the
    owner's AIM workload, as cliques of the columns' positions)."""
    measured = [
        {
            "columns": [columns[i].name for i in m.clique],
            "cells": int(m.noisy.size),
            "noise_std": float(m.stddev),
            "kind": KINDS.get(len(m.clique), f"{len(m.clique)}-way"),
        }
        for m in measurements
    ]
    warnings = []
    if seeded:
        warnings.append(_("Reproducible seed: this copy is for tests only and must not be sold or shared."))
    return {
        "format": REPORT_FORMAT,
        "kind": "synthetic",
        "method": METHOD_SENTENCES[method],
        "synthesizer": method,
        "noise": calibration.noise,
        "epsilon": calibration.epsilon,
        "delta": calibration.delta,
        "rho": calibration.rho if calibration.noise == "gaussian" else None,
        "unit_of_protection": {
            "unit": calibration.unit,
            "unit_sentence": UNITS[calibration.unit],
            "epsilon": calibration.epsilon,
            "delta": calibration.delta,
        },
        "privacy_unit": {"rows_per_person": calibration.rows_per_person} if persons else None,
        "sensitivity": {"l1": calibration.l1, "l2": calibration.l2},
        "selection": {
            "rounds": calibration.rounds,
            "epsilon_per_round": calibration.selection_epsilon(),
            "utility": "L1 distance between a pair's marginal and the product of its noisy one-way shares",
        }
        if method == "mst"
        else {
            "rounds": len(measurements) - len(columns),
            "utility": "the model's L1 error on a workload marginal beyond its expected noise, times its workload weight",
            "workload": [[columns[i].name for i in clique] for clique in declared] if declared else "default",
            "budget": "zCDP: each round's rho shared 0.9 to the Gaussian measurement and 0.1 to the exponential "
            "mechanism; sigma halved when a measurement barely moved the model; the last round spends what is left",
        },
        "columns": [c.entry() for c in columns],
        "dropped": list(dropped),
        "measured": measured,
        "rows": {"count": int(rows), "source": "declared public size" if public_rows else "noisy count"},
        "seeded": seeded,
        "warnings": warnings,
        "release_id": uuid.uuid4().hex,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def trust_sentences(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What the copy can be trusted for, and what it cannot."""
    pairs = list(dict.fromkeys(" × ".join(m["columns"]) for m in report["measured"] if m["kind"] != "one-way"))
    can = [
        _(
            "The share of every category or bin of each single column: each was measured with noise of standard deviation "
            "{std} rows."
        ).format(std=f"{report['measured'][0]['noise_std']:.3g}"),
    ]
    if pairs:
        can.append(
            _("The joint shares of the columns measured together (pairs, and with AIM triples): {pairs}.").format(
                pairs="; ".join(pairs)
            )
        )
    cannot = [
        _(
            "Relations between columns that were not measured together: the model guesses them through the columns "
            "measured together, so they can be weaker or wrong."
        ),
        _("Any single row: no row is a real person's; rows are drawn from a model of the noisy marginals."),
        _("Rare categories and small groups: noise of the size above can hide them or invent them."),
        _("Values finer than the declared bins: numbers come as bins."),
    ]
    return can, cannot


def report_markdown(report: dict[str, Any]) -> str:
    """The report for people: the promise, what was measured, what to trust."""
    unit = report["unit_of_protection"]
    noise = (
        _("Gaussian noise (zero-concentrated DP, ρ = {rho})").format(rho=f"{report['rho']:.4g}")
        if report["noise"] == "gaussian"
        else _("Laplace noise (pure ε-DP)")
    )
    lines = [
        "# " + _("Synthetic copy: privacy report"),
        "",
        _(
            "Every row of this table was drawn from a statistical model; no row is a real person's. The model was fitted to "
            "noisy counts of the private table, so the whole copy is differentially private with ε = {epsilon}, δ = {delta} "
            "per person, where {unit}."
        ).format(epsilon=f"{unit['epsilon']:.4g}", delta=f"{unit['delta']:.3g}", unit=unit["unit_sentence"]),
        "",
        _("Noise: {noise}. Rows: {rows} ({source}).").format(
            noise=noise, rows=f"{report['rows']['count']:,}", source=report["rows"]["source"]
        ),
    ]
    workload = (report.get("selection") or {}).get("workload")
    if isinstance(workload, list):
        lines += [
            "",
            _("AIM adapted to the workload the owner declared: {workload}.").format(
                workload="; ".join(" × ".join(clique) for clique in workload)
            ),
        ]
    if report.get("privacy_unit"):
        lines += [
            "",
            _("A person can have up to {k} rows; the noise was scaled so the promise holds per person.").format(
                k=report["privacy_unit"]["rows_per_person"]
            ),
        ]
    lines += [
        "",
        "## " + _("What was measured"),
        "",
        "| " + _("columns") + " | " + _("cells") + " | " + _("noise std (rows)") + " |",
        "|---|---:|---:|",
    ]
    lines += [f"| {' × '.join(m['columns'])} | {m['cells']:,} | {m['noise_std']:.3g} |" for m in report["measured"]]
    can, cannot = trust_sentences(report)
    lines += ["", "## " + _("What you can trust"), ""] + [f"- {s}" for s in can]
    lines += ["", "## " + _("What you cannot trust"), ""] + [f"- {s}" for s in cannot]
    lines += ["", "## " + _("Columns"), ""]
    lines += [f"- **{c['column']}**: {', '.join(str(x) for x in c['cells'])}" for c in report["columns"]]
    if report["dropped"]:
        lines += ["", _("Left out: {names}.").format(names=", ".join(report["dropped"]))]
    for warning in report["warnings"]:
        lines += ["", f"**{warning}**"]
    return "\n".join(lines) + "\n"
