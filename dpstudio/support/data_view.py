"""The Data page's sections: choosing the table, how it was read, its dataset, the declarations and owner-only views."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dpcore.budget.datasets import OverlapRefused
from dpcore.budget.persons import check_unit_column, rows_left_out
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import N_, _, integer, ngettext, short
from dpcore.tables.bounds import (
    CLIPPED_WARNING,
    DEFAULT_BUDGET_SHARE,
    ROWS_TIMES_EPSILON_FOR_FIT,
    TOO_WIDE,
    bounds_verdict,
    epsilon_per_column,
)
from dpcore.tables.cell_shapes import differ_only_in_case
from dpcore.tables.schema import (
    KINDS,
    ROLES,
    Normaliser,
    Schema,
    out_of_bounds_share,
    quoted,
    release_refusal,
)
from dpstudio.support.database_view import choose_database, dataset_from_database
from dpstudio.support.declaring import (
    declare_public,
    estimate_numeric_bounds,
    ignore_columns,
    in_the_datasets_unit,
    leak_summary,
    leaky_columns,
    take_typed_bounds,
)
from dpstudio.support.language import keyed
from dpstudio.support.session import remember, use_dataset
from dpstudio.support.state import SAMPLES, StudioState, apply_schema, load_sample, separate_dataset, table_name
from dpstudio.support.uploading import open_upload, questions, read_again

SOURCES = (N_("A bundled sample"), N_("My own CSV file"), N_("A database"))


def _source_index(dataset) -> int:
    """The choice that shows the table in use: a sample, an uploaded file or a database's rows."""
    if dataset.is_sample:
        return 0
    return 2 if dataset.info.get("format") == "database" else 1


def choose_table(state: StudioState) -> None:
    """A bundled sample, an upload or a database's table (with an optional schema file); a refused table keeps the current work."""
    # The choice follows the table in use, so coming back to this page never swaps an upload for a sample.
    source = st.radio(
        _("Table"), SOURCES, index=_source_index(state.dataset), horizontal=True, key=keyed("data_source"), format_func=_
    )
    if source == SOURCES[0]:
        names = list(SAMPLES)
        current = names.index(state.dataset.name) if state.dataset.is_sample and state.dataset.name in names else None
        choice = st.selectbox(
            _("Sample"),
            names,
            index=current,
            format_func=table_name,
            placeholder=_("Choose a sample (it replaces your uploaded table)"),
        )
        if choice is not None and choice != state.dataset.name:
            use_dataset(state, load_sample(choice, state.catalog()))
            st.rerun()
        return
    if source == SOURCES[1]:
        upload = st.file_uploader(
            _("Upload a table: CSV (comma, semicolon or tab separated; UTF-8 or Latin-1), Excel (.xlsx) or Parquet"), key="upload"
        )
        if state.dataset.is_sample:  # the page below still shows the sample until a file is read
            st.caption(
                _("Until a file is uploaded, the table in use is still the sample '{name}'.").format(
                    name=table_name(state.dataset.name)
                )
            )
    schema_upload = st.file_uploader(_("Optional: a schema file saved from DP Studio (JSON)"), type=["json"], key="schema_upload")
    schema_bytes = schema_upload.getvalue() if schema_upload else None
    if source == SOURCES[2]:
        choose_database(state, schema_bytes)
        upload = None
    if upload is not None and upload.file_id != state.loaded_upload_id:
        state.loaded_upload_id = upload.file_id  # a refused file is not read again on every rerun
        state.refused_upload = None
        try:
            open_upload(state, upload.name, upload.getvalue(), schema_bytes)
            state.loaded_schema_id = schema_upload.file_id if schema_upload else None
            state.upload_error = None
            st.rerun()  # so the sidebar, drawn before this page, shows the new table and its budget
        except OverlapRefused as error:
            state.upload_error, state.refused_upload = str(error), (upload.name, upload.getvalue(), schema_bytes)
        except DataError as error:
            state.upload_error = str(error)
    elif schema_upload is not None and schema_upload.file_id != state.loaded_schema_id:
        # A schema uploaded after the table applies to the table in use.
        state.loaded_schema_id = schema_upload.file_id
        try:
            apply_schema(state.dataset, Schema.from_json(schema_upload.getvalue().decode("utf-8", "replace")))
            state.upload_error = None
            remember(state)
            st.rerun()
        except DataError as error:
            state.upload_error = str(error)
    if state.upload_error:
        st.error(state.upload_error + " " + _("Your current table and declarations are kept."))
    if state.refused_upload is not None and source == SOURCES[1]:
        separate_refused_upload(state)
    if state.refused_database is not None and source == SOURCES[2]:
        separate_refused_database(state)


