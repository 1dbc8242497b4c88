"""The Data page's third source: a table, or a read-only query, from a connection named in the secrets file."""

from __future__ import annotations

import streamlit as st

from dpcore.budget.datasets import Catalog, OverlapRefused
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.tables.loading import MAX_COLUMNS, MAX_ROWS
from dpcore.tables.schema import Schema
from dpcore.tables.sql_source import (
    QUERY_EXAMPLE,
    SECRETS_ENV,
    SECRETS_EXAMPLE,
    SqlSource,
    database_declarations,
    load_connections,
    open_source,
)
from dpstudio.support.language import keyed
from dpstudio.support.session import use_dataset
from dpstudio.support.state import Dataset, StudioState

READ_WHAT = (N_("A table"), N_("A query"))


def dataset_from_database(
    source: SqlSource, catalog: Catalog, schema: Schema | None = None, separate: tuple[str, str] | None = None
) -> Dataset:
    """The table or query's rows as the table in use, in the dataset whose people they are.

    The declarations start from the database's own schema (:func:`~dpcore.tables.sql_source.database_declarations`)
    unless a schema file is given; what was read goes into the dataset's history.
    """
    frame, info = source.read(MAX_ROWS, MAX_COLUMNS)
    schema = schema or database_declarations(frame, source.column_types())
    if separate is not None:
        found = catalog.separate(lambda: [frame], *separate)
    else:
        found = catalog.open_table(lambda: [frame], source.label)
    source.record_read(catalog.ledger(found.dataset), "app")
    return Dataset(source.label, frame, info, schema, schema, found)


def choose_database(state: StudioState, schema_json: bytes | None) -> None:
    """Pick a named connection, then a table or a query; read it (a refusal keeps the current table)."""
    try:
        connections = sorted(load_connections())
    except DataError as error:
        st.error(str(error))
        return
    if not connections:
        st.info(
            _(
                "No database connection is named yet. Name each one in a secrets file, .streamlit/secrets.toml in the "
                "folder DP Studio runs in (or the file ${variable} names), with the password there and never on this "
                "page; then reload the page."
            ).format(variable=SECRETS_ENV),
            icon=":material/database:",
        )
        st.code(SECRETS_EXAMPLE, language="toml")
        return
    info = state.dataset.info if state.dataset is not None else {}
    current = info.get("connection") if info.get("format") == "database" else None
    left, right = st.columns(2)
    name = left.selectbox(
        _("Connection"),
        connections,
        index=connections.index(current) if current in connections else 0 if len(connections) == 1 else None,
        placeholder=_("Choose a connection from the secrets file"),
        key="database_connection",
    )
    what = right.radio(_("Read"), READ_WHAT, horizontal=True, format_func=_, key=keyed("database_what"))
    if name is None:
        return
    try:
        if what == READ_WHAT[0]:
            tables = open_source(name).tables()
            table = st.selectbox(
                _("Table"),
                tables,
                index=tables.index(info["table"]) if info.get("table") in tables and current == name else None,
                placeholder=_("Choose a table") if tables else _("The connection has no tables"),
                key="database_table",
            )
            clicked = st.button(_("Read the table"), disabled=table is None, key="database_read_table")
            source = open_source(name, table=table) if clicked and table is not None else None
        else:
            query = st.text_area(
                _("Query (one SELECT statement: it only reads)"),
                value=info.get("query") or "" if current == name else "",
                placeholder=QUERY_EXAMPLE,
                key="database_query",
            )
            clicked = st.button(_("Read the query"), disabled=not query.strip(), key="database_read_query")
            source = open_source(name, query=query) if clicked else None
        if source is not None:
            schema = Schema.from_json(schema_json.decode("utf-8", "replace")) if schema_json else None
            state.refused_database = None
            use_dataset(state, dataset_from_database(source, state.catalog(), schema), carry_earlier=schema is None)
            state.upload_error = None
            st.rerun()
    except OverlapRefused as error:
        state.upload_error, state.refused_database = str(error), source
    except DataError as error:
        state.upload_error = str(error)
