"""The Attack page's sections: membership inference, reconstruction from the copy, the audit, and the summary download.

Every section calls one function of :mod:`dpcore.attacks` and shows what it returns. Nothing
here touches the budget ledger: the attacks run on the owner's raw rows, for the owner's eyes
only, and release nothing. The results are kept in the session state and the on-disk workspace
(a reload does not lose minutes of attacks), for the table and declarations they were measured on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from dpcore.attacks import (
    OWNER_ONLY,
    QUICK,
    THOROUGH,
    AuditResult,
    MembershipResult,
    ReconstructionResult,
    attack_membership,
    attack_reconstruction,
    audit_model,
    audit_sentences,
    html_report,
    membership_sentences,
    reconstruction_sentences,
)
from dpcore.attacks.summary import above_ceiling
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer
from dpcore.models.registry import models_for
from dpcore.progress import time_left_text
from dpcore.tables.design import Design
from dpstudio.support.charts import localized, roc_lines
from dpstudio.support.language import keyed
from dpstudio.support.session import recall_result, remember_result
from dpstudio.support.state import Dataset, StudioState

EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DEPTHS = {"quick": N_("Quick (under 30 s)"), "thorough": N_("Thorough (every row, more reference models: minutes)")}
DEFAULT_DP = {"classification": "dp_boosting_clf", "regression": "dp_boosting_reg"}
DEFAULT_PLAIN = {"classification": "sk_tree_clf", "regression": "sk_tree_reg"}
# Quick and thorough settings of the reconstruction (rows, attacker's boosting rounds, seconds) and the audit (runs,
# seconds). The quick time limits leave a third of the 30 s label for what a measurement cannot foresee.
RECONSTRUCTION = {"quick": (5_000, 10, 20.0), "thorough": (20_000, 30, None)}
AUDIT = {"quick": (100, 20.0), "thorough": (400, 600.0)}
#: The broken controls spend this many times ε: a realistic bug the audit must be able to catch at every setting.
BROKEN_FACTOR = 10.0
PAGE_NOTE = N_(
    "**Owner's eyes only.** Every attack on this page runs on your raw data to show what differential privacy "
    "protects. Nothing on it is released, nothing is differentially private, and it spends **no privacy budget**."
)


@dataclass
class AttackResults:
    """The attacks run in this session on one table with one set of declarations."""

    key: str
    membership: MembershipResult | None = None
    reconstruction: ReconstructionResult | None = None
    audit: AuditResult | None = None
    copy_membership: MembershipResult | None = None

    @property
    def empty(self) -> bool:
        return all(result is None for result in (self.membership, self.reconstruction, self.audit, self.copy_membership))


def results(state: StudioState) -> AttackResults:
    """The results for the table in use (a fresh, empty set when the table or its declarations changed)."""
    key = state.dataset.declared_key
    held = recall_result(state, "attacks", AttackResults)
    if held is None or held.key != key:
        state.attacks = held = AttackResults(key)
    if not hasattr(held, "copy_membership"):  # kept in a workspace before the copy attack existed
        held.copy_membership = None
    return held


def _keep(state: StudioState) -> None:
    remember_result(state, "attacks")


def _bar(start: str) -> tuple[Any, Callable[[float, float | None, str], None]]:
    bar = st.progress(0.0, text=start)

    def report(share: float, seconds_left: float | None, what: str) -> None:
        bar.progress(min(max(share, 0.0), 1.0), text=f"{what} — {time_left_text(seconds_left)}")

    return bar, report


def _run(work: Callable[[Callable[[float, float | None, str], None]], Any], start: str) -> Any:
    """Run one attack with a progress bar; errors become sentences (never a traceback, never a library's message)."""
    bar, report = _bar(start)
    try:
        return work(report)
    except DataError as error:
        st.error(str(error))
    except Exception:
        st.error(_("The attack could not be run on this table. Check the declarations on the Data page or pick another model."))
    finally:
        bar.empty()
    return None


def _design(dataset: Dataset) -> Design:
    return Design.from_table(dataset.frame, dataset.schema)


def _depth(key: str) -> str:
    return st.radio(_("How hard to attack"), list(DEPTHS), format_func=lambda d: _(DEPTHS[d]), horizontal=True, key=keyed(key))


def _dp_model(column: Any, task: str, label: str, key: str) -> str:
    """A DP model of ours or diffprivlib's for the task, the page's default first chosen."""
    private = {m.key: _(m.name) for m in models_for(task, kinds=("ours", "diffprivlib"))}
    return column.selectbox(
        label, list(private), index=list(private).index(DEFAULT_DP[task]), format_func=private.get, key=keyed(key)
    )


def _sentences(sentences: list[str]) -> None:
    st.markdown("\n".join(f"- {s}" for s in sentences))


# --- membership ------------------------------------------------------------------------------


def membership_section(state: StudioState, held: AttackResults) -> None:
    dataset = state.dataset
    task = dataset.schema.task
    st.write(
        _(
            "A coin toss makes each row (each person, when the table names whose rows are whose) a **member** or not. "
            "The model is trained on the members only — once without DP and once with it — and an attacker who sees the "
            "model and the whole population tries to tell who was a member: by how well the model fits each record "
            "(loss threshold), and by comparing it with models of its own trained with and without that record (LiRA)."
        )
    )
    plain = {m.key: _(m.name) for m in models_for(task, kinds=("non-private",))}
    left, right = st.columns(2)
    model = _dp_model(left, task, _("Model with DP"), f"attack_model_{task}")
    baseline = right.selectbox(
        _("The same job without DP"),
        list(plain),
        index=list(plain).index(DEFAULT_PLAIN[task]),
        format_func=plain.get,
        key=keyed(f"attack_baseline_{task}"),
    )
    epsilon = left.select_slider(_("ε of the DP model"), EPSILONS, value=1.0, key="attack_epsilon")
    with right:
        depth = _depth("attack_depth")
    if st.button(_("Run the attack"), type="primary", key="attack_run"):
        settings = QUICK if depth == "quick" else THOROUGH

        def work(report: Callable[[float, float | None, str], None]) -> MembershipResult:
            return attack_membership(
                _design(dataset),
                model,
                float(epsilon),
                baseline=baseline,
                settings=settings,
                count_noise=state.count_noise,
                selection=state.selection,
                progress=report,
            )

        held.membership = _run(work, _("Splitting the rows into members and non-members…")) or held.membership
        _keep(state)
    result = held.membership
    if result is None:
        st.caption(_("Press **Run the attack** to start; the quick attack answers in under half a minute."))
        return
    show_membership(result, "attack_log")


def show_membership(result: MembershipResult, log_key: str, hidden: tuple[str, ...] = ()) -> None:
    """A membership attack's sentences, ROC chart, table (less its ``hidden`` columns) and caption."""
    if any(above_ceiling(m) for m in result.models):
        st.error(_("An attack beat what ε allows, beyond the measurement's error. This should never happen: please report it."))
    _sentences(membership_sentences(result))
    log = st.checkbox(_("Zoom in on low false-alarm rates (log scale)"), key=log_key)
    st.altair_chart(localized(roc_chart(result, log)), width="stretch")
    table = result.table()
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **{c: st.column_config.Column(_(c)) for c in table.columns},
            "ε": st.column_config.NumberColumn(_("ε (blank: no DP)")),
            **{
                c: st.column_config.NumberColumn(_(c), format="%.3f")
                for c in (
                    "AUC",
                    "AUC ± (95 %)",
                    "AUC ceiling",
                    "TPR at 1 % FPR",
                    "TPR ± (95 %)",
                    "TPR ceiling",
                    "empirical ε (lower bound)",
                )
            },
        },
        column_order=[c for c in table.columns if c not in hidden],
    )
    members = (
        _("{members} people were members and {others} were not.")
        if result.unit == "person"
        else _("{members} rows were members and {others} were not.")
    )
    st.caption(
        members.format(members=integer(result.n_members), others=integer(result.n_non_members))
        + " "
        + " ".join(result.notes)
        + " "
        + _("Measured in {seconds} s, on your raw data: owner's eyes only.").format(seconds=integer(result.seconds))
    )


