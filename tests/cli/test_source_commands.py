"""``--source … --table | --query``: a database table gives the CSV export's dataset, model and copy for a seed."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
import sqlalchemy as sa
from same_model import fitted_state

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.model_files import load_model
from dpcore.tables.design import Design
from dpcore.tables.schema import load_schema

PASSWORD = "hunter2-secret"


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    """The bundled Adult sample's first 10,000 rows as a CSV file, and the same rows in a SQLite file and a DuckDB file.

    (A part keeps the three releases and fits quick; the whole sample is read in tests/tables/test_sql_source.py.)
    """
    from conftest import SAMPLE_DATA

    from dpcore.tables.loading import read_csv_path

    folder = tmp_path_factory.mktemp("adult_databases")
    (folder / "adult.csv").write_text(
        "".join((SAMPLE_DATA / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)[:10_001]), encoding="utf-8"
    )
    frame, _info = read_csv_path(folder / "adult.csv")
    engine = sa.create_engine(f"sqlite:///{folder / 'adult.sqlite'}")
    frame.to_sql("adult", engine, index=False, chunksize=10_000)
    engine.dispose()
    with duckdb.connect(str(folder / "adult.duckdb")) as connection:
        connection.register("frame", frame)
        connection.execute("CREATE TABLE adult AS SELECT * FROM frame")
    return {
        "csv": folder / "adult.csv",
        "schema": str(SAMPLE_DATA / "adult.schema.json"),
        "sqlite": f"sqlite:///{folder / 'adult.sqlite'}",
        "duckdb": f"duckdb:///{folder / 'adult.duckdb'}",
        "frame": frame,
    }


def _release(adult, tmp_path, name: str, *table: str) -> int:
    return main(
        [
            "release",
            *table,
            "--schema",
            adult["schema"],
            "-o",
            str(tmp_path / f"{name}.csv"),
            "--report",
            str(tmp_path / f"{name}.json"),
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "--seed",
            "7",
            "--accept-noise",
            "--epsilon-budget",
            "40",
            "-q",
        ]
    )


def test_a_database_table_is_its_csv_exports_dataset_and_gets_the_same_copy(adult, tmp_path, capsys):
    assert _release(adult, tmp_path, "from_csv", str(adult["csv"])) == EXIT_OK
    # The same rows from SQLite: the same dataset and the same copy, handed out again at no cost.
    assert _release(adult, tmp_path, "from_sqlite", "--source", adult["sqlite"], "--table", "adult") == EXIT_OK
    assert "same copy as the earlier release" in capsys.readouterr().out
    # From DuckDB in small chunks, a fresh copy for the same seed: the same bytes again.
    assert (
        _release(
            adult, tmp_path, "from_duckdb", "--source", adult["duckdb"], "--table", "adult", "--fresh", "--chunksize", "4000"
        )
        == EXIT_OK
    )
    copy = (tmp_path / "from_csv.csv").read_bytes()
    assert (tmp_path / "from_sqlite.csv").read_bytes() == copy == (tmp_path / "from_duckdb.csv").read_bytes()
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    [dataset] = catalog.datasets()
    history = catalog.ledger(dataset).history()
    assert sum(history["event"].eq("read from a database (dpcore release)")) == 2
    assert any("table adult" in str(what) for what in history["what"])


def test_a_query_trains_the_csv_exports_model_for_the_same_seed(adult, tmp_path):
    common = ["--schema", adult["schema"], "--model", "dp_boosting", "--epsilon", "0.5", "--seed", "3", "-q"]
    assert (
        main(["train", str(adult["csv"]), *common, "--ledger", str(tmp_path / "a.sqlite3"), "-o", str(tmp_path / "a.skops")]) == 0
    )
    query = "SELECT * FROM adult -- every row, in the table's order"
    database = ["--source", adult["duckdb"], "--query", query, "--ledger", str(tmp_path / "b.sqlite3")]
    assert main(["train", *database, *common, "-o", str(tmp_path / "b.skops")]) == EXIT_OK
    from_csv, from_database = load_model(tmp_path / "a.skops"), load_model(tmp_path / "b.skops")
    assert fitted_state(from_csv) == fitted_state(from_database)
    design = Design.from_table(adult["frame"].head(500), load_schema(adult["schema"]))
    assert np.array_equal(from_csv.predict_proba(design.X), from_database.predict_proba(design.X))
    catalog = Catalog(tmp_path / "b.sqlite3")
    [dataset] = catalog.datasets()
    assert any(query in str(what) for what in catalog.ledger(dataset).history()["what"])


def test_cluster_reads_a_query(adult, tmp_path, capsys):
    source = ["--source", adult["sqlite"], "--query", "SELECT * FROM adult WHERE age < 40"]
    code = main(
        ["cluster", *source, "--schema", adult["schema"], "--columns", "age,hours-per-week", "--epsilon", "0.5"]
        + ["--ledger", str(tmp_path / "ledger.sqlite3"), "--epsilon-budget", "5", "-q", "-o", str(tmp_path / "groups.csv")]
    )
    assert code == EXIT_OK, capsys.readouterr().err
    assert (tmp_path / "groups.csv").exists()
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()
    assert dataset.name == "query on " + adult["sqlite"]


def test_synthesize_reads_a_database_table(tmp_path, capsys):
    pytest.importorskip("mbi")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "synthetic"))
    from synthetic_testing import tiny_schema, tiny_table

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'tiny.sqlite'}")
    tiny_table(600).to_sql("tiny", engine, index=False)
    engine.dispose()
    (tmp_path / "tiny.schema.json").write_text(tiny_schema().to_json(), encoding="utf-8")
    code = main(
        ["synthesize", "--source", f"sqlite:///{tmp_path / 'tiny.sqlite'}", "--table", "tiny"]
        + ["--schema", str(tmp_path / "tiny.schema.json"), "--epsilon", "1", "--ledger", str(tmp_path / "l.sqlite3")]
        + ["-o", str(tmp_path / "s.csv"), "--report", str(tmp_path / "s.json"), "-q", "--seed", "1"]
    )
    assert code == EXIT_OK, capsys.readouterr().err
    assert (tmp_path / "s.csv").exists()
    [dataset] = Catalog(tmp_path / "l.sqlite3").datasets()
    assert dataset.name == "tiny"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--table", "adult"], "need --source"),
        (["--source", "census"], "either --table NAME or --query SQL"),
        (["--source", "census", "--table", "adult", "--query", "SELECT 1"], "either --table NAME or --query SQL"),
        ([], "give the table"),
    ],
)
def test_the_source_options_say_what_is_missing(adult, tmp_path, capsys, arguments, words):
    code = main(["train", *arguments, "--schema", adult["schema"], "--model", "dp_boosting", "--epsilon", "1"])
    assert code == EXIT_USAGE and words in capsys.readouterr().err


def test_a_writing_query_is_refused_and_a_password_never_shown(adult, tmp_path, capsys):
    common = ["--schema", adult["schema"], "--model", "dp_boosting", "--epsilon", "1", "--ledger", str(tmp_path / "l.sqlite3")]
    assert main(["train", "--source", adult["sqlite"], "--query", "DELETE FROM adult", *common]) == EXIT_DATA
    assert "a SELECT statement that changes nothing" in capsys.readouterr().err
    url = f"postgresql+psycopg://owner:{PASSWORD}@127.0.0.1:1/clinic"
    assert main(["train", "--source", url, "--table", "visits", *common]) == EXIT_DATA
    err = capsys.readouterr().err
    assert PASSWORD not in err and "owner" not in err and "postgresql+psycopg://127.0.0.1:1/clinic" in err
    assert main(["release", "--source", url, "--query", "SELECT 1; DROP TABLE visits", "--schema", adult["schema"], "-o", str(tmp_path / "c.csv"), "--report", str(tmp_path / "r.json")]) == EXIT_DATA  # fmt: skip
    assert PASSWORD not in capsys.readouterr().err


def test_a_connection_is_found_by_its_name_in_the_secrets_file(adult, tmp_path, capsys, monkeypatch):
    (tmp_path / "secrets.toml").write_text(f'[connections.census]\nurl = "{adult["sqlite"]}"\n', encoding="utf-8")
    monkeypatch.setenv("DPSTUDIO_SECRETS", str(tmp_path / "secrets.toml"))
    monkeypatch.chdir(tmp_path)
    common = ["--schema", adult["schema"], "--columns", "age,hours-per-week", "--epsilon", "0.5", "--epsilon-budget", "1"]
    code = main(["cluster", "--source", "census", "--table", "adult", *common, "--ledger", str(tmp_path / "l.sqlite3"), "-q"])
    assert code == EXIT_OK, capsys.readouterr().err
    assert (tmp_path / "adult_groups.csv").exists()  # named after the table
    catalog = Catalog(tmp_path / "l.sqlite3")
    [dataset] = catalog.datasets()
    assert any("connection census; table adult" == str(what) for what in catalog.ledger(dataset).history()["what"])


def test_a_database_table_whose_people_have_several_rows_gets_the_csvs_copy(adult, tmp_path, capsys):
    from dpcore.tables.schema import ColumnSpec

    visits = adult["frame"].head(3000).assign(person=lambda f: (f.index // 3).astype(str))
    visits.to_csv(tmp_path / "visits.csv", index=False)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'visits.sqlite'}")
    visits.to_sql("visits", engine, index=False)
    engine.dispose()
    schema = load_schema(adult["schema"])
    schema.columns.append(ColumnSpec(name="person", role="identifier", kind="categorical"))
    (tmp_path / "visits.schema.json").write_text(schema.to_json(), encoding="utf-8")
    for name, table in (("csv", [str(tmp_path / "visits.csv")]), ("db", ["--source", f"sqlite:///{tmp_path / 'visits.sqlite'}", "--table", "visits"])):  # fmt: skip
        code = main(
            ["release", *table, "--schema", str(tmp_path / "visits.schema.json"), "--privacy-unit", "person"]
            + ["--max-rows-per-person", "2", "-o", str(tmp_path / f"{name}.csv"), "--report", str(tmp_path / f"{name}.json")]
            + ["--ledger", str(tmp_path / f"{name}.sqlite3"), "--seed", "5", "--accept-noise", "--chunksize", "700", "-q"]
        )
        assert code == EXIT_OK, capsys.readouterr().err
    assert (tmp_path / "csv.csv").read_bytes() == (tmp_path / "db.csv").read_bytes()


def test_a_query_whose_rows_change_at_each_reading_is_read_once_and_its_copy_made_of_the_rows_identified(
    adult, tmp_path, capsys, monkeypatch
):
    from dpcore.release.buffers import KeptRows
    from dpcore.tables.sql_source import SqlSource

    readings, kept = [], []
    batches, keep = SqlSource.batches, KeptRows.keep
    monkeypatch.setattr(SqlSource, "batches", lambda self, *a, **k: readings.append(a) or batches(self, *a, **k))
    monkeypatch.setattr(KeptRows, "keep", lambda self, chunks: kept.append(self.folder) or keep(self, chunks))
    changing = ["--source", adult["sqlite"], "--query", "SELECT * FROM adult WHERE abs(random()) % 10 > 0"]
    assert _release(adult, tmp_path, "changing", *changing) == EXIT_OK, capsys.readouterr().err
    assert len(readings) == 1  # the dataset was identified by the rows read; the copy is made of them
    [folder] = kept
    assert (tmp_path / "changing.csv").exists() and not folder.exists()  # the kept rows are gone
