"""A PostgreSQL table read by Spark over JDBC is the local read's table: one dataset, one seeded model, one seeded copy.

Adult's first 3,000 rows live in a CSV file and in a PostgreSQL table whose primary key is each
row's line number in the file (``postgres_support.load_adult``). Spark reads the table through
PostgreSQL's JDBC driver (Debian's ``libpostgresql-jdbc-java``), split between connections by
ranges of that key, and must give the rows the cells and keys the local read gives them, so that
the copy and the model made on Spark are, byte for byte, those made from the CSV file and from the
database on this machine, charged to one budget. The URL's conversion for the JDBC driver never
puts the password into a sentence.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from postgres_support import load_adult
from same_model import fitted_state
from sqlalchemy.engine import make_url

from dpcore.budget.accountant import BudgetLedger
from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.exceptions import DataError
from dpcore.model_files import load_model
from dpcore.release.estimator import read_release
from dpcore.tables.design import Design
from dpcore.tables.schema import load_schema
from dpcore.tables.sql_connections import JDBC_READ_ONLY, jdbc_connection
from dpcore.tables.sql_source import open_source

ROWS = 3_000
PASSWORD = "pw-9f3a-SENTINEL"


# --- the URL for the JDBC driver (no database, no Spark) -------------------------------------------


def test_a_postgresql_url_becomes_a_jdbc_url_and_properties_with_the_password_in_the_properties():
    url = make_url(f"postgresql+psycopg://reader:{PASSWORD}@db.example.org:5433/clinic?sslmode=verify-full&application_name=dp")
    jdbc, properties = jdbc_connection(url, "clinic")
    assert jdbc == "jdbc:postgresql://db.example.org:5433/clinic"
    assert properties == {
        "options": JDBC_READ_ONLY,
        "ApplicationName": "dp",
        "sslmode": "verify-full",
        "user": "reader",
        "password": PASSWORD,
    }
    assert PASSWORD not in jdbc


def test_the_urls_own_options_keep_the_read_only_setting_last_and_an_ipv6_host_gets_brackets():
    url = make_url("postgresql://reader@[::1]/clinic?options=-c%20search_path%3Dclinic")
    jdbc, properties = jdbc_connection(url, "clinic")
    assert jdbc == "jdbc:postgresql://[::1]/clinic"
    assert properties["options"] == f"-c search_path=clinic {JDBC_READ_ONLY}"
    assert "password" not in properties


def test_the_password_comes_from_pgpassword_when_the_url_has_none(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    _jdbc, properties = jdbc_connection(make_url("postgresql://reader@db.example.org/clinic"), "clinic")
    assert properties["password"] == PASSWORD


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (f"postgresql://reader:{PASSWORD}@/clinic?host=/var/run/postgresql", "unix socket"),
        (f"postgresql://reader:{PASSWORD}@db.example.org/clinic?target_session_attrs=read-write", "target_session_attrs"),
        (f"sqlite:///{PASSWORD}.sqlite", "PostgreSQL"),
        (f"postgresql://reader:{PASSWORD}@/clinic?host=db1&host=db2", "several hosts"),
    ],
)
def test_a_url_the_jdbc_driver_cannot_use_is_refused_in_a_sentence_without_its_password(url, named):
    with pytest.raises(DataError) as refused:
        jdbc_connection(make_url(url), "clinic")
    assert named in str(refused.value) and "clinic" in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_a_missing_driver_jar_is_a_sentence_naming_the_package_before_spark_starts(monkeypatch, tmp_path, capsys):
    pytest.importorskip("pyspark")
    monkeypatch.setenv("DPSTUDIO_JDBC_DRIVER", str(tmp_path / "no-such-driver.jar"))
    url = f"postgresql://reader:{PASSWORD}@db.example.org:5432/clinic"
    schema = str(tmp_path.parents[0] / "unused.schema.json")
    code = main(
        [
            "release",
            "--source",
            url,
            "--table",
            "adult",
            "--engine",
            "spark",
            "--schema",
            schema,
            "-o",
            "out",
            "--report",
            "r.json",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "apt-get install libpostgresql-jdbc-java" in err and "DPSTUDIO_JDBC_DRIVER" in err
    assert "Traceback" not in err and PASSWORD not in err


def test_spark_refuses_a_duckdb_file_in_a_sentence(tmp_path, capsys):
    duckdb = f"duckdb:///{tmp_path / 'x.duckdb'}"
    code = main(
        [
            "train",
            "--source",
            duckdb,
            "--table",
            "t",
            "--engine",
            "spark",
            "--schema",
            "s.json",
            "--model",
            "dp_boosting",
            "--epsilon",
            "1",
        ]
    )
    assert code == EXIT_USAGE
    assert "leave out --engine spark" in capsys.readouterr().err


# --- Spark reading PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult(tmp_path_factory, postgres_server):
    return load_adult(postgres_server, tmp_path_factory.mktemp("adult_jdbc"), ROWS)


def _same_cells(local: pd.DataFrame, read: pd.DataFrame) -> None:
    assert list(read.columns) == list(local.columns)
    for name in local.columns:
        mine, theirs = local[name], read[name]
        assert mine.dtype.kind == theirs.dtype.kind or (mine.dtype.kind in "OU" and theirs.dtype.kind in "OU"), name
        assert (
            mine.astype(object).where(mine.notna(), None).tolist() == theirs.astype(object).where(theirs.notna(), None).tolist()
        )


@pytest.mark.spark
@pytest.mark.parametrize("how", ["table", "query"])
def test_spark_reads_the_local_reads_cells_under_the_local_reads_row_keys(spark, adult, how):
    from dpcore.backends.spark import ROW_KEY
    from dpcore.backends.spark_database import read_database

    source = open_source(adult["reader"], **{how: adult[how if how == "table" else "ordered"]})
    frame = read_database(spark, source, partitions=4)
    # A keyed table is read by four connections, each a range of its key; a query by one, in its own order.
    assert frame.rdd.getNumPartitions() == (4 if how == "table" else 1)
    read = frame.toPandas().sort_values(ROW_KEY).reset_index(drop=True)
    assert read[ROW_KEY].tolist() == list(range(ROWS))  # the row's place in the order read, from 0
    local = source.read()[0]
    _same_cells(local, read.drop(columns=[ROW_KEY]))
    if how == "table":
        assert read["line"].tolist() == list(range(ROWS))


def _release(adult, tmp_path, name: str, *table: str) -> int:
    return main(
        [
            "release",
            *table,
            "--schema",
            adult["schema"],
            "-o",
            str(tmp_path / name),
            "--report",
            str(tmp_path / f"{name}.json"),
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "--seed",
            "7",
            "--accept-noise",
            "--epsilon-budget",
            "80",
            "--fresh",
            "-q",
        ]
    )


@pytest.mark.spark
def test_a_copy_made_on_spark_over_jdbc_is_the_csvs_and_the_local_reads_and_spends_one_budget(
    spark, adult, tmp_path, capsys, monkeypatch
):
    from dpcore.backends import spark_database

    # A table this small is read by one connection; here by four, each a range of its line numbers.
    monkeypatch.setattr(spark_database, "ROWS_PER_CONNECTION", 500)
    assert _release(adult, tmp_path, "from_csv.csv", str(adult["csv"])) == EXIT_OK
    local = ["--source", adult["postgres"], "--query", adult["ordered"]]
    assert _release(adult, tmp_path, "from_postgres.csv", *local) == EXIT_OK
    # The table read whole on this machine comes in the order of its primary key, the line number, too.
    assert _release(adult, tmp_path, "table_here.csv", "--source", adult["postgres"], "--table", adult["table"]) == EXIT_OK
    on_spark = ["--source", adult["reader"], "--table", adult["table"], "--engine", "spark"]
    assert _release(adult, tmp_path, "table_on_spark", *on_spark) == EXIT_OK, capsys.readouterr().err
    by_query = ["--source", adult["reader"], "--query", adult["ordered"], "--engine", "spark"]
    assert _release(adult, tmp_path, "query_on_spark", *by_query) == EXIT_OK, capsys.readouterr().err

    copy = (tmp_path / "from_csv.csv").read_bytes()
    assert (tmp_path / "from_postgres.csv").read_bytes() == copy == (tmp_path / "table_here.csv").read_bytes()
    for folder in ("table_on_spark", "query_on_spark"):
        parts = sorted((tmp_path / folder).glob("part-*.csv"))
        assert (tmp_path / folder / "header.csv").read_bytes() + b"".join(p.read_bytes() for p in parts) == copy
    assert read_release(tmp_path / "table_on_spark").equals(read_release(tmp_path / "from_csv.csv"))  # the buyer's reading too

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    [dataset] = catalog.datasets()  # one dataset, one budget: five fresh copies charged to it
    books = catalog.ledger(dataset)
    assert len(books.spends()) == 5
    history = " ".join(str(what) for what in books.history()["what"])
    assert adult["ordered"] in history and f"table {adult['table']}" in history
    assert adult["password"] not in history and "reader" not in history


@pytest.mark.spark
def test_a_model_fitted_on_spark_over_jdbc_is_the_csvs_and_the_local_reads(spark, adult, tmp_path, capsys):
    from dpcore.backends.rows import LocalRows
    from dpcore.backends.tables import design_batch
    from dpcore.training_rows import train_rows

    common = [
        "--schema",
        adult["schema"],
        "--model",
        "dp_boosting",
        "--epsilon",
        "0.5",
        "--seed",
        "3",
        "-q",
        "--engine",
        "spark",
        "--epsilon-budget",
        "2",
    ]
    sources = {
        "csv": [str(adult["csv"])],
        "jdbc": ["--source", adult["reader"], "--table", adult["table"]],
    }
    for name, table in sources.items():
        arguments = ["fit", *table, *common, "--ledger", str(tmp_path / "ledger.sqlite3"), "-o", str(tmp_path / f"{name}.skops")]
        assert main(arguments) == EXIT_OK, capsys.readouterr().err
    models = {name: load_model(tmp_path / f"{name}.skops") for name in sources}
    # The local read of the same table, keyed by the rows' places in its order, fitted by the same rule.
    schema = load_schema(adult["schema"])
    frame = open_source(adult["postgres"], table=adult["table"]).read()[0]
    X, y, keep = design_batch(frame, schema)
    rows = LocalRows(X, y, np.arange(len(frame), dtype=np.uint64)[keep])
    local = train_rows(
        Design.domain(schema), rows, "dp_boosting_clf", 0.5, BudgetLedger("check", 5.0, path=tmp_path / "o.sqlite3"), seed=3
    )
    assert fitted_state(models["jdbc"]) == fitted_state(models["csv"]) == fitted_state(local.model)
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()  # the CSV file and the table: one dataset
    assert Catalog(tmp_path / "ledger.sqlite3").ledger(dataset).spent == pytest.approx(1.0)


@pytest.mark.spark
def test_spark_reads_in_read_only_transactions_and_a_query_may_end_in_a_comment(spark, adult):
    from dpcore.backends.spark_database import read_database

    query = "SELECT current_setting('transaction_read_only') AS read_only, 1 AS b -- is this session read-only?"
    [row] = read_database(spark, open_source(adult["reader"], query=query)).collect()
    assert row["read_only"] == "on"


@pytest.mark.spark
def test_a_refused_password_is_a_sentence_that_shows_neither_password(spark, adult):
    from dpcore.backends.spark_database import read_database

    wrong = adult["reader"].replace(adult["password"], PASSWORD)
    with pytest.raises(DataError) as refused:
        read_database(spark, open_source(wrong, query="SELECT 1 AS a, 2 AS b"))
    sentence = str(refused.value)
    assert "password was refused" in sentence and "127.0.0.1" in sentence
    assert PASSWORD not in sentence and adult["password"] not in sentence


@pytest.mark.spark
def test_a_release_on_spark_from_a_refused_connection_exits_with_a_sentence(spark, adult, tmp_path, capsys):
    wrong = adult["reader"].replace(adult["password"], PASSWORD)
    code = _release(adult, tmp_path, "refused", "--source", wrong, "--table", adult["table"], "--engine", "spark")
    err = capsys.readouterr().err
    assert code == EXIT_DATA and "Traceback" not in err
    assert PASSWORD not in err
