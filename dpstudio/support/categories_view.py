"""The Data page's category and dictionary sections: private discovery, a data dictionary in and out, and completeness."""

from __future__ import annotations

import streamlit as st

from dpcore.budget.accountant import default_epsilon
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _, integer, ngettext, short
from dpcore.tables.categories import (
    DEFAULT_EPSILON_PER_COLUMN,
    DEFAULT_TOTAL_DELTA,
    discoverable_columns,
    discovery_cost,
    matched_by_number,
    mostly_other,
    other_share_sentence,
    people_needed,
)
from dpcore.tables.dictionary import frictionless_json
from dpcore.tables.schema import OTHER_CATEGORY
from dpstudio.support.declaring import accept_other, discover_text_categories, in_the_datasets_unit, leaky_columns, use_dictionary
from dpstudio.support.readable import task_name
from dpstudio.support.session import remember
from dpstudio.support.state import StudioState


def discover_categories(state: StudioState) -> None:
    """One click declares every text column's list: the values many people share, found with a stated (ε, δ)."""
    schema = state.dataset.schema
    columns = discoverable_columns(schema)
    if not columns:
        return
    with st.expander(
        ngettext(
            "Discover the categories of {count} text column privately",
            "Discover the categories of {count} text columns privately",
            len(columns),
        ).format(count=len(columns)),
        expanded=True,
    ):
        st.write(
            _(
                "Instead of typing each list or declaring it public, DP Studio can find the values that many people share, with "
                "a differentially private count (a stability histogram). It spends ε per text column and one δ for all of them; "
                "rarer values become {other}."
            ).format(other=OTHER_CATEGORY)
        )
        left, right = st.columns(2)
        # At most the engine's default per column, and all the columns together at most half of what is left,
        # so one click never asks for more than the budget holds (eleven columns at 0.1 asked 1.1 of 1).
        offered = default_epsilon(state.ledger().available() / len(columns), cap=DEFAULT_EPSILON_PER_COLUMN)
        per_column = left.number_input(
            _("ε per text column"),
            min_value=0.001,
            max_value=2.0,
            value=max(offered, 0.001),
            step=0.05,
            format="%.3f",
            key="categories_epsilon",
        )
        delta = right.number_input(
            _("δ for all of them"),
            min_value=1e-9,
            max_value=1e-3,
            value=DEFAULT_TOTAL_DELTA,
            step=1e-7,
            format="%g",
            key="categories_delta",
        )
        k = schema.rows_per_person if schema.privacy_unit is not None else 1
        st.caption(
            _("A value is kept when more than about {people} people hold it.").format(
                people=integer(people_needed(per_column, delta, len(columns), k))
            )
        )
        epsilon, delta_cost = discovery_cost(len(columns), per_column, delta)
        label = _("Discover privately (spends ε = {epsilon}, δ = {delta})").format(
            epsilon=short(epsilon), delta=f"{delta_cost:g}"
        )
        if st.button(label + in_the_datasets_unit(state.ledger(), epsilon, delta_cost), key="discover_categories"):
            try:
                discover_text_categories(state, per_column, delta)
                remember(state)
                st.rerun()
            except (BudgetExceededError, DataError) as error:
                st.error(str(error))


def data_dictionary(state: StudioState) -> None:
    """Import a data dictionary (public knowledge, no ε) in one click, and save the declarations as one."""
    with st.expander(_("Import a data dictionary")):
        st.write(
            _(
                "A data dictionary is public knowledge: the bounds and lists it states cost no ε. DP Studio reads a Frictionless "
                "Table Schema (each field's type and its minimum, maximum or enum) or a schema saved from DP Studio."
            )
        )
        upload = st.file_uploader(_("Data dictionary (JSON)"), type=["json"], key="dictionary_upload")
        if upload is not None and st.button(_("Use this dictionary"), key="use_dictionary"):
            try:
                st.session_state["dictionary_notes"] = use_dictionary(state, upload.getvalue())
                remember(state)
                st.rerun()
            except DataError as error:
                st.error(str(error) + " " + _("Your current declarations are kept."))
        for note in st.session_state.get("dictionary_notes", []):
            st.caption(note)


def schema_status(state: StudioState) -> None:
    """Whether the declarations are complete: problems, then lists that leave much in "(other)", then the good news."""
    dataset, schema = state.dataset, state.dataset.schema
    by_number = matched_by_number(dataset.frame, schema)
    if by_number:
        st.info(
            _(
                "Compared as numbers in {columns}: a value such as 0.0 or 00 counts as the declared category 0, for models "
                "and copies alike. Untick 'match numbers' on a column to compare its values as text."
            ).format(columns=", ".join(f"'{name}'" for name in by_number)),
            icon=":material/pin:",
        )
    problems = schema.problems(dataset.frame, need_target=True)
    blocked = mostly_other(dataset.frame, schema)
    sentences = [other_share_sentence(name, share, schema[name].role == "target") for name, share in blocked.items()]
    if problems:
        st.error(_("Fix these before training:") + " " + " ".join(problems + sentences))
    elif blocked:
        st.error(_("The schema is not complete yet (owner-only check on your raw rows):") + " " + " ".join(sentences))
    if blocked and st.button(
        ngettext("Keep the list as it is", "Keep these {count} lists as they are", len(blocked)).format(count=len(blocked)),
        key="accept_other",
    ):
        accept_other(state, list(blocked))
        remember(state)
        st.rerun()
    if problems or blocked:
        return
    assert schema.target is not None  # problems() needs a target
    st.success(
        _("The schema is complete: the target is '{target}' ({task}).").format(
            target=schema.target.name, task=task_name(schema.task)
        )
    )


def downloads(state: StudioState) -> None:
    """The declarations saved as DP Studio's schema and as a Frictionless Table Schema (a domain read from the data left out)."""
    schema = state.dataset.schema
    left, right = st.columns(2)
    # DP Studio's own file keeps every declaration, a domain read from the data included: the owner's working copy.
    leaks = leaky_columns(schema)
    left.download_button(
        _("Save this schema (JSON)"),
        schema.to_json(),
        file_name="schema.json",
        mime="application/json",
        key="download_schema",
        help=_(
            "Owner's eyes only while {count} column(s) have bounds or categories read from your data: it holds "
            "them. Share the data dictionary instead."
        ).format(count=len(leaks))
        if leaks
        else None,
        on_click="ignore",
    )
    right.download_button(
        _("Save as a data dictionary (Frictionless Table Schema)"),
        frictionless_json(schema),
        file_name="table-schema.json",
        mime="application/json",
        key="download_dictionary",
        help=_("A domain read from your data is left out of it: the file holds public declarations only."),
        on_click="ignore",
    )