def _separate_form(key: str, default_name: str = "") -> tuple[str, str, bool]:
    """The name, the reason and the button of "make this a separate dataset" (the same on both of its places)."""
    st.write(
        _(
            "Only do this if the rows really describe other people. Two datasets of the same people would give each person "
            "two budgets — that is why the choice and your reason are kept in the new dataset's history."
        )
    )
    name = st.text_input(_("Name of the new dataset"), value=default_name, key=f"{key}_name")
    reason = st.text_input(_("Why are these different people?"), key=f"{key}_reason")
    return name, reason, st.button(_("Make it a separate dataset"), key=f"{key}_button")


def separate_refused_upload(state: StudioState) -> None:
    """The way out of a refusal for the people a file shares, in place: open it as a separate dataset, with a reason."""
    name, raw, schema_json = state.refused_upload
    with st.expander(_("These are different people: make this a separate dataset"), expanded=True):
        new_name, reason, clicked = _separate_form("refused_separate", Path(name).stem)
        if clicked:
            try:
                open_upload(state, name, raw, schema_json, separate=(new_name, reason))
                state.upload_error = state.refused_upload = None
                st.rerun()
            except DataError as error:
                st.error(str(error))


def separate_refused_database(state: StudioState) -> None:
    """The way out of a refusal for the people a database table shares: read it as a separate dataset, with a reason."""
    source = state.refused_database
    with st.expander(_("These are different people: make this a separate dataset"), expanded=True):
        new_name, reason, clicked = _separate_form("refused_database", source.label)
        if clicked:
            try:
                use_dataset(state, dataset_from_database(source, state.catalog(), separate=(new_name, reason)))
                state.upload_error = state.refused_database = None
                st.rerun()
            except DataError as error:
                st.error(str(error))


def reading_questions(state: StudioState) -> None:
    """The one-click answers about how an uploaded file was read (header row, decimal comma, …)."""
    dataset = state.dataset
    if state.upload is not None and not dataset.is_sample and state.upload[0] == dataset.name:
        for number, (sentence, label, answer) in enumerate(questions(dataset.info)):
            st.warning(sentence, icon=":material/help:")
            if st.button(label, key=f"reading_answer_{number}"):
                try:
                    read_again(state, **answer)
                    st.rerun()
                except DataError as error:
                    st.error(str(error) + " " + _("Your current table is kept."))


def dataset_identity(state: StudioState) -> None:
    """Which dataset (the people) the table spends, and the way to make it a separate one."""
    dataset = state.dataset
    identification = dataset.identification
    name = identification.dataset.name
    # The engine's sentence names the dataset as the ledger does; a bundled sample's name is shown translated.
    sentence = identification.sentence.replace(f"'{name}'", f"'{table_name(name)}'")
    st.info(_("**Dataset: {name}.**").format(name=table_name(name)) + " " + sentence, icon=":material/group:")
    if not identification.created and not dataset.is_sample:
        with st.expander(_("These are different people: make this a separate dataset")):
            new_name, reason, clicked = _separate_form("separate")
            if clicked:
                try:
                    separate_dataset(dataset, state.catalog(), new_name, reason)
                    remember(state)
                    st.rerun()
                except DataError as error:
                    st.error(str(error))


