"""The attacks in words a stakeholder can read aloud, and a one-page HTML summary marked "owner's eyes only".

Every sentence and the page are built from the attacks' figures and the table's column names
only — never a cell value. Nothing here is differentially private: the figures are measured on
the owner's raw rows, so the page says, at the top and in the file name the app suggests, that
it is for the owner's eyes only and charges no budget.

Examples
--------
>>> in_words(0.25), in_words(0.012), in_words(0.6)
('1 in 4', '1 in 83', '3 in 5')
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from dpcore.attacks.audit import AuditResult
from dpcore.attacks.membership import MembershipResult, ModelUnderAttack
from dpcore.attacks.reconstruction import ReconstructionResult
from dpcore.attacks.statistics import LOW_FPR, auc_ceiling, tpr_ceiling
from dpcore.i18n import N_, _, decimal, fixed, get_language, integer, percent, short

OWNER_ONLY = N_(
    "Owner's eyes only: measured on your raw data. Nothing here is released or differentially private, and "
    "none of it was charged to the privacy budget. Do not share it."
)
_DENOMINATORS = (2, 3, 4, 5, 10)
_COLOURS = ("#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b")


def in_words(rate: float) -> str:
    """A rate as "1 in N" (small rates) or "a in b" with a small b, for reading aloud."""
    if not rate > 0:
        return _("none")
    if rate >= 0.995:
        return _("all")
    if rate < 0.095:
        return _("{a} in {b}").format(a=1, b=integer(round(1 / rate)))
    a, b = min(((a, b) for b in _DENOMINATORS for a in range(1, b)), key=lambda ab: (abs(ab[0] / ab[1] - rate), ab[1]))
    return _("{a} in {b}").format(a=a, b=b)


def _percent(rate: float) -> str:
    return decimal(100 * rate, 0 if rate >= 0.1 else 1) + " %"


def no_better_than_chance(model: ModelUnderAttack) -> bool:
    """Every attack's AUC and TPR at 1 % FPR are within their error of a coin toss."""
    return all(c.auc - c.auc_error <= 0.5 and c.tpr_at_low_fpr - c.tpr_error <= LOW_FPR for c in model.curves)


def above_ceiling(model: ModelUnderAttack) -> bool:
    """Some attack beat what the model's ε allows by more than its error (it never should)."""
    if model.epsilon is None:
        return False
    ceiling = float(tpr_ceiling(LOW_FPR, model.epsilon, model.delta))
    return any(
        c.tpr_at_low_fpr - c.tpr_error > ceiling
        or c.auc - c.auc_error > auc_ceiling(model.epsilon, model.delta)
        or c.epsilon_lower > model.epsilon
        for c in model.curves
    )


def membership_sentences(result: MembershipResult) -> list[str]:
    """What the membership attacks found, one sentence per model and one for the guarantee."""
    who = _("people") if result.unit == "person" else _("members")
    out = []
    for m in result.models:
        best = m.strongest()
        spotted = _("spotted {in_words} {who} at a 1 % false-alarm rate").format(in_words=in_words(best.tpr_at_low_fpr), who=who)
        if not m.private:
            out.append(
                _(
                    "Without DP ({name}), the attacker {spotted} (a coin toss would spot 1 in 100), and its AUC was "
                    "{auc} (0.50 is a coin toss)."
                ).format(name=m.name, spotted=spotted, auc=fixed(best.auc, 2))
            )
        elif above_ceiling(m):
            out.append(
                _(
                    "With DP at ε = {epsilon} ({name}), the attacker {spotted}: MORE than ε = {epsilon} allows, beyond "
                    "the measurement's error. This should never happen; please report it."
                ).format(epsilon=short(m.epsilon or 0.0), name=m.name, spotted=spotted)
            )
        elif no_better_than_chance(m):
            out.append(
                _(
                    "With DP at ε = {epsilon} ({name}), the attacker did no better than chance ({in_words} at a 1 % "
                    "false-alarm rate, AUC {auc})."
                ).format(
                    epsilon=short(m.epsilon or 0.0), name=m.name, in_words=in_words(best.tpr_at_low_fpr), auc=fixed(best.auc, 2)
                )
            )
        else:
            out.append(
                _(
                    "With DP at ε = {epsilon} ({name}), the attacker {spotted} (AUC {auc}): within what ε = {epsilon} allows."
                ).format(epsilon=short(m.epsilon or 0.0), name=m.name, spotted=spotted, auc=fixed(best.auc, 2))
            )
    for eps, delta in sorted({(m.epsilon, m.delta) for m in result.models if m.epsilon is not None}):
        ceiling = float(tpr_ceiling(LOW_FPR, eps, delta))
        out.append(
            _(
                "The guarantee: at ε = {eps} no attacker, however clever, can spot more than {percent} of the {who} "
                "at a 1 % false-alarm rate, or reach an AUC above {auc_ceiling}."
            ).format(eps=short(eps), percent=_percent(ceiling), who=who, auc_ceiling=fixed(auc_ceiling(eps, delta), 2))
        )
    private = [m for m in result.models if m.private and m.utility]
    plain = [m for m in result.models if not m.private and m.utility]
    if private and result.task == "classification":
        line = _("The DP model was still right {percent} of the time on people it never saw").format(
            percent=_percent(private[0].utility["accuracy"])
        )
        out.append(
            line + (_(" (without DP: {percent}).").format(percent=_percent(plain[0].utility["accuracy"])) if plain else ".")
        )
    return out


