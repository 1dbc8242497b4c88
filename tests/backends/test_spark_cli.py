"""``dpcore fit --engine spark``: a Parquet folder read by Spark, charged once, the model a local fit of the same rows gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from same_model import fitted_state

from dpcore.backends import tables
from dpcore.budget.accountant import BudgetLedger
from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_OK, main
from dpcore.model_files import load_model
from dpcore.tables.design import Design
from dpcore.tables.schema import load_schema
from dpcore.training_rows import train_rows

pytestmark = pytest.mark.spark

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
SCHEMA = str(SAMPLES / "adult.schema.json")


@pytest.fixture
def adult_folder(tmp_path, adult_frame):
    folder = tmp_path / "adult_parts"
    folder.mkdir()
    part = adult_frame.head(3000)
    for i, start in enumerate(range(0, len(part), 1000)):
        part.iloc[start : start + 1000].to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder


def test_fit_on_spark_charges_once_and_gives_the_local_rows_model(spark, tmp_path, adult_folder, capsys):
    ledger_file = tmp_path / "ledger.sqlite3"
    code = main(
        [
            "fit",
            str(adult_folder),
            "--schema",
            SCHEMA,
            "--engine",
            "spark",
            "--model",
            "dp_random_forest",
            "--epsilon",
            "1",
            "--epsilon-budget",
            "3",
            "--seed",
            "5",
            "--ledger",
            str(ledger_file),
            "-o",
            str(tmp_path / "model.skops"),
            "-q",
        ]
    )
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert "held-out scores" in out and "accuracy" in out
    [dataset] = Catalog(ledger_file).datasets()
    assert dataset.name == "adult_parts" and Catalog(ledger_file).ledger(dataset).spent == pytest.approx(1)
    on_spark = load_model(tmp_path / "model.skops")

    schema = load_schema(SCHEMA)
    local = train_rows(
        Design.domain(schema),
        tables.read_rows_local(adult_folder, schema),
        "dp_random_forest",
        1.0,
        BudgetLedger("check", 3.0, path=tmp_path / "other.sqlite3"),
        seed=5,
    )
    assert fitted_state(on_spark) == fitted_state(local.model)
    assert (tmp_path / "model.md").exists()


def test_fit_on_spark_refuses_a_privacy_unit_in_a_sentence(spark, tmp_path, adult_folder, capsys):
    code = main(
        [
            "fit",
            str(adult_folder),
            "--schema",
            SCHEMA,
            "--engine",
            "spark",
            "--model",
            "dp_random_forest",
            "--epsilon",
            "1",
            "--privacy-unit",
            "age",
            "--max-rows-per-person",
            "2",
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "-q",
        ]
    )
    assert code != EXIT_OK
    err = capsys.readouterr().err
    assert "privacy-unit" in err and "Traceback" not in err
    assert not Catalog(tmp_path / "ledger.sqlite3").datasets()
