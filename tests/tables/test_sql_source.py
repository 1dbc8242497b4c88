"""Tables read from SQL databases: the same people as the CSV export, read-only, streamed, passwords never shown."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest
import sqlalchemy as sa

from dpcore.budget.datasets import Catalog
from dpcore.exceptions import DataError
from dpcore.tables.csv_reading import file_chunks
from dpcore.tables.sql_source import (
    SECRETS_ENV,
    SqlSource,
    check_constraint_facts,
    check_read_only,
    database_declarations,
    load_connections,
    masked,
    open_source,
)

ADULT_CSV = "adult.csv"


@pytest.fixture(scope="module")
def adult_databases(tmp_path_factory):
    """The bundled Adult sample written, as the CSV reader reads it, into a SQLite and a DuckDB file."""
    from conftest import SAMPLE_DATA

    from dpcore.tables.loading import read_csv_path

    folder = tmp_path_factory.mktemp("databases")
    frame, _info = read_csv_path(SAMPLE_DATA / ADULT_CSV)
    engine = sa.create_engine(f"sqlite:///{folder / 'adult.sqlite'}")
    frame.to_sql("adult", engine, index=False, chunksize=10_000)
    engine.dispose()
    with duckdb.connect(str(folder / "adult.duckdb")) as connection:  # duckdb-engine inserts row by row: slow
        connection.register("frame", frame)
        connection.execute("CREATE TABLE adult AS SELECT * FROM frame")
    return {name: f"{name}:///{folder / f'adult.{name}'}" for name in ("sqlite", "duckdb")}


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_a_table_and_its_csv_export_are_one_dataset_with_one_fingerprint(adult_databases, backend, tmp_path):
    from conftest import SAMPLE_DATA

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    from_csv = catalog.open_table(file_chunks(SAMPLE_DATA / ADULT_CSV), "adult")
    source = open_source(adult_databases[backend], table="adult")
    from_database = catalog.open_table(source.chunks(5_000), source.label)
    assert from_csv.created and not from_database.created
    assert from_database.dataset == from_csv.dataset
    assert catalog.identify(source.chunks()).fingerprint == catalog.identify(file_chunks(SAMPLE_DATA / ADULT_CSV)).fingerprint


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_a_small_chunk_size_reads_the_same_frame_as_one_read(adult_databases, backend, adult_frame):
    source = open_source(adult_databases[backend], table="adult")
    whole, info = source.read()
    chunked = pd.concat(list(source.batches(997)), ignore_index=True)
    pd.testing.assert_frame_equal(chunked, whole)
    assert info["rows"] == len(adult_frame) and info["format"] == "database" and info["table"] == "adult"
    assert whole.shape == adult_frame.shape
    numbers = [name for name in adult_frame.columns if pd.api.types.is_numeric_dtype(adult_frame[name])]
    assert (whole[numbers].to_numpy() == adult_frame[numbers].to_numpy()).all()
    text = adult_frame.drop(columns=numbers)
    pd.testing.assert_frame_equal(whole[text.columns].astype(object), text.astype(object))


def test_a_query_reads_its_rows_and_only_the_columns_asked_for(adult_databases):
    source = open_source(
        adult_databases["sqlite"], query="SELECT age, sex, income, '12:30' AS t FROM adult WHERE age >= 60 -- the old;"
    )
    frame, info = source.read()
    assert list(frame.columns) == ["age", "sex", "income", "t"] and (frame["age"] >= 60).all() and (frame["t"] == "12:30").all()
    assert source.row_count() == len(frame) and info["query"].startswith("SELECT age")
    [only] = list(source.batches(100_000, columns=["sex"]))
    assert list(only.columns) == ["sex"] and len(only) == len(frame)
    assert "query: SELECT age, sex, income, '12:30' AS t FROM adult WHERE age >= 60" in source.description


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM adult",
        "SELECT 1; DROP TABLE adult",
        "WITH gone AS (DELETE FROM adult RETURNING *) SELECT * FROM gone",
        "SELECT * INTO copy FROM adult",
        "UPDATE adult SET age = 0",
        "ATTACH 'other.db' AS other",
        "PRAGMA writable_schema = 1",
        "  ",
        # quotes that hide a comment opener, and comments or other quotes that hide a quote
        "SELECT '--' AS a, 1 AS b; SET threads = 1; SELECT '\n' AS a",
        "SELECT '/*' AS a; DELETE FROM adult; SELECT '*/' AS b",
        "SELECT $$'$$ AS a; DELETE FROM adult; SELECT $$'$$",
        "SELECT $tag$ -- $tag$ AS a; DELETE FROM adult",
        "SELECT E'\\'' AS a; DELETE FROM adult; SELECT 'x'",
        "SELECT 1 AS [a; DROP TABLE adult; SELECT 1]",
        "SELECT 1; -- the end\nDELETE FROM adult",
        "SELECT x FROM adult FOR UPDATE",
    ],
)
def test_anything_but_one_select_is_refused_with_the_way_out(query):
    with pytest.raises(DataError) as refused:
        check_read_only(query)
    message = str(refused.value)
    assert "SELECT" in message and ("view" in message or "empty" in message)


@pytest.mark.parametrize(
    "query",
    [
        "select 'delete' as word, \"update\" from adult",
        "WITH old AS (SELECT * FROM adult WHERE age > 60) SELECT * FROM old;",
        "/* DROP TABLE adult; */ SELECT age FROM adult -- ; insert",
    ],
)
def test_reading_queries_pass_whatever_their_text_and_comments_say(query):
    assert check_read_only(query).lower().lstrip("/* ").startswith(("select", "with", "drop table adult"))


def test_quoted_text_and_comments_are_read_as_what_they_are():
    assert check_read_only("SELECT 'it''s; -- not' AS a, $$x; y$$ AS b, E'\\'; ' AS c; -- done") == (
        "SELECT 'it''s; -- not' AS a, $$x; y$$ AS b, E'\\'; ' AS c"
    )
    assert check_read_only("SELECT 1 AS updated, 2 AS set_count, 'insert' AS \"into\"").endswith('"into"')
    for unclosed in ("SELECT 'a", "SELECT $$a", 'SELECT "a'):
        with pytest.raises(DataError, match="not closed"):
            check_read_only(unclosed)
    with pytest.raises(DataError, match="longer than"):
        check_read_only("SELECT " + "x, " * 40_000 + "y")


@pytest.mark.parametrize("query", ["SELECT 1 AS a, 2 AS b; SELECT 3", "SELECT 1 AS a FROM", "PRAGMA version"])
def test_duckdb_itself_must_read_a_query_as_one_select(adult_databases, query):
    from dpcore.tables.sql_source import _check_duckdb_statement

    with pytest.raises(DataError):
        _check_duckdb_statement(query)
    url = sa.engine.make_url(adult_databases["duckdb"])
    assert SqlSource(url, "warehouse", query="SELECT age FROM adult;").query == "SELECT age FROM adult"


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_the_connection_itself_is_read_only(adult_databases, backend):
    source = open_source(adult_databases[backend], table="adult")
    engine = source.engine()
    try:
        with engine.connect() as connection, pytest.raises(sa.exc.DBAPIError):
            connection.execute(sa.text("CREATE TABLE written (x INTEGER)"))
    finally:
        engine.dispose()


def test_a_password_is_masked_in_every_message():
    url = "postgresql+psycopg://owner:hunter2-secret@127.0.0.1:1/clinic"
    source = open_source(url, table="visits")
    assert "hunter2" not in source.connection and "owner" not in source.connection
    assert "hunter2" not in repr(source) and "hunter2" not in source.description
    with pytest.raises(DataError) as failed:
        source.read()
    assert "hunter2" not in str(failed.value) and "postgresql+psycopg://127.0.0.1:1/clinic" in str(failed.value)
    assert masked("not a url at all") in ("***", "not a url at all")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://127.0.0.1:1/clinic?password=hunter2",
        "postgresql+psycopg://owner@127.0.0.1:1/clinic?sslmode=require&password=hunter2",
        "duckdb:///md:clinic?motherduck_token=hunter2",
    ],
)
def test_a_password_in_the_query_string_is_never_shown_nor_stored(url):
    shown = masked(url)
    assert "hunter2" not in shown and "?" not in shown and "owner" not in shown
    source = SqlSource(sa.engine.make_url(url), shown, "visits")
    assert "hunter2" not in source.description and "hunter2" not in str(source.info(1, 2)) and "hunter2" not in repr(source)


def test_a_url_with_an_unencoded_at_in_its_password_is_refused_without_echoing_it():
    with pytest.raises(DataError) as refused:
        open_source("postgresql+psycopg://owner:hun@ter2@db.example:5432/clinic", table="visits")
    message = str(refused.value)
    assert "%40" in message and "ter2" not in message and "db.example" not in message
    assert "ter2" not in masked("postgresql+psycopg://owner:hun@ter2@db.example:5432/clinic")


@pytest.mark.parametrize("setting", ["access_mode=read_write", "enable_external_access=true", "allow_unsigned_extensions=true"])
def test_a_duckdb_url_cannot_undo_read_only_with_its_settings(adult_databases, setting):
    source = open_source(f"{adult_databases['duckdb']}?{setting}", table="adult")
    with pytest.raises(DataError, match="Remove everything from the '\\?' on") as refused:
        source.read()
    assert setting not in str(refused.value)


def test_a_duckdb_connection_that_could_write_is_refused(adult_databases, tmp_path):
    writable = tmp_path / "writable.duckdb"
    duckdb.connect(str(writable)).close()
    source = open_source(adult_databases["duckdb"], table="adult")
    with pytest.raises(DataError, match="did not open read-only"):
        source._check_duckdb_read_only(duckdb.connect(str(writable)), None)
    with duckdb.connect(adult_databases["duckdb"].removeprefix("duckdb:///"), read_only=True) as read_only:
        with pytest.raises(DataError, match="did not open read-only"):  # read-only, but may still read other files
            source._check_duckdb_read_only(read_only, None)


def test_the_read_only_check_runs_on_every_duckdb_connection(adult_databases, monkeypatch):
    def refused(self, driver_connection, record):
        raise DataError("did not open read-only")

    monkeypatch.setattr(SqlSource, "_check_duckdb_read_only", refused)
    source = open_source(adult_databases["duckdb"], table="adult")
    for reading in (source.read, source.tables, source.column_types, source.row_count):
        with pytest.raises(DataError, match="did not open read-only"):
            reading()


def test_connections_are_named_in_a_secrets_file_as_streamlit_reads_them(adult_databases, tmp_path, monkeypatch):
    secrets = tmp_path / "secrets.toml"
    database = adult_databases["sqlite"].removeprefix("sqlite:///")
    secrets.write_text(
        f'[connections.census]\nurl = "{adult_databases["sqlite"]}"\n\n'
        f'[connections.parts]\ndialect = "sqlite"\ndatabase = "{database}"\n\n'
        '[connections.team]\nurl = "postgresql+psycopg://owner:hunter2@db.example/clinic"\n',
        encoding="utf-8",
    )
    assert set(load_connections(secrets)) == {"census", "parts", "team"}
    monkeypatch.setenv(SECRETS_ENV, str(secrets))
    source = open_source("parts", table="adult")
    assert source.connection == "parts" and source.tables() == ["adult"]
    with pytest.raises(DataError) as unknown:
        open_source("clinic", table="adult")
    message = str(unknown.value)
    assert "census, parts, team" in message and "[connections.clinic]" in message and "hunter2" not in message


def test_a_broken_secrets_file_is_named_without_quoting_it(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[connections.x]\nurl = "postgresql://a:hunter2@h/db\n', encoding="utf-8")
    with pytest.raises(DataError) as broken:
        load_connections(secrets)
    assert "not valid TOML" in str(broken.value) and "hunter2" not in str(broken.value)


def test_a_missing_database_file_is_not_created(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        open_source(f"sqlite:///{tmp_path / 'nowhere.sqlite'}", table="t").read()
    assert not (tmp_path / "nowhere.sqlite").exists()


def test_the_databases_schema_prefills_the_declarations_for_free(tmp_path):
    path = tmp_path / "clinic.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'it''s fine')")
        connection.execute(
            "CREATE TABLE visits (ward VARCHAR NOT NULL, mood mood, age INTEGER CHECK (age BETWEEN 0 AND 120), stay DOUBLE, "
            "sex VARCHAR CHECK (sex IN ('F', 'M')))"
        )
        connection.execute(
            "INSERT INTO visits SELECT ['010', '020', '030'][1 + i % 3], ['sad', 'ok'][1 + i % 2], 20 + i % 50, i / 7, "
            "['F', 'M'][1 + i % 2] FROM range(300) t(i)"
        )
    source = SqlSource(sa.engine.make_url(f"duckdb:///{path}"), "clinic", table="visits")
    frame, _info = source.read()
    schema = database_declarations(frame, source.column_types())
    assert schema["mood"].kind == "categorical" and schema["mood"].categories == ["sad", "ok", "it's fine"]
    assert not schema["mood"].bounds_from_data and "enum" in schema["mood"].source
    assert schema["ward"].kind == "categorical" and not schema["ward"].may_be_missing
    assert (schema["age"].lower, schema["age"].upper) == (0, 120) and not schema["age"].bounds_from_data
    assert "CHECK" in schema["age"].source and schema["age"].may_be_missing
    assert schema["sex"].categories == ["F", "M"] and not schema["sex"].bounds_from_data
    assert schema["stay"].kind == "numeric" and schema["stay"].bounds_from_data  # nothing declared: read from the rows


def test_a_sqlite_tables_check_constraints_are_read_as_declarations(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'clinic.sqlite'}")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "CREATE TABLE visits (hours INTEGER, dose REAL, ward TEXT CHECK (ward IN ('A', 'B', 'C')), "
                "CONSTRAINT sane CHECK (hours >= 1 AND hours <= 99))"
            )
        )
        connection.execute(sa.text("INSERT INTO visits VALUES (5, 1.5, 'A'), (7, 2.5, 'B'), (9, 0.5, 'A')"))
    engine.dispose()
    source = open_source(f"sqlite:///{tmp_path / 'clinic.sqlite'}", table="visits")
    frame, _info = source.read()
    schema = database_declarations(frame, source.column_types())
    assert (schema["hours"].lower, schema["hours"].upper) == (1, 99) and not schema["hours"].bounds_from_data
    assert schema["ward"].categories == ["A", "B", "C"] and schema["dose"].bounds_from_data


@pytest.mark.parametrize(
    ("sqltext", "facts"),
    [
        ("age BETWEEN 0 AND 120", {"age": {"lower": 0.0, "upper": 120.0}}),
        ('(("my col" >= 1.5) AND ("my col" < 9))', {"my col": {"lower": 1.5, "upper": 9.0}}),
        ("kind IN ('a', 'it''s', 'x AND (y)')", {"kind": {"enums": ("a", "it's", "x AND (y)")}}),
        ("h >= 1 AND y - x <= 3", {"h": {"lower": 1.0}}),  # an expression bounds no column
        ("x > 0 OR x < -5", {}),
        ("abs(x) < 5", {}),
        ("status <> 'NOT SET'", {}),
    ],
)
def test_check_constraints_give_only_what_they_surely_declare(sqltext, facts):
    assert check_constraint_facts(sqltext) == facts


def test_a_duckdb_query_cannot_read_files_beside_the_database(adult_databases):
    from conftest import SAMPLE_DATA

    source = open_source(adult_databases["duckdb"], query=f"SELECT * FROM read_csv('{SAMPLE_DATA / ADULT_CSV}')")
    with pytest.raises(DataError, match="failed"):
        source.read()


def test_sub_second_and_zoned_times_are_written_as_the_databases_csv_export_writes_them(tmp_path):
    database, export = tmp_path / "visits.duckdb", tmp_path / "visits.csv"
    with duckdb.connect(str(database)) as connection:
        connection.execute(
            "CREATE TABLE visits AS SELECT TIMESTAMP '2020-01-01 10:00:00.25' + to_seconds(i * 3601) AS seen, "
            "TIMESTAMPTZ '2020-01-01 10:00:00.123456+00' + to_seconds(i) AS zoned, 20 + (i * 7) % 60 AS age "
            "FROM range(1, 300) r(i)"
        )
        connection.execute(f"COPY visits TO '{export}' (HEADER)")
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    from_csv = catalog.open_table(file_chunks(export), "visits")
    from_database = catalog.open_table(open_source(f"duckdb:///{database}", table="visits").chunks(100), "visits")
    assert from_csv.created and not from_database.created
    from dpcore.tables.sql_source import cleaned_chunk

    times = pd.Series(pd.to_datetime(["2020-01-01 10:00:00.25", "2020-01-02 00:00:00", None], format="ISO8601"))
    cleaned = cleaned_chunk(pd.DataFrame({"utc": times.dt.tz_localize("UTC"), "india": times.dt.tz_localize("Asia/Kolkata")}))
    assert cleaned["utc"].tolist()[:2] == ["2020-01-01 10:00:00.25+00", "2020-01-02 00:00:00+00"]
    assert cleaned["india"].tolist()[:2] == ["2020-01-01 10:00:00.25+05:30", "2020-01-02 00:00:00+05:30"]
    assert cleaned["utc"].isna().tolist() == [False, False, True]


@pytest.mark.parametrize("name", ["ward#2.sqlite", "ward?mode=rwc.sqlite", "ward%41.sqlite", "ward 2.sqlite"])
def test_a_sqlite_file_whose_name_has_uri_characters_is_the_one_read_and_stays_read_only(tmp_path, name):
    import sqlite3

    database = tmp_path / name  # as a secrets file's database = "…" names it (a URL would read "?" as its query)
    with sqlite3.connect(database) as connection:
        pd.DataFrame({"age": [30, 40], "ward": ["a", "b"]}).to_sql("visits", connection, index=False)
    connection.close()
    before = sorted(tmp_path.iterdir())
    source = SqlSource(sa.engine.URL.create("sqlite", database=str(database)), "wards", "visits")
    frame, _info = source.read()
    assert frame["ward"].tolist() == ["a", "b"] and sorted(tmp_path.iterdir()) == before
    engine = source.engine()
    try:
        with engine.connect() as connection, pytest.raises(sa.exc.DBAPIError):
            connection.execute(sa.text("CREATE TABLE written (x INTEGER)"))
    finally:
        engine.dispose()


def test_duckdb_types_and_checks_are_read_from_the_tables_own_schema(tmp_path):
    database = tmp_path / "wards.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.execute("CREATE TABLE visits (age INTEGER CHECK (age BETWEEN 0 AND 120), ward VARCHAR NOT NULL)")
        connection.execute("CREATE SCHEMA archive")
        connection.execute("CREATE TABLE archive.visits (age VARCHAR, ward INTEGER CHECK (ward BETWEEN 1 AND 9), extra INTEGER)")
    current = {t.name: t for t in open_source(f"duckdb:///{database}", table="visits").column_types()}
    assert set(current) == {"age", "ward"} and current["age"].numeric and (current["age"].lower, current["age"].upper) == (0, 120)
    assert current["ward"].numeric is False and current["ward"].lower is None and not current["ward"].nullable
    archived = {t.name: t for t in open_source(f"duckdb:///{database}", table="archive.visits").column_types()}
    assert set(archived) == {"age", "ward", "extra"} and archived["age"].numeric is False and archived["age"].lower is None
    assert (archived["ward"].lower, archived["ward"].upper) == (1, 9)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[connections.a]\nurl = "hunter2"\n', "no valid url"),
        ("[connections.a]\nurl = 123\n", "no valid url"),
        ('connections = "hunter2"\n', "not a table of connections"),
        ('connections = ["hunter2"]\n', "not a table of connections"),
    ],
)
def test_a_secrets_file_of_the_wrong_shape_gets_a_sentence(tmp_path, text, words):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=words) as refused:
        load_connections(secrets)
    assert "hunter2" not in str(refused.value)


@pytest.fixture
def awkward_databases(tmp_path):
    """A SQLite and a DuckDB file, each with a table of a binary column and an empty table."""
    import sqlite3

    with sqlite3.connect(tmp_path / "awkward.sqlite") as connection:
        connection.execute("CREATE TABLE scans (image BLOB, age INTEGER)")
        connection.execute("INSERT INTO scans VALUES (x'00ff', 1)")
        connection.execute("CREATE TABLE nobody (age INTEGER, ward TEXT)")
    connection.close()
    with duckdb.connect(str(tmp_path / "awkward.duckdb")) as connection:
        connection.execute("CREATE TABLE scans AS SELECT 1 AS age, 2 AS ward")
        connection.execute("CREATE TABLE nobody (age INTEGER, ward TEXT)")
    return {name: f"{name}:///{tmp_path / f'awkward.{name}'}" for name in ("sqlite", "duckdb")}


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_an_empty_table_is_said_to_have_no_rows(awkward_databases, backend):
    for source in (
        open_source(awkward_databases[backend], table="nobody"),
        open_source(awkward_databases[backend], query="SELECT * FROM scans WHERE age > 5"),
    ):
        with pytest.raises(DataError, match="gives no rows"):
            source.read()


def test_a_binary_column_is_named_as_unreadable(awkward_databases):
    with pytest.raises(DataError, match="The column 'image' could not be read as numbers or as text") as refused:
        open_source(awkward_databases["sqlite"], table="scans").read()
    assert "reached" not in str(refused.value)


def test_duckdb_duplicate_column_names_are_refused_and_the_result_closed(awkward_databases, capfd):
    source = open_source(awkward_databases["duckdb"], query="SELECT age, age FROM scans")
    with pytest.raises(DataError, match="the same name"):
        source.read()
    import gc

    gc.collect()
    assert "Resource In Use" not in capfd.readouterr().err


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_an_empty_table_is_identified_as_a_csv_of_a_header_alone_is(awkward_databases, backend, tmp_path):
    with pytest.raises(DataError, match="no rows"):
        Catalog(tmp_path / "ledger.sqlite3").identify(open_source(awkward_databases[backend], table="nobody").chunks())