def reconstruction_sentences(result: ReconstructionResult) -> list[str]:
    """What the reconstruction attacks found: the guarantee held, and the column the copy helped most with."""
    if not result.columns:
        return [_("No column of the copy could be attacked.")]
    first = result.columns[0]
    out = [
        _(
            "From the copy alone an attacker guesses a person's value right about as often as the guarantee "
            "says: '{column}' {percent} of the time, where ε = {epsilon} over {k} values allows {percent2} to "
            "someone with no better guess of their own."
        ).format(
            column=first.column,
            percent=_percent(first.copy_only),
            epsilon=short(first.epsilon),
            k=first.k,
            percent2=_percent(first.guarantee),
        )
    ]
    gain = max(result.columns, key=lambda c: c.with_copy - c.prior_only)
    out.append(
        _(
            "An attacker who already knows everything else about a person guessed '{column}' right {percent} of "
            "the time without the copy and {percent2} with it; ε = {epsilon} lets the copy raise that to at most "
            "{percent3}."
        ).format(
            column=gain.column,
            percent=_percent(gain.prior_only),
            percent2=_percent(gain.with_copy),
            epsilon=short(gain.epsilon),
            percent3=_percent(gain.ceiling),
        )
    )
    broken = [c.column for c in result.columns if c.exceeds_ceiling]
    if broken:
        out.append(
            _(
                "ABOVE the guarantee, beyond the measurement's error, for: {columns}. This should never happen; please report it."
            ).format(columns=", ".join(f"'{c}'" for c in broken))
        )
    else:
        out.append(
            _("For every one of the {count} columns attacked, the copy helped no more than ε allows.").format(
                count=len(result.columns)
            )
        )
    return out