def carried_declarations(state: StudioState) -> None:
    """Say which of the owner's earlier declarations of this dataset the table just opened took, with the way back."""
    dataset = state.dataset
    carried = dataset.carried
    if carried is None:
        return
    sentence = ngettext(
        "Your earlier declarations of this dataset were used for {count} column ({names}): its role, and its bounds or "
        "categories when you declared them or paid for them with ε (nothing is charged again).",
        "Your earlier declarations of this dataset were used for {count} columns ({names}): their roles, and their "
        "bounds or categories where you declared them or paid for them with ε (nothing is charged again).",
        len(carried.columns),
    ).format(count=len(carried.columns), names=quoted(carried.columns, most=8))
    if carried.read_again:
        sentence += " " + ngettext(
            "The bounds or categories of {names} had been read from the data: they were read again from this file.",
            "The bounds or categories of {names} had been read from the data: they were read again from this file.",
            len(carried.read_again),
        ).format(names=quoted(carried.read_again, most=8))
    st.info(sentence, icon=":material/history:")
    if st.button(
        _("Start from this file's own reading instead"),
        key="forget_carried",
        help=_(
            "The declarations of this dataset are then this file's reading, for this table and the next ones: bounds "
            "and categories paid for with ε are dropped, and estimating them again is charged again."
        ),
    ):
        dataset.schema = dataset.base_schema = carried.read
        dataset.revision += 1
        dataset.carried = None
        remember(state)
        st.rerun()


def declarations_editor(state: StudioState) -> None:
    """The editable table of roles, kinds, bounds and categories."""
    dataset = state.dataset
    st.subheader(_("Declare the columns"))
    st.write(
        _(
            "**Role**: *feature* (used to predict), *target* (what to predict), *identifier* (name, e-mail, ID: never used, "
            "dropped from exports), *ignore*. **Bounds** and **categories** (separated by `|`) are your public declarations: "
            "values outside the bounds are clipped, unknown categories become *(other)*. A domain suggested from your data "
            "is ticked *read from data (leak)*: replace it with a public one, then untick it."
        )
    )
    editor_key = f"schema_editor_{dataset.fingerprint}_{dataset.revision}"
    if editor_key not in st.session_state:
        # The editor's own state is gone after a visit to another page: start it from what was declared.
        dataset.base_schema = dataset.schema
    edited = st.data_editor(
        dataset.base_schema.to_frame(),
        key=editor_key,
        hide_index=True,
        width="stretch",
        disabled=["column"],
        column_config={
            # The frame's column names are the schema's keys; only the headers shown are translated.
            "column": st.column_config.TextColumn(_("column")),
            "role": st.column_config.SelectboxColumn(_("role"), options=list(ROLES), required=True),
            "kind": st.column_config.SelectboxColumn(_("kind"), options=list(KINDS), required=True),
            "lower": st.column_config.NumberColumn(_("lower"), help=_("Public lower bound")),
            "upper": st.column_config.NumberColumn(_("upper"), help=_("Public upper bound")),
            "categories": st.column_config.TextColumn(_("categories"), help=_("The public list of values, separated by |")),
            "missing → fill": st.column_config.NumberColumn(
                _("missing → fill"), help=_("Value for a missing number (default: middle of the bounds)")
            ),
            "public": st.column_config.CheckboxColumn(
                _("public"), help=_("Declared non-sensitive: an export may copy it unchanged")
            ),
            "may be missing": st.column_config.CheckboxColumn(
                _("may be missing"),
                help=_(
                    "A value can be absent: an export then randomizes 'missing' as a category of its own. Ticked for "
                    "every column until you untick it, even where your rows have no gaps: whether they have gaps is itself "
                    "a fact about them. Untick it for a column that can never be empty (a required field of a form)."
                ),
            ),
            "match numbers": st.column_config.CheckboxColumn(
                _("match numbers"),
                help=_(
                    'Categories that read as one number are one category: 0, 0.0, "0" and 00. Untick to compare them as text.'
                ),
            ),
            "read from data (leak)": st.column_config.CheckboxColumn(
                _("read from data (leak)"),
                help=_(
                    "Ticked when the bounds or categories were read from your data. Untick it only once they are public "
                    "declarations."
                ),
            ),
            "source": st.column_config.TextColumn(_("source")),
        },
    )
    declared = Schema.from_frame(edited)
    declared.privacy_unit, declared.rows_per_person = dataset.schema.privacy_unit, dataset.schema.rows_per_person
    for spec in declared.columns:  # accepting "(other)" is a button below, not a column of the editor
        spec.accept_other = spec.name in dataset.schema.names and dataset.schema[spec.name].accept_other
    typed = take_typed_bounds(dataset, declared)
    if declared != dataset.schema:
        dataset.schema = declared
        remember(state)
    if typed:  # the grid starts again from the declarations, its tick now off
        dataset.revision += 1
        state.typed_declarations = typed
        st.rerun()
    if state.typed_declarations:
        st.info(
            _(
                "The bounds you typed for {names} are your declaration: no longer marked as read from your data. Type only what "
                "is public knowledge (a form's allowed values, a law, geography), not what you saw in the table."
            ).format(names=quoted(state.typed_declarations, most=6)),
            icon=":material/edit_note:",
        )
        state.typed_declarations = []
    set_aside = [  # set aside by the reading (a column the owner set aside keeps its bounds or categories)
        spec
        for spec in dataset.schema.columns
        if spec.role == "ignore" and spec.source and not (spec.categories or spec.bounds_from_data or spec.lower is not None)
    ]
    notes = [  # the grid's "source" column is off screen on most displays: what needs the owner, said under it
        _("`{column}` is not used: {reason}.").format(column=spec.name.replace("`", "'"), reason=spec.source)
        for spec in set_aside
    ] + [
        _(
            "`{column}` has categories that differ only in capitals or spaces: each counts as a category of its own. "
            "Write them one way in your file and upload it again to count them together."
        ).format(column=spec.name.replace("`", "'"))
        for spec in dataset.schema.columns
        if spec.kind == "categorical" and spec.role in ("feature", "target") and differ_only_in_case(spec.categories)
    ]
    if notes:
        st.caption("  \n".join(notes))


