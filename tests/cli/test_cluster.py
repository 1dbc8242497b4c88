"""``dpcore cluster``: finds the group map, charges the dataset's ledger, writes the map (CSV or JSON) and its card."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from leak_tables import OLDEST, neighbours, read_from_data

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_OK, EXIT_USAGE, build_parser, main
from dpcore.tables.schema import release_refusal

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
SCHEMA = str(SAMPLES / "california_housing.schema.json")
CSV = str(SAMPLES / "california_housing.csv")


def _cluster(tmp_path, *extra: str, source: str = CSV) -> int:
    return main(["cluster", source, "--schema", SCHEMA, "--ledger", str(tmp_path / "ledger.sqlite3"), "-q", *extra])


def _ledger(tmp_path):
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    [dataset] = catalog.datasets()
    return catalog.ledger(dataset)


def test_cluster_writes_the_map_as_csv_with_its_card_and_charges_the_ledger(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        _cluster(tmp_path, "--columns", "longitude,latitude", "--epsilon", "0.5", "--resolution", "24", "--epsilon-budget", "2")
        == EXIT_OK
    )
    out = capsys.readouterr().out
    assert "group(s) in a 24 × 24 grid at ε = 0.5" in out and "1.5 of ε = 2 left" in out
    table = pd.read_csv(tmp_path / "california_housing_groups.csv")
    assert len(table) == 24 * 24
    assert list(table.columns) == [
        "longitude_lower",
        "longitude_upper",
        "latitude_lower",
        "latitude_upper",
        "noisy_count",
        "cluster",
    ]
    assert table["longitude_lower"].min() == -124.5 and table["latitude_upper"].max() == 42.0  # the declared bounds
    assert (table["cluster"] >= 0).any() and table["cluster"].min() == -1
    card = (tmp_path / "california_housing_groups.md").read_text(encoding="utf-8")
    assert "ε = 0.5" in card and "24 × 24" in card and "Declared bounds" in card
    ledger = _ledger(tmp_path)
    assert ledger.spent == pytest.approx(0.5) and ledger.spends()[-1].released == "a group map"


def test_cluster_writes_json_when_asked_and_chooses_the_resolution_privately(tmp_path):
    target = tmp_path / "map.json"
    assert (
        _cluster(
            tmp_path,
            "--columns",
            "longitude,latitude,median_income",
            "--epsilon",
            "1",
            "-o",
            str(target),
            "--card",
            str(tmp_path / "card.md"),
            "--count-noise",
            "laplace",
            "--neighbours",
            "faces",
        )
        == EXIT_OK
    )
    document = json.loads(target.read_text(encoding="utf-8"))
    assert [c["name"] for c in document["columns"]] == ["longitude", "latitude", "median_income"]
    assert document["resolution"].startswith("chosen from a noisy row count")
    side = document["columns"][0]["cells"]
    assert len(document["cells"]["noisy_count"]) == side**3 and document["neighbours"] == "faces"
    assert "median_income_upper" in document["cells"]


def test_cluster_refuses_what_the_budget_cannot_pay_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "g.csv"
    common = ["--columns", "longitude,latitude", "-o", str(target)]
    assert _cluster(tmp_path, *common, "--epsilon", "0.5", "--epsilon-budget", "0.6") == EXIT_OK
    target.unlink()
    assert _cluster(tmp_path, *common, "--epsilon", "0.5") == EXIT_BUDGET
    assert "Nothing was computed or charged" in capsys.readouterr().err
    assert not target.exists() and _ledger(tmp_path).spent == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("extra", "code", "words"),
    [
        (["--columns", "longitude", "--epsilon", "1"], EXIT_USAGE, "Choose 2 to 4"),
        (["--columns", "longitude,nowhere", "--epsilon", "1"], EXIT_USAGE, "declares no column 'nowhere'"),
        (
            ["--columns", "longitude,ocean_proximity", "--epsilon", "1"],
            EXIT_DATA,
            "cannot be used to find groups: ocean_proximity",
        ),
        (["--columns", "longitude,latitude,median_income", "--epsilon", "1", "--resolution", "1000"], EXIT_USAGE, "coarser"),
        (["--columns", "longitude,latitude", "--epsilon", "0"], EXIT_USAGE, "greater than 0"),
        (["--columns", "longitude,latitude", "--epsilon", "1", "--neighbours", "diagonal"], EXIT_USAGE, "invalid choice"),
    ],
)
def test_cluster_says_what_is_wrong_in_one_line_and_charges_nothing(tmp_path, capsys, extra, code, words):
    assert _cluster(tmp_path, *extra) == code
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert (
        not (tmp_path / "ledger.sqlite3").exists()
        or not Catalog(tmp_path / "ledger.sqlite3").datasets()
        or _ledger(tmp_path).spent == 0
    )


def test_cluster_bounds_a_person_and_charges_per_person(tmp_path, capsys):
    schema = json.loads(Path(SCHEMA).read_text(encoding="utf-8"))
    schema["columns"].append({"name": "household", "role": "identifier", "kind": "categorical"})
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema), encoding="utf-8")
    frame = pd.read_csv(CSV).head(3000)
    frame["household"] = [f"h{i // 3}" for i in range(len(frame))]
    source = tmp_path / "people.csv"
    frame.to_csv(source, index=False)
    code = main(
        [
            "cluster",
            str(source),
            "--schema",
            str(schema_path),
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "-q",
            "--columns",
            "longitude,latitude",
            "--epsilon",
            "1",
            "--resolution",
            "16",
            "--privacy-unit",
            "household",
            "--max-rows-per-person",
            "2",
            "-o",
            str(tmp_path / "g.json"),
        ]
    )
    assert code == EXIT_OK
    assert "per person, counting up to 2 rows each" in capsys.readouterr().out
    document = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert "at most 2 rows of a person" in document["privacy"] and "0.5 per row" in document["privacy"]
    assert "household" not in json.dumps(document["cells"]) and _ledger(tmp_path).spent == pytest.approx(1.0)


def test_cluster_is_listed_in_the_help():
    parser = build_parser()
    assert "cluster" in parser.format_help()
    assert "--columns" in parser._subparsers._group_actions[0].choices["cluster"].format_help()


def test_cluster_refuses_bounds_read_from_the_data_in_the_apps_words_before_charging(tmp_path, capsys):
    """privacy-tests.md row 23: the map and its card would carry the data's extremes, so nothing is found, charged or written."""
    _d, d_prime = neighbours()
    d_prime.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "people.schema.json").write_text(read_from_data(d_prime, target=None).to_json(), encoding="utf-8")
    code = main(
        ["cluster", str(tmp_path / "people.csv"), "--schema", str(tmp_path / "people.schema.json"), "--columns", "age,income"]
        + ["--epsilon", "1", "--ledger", str(tmp_path / "ledger.sqlite3"), "-o", str(tmp_path / "map.csv"), "-q"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_DATA and release_refusal(["age", "income"]) in err
    assert "Traceback" not in err and str(OLDEST) not in err
    assert not (tmp_path / "map.csv").exists() and not (tmp_path / "map.md").exists()
    assert Catalog(tmp_path / "ledger.sqlite3").datasets() == []