def audit_sentences(result: AuditResult) -> list[str]:
    """The audit's verdict on the model and on each broken control."""
    run = result.model
    out = [
        _(
            "Audit of {name} at a claimed ε = {claimed_epsilon}: trained {n_runs} times with and {n_runs} times "
            "without one record ({canary}). The data prove a privacy loss of at least ε = {lower_bound} ({confidence} "
            "confidence)"
        ).format(
            name=result.name,
            claimed_epsilon=short(result.claimed_epsilon),
            n_runs=run.n_runs,
            canary=result.canary,
            lower_bound=fixed(run.lower_bound, 2),
            confidence=percent(result.confidence),
        )
        + (
            _(": MORE than claimed. The model does not keep its promise.")
            if not result.passed
            else _(", within the claim.")
            if result.conclusive
            else "."
        )
    ]
    out.append(
        _(
            "What this audit could detect: with {n_runs} fits each way at {confidence} confidence, no result can prove "
            "more than ε = {power}, even for a model that leaks everything."
        ).format(n_runs=run.n_runs, confidence=percent(result.confidence), power=fixed(result.power, 2))
    )
    for control in result.controls:
        if not control.of_model and result.caught(control):
            out.append(
                _(
                    "The DP mean given {factor} × ε — not your model — was caught: the audit proves ε ≥ {lower_bound}, above "
                    "the claimed {claimed_epsilon}. So this many runs can see a {factor}-fold noise cut in the simplest "
                    "mechanism; whether one prediction of your model shows it is what the broken versions above test."
                ).format(
                    factor=short(control.model_epsilon / result.claimed_epsilon),
                    lower_bound=fixed(control.lower_bound, 2),
                    claimed_epsilon=short(result.claimed_epsilon),
                )
            )
        elif result.caught(control):
            out.append(
                _(
                    "A deliberately broken version — {description} — was caught: the audit proves ε ≥ {lower_bound}, "
                    "above the claimed {claimed_epsilon}. So the audit can see a leak."
                ).format(
                    description=control.description,
                    lower_bound=fixed(control.lower_bound, 2),
                    claimed_epsilon=short(result.claimed_epsilon),
                )
            )
        elif not control.of_model:
            out.append(
                _(
                    "The DP mean given {factor} × ε — not your model — was not caught with {n_runs} runs (it proves only "
                    "ε ≥ {lower_bound}): an audit this small cannot see such a bug even in the simplest mechanism."
                ).format(
                    factor=short(control.model_epsilon / result.claimed_epsilon),
                    n_runs=control.n_runs,
                    lower_bound=fixed(control.lower_bound, 2),
                )
            )
        else:
            out.append(
                _(
                    "A deliberately broken version — {description} — was not caught with {n_runs} runs (it proves only ε "
                    "≥ {lower_bound}): one prediction of this model says too little to catch it; more runs or another "
                    "check are needed."
                ).format(description=control.description, n_runs=control.n_runs, lower_bound=fixed(control.lower_bound, 2))
            )
    if result.passed and not result.conclusive:
        out.append(
            _(
                "This audit was too small to tell: no broken control was caught, so its finding no violation says "
                "nothing about the model. Run the full audit."
            )
        )
    return out