SEVERAL_ROWS = (N_("No, one row per person"), N_("Yes, a person can have several rows"))
DEFAULT_ROWS_PER_PERSON = 3


def privacy_unit_question(state: StudioState) -> None:
    """Whether a person can have several rows, which column says whose row it is, and how many rows count."""
    dataset, schema = state.dataset, state.dataset.schema
    st.subheader(_("Whom each row belongs to"))
    answer = st.radio(
        _("Can one person appear in several rows?"),
        SEVERAL_ROWS,
        index=0 if schema.privacy_unit is None else 1,
        horizontal=True,
        key=keyed(f"several_rows_{dataset.fingerprint}"),
        format_func=_,
        help=_("Visits of one patient, transactions of one customer, yearly reviews of one employee."),
    )
    if answer == SEVERAL_ROWS[0]:
        if schema.privacy_unit is not None:
            _declare_unit(state, None, 1)
        return
    names = [str(c) for c in dataset.frame.columns]
    current = schema.privacy_unit or next((c.name for c in schema.columns if c.role == "identifier"), None)
    left, right = st.columns(2)
    column = left.selectbox(
        _("Which column identifies them?"),
        names,
        index=names.index(current) if current in names else None,
        placeholder=_("Choose the column (a patient, customer or employee number)"),
        key=f"unit_column_{dataset.fingerprint}",
        help=_("A patient number, customer ID or employee number. It is never used by a model nor released."),
    )
    k = int(
        right.number_input(
            _("At most how many rows per person should count?"),
            min_value=1,
            max_value=1000,
            value=schema.rows_per_person if schema.privacy_unit else DEFAULT_ROWS_PER_PERSON,
            step=1,
            key=f"rows_per_person_{dataset.fingerprint}",
            help=_("Rows beyond this are left out at random. A larger number keeps more rows but adds more noise."),
        )
    )
    if column is None:
        st.info(
            _("Choose the column that says whose row each row is; until then each row counts as a person."),
            icon=":material/person_search:",
        )
        return
    if (column, k) != (schema.privacy_unit, schema.rows_per_person):
        _declare_unit(state, column, k)
    try:
        check_unit_column(dataset.frame, column)
    except DataError as error:
        st.error(str(error))
        return
    dropped = rows_left_out(dataset.frame[column], k)
    st.caption(
        _(
            "Owner only: counting up to {k} rows per person leaves out {dropped} of {rows} rows (each "
            "person's extra rows, chosen at random). Every ε is now per person: a model or a copy protects each person's "
            "rows together, counting up to {k} rows each. The number itself is public: it is printed in every report "
            "and model card, so take it from how the data were collected (say, at most one visit a week for a year "
            "is 52), not by trying numbers until nothing is left out."
        ).format(k=integer(k), dropped=integer(dropped), rows=integer(len(dataset.frame)))
    )


