"""Adult read from a PostgreSQL table gives the CSV's and the DuckDB file's dataset, model and seeded copy (issue 31).

A PostgreSQL table has no row order of its own (a heap may be read from any page), while a seeded
copy draws each row's noise in the order the rows come. The table therefore keeps each row's line
number in the CSV file as ``line``, its primary key (``postgres_support.load_adult``): a table is
read in the order of a one-column whole-number primary key, and a query such as
``SELECT <the CSV's columns> FROM adult ORDER BY line`` in its own order. The dataset's identity
does not depend on the order, so the table read whole, line numbers and all, is recognised as the
same people too.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
from postgres_support import load_adult
from same_model import fitted_state

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_OK, main
from dpcore.model_files import load_model
from dpcore.tables.csv_reading import file_chunks
from dpcore.tables.design import Design
from dpcore.tables.schema import load_schema
from dpcore.tables.sql_source import open_source

ROWS = 10_000


@pytest.fixture(scope="module")
def adult(tmp_path_factory, postgres_server):
    """Adult's first 10,000 rows as a CSV file, a DuckDB file and a PostgreSQL table (keyed by their line numbers)."""
    folder = tmp_path_factory.mktemp("adult_postgres")
    tables = load_adult(postgres_server, folder, ROWS)
    with duckdb.connect(str(folder / "adult.duckdb")) as connection:
        connection.register("frame", tables["frame"])
        connection.execute("CREATE TABLE adult AS SELECT * FROM frame")
    return {**tables, "duckdb": f"duckdb:///{folder / 'adult.duckdb'}"}


def test_a_postgresql_table_is_the_csvs_dataset_with_one_fingerprint(adult, tmp_path):
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    from_csv = catalog.open_table(file_chunks(adult["csv"]), "adult")
    ordered = open_source(adult["postgres"], query=adult["ordered"])
    from_query = catalog.open_table(ordered.chunks(3_000), ordered.label)
    assert from_csv.created and not from_query.created
    assert from_query.dataset == from_csv.dataset
    fingerprint = catalog.identify(file_chunks(adult["csv"])).fingerprint
    assert catalog.identify(ordered.chunks()).fingerprint == fingerprint
    # The table as it is stored, its line numbers included: the same people, whatever the order.
    whole = open_source(adult["postgres"], table=adult["table"])
    assert catalog.open_table(whole.chunks(4_000), whole.label).dataset == from_csv.dataset


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
            "50",
            "--fresh",
            "-q",
        ]
    )


def test_postgresql_duckdb_and_the_csv_give_one_seeded_copy_charged_to_one_budget(adult, tmp_path, capsys):
    assert _release(adult, tmp_path, "from_csv", str(adult["csv"])) == EXIT_OK
    postgres = ["--source", adult["postgres"], "--query", adult["ordered"], "--chunksize", "3000"]
    assert _release(adult, tmp_path, "from_postgres", *postgres) == EXIT_OK, capsys.readouterr().err
    assert _release(adult, tmp_path, "from_duckdb", "--source", adult["duckdb"], "--table", "adult") == EXIT_OK
    copy = (tmp_path / "from_csv.csv").read_bytes()
    assert (tmp_path / "from_postgres.csv").read_bytes() == copy == (tmp_path / "from_duckdb.csv").read_bytes()
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    [dataset] = catalog.datasets()  # one dataset, one budget: three fresh copies charged to it
    history = catalog.ledger(dataset).history()
    assert catalog.ledger(dataset).spent == pytest.approx(3 * 14.2972, abs=1e-3)
    assert any(adult["ordered"] in str(what) for what in history["what"])


def test_postgresql_duckdb_and_the_csv_train_one_model_for_a_seed(adult, tmp_path):
    common = ["--schema", adult["schema"], "--model", "dp_boosting", "--epsilon", "0.5", "--seed", "3", "-q"]
    sources = {
        "csv": [str(adult["csv"])],
        "postgres": ["--source", adult["postgres"], "--query", adult["ordered"]],
        "duckdb": ["--source", adult["duckdb"], "--table", "adult"],
    }
    for name, table in sources.items():
        arguments = [
            "train",
            *table,
            *common,
            "--ledger",
            str(tmp_path / f"{name}.sqlite3"),
            "-o",
            str(tmp_path / f"{name}.skops"),
        ]
        assert main(arguments) == EXIT_OK
    models = {name: load_model(tmp_path / f"{name}.skops") for name in sources}
    assert fitted_state(models["postgres"]) == fitted_state(models["csv"]) == fitted_state(models["duckdb"])
    design = Design.from_table(adult["frame"].head(500), load_schema(adult["schema"]))
    assert np.array_equal(models["postgres"].predict_proba(design.X), models["csv"].predict_proba(design.X))


def test_a_recipe_reruns_from_postgresql_onto_a_ledger_there_with_the_csvs_seeded_copy(adult, postgres_server, tmp_path, capsys):
    from dpcore.recipes import CopyStep, ModelStep, Recipe, Source
    from dpcore.release import default_plan

    schema = load_schema(adult["schema"])
    recipe = Recipe(
        name="adult on the team server",
        source=Source(connection=adult["postgres"], query=adult["ordered"]),
        schema=schema.to_dict(),
        total_epsilon=40.0,
        models=[ModelStep("dp_boosting", 0.5)],
        copies=[CopyStep("randomized", plan=default_plan(schema).to_dict(), accept_noise=True)],
    )
    (tmp_path / "team.recipe.yaml").write_text(recipe.to_yaml(), encoding="utf-8")
    ledger = postgres_server.fresh_ledger()
    run = [
        "run",
        str(tmp_path / "team.recipe.yaml"),
        "--ledger",
        ledger,
        "--output-dir",
        str(tmp_path / "out"),
        "--seed",
        "7",
        "-q",
    ]
    assert main(run) == EXIT_OK, capsys.readouterr().err
    assert _release(adult, tmp_path, "from_csv", str(adult["csv"])) == EXIT_OK
    assert (tmp_path / "out" / "copy1_randomized.csv").read_bytes() == (tmp_path / "from_csv.csv").read_bytes()
    catalog = Catalog(ledger)
    [dataset] = catalog.datasets()
    books = catalog.ledger(dataset)
    assert [s.mechanism for s in books.spends()] == ["DPBoostingClassifier", "randomized response per value + noisy row count"]
    assert any(str(what).startswith("recipe: adult on the team server") for what in books.history()["what"])