def roc_svg(result: MembershipResult, size: int = 360) -> str:
    """The ROC curves, the ceilings and the chance line as a small standalone SVG (no library needed)."""
    pad = 44
    inner = size - 2 * pad
    frame = result.curves_frame()

    def point(x: float, y: float) -> str:
        return f"{pad + x * inner:.1f},{size - pad - y * inner:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 330}" height="{size}" role="img" '
        'aria-label="ROC curves of the membership attacks">',
        f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" fill="none" stroke="#999"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{pad + tick * inner:.1f}" y="{size - pad + 16}" font-size="11" text-anchor="middle">{tick:g}</text>'
        )
        parts.append(
            f'<text x="{pad - 6}" y="{size - pad - tick * inner + 4:.1f}" font-size="11" text-anchor="end">{tick:g}</text>'
        )
    across, up = html.escape(_("false alarms (non-members accused)")), html.escape(_("members spotted"))
    parts.append(f'<text x="{pad + inner / 2}" y="{size - 6}" font-size="12" text-anchor="middle">{across}</text>')
    parts.append(
        f'<text x="12" y="{pad + inner / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 12 '
        f'{pad + inner / 2})">{up}</text>'
    )
    for i, (line, part) in enumerate(frame.groupby("line", sort=False)):
        kind = part["kind"].iloc[0]
        colour = "#777" if kind == "chance" else "#000" if kind == "ceiling" else _COLOURS[i % len(_COLOURS)]
        dash = ' stroke-dasharray="5,4"' if kind != "attack" else ""
        points = " ".join(point(float(x), float(y)) for x, y in zip(part["fpr"], part["tpr"], strict=True))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        y = pad + 14 * i
        parts.append(f'<line x1="{size + 4}" y1="{y}" x2="{size + 24}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{size + 28}" y="{y + 4}" font-size="11">{html.escape(str(line))}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table_html(frame: pd.DataFrame) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float | np.floating):
            return "—" if math.isnan(value) else f"{value:.3g}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _paragraphs(sentences: list[str]) -> str:
    return "".join(f"<p>{html.escape(s, quote=False)}</p>" for s in sentences)


def html_report(
    *,
    table_name: str = "",
    membership: MembershipResult | None = None,
    reconstruction: ReconstructionResult | None = None,
    audit: AuditResult | None = None,
    copy_membership: MembershipResult | None = None,
) -> str:
    """A one-page HTML summary of whichever attacks were run, marked "owner's eyes only" (print it to PDF from a browser)."""
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    title = _("What differential privacy protects") + (": " + table_name if table_name else "")
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="owner">{html.escape(_(OWNER_ONLY), quote=False)}</p>',
        f"<p class='when'>{html.escape(_('Made by DP Studio on {when}.').format(when=when))}</p>",
    ]
    if membership is not None:
        drawn = (
            _("{members} people were members and {others} were not, by a fair coin each.")
            if membership.unit == "person"
            else _("{members} rows were members and {others} were not, by a fair coin each.")
        )
        body += [
            _heading(_("Can an attacker tell who was in the training data?")),
            _paragraphs(membership_sentences(membership)),
            roc_svg(membership),
            _table_html(membership.table().round(4)),
            _paragraphs(
                [drawn.format(members=integer(membership.n_members), others=integer(membership.n_non_members)), *membership.notes]
            ),
        ]
    if copy_membership is not None:
        body += [
            _heading(_("Can a buyer of a synthetic copy tell who was in the table?")),
            _paragraphs(membership_sentences(copy_membership)),
            roc_svg(copy_membership),
            _table_html(copy_membership.table().round(4)),
            _paragraphs(list(copy_membership.notes)),
        ]
    if reconstruction is not None:
        body += [
            _heading(_("Can an attacker guess a person's value back from the randomized copy?")),
            _paragraphs(reconstruction_sentences(reconstruction)),
            _table_html(reconstruction.table().round(4)),
            _paragraphs(list(reconstruction.notes)),
        ]
    if audit is not None:
        body += [
            _heading(_("Does the model keep its promise? An empirical audit")),
            _paragraphs(audit_sentences(audit)),
            _table_html(audit.table().round(4)),
            _paragraphs(list(audit.notes)),
        ]
    if len(body) == 3:
        body.append(_paragraphs([_("No attack has been run yet.")]))
    style = (
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:1.5rem auto;color:#222;font-size:14px}"
        ".owner{background:#fde8e8;border:2px solid #c00;padding:.6rem;font-weight:600}"
        "table{border-collapse:collapse;font-size:12px;margin:.5rem 0}td,th{border:1px solid #bbb;padding:2px 5px}"
        "th{background:#eee}.when{color:#666}@media print{body{margin:0;font-size:11px}h2{page-break-after:avoid}}"
    )
    page_title = html.escape(_("OWNER'S EYES ONLY — DP Studio attack summary"))
    return (
        f"<!DOCTYPE html>\n<html lang='{get_language()}'><head><meta charset='utf-8'>"
        f"<title>{page_title}</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )


def _heading(text: str) -> str:
    return f"<h2>{html.escape(text, quote=False)}</h2>"


def as_json(
    *,
    membership: MembershipResult | None = None,
    reconstruction: ReconstructionResult | None = None,
    audit: AuditResult | None = None,
) -> str:
    """The attacks' tables and sentences as JSON, marked owner's eyes only."""
    out: dict[str, Any] = {"marking": OWNER_ONLY}
    if membership is not None:
        out["membership"] = {
            "sentences": membership_sentences(membership),
            "table": _records(membership.table()),
            "members": membership.n_members,
            "non_members": membership.n_non_members,
            "unit": membership.unit,
            "notes": list(membership.notes),
        }
    if reconstruction is not None:
        out["reconstruction"] = {
            "sentences": reconstruction_sentences(reconstruction),
            "table": _records(reconstruction.table()),
            "notes": list(reconstruction.notes),
        }
    if audit is not None:
        out["audit"] = {"sentences": audit_sentences(audit), "table": _records(audit.table()), "notes": list(audit.notes)}
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            str(k): (None if isinstance(v, float) and math.isnan(v) else v.item() if isinstance(v, np.generic) else v)
            for k, v in row.items()
        }
        for row in frame.to_dict("records")
    ]