def _declare_unit(state: StudioState, column: str | None, k: int) -> None:
    schema = Schema.from_dict(state.dataset.schema.to_dict())
    schema.privacy_unit, schema.rows_per_person = column, k
    if column is not None and column in schema.names:
        schema[column].role = "identifier"
        schema[column].source = schema[column].source or _("identifies each person — never used nor released")
    dataset = state.dataset
    dataset.schema = dataset.base_schema = schema
    dataset.revision += 1  # the declarations table shows the unit column as an identifier
    remember(state)
    st.rerun()


def fix_leaks(state: StudioState) -> None:
    """Bulk fixes for columns whose domain was read from the data: estimate privately, ignore, or vouch."""
    schema = state.dataset.schema
    summary = leak_summary(schema)
    if summary:
        st.warning(summary, icon=":material/warning:")
        ways_out(state, leaky_columns(schema))


def release_refused(state: StudioState, read_from_data: list[str], key: str, again: str | None = None) -> None:
    """Where a model, map or copy built on ``read_from_data`` would be offered: the engine's refusal and its ways out.

    Every page shows the same sentence (:func:`dpcore.tables.schema.release_refusal`) and the same
    one-click ways out as the Data page. A way out changes the declarations, not what was built
    on the old ones: ``again`` says what to do then (train again, find the groups again).
    """
    st.error(release_refusal(read_from_data), icon=":material/gpp_bad:")
    still = [name for name in leaky_columns(state.dataset.schema) if name in read_from_data]
    if still:
        ways_out(state, still, key)
    elif again:
        st.info(again, icon=":material/refresh:")


def ways_out(state: StudioState, leaky: list[str], key: str = "") -> None:
    """The one-click ways out for ``leaky`` columns: estimate the numeric bounds privately, ignore them, or vouch for them.

    ``key`` keeps the widgets of a second place on one page apart (the Data page's have none).
    """
    schema = state.dataset.schema
    numeric = [n for n in leaky if schema[n].kind == "numeric"]
    with st.expander(_("Fix them all at once"), expanded=True):
        if numeric:
            _estimate_bounds_action(state, numeric, key)
        left, right = st.columns(2)
        if left.button(
            ngettext("Ignore this column", "Ignore these {count} columns", len(leaky)).format(count=len(leaky)),
            key=f"{key}ignore_leaky",
        ):
            ignore_columns(state, leaky)
            remember(state)
            st.rerun()
        vouch = right.checkbox(
            _("They are public knowledge"),
            key=f"{key}vouch_public",
            help=_("For example a data dictionary, the law, or the choices a form offers."),
        )
        if right.button(_("Declare them public"), key=f"{key}declare_public", disabled=not vouch):
            declare_public(state, leaky)
            remember(state)
            st.rerun()


