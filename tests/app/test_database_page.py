"""The Data page's "A database": a named connection, a table or a query, declarations pre-filled by the database."""

from __future__ import annotations

import sqlalchemy as sa

from dpstudio.support.session import STATE_KEY

PASSWORD = "hunter2-secret"


def _clinic(tmp_path, monkeypatch, adult_frame) -> None:
    """A SQLite file whose table declares its columns (a ward code kept as text), named in a secrets file."""
    path = tmp_path / "clinic.sqlite"
    frame = adult_frame.head(1500).assign(ward=lambda f: (10 * (1 + f.index % 4)).astype(str))
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE census (ward TEXT NOT NULL, age INTEGER NOT NULL, sex TEXT, income TEXT)"))
    frame[["ward", "age", "sex", "income"]].to_sql("census", engine, index=False, if_exists="append")
    engine.dispose()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        f'[connections.clinic]\nurl = "sqlite:///{path}"\n\n[connections.team]\nurl = "postgresql+psycopg://u:{PASSWORD}@127.0.0.1:1/x"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("DPSTUDIO_SECRETS", str(secrets))


def test_a_table_is_read_from_a_named_connection_with_the_databases_declarations(app, tmp_path, monkeypatch, adult_frame):
    _clinic(tmp_path, monkeypatch, adult_frame)
    at = app("data")
    at.radio(key="data_source").set_value("A database").run()
    at.selectbox(key="database_connection").set_value("clinic").run()
    at.selectbox(key="database_table").set_value("census").run()
    at.button(key="database_read_table").click().run()
    assert not at.exception and not [e.value for e in at.error if "kept" in e.value]
    dataset = at.session_state[STATE_KEY].dataset
    assert dataset.info["format"] == "database" and dataset.info["table"] == "census" and len(dataset.frame) == 1500
    ward = dataset.schema["ward"]
    assert ward.kind == "categorical" and not ward.may_be_missing and "database declares it text" in ward.source
    assert any("table 'census' of the database connection 'clinic'" in c.value for c in at.caption)
    history = at.session_state[STATE_KEY].ledger().history()
    assert "connection clinic; table census" in set(history["what"])
    assert PASSWORD not in str(dataset.info)


def test_a_writing_query_and_an_unreachable_server_are_sentences_that_keep_the_table(app, tmp_path, monkeypatch, adult_frame):
    _clinic(tmp_path, monkeypatch, adult_frame)
    at = app("data")
    at.radio(key="data_source").set_value("A database").run()
    at.selectbox(key="database_connection").set_value("clinic").run()
    at.radio(key="database_what").set_value("A query").run()
    at.text_area(key="database_query").set_value("DELETE FROM census").run()
    at.button(key="database_read_query").click().run()
    assert "a SELECT statement that changes nothing" in at.error[0].value and "current table" in at.error[0].value
    at.radio(key="database_what").set_value("A table").run()
    at.selectbox(key="database_connection").set_value("team").run()
    assert PASSWORD not in at.error[0].value and "connection 'team' could not be listed" in at.error[0].value
    assert at.session_state[STATE_KEY].dataset.is_sample


def test_without_a_secrets_file_the_page_shows_how_to_name_a_connection(app, tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTUDIO_SECRETS", str(tmp_path / "none.toml"))
    at = app("data")
    at.radio(key="data_source").set_value("A database").run()
    assert any("No database connection is named yet" in i.value for i in at.info)
    assert "[connections.clinic]" in at.code[0].value and "PASSWORD" in at.code[0].value
    assert at.session_state[STATE_KEY].dataset.is_sample  # the sample stays the table in use
