"""The Train page's widgets that depend on the model: its settings, its warnings, its scores and what is inside it."""

from __future__ import annotations

import streamlit as st

from dpcore.i18n import _, integer
from dpcore.model_card import SEEDED_WARNING, model_card
from dpcore.model_files import model_bytes
from dpcore.models.registry import ModelSpec, get
from dpcore.tables.schema import Schema
from dpcore.training import TrainedModel
from dpstudio.support.data_view import release_refused
from dpstudio.support.experts_view import show_weights
from dpstudio.support.state import StudioState
from dpstudio.support.training import (
    BASELINE,
    baseline_verdict,
    format_metric,
    per_person_note,
    rounds_table,
    tree_dot,
    weights_table,
)


def settings(spec: ModelSpec) -> dict:
    """The model's hyper-parameters as widgets (defaults from the estimator), in a closed expander."""
    chosen: dict = {}
    if not spec.parameters:
        return chosen
    with st.expander(_("Model settings"), expanded=False):
        for p in spec.parameters:
            key = f"{spec.key}_{p.name}"
            if p.choices:
                chosen[p.name] = st.selectbox(p.name, p.choices, index=p.choices.index(p.default), help=_(p.help), key=key)
            elif p.automatic:  # left empty, the model chooses from public values
                value = st.number_input(
                    p.name,
                    min_value=int(p.minimum),
                    max_value=int(p.maximum),
                    value=None,
                    step=1,
                    placeholder=_("automatic"),
                    help=_(p.help),
                    key=key,
                )
                if value is not None:
                    chosen[p.name] = value
            else:
                chosen[p.name] = st.number_input(
                    p.name,
                    min_value=int(p.minimum),
                    max_value=int(p.maximum),
                    value=int(p.default),
                    step=1,
                    help=_(p.help),
                    key=key,
                )
    return chosen


def approximate_warning(spec: ModelSpec) -> None:
    if spec.approximate:
        st.warning(
            _(
                "Approximate DP: this model promises ε only up to a small probability δ of failure (chosen below). "
                "Choose it only if you accept that; the models not labelled approximate are pure ε-DP."
            ),
            icon=":material/warning:",
        )


def spending(trained: TrainedModel) -> None:
    """What the model spent its budget on, in words (when the model says so itself)."""
    words = trained.details.get("spending")
    if words:
        st.caption(_(words))


def chosen(trained: TrainedModel) -> None:
    """Which learner DP model choice picked, when the model is a choice (the pick is part of the private release)."""
    key = trained.details.get("chosen")
    if key:
        st.info(_("DP chose **{model}** for this table.").format(model=_(get(key).name)), icon=":material/how_to_vote:")


def scores(trained: TrainedModel, schema: Schema) -> None:
    """Held-out scores beside a trivial guess, and per-class results: measured on raw rows, owner only."""
    details = trained.details
    st.caption(
        _(
            "Measured on your raw data — for your eyes, not for release: trained on {train} rows, tested on the other {test}."
        ).format(train=integer(details["n_train"]), test=integer(details["n_test"]))
    )
    baseline = details.get("baseline", {})
    for column, (metric, value) in zip(st.columns(len(trained.metrics)), trained.metrics.items(), strict=True):
        reference = baseline.get(metric)
        column.metric(
            # The target's unit beside the score's name, not after the number: a long name cut the figure short.
            _("{metric} ({unit})").format(metric=_(metric), unit=schema.target.name)
            if trained.task == "regression"
            else _(metric),
            format_metric(value, trained.task),
            help=None if reference is None else f"{_(details[BASELINE])}: {format_metric(reference, trained.task)}",
        )
    if trained.rows_per_person > 1:
        st.caption(per_person_note("model", trained.epsilon, trained.rows_per_person, details.get("rows_over_bound", 0)))
    if details.get("n_without_target"):
        st.caption(
            _(
                "{count} rows had no usable value of '{target}' (missing or not a declared category) and were left out "
                "(owner only)."
            ).format(count=integer(details["n_without_target"]), target=schema.target.name)
        )
    verdict = baseline_verdict(trained)
    if verdict and verdict[1]:
        st.warning(
            verdict[0]
            + " "
            + _("This model does no better at this ε: spend more ε, use fewer features, or declare tighter bounds."),
            icon=":material/trending_down:",
        )
    elif verdict:
        st.caption(verdict[0])
    if "confusion" in details:
        left, right = st.columns(2)
        left.write(_("Confusion matrix (held-out rows)"))
        confusion = details["confusion"].rename_axis(index=_("true"), columns=_("predicted"))
        left.dataframe(confusion, width="stretch")
        right.write(_("Per class"))
        per_class = details["per_class"]
        right.dataframe(
            per_class,
            hide_index=True,
            width="stretch",
            column_config={name: st.column_config.Column(_(name)) for name in per_class.columns},
        )