def _estimate_bounds_action(state: StudioState, numeric: list[str], key: str = "") -> None:
    """The bulk "estimate privately" action: its cost (a stated share of what is left, split evenly) before the click."""
    st.write(
        _(
            "**Estimate the bounds of the {count} numeric column(s) privately.** Each column's values are counted with "
            "differential privacy in public buckets that cover negative numbers, tiny fractions, prices and years (edges 0, "
            "±1, 2, 5, 10, 20, 50 and so on); the bounds are the edges of the buckets that hold many people. Columns named "
            "like a year get bounds to the quarter-century. It spends a share of what is left of this dataset's budget, "
            "split evenly over the columns."
        ).format(count=len(numeric))
    )
    left = state.ledger().available()
    share = (
        st.number_input(
            _("Share of the ε left to spend (%)"),
            min_value=1,
            max_value=100,
            value=round(DEFAULT_BUDGET_SHARE * 100),
            step=5,
            key=f"{key}bounds_share",
        )
        / 100
    )
    each = epsilon_per_column(left, len(numeric), share)
    if each <= 0:
        st.info(
            _(
                "Nothing is left of this dataset's budget to estimate bounds with: declare the bounds yourself, or "
                "raise the total on the Privacy page."
            ),
            icon=":material/block:",
        )
        return
    rows = len(state.dataset.frame)
    too_few = each * rows < ROWS_TIMES_EPSILON_FOR_FIT
    if too_few:
        # A warning and a tick, not a grey note: at this ε the fullest buckets drown in the noise and the bounds
        # clip whole tails or miss the column (benchmarks/README.md §21).
        st.warning(
            _(
                "Owner only: at ε = {epsilon} per column, {rows} rows are too few for bounds that fit well (about ε × "
                "rows ≥ {needed} per column is needed): expect bounds far too wide or far off. Declare the bounds you "
                "know, estimate fewer columns at once, or spend a larger share; the table below the button will show "
                "how well each bound fits."
            ).format(epsilon=short(each), rows=integer(rows), needed=integer(ROWS_TIMES_EPSILON_FOR_FIT)),
            icon=":material/warning:",
        )
    anyway = not too_few or st.checkbox(
        _("Estimate anyway: I will check each bound in the fit table and correct the ones that are off"),
        key=f"{key}bounds_anyway",
    )
    label = _("Estimate privately (spends ε = {epsilon}: {share} of the {left} left, {each} per column)").format(
        epsilon=short(each * len(numeric)), share=f"{share:.0%}", left=short(left), each=short(each)
    )
    if st.button(
        label + in_the_datasets_unit(state.ledger(), each * len(numeric)), key=f"{key}estimate_bounds", disabled=not anyway
    ):
        try:
            state.bounds_verdict = (state.dataset.fingerprint, estimate_numeric_bounds(state, each, numeric))
            remember(state)
            st.rerun()
        except (BudgetExceededError, DataError) as error:
            st.error(str(error))


