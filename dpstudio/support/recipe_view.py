"""The Privacy page's recipes: the session's choices saved as a recipe, and the recipe runs in the dataset's history."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from dpcore.budget.accountant import BudgetLedger
from dpcore.clustering import GroupMap
from dpcore.i18n import _
from dpcore.models.registry import MODELS
from dpcore.recipes import (
    RUN_EVENT,
    RUN_STOPPED_EVENT,
    CopyStep,
    GroupsStep,
    ModelStep,
    Recipe,
    RecipeError,
    Source,
    recipe_from_dict,
)
from dpcore.release import ReleasePlan, kept_rows, mostly_noise, usefulness
from dpcore.synthetic import SyntheticResult
from dpcore.training import TrainedModel
from dpstudio.support.groups_view import current as current_groups
from dpstudio.support.session import recall_result, remember_result
from dpstudio.support.state import SAMPLES, Dataset, StudioState

#: The history's events of a recipe run (``dpcore run`` records them).
RUN_EVENTS = (RUN_EVENT, RUN_STOPPED_EVENT)


def _source(state: StudioState) -> Source:
    """Where the table came from, as a recipe names it: the connection and its table or query, else the file's name."""
    dataset = state.dataset
    info = dataset.info
    if info.get("format") == "database":
        return Source(connection=info["connection"], table=info.get("table"), query=info.get("query"))
    if dataset.is_sample and dataset.name in SAMPLES:
        return Source(file=SAMPLES[dataset.name][0])
    return Source(file=dataset.name)


def model_step(trained: TrainedModel) -> ModelStep:
    """A trained model as a recipe makes it again: its key, ε, δ and settings."""
    return ModelStep(
        trained.key, trained.epsilon, trained.delta or None, dict(trained.parameters), trained.details.get("encoding", "ordinal")
    )


def randomized_step(plan: ReleasePlan, dataset: Dataset) -> CopyStep:
    """A randomized copy's plan as a recipe makes it again."""
    # Released although mostly noise: the owner typed the page's word for it, and the recipe keeps that choice.
    noisy = mostly_noise(usefulness(plan, dataset.schema, max(kept_rows(dataset.frame, dataset.schema), 1)))
    return CopyStep("randomized", plan=plan.to_dict(), accept_noise=bool(noisy))


def synthetic_step(copy: SyntheticResult) -> CopyStep:
    """A synthetic copy's ε, δ, noise, method and declared workload as a recipe makes it again."""
    report = copy.report
    delta = float(report.get("delta") or 0.0) or None
    workload = (report.get("selection") or {}).get("workload")
    return CopyStep(
        "synthetic",
        epsilon=float(report["epsilon"]),
        delta=delta,
        noise=str(report.get("noise", "gaussian")),
        method=str(report.get("synthesizer", "mst")),
        workload=workload if isinstance(workload, list) else None,
    )


def record_release(state: StudioState, step: ModelStep | CopyStep) -> None:
    """Note a model or copy just released on the table in use: a recipe saved later makes each again, in order.

    Kept in the workspace too, so a reload does not drop what was charged from the recipe.
    """
    state.releases = [*(recall_result(state, "releases", list) or []), (state.dataset.dataset_id, step)]
    remember_result(state, "releases")


def session_recipe(state: StudioState, ledger: BudgetLedger) -> Recipe:
    """What this session declared, trained and released on the table in use, as a checked recipe.

    Every model and copy released in the session goes in, in the order released (:func:`record_release`).

    Only the owner's choices go in: the source's name, the declarations (public by definition),
    the unit and total, and each release's ε and settings; never a data value or a seed.

    Raises
    ------
    RecipeError
        A declaration read from the data (the sentence names the columns), or nothing released yet.
    """
    dataset = state.dataset
    released = [step for dataset_id, step in recall_result(state, "releases", list) or [] if dataset_id == dataset.dataset_id]
    # A model of another task (the target was changed since) could not be trained on this table again.
    models = [s for s in released if isinstance(s, ModelStep) and MODELS[s.model].task == dataset.schema.task]
    trained = recall_result(state, "trained", TrainedModel)
    if not models and trained is not None and trained.task == dataset.schema.task:
        models.append(model_step(trained))  # a model of this workspace trained before the page was reloaded
    copies = [s for s in released if isinstance(s, CopyStep)]
    groups = []
    found = current_groups(state)
    if found is not None and isinstance(found.found, GroupMap):
        resolution = found.found.model.get_params().get("resolution")
        groups.append(
            GroupsStep(list(found.found.features), found.found.epsilon, resolution if isinstance(resolution, int) else None)
        )
    if not (models or copies or groups):
        raise RecipeError(
            _(
                "Nothing is released on this table yet: train a model, make a copy or find groups, then save them here as a recipe."
            )
        )
    recipe = Recipe(
        name=_("{dataset} releases").format(dataset=ledger.name),
        source=_source(state),
        schema=dataset.schema.to_dict(),
        unit=ledger.unit,
        total_epsilon=ledger.total,
        total_delta=ledger.total_delta,
        dataset=ledger.name,
        models=models,
        copies=copies,
        groups=groups,
    )
    return recipe_from_dict(recipe.to_dict())  # the same checks as `dpcore run` makes on the file


def _file_name(name: str) -> str:
    return (re.sub(r"[^\w.-]+", "_", name).strip("_") or "dpstudio") + ".recipe.yaml"


def save_section(state: StudioState, ledger: BudgetLedger) -> None:
    """'Save as recipe': the session's releases as a YAML file ``dpcore run`` makes again on next quarter's table."""
    st.subheader(_("Save as recipe"))
    st.caption(
        _(
            "A recipe keeps this session's choices — where the table comes from, its declarations, the unit and budget, "
            "every model and copy made, in order, with their ε and settings — but no value of the data and no password. Next "
            "month or quarter, `dpcore run RECIPE` makes the same releases again on the new table, charged to this dataset's "
            "budget."
        )
    )
    try:
        recipe = session_recipe(state, ledger)
    except RecipeError as error:
        st.info(str(error), icon=":material/info:")
        return
    st.write(
        _("It makes {models} model(s), {copies} copy(ies) and {groups} group map(s) again.").format(
            models=len(recipe.models), copies=len(recipe.copies), groups=len(recipe.groups)
        )
    )
    st.download_button(
        _("Save as recipe (YAML)"),
        recipe.to_yaml().encode("utf-8"),
        file_name=_file_name(ledger.name),
        mime="application/yaml",
        key="download_recipe",
        on_click="ignore",
    )


def runs_section(history: pd.DataFrame) -> None:
    """The recipe runs recorded in the dataset's history, newest first (nothing when there are none)."""
    runs = history[history["event"].isin(RUN_EVENTS)]
    if runs.empty:
        return
    st.subheader(_("Recipe runs"))
    st.caption(
        _("Each `dpcore run` of a recipe on this dataset, newest first; its releases are the spends that follow it above.")
    )
    lines = [
        f"- {when} UTC — {_(event)}: {what}"
        for when, event, what in runs[["when (UTC)", "event", "what"]].iloc[::-1].itertuples(index=False)
    ]
    st.text("\n".join(lines))