def roc_chart(result: MembershipResult, log: bool = False) -> alt.Chart:
    """ROC curves of every attack and model, with each DP model's ceiling and the chance line."""
    data = result.curves_frame()
    if log:
        data = data[data["fpr"] >= 1e-3]
    return roc_lines(data, log).properties(
        height=420,
        title=_("Can the attacker tell members from non-members? (above the dashed black line: more than ε allows)"),
    )


# --- reconstruction ------------------------------------------------------------------------------


def reconstruction_section(state: StudioState, held: AttackResults) -> None:
    dataset = state.dataset
    st.write(
        _(
            "The randomized copy (the Export page) writes each value as it is with probability e^ε/(e^ε + k − 1) and "
            "otherwise as one of the other k − 1 values. Here an attacker who has found a person's row in a copy made with "
            "the default plan tries to guess their true values back: from the copy alone, and knowing everything else "
            "about the person (a model of your other columns). No copy is released."
        )
    )
    left, right = st.columns(2)
    epsilon = left.select_slider(_("ε per column of the copy"), EPSILONS, value=1.0, key="attack_copy_epsilon")
    with right:
        depth = _depth("attack_copy_depth")
    if st.button(_("Guess the values back"), type="primary", key="attack_copy_run"):
        rows, rounds, limit = RECONSTRUCTION[depth]

        def work(report: Callable[[float, float | None, str], None]) -> ReconstructionResult:
            return attack_reconstruction(
                dataset.frame,
                dataset.schema,
                epsilon=float(epsilon),
                max_rows=rows,
                prior_rounds=rounds,
                time_limit=limit,
                progress=report,
            )

        held.reconstruction = _run(work, _("Randomising a copy…")) or held.reconstruction
        _keep(state)
    result = held.reconstruction
    if result is None:
        return
    _sentences(reconstruction_sentences(result))
    st.altair_chart(localized(reconstruction_chart(result)), width="stretch")
    table = result.table()
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **{c: st.column_config.Column(_(c)) for c in table.columns[:3]},
            **{c: st.column_config.NumberColumn(_(c), format="percent") for c in table.columns[3:]},
        },
    )
    st.caption(
        _("Measured on {rows} of your rows in {seconds} s: owner's eyes only.").format(
            rows=integer(result.n_rows), seconds=integer(result.seconds)
        )
        + " "
        + " ".join(result.notes)
    )