def inside(trained: TrainedModel, schema: Schema) -> None:
    """The released model itself: a tree drawn to a chosen depth, or the first boosting rounds."""
    unit = schema.target.name if trained.task == "regression" else ""
    if "tree" in trained.details:
        st.subheader(_("Inside the model"))
        st.caption(_("Every count shown is noisy (n ≈ …): the tree itself is part of the private release."))
        depth = st.slider(_("Levels to draw"), 1, 8, 3)
        st.graphviz_chart(tree_dot(trained.details["tree"], schema, depth, unit), width="stretch")
    if "rounds" in trained.details:
        st.subheader(_("Inside the model"))
        st.caption(
            _(
                "Each round is a small tree. Its first split may be picked, with noise and a stated part of the round's "
                "budget, among one random split per column; its other splits are drawn without looking at your data "
                "(they may favour the columns whose noisy steps moved most in earlier rounds). Its leaf steps are "
                "learned with noise. The first rounds:"
            )
        )
        st.dataframe(rounds_table(trained.details["rounds"], schema), hide_index=True, width="stretch")
    if "weights_path" in trained.details:
        show_weights(trained.details["weights_path"])
    if trained.details.get("weights"):
        st.subheader(_("Inside the model"))
        st.caption(
            _(
                "How much each feature moves the prediction across its declared range ({unit}): learned from noisy "
                "gradients only, so the weights are part of the private release."
            ).format(unit=unit or _("log-odds"))
        )
        st.dataframe(weights_table(trained.details["weights"], schema), hide_index=True, width="stretch")


def card_and_downloads(state: StudioState, trained: TrainedModel, unit: str) -> None:
    """The model card, and the card and model files to download (no model file for a demo seed).

    A model fitted on a domain read from the data, or whose columns now hold one, gets neither:
    the engine's refusal and its ways out stand in their place.
    """
    schema = state.dataset.schema
    read_from_data = list(dict.fromkeys([*trained.read_from_data, *schema.read_from_data()]))
    if read_from_data:
        release_refused(
            state,
            read_from_data,
            "train_",
            _("The declarations are fixed: train the model again to get a model and a card you can share."),
        )
        return
    card = model_card(trained, schema, unit)
    with st.expander(_("Model card")):
        st.markdown(card)
    left, right = st.columns(2)
    left.download_button(
        _("Download the model card (Markdown)"), card, file_name="model_card.md", mime="text/markdown", on_click="ignore"
    )
    if trained.seeded:
        right.button(_("Download the model (disabled: demo seed)"), disabled=True, help=_(SEEDED_WARNING))
    else:
        right.download_button(
            _("Download the fitted model (.skops)"),
            lambda: model_bytes(trained.model, read_from_data=trained.read_from_data),
            file_name="dp_model.skops",
            mime="application/octet-stream",
            on_click="ignore",  # a rerun on the click would drop the file's maker before a busy server has run it
            help=_("Open it with dpcore.model_files.load_model, or skops.io.load with the DP Studio types trusted."),
        )