def bounds_fit(state: StudioState) -> None:
    """Owner's eyes only: how well the bounds just estimated privately fit the raw data, column by column."""
    if state.bounds_verdict is None or state.bounds_verdict[0] != state.dataset.fingerprint:
        return  # nothing estimated yet, or for another table
    schema = state.dataset.schema
    names = set(schema.names)
    # Only the columns that still carry the estimated bounds: a dictionary or the owner may have replaced them since.
    still = [
        name in names and (schema[name].lower, schema[name].upper) == (lower, upper)
        for name, lower, upper in zip(
            state.bounds_verdict[1]["column"], state.bounds_verdict[1]["lower"], state.bounds_verdict[1]["upper"], strict=True
        )
    ]
    verdict = state.bounds_verdict[1][still]
    if verdict.empty:
        return
    st.subheader(_("How well the estimated bounds fit — owner's eyes only"))
    st.caption(
        _(
            "Read from your raw data: never released, never in a report. A bound clips the values beyond it; a width "
            "many times the true range spreads the people thin. Change any bound in the table above."
        )
    )
    warned = verdict.loc[verdict["warning"], "column"].tolist()
    if warned:
        st.warning(
            _(
                "More than {share} of the rows are clipped in: {columns}. Declare wider bounds for them if you know public ones."
            ).format(share=f"{CLIPPED_WARNING:.0%}", columns=", ".join(f"'{c}'" for c in warned)),
            icon=":material/content_cut:",
        )
    # Bounds far wider than the values are said once for every column, estimated or typed (owner_previews).
    st.dataframe(
        verdict.drop(columns="warning"),
        width="stretch",
        hide_index=True,
        key="bounds_verdict",
        column_config={
            "column": st.column_config.TextColumn(_("column")),
            "lower": st.column_config.NumberColumn(_("lower"), format="%g"),
            "upper": st.column_config.NumberColumn(_("upper"), format="%g"),
            "clipped below": st.column_config.ProgressColumn(_("clipped below"), format="percent", min_value=0, max_value=1),
            "clipped above": st.column_config.ProgressColumn(_("clipped above"), format="percent", min_value=0, max_value=1),
            "width ÷ true range": st.column_config.NumberColumn(
                _("width ÷ true range"),
                format="%.3g",
                help=_(
                    "1: the bounds are just the values' range. A few times wider is usual for private bounds (public "
                    "buckets like 0, 1, 2, 5, 10); above {times}, the page warns."
                ).format(times=TOO_WIDE),
            ),
        },
    )


def owner_previews(state: StudioState) -> None:
    """What the models will see and the values outside the declarations: raw rows, owner only."""
    dataset, schema = state.dataset, state.dataset.schema
    st.subheader(_("What the models will see — owner only"))
    st.caption(
        _(
            "Every used column mapped to [0, 1] with your declarations (categories as evenly spaced codes). These are your raw "
            "rows, for your eyes only: not differentially private."
        )
    )
    usable = Schema([c for c in schema.columns if not c.problems() and c.name in dataset.frame.columns])
    st.dataframe(Normaliser(usable).preview(dataset.frame.head(200)), width="stretch", height=240)

    st.subheader(_("Values outside your declarations — owner-only view"))
    st.caption(
        _(
            "Computed on your raw data for your eyes only: it never goes into a release or a report. "
            "A large share means a bound is too tight or a category is missing from the list."
        )
    )
    shares = out_of_bounds_share(dataset.frame, usable)
    st.dataframe(
        shares,
        width="stretch",
        hide_index=True,
        column_config={
            "column": st.column_config.TextColumn(_("column")),
            "outside the declared domain": st.column_config.ProgressColumn(
                _("outside the declared domain"), format="percent", min_value=0, max_value=1
            ),
            "what happens": st.column_config.TextColumn(_("what happens")),
            "missing": st.column_config.ProgressColumn(_("missing"), format="percent", min_value=0, max_value=1),
        },
    )
    declared = {  # typed, from a dictionary or estimated with ε: a domain read from the data has its own warning
        c.name: (float(c.lower), float(c.upper))
        for c in usable.columns
        if c.kind == "numeric" and c.role in ("feature", "target") and not c.bounds_from_data
        if c.lower is not None and c.upper is not None
    }
    fit = bounds_verdict(dataset.frame, declared)
    wide = fit.loc[fit["width ÷ true range"] > TOO_WIDE, "column"].tolist()
    if wide:  # honest public bounds can be far wider than a table's values: a depth from −11,000 m to 0 for a shelf
        st.warning(
            _(
                "Owner only, measured on your rows: the bounds of {columns} are more than {times} times wider than the "
                "values. A model sees such a column as nearly constant, and a copy puts most rows in one bin. Declare "
                "tighter bounds if narrower public ones exist (the region a survey covers, a device's range), or "
                "estimate them again with a larger share."
            ).format(columns=quoted(wide, most=6), times=TOO_WIDE),
            icon=":material/width:",
        )