def reconstruction_chart(result: ReconstructionResult) -> alt.Chart:
    """Per column: how often the informed attacker was right from what it knew and with the copy, and DP's ceiling."""
    rows = []
    for c in result.columns:
        rows += [
            {"column": c.column, "what": _("knowing everything else, without the copy"), "rate": c.prior_only},
            {"column": c.column, "what": _("knowing everything else, with the copy"), "rate": c.with_copy},
            {"column": c.column, "what": _(CEILING), "rate": c.ceiling},
        ]
    data = pd.DataFrame(rows)
    encode = {
        "y": alt.Y("column:N", title=None, sort=None),
        "x": alt.X(
            "rate:Q", title=_("how often the attacker guesses right"), scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")
        ),
        "color": alt.Color("what:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=0)),
        "tooltip": [
            alt.Tooltip("column:N", title=_("column")),
            alt.Tooltip("what:N", title=_("what")),
            alt.Tooltip("rate:Q", title=_("rate"), format=".1%"),
        ],
    }
    points = alt.Chart(data[data["what"] != _(CEILING)]).mark_point(filled=True, size=70).encode(**encode)
    ceiling = alt.Chart(data[data["what"] == _(CEILING)]).mark_tick(thickness=2, size=18).encode(**encode)
    return (points + ceiling).properties(title=_("Guessing a person's value back from the randomized copy"))


CEILING = N_("the most ε lets the copy add")


# --- audit ---------------------------------------------------------------------------------------


def audit_section(state: StudioState, held: AttackResults) -> None:
    dataset = state.dataset
    task = dataset.schema.task
    st.write(
        _(
            "Does the model keep its promise? It is trained many times on a small sample of your rows, and as many times on "
            "the same sample plus one made-up person at the edge of every declared range; how often its prediction for that "
            "person crosses a threshold gives a lower bound on the privacy loss, at 95 % confidence. Two deliberately broken "
            "versions of the same model (given 10 × the budget, one with its noise frozen) are always audited too: only when "
            "the audit catches one can its finding no violation be trusted. A third control, the DP mean of the same sample "
            "given 10 × the budget, shows whether this many fits can see noise cut 10-fold at all."
        )
    )
    left, right = st.columns(2)
    model = _dp_model(left, task, _("Model to audit"), f"audit_model_{task}")
    epsilon = left.select_slider(_("Claimed ε"), EPSILONS, value=1.0, key="audit_epsilon")
    with right:
        fits = {"quick": _("Quick (up to 100 each way, under 30 s)"), "thorough": _("Thorough (400 each way)")}
        depth = st.radio(_("How many fits"), list(AUDIT), horizontal=True, key=keyed("audit_depth"), format_func=fits.get)
    if st.button(_("Audit the model"), type="primary", key="audit_run"):
        runs, seconds = AUDIT[depth]

        def work(report: Callable[[float, float | None, str], None]) -> AuditResult:
            return audit_model(
                _design(dataset),
                model,
                float(epsilon),
                n_runs=runs,
                controls=("budget", "frozen", "mean"),
                broken_factor=BROKEN_FACTOR,
                time_limit=seconds,
                count_noise=state.count_noise,
                selection=state.selection,
                progress=report,
            )

        held.audit = _run(work, _("Fitting the model with and without the record…")) or held.audit
        _keep(state)
    result = held.audit
    if result is None:
        return
    if not result.passed:
        st.error(_("The audit proves a larger privacy loss than the model claims. Please report it."))
    elif not result.conclusive:
        st.warning(
            _(
                "This audit was too small to tell: it did not catch its deliberately broken control, so it could not "
                "have caught a leaking model either. Run the thorough audit."
            ),
            icon=":material/warning:",
        )
    _sentences(audit_sentences(result))
    table = result.table()
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **{c: st.column_config.Column(_(c)) for c in table.columns},
            **{
                c: st.column_config.NumberColumn(_(c), format="%.2f")
                for c in ("lower bound on ε", "most any audit of this size can show")
            },
        },
    )
    st.caption(
        " ".join(result.notes)
        + " "
        + _("Measured in {seconds} s, on {rows} of your rows: owner's eyes only.").format(
            seconds=integer(result.seconds), rows=integer(result.n_rows)
        )
    )


# --- the summary ---------------------------------------------------------------------------------


def summary_download(dataset: Dataset, held: AttackResults) -> None:
    """The one-page summary of whatever was run, marked owner's eyes only."""
    st.subheader(_("One-page summary"))
    st.caption(_(OWNER_ONLY))
    page = html_report(
        table_name=dataset.name,
        membership=held.membership,
        reconstruction=held.reconstruction,
        audit=held.audit,
        copy_membership=held.copy_membership,
    )
    st.download_button(
        _("Download the summary (HTML, owner's eyes only)"),
        page.encode("utf-8"),
        file_name="attack_summary_OWNERS_EYES_ONLY.html",
        mime="text/html",
        disabled=held.empty,
        key="attack_summary",
        help=_("Open it in a browser and print it to PDF for a one-page handout."),
        on_click="ignore",
    )
