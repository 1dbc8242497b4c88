"""``dpcore run RECIPE``: every release again, charged as the commands charge it, refused whole before an overspend."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.recipes import CopyStep, GroupsStep, ModelStep, Recipe, Source
from dpcore.release import default_plan
from dpcore.tables.schema import load_schema

ROWS = 3_000


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    """Adult's first 3,000 rows as a CSV file and as a SQLite table."""
    from conftest import SAMPLE_DATA

    from dpcore.tables.loading import read_csv_path

    folder = tmp_path_factory.mktemp("adult_recipe")
    lines = (SAMPLE_DATA / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "adult.csv").write_text("".join(lines[: ROWS + 1]), encoding="utf-8")
    frame, _info = read_csv_path(folder / "adult.csv")
    engine = sa.create_engine(f"sqlite:///{folder / 'adult.sqlite'}")
    frame.to_sql("adult", engine, index=False)
    engine.dispose()
    return {
        "csv": folder / "adult.csv",
        "sqlite": f"sqlite:///{folder / 'adult.sqlite'}",
        "schema": SAMPLE_DATA / "adult.schema.json",
    }


def _recipe(adult, total: float = 30.0, **changes) -> Recipe:
    schema = load_schema(adult["schema"])
    choices = {
        "name": "adult quarterly",
        "source": Source(file=str(adult["csv"])),
        "schema": schema.to_dict(),
        "total_epsilon": total,
        "models": [ModelStep("dp_boosting", 0.5)],
        "copies": [CopyStep("randomized", plan=default_plan(schema).to_dict(), accept_noise=True)],
        "groups": [GroupsStep(["age", "hours-per-week"], 0.25)],
    }
    return Recipe(**(choices | changes))


def _write(recipe: Recipe, tmp_path):
    path = tmp_path / "adult.recipe.yaml"
    path.write_text(recipe.to_yaml(), encoding="utf-8")
    return str(path)


def _spends(ledger_file):
    catalog = Catalog(ledger_file)
    [dataset] = catalog.datasets()
    return catalog.ledger(dataset)


def test_a_recipe_makes_every_release_and_charges_each_as_its_command_would(adult, tmp_path, capsys):
    recipe = _write(_recipe(adult), tmp_path)
    code = main(
        ["run", recipe, "--ledger", str(tmp_path / "run.sqlite3"), "--output-dir", str(tmp_path / "out"), "--seed", "4", "-q"]
    )
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    assert "[1/3] training dp_boosting" in captured.err and "[3/3] finding groups" in captured.err
    for name in (
        "model1_dp_boosting.skops",
        "model1_dp_boosting.md",
        "copy1_randomized.csv",
        "copy1_randomized.json",
        "groups1.csv",
    ):
        assert (tmp_path / "out" / name).exists()
    # The same releases made one command at a time, on a ledger of their own: the same charges, line for line.
    schema, alone = (
        str(adult["schema"]),
        ["--ledger", str(tmp_path / "alone.sqlite3"), "--seed", "4", "-q", "--epsilon-budget", "30"],
    )
    plan = tmp_path / "plan.json"
    plan.write_text(default_plan(load_schema(adult["schema"])).to_json(), encoding="utf-8")
    assert main(["train", str(adult["csv"]), "--schema", schema, "--model", "dp_boosting", "--epsilon", "0.5", "-o", str(tmp_path / "m.skops"), *alone]) == 0  # fmt: skip
    alone = alone[:-2]
    assert main(["release", str(adult["csv"]), "--schema", schema, "--plan", str(plan), "-o", str(tmp_path / "copy1_randomized.csv"), "--report", str(tmp_path / "r.json"), "--accept-noise", *alone]) == 0  # fmt: skip
    assert main(["cluster", str(adult["csv"]), "--schema", schema, "--columns", "age,hours-per-week", "--epsilon", "0.25", "-o", str(tmp_path / "g.csv"), *alone]) == 0  # fmt: skip
    ran, by_hand = _spends(tmp_path / "run.sqlite3"), _spends(tmp_path / "alone.sqlite3")
    assert [(s.label, s.epsilon, s.mechanism) for s in ran.spends()] == [
        (s.label, s.epsilon, s.mechanism) for s in by_hand.spends()
    ]
    assert (tmp_path / "out" / "copy1_randomized.csv").read_bytes() == (tmp_path / "copy1_randomized.csv").read_bytes()
    history = ran.history()
    [run] = history[history["event"] == "recipe run"]["what"]
    assert run.startswith("recipe: adult quarterly; 3 releases planned")
    assert "recipe 'adult quarterly': 3 releases made" in captured.out


def test_a_recipe_that_would_overspend_is_refused_before_anything_is_spent(adult, tmp_path, capsys):
    recipe = _write(_recipe(adult, total=5.0), tmp_path)
    ledger_file = str(tmp_path / "ledger.sqlite3")
    code = main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_BUDGET
    assert "would spend ε =" in err and "Nothing was made or charged" in err and "--raise-budget" in err
    ledger = _spends(ledger_file)
    assert ledger.spent == 0 and not ledger.spends()
    assert not (tmp_path / "out").exists()
    # The way out it names: a deliberate raise, recorded, then every release is made.
    code = main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "out"), "--raise-budget", "20", "-q"])
    assert code == EXIT_OK, capsys.readouterr().err
    assert len(ledger.spends()) == 3 and ledger.total == 20


def test_a_bad_recipe_gets_a_sentence_and_spends_nothing(adult, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(_recipe(adult).to_yaml().replace("epsilon: 0.25", "epsilon: lots"), encoding="utf-8")
    assert main(["run", str(path), "--ledger", str(tmp_path / "l.sqlite3")]) == EXIT_DATA
    err = capsys.readouterr().err
    assert "'groups[1].epsilon' must be a number above 0" in err and "Traceback" not in err
    assert not (tmp_path / "l.sqlite3").exists() or not Catalog(tmp_path / "l.sqlite3").datasets()


def test_a_setting_a_model_does_not_offer_is_refused_before_the_first_release(adult, tmp_path, capsys):
    recipe = _write(
        _recipe(adult, models=[ModelStep("dp_boosting", 0.5), ModelStep("dp_random_forest", 0.5, params={"depth": 3})]), tmp_path
    )
    assert main(["run", recipe, "--ledger", str(tmp_path / "l.sqlite3"), "--output-dir", str(tmp_path / "o")]) == EXIT_USAGE
    assert "models[2].params" in capsys.readouterr().err
    assert not (tmp_path / "l.sqlite3").exists() or not Catalog(tmp_path / "l.sqlite3").datasets()


def test_a_copy_that_would_be_mostly_noise_is_refused_before_the_model_is_charged(adult, tmp_path, capsys):
    schema = load_schema(adult["schema"])
    noisy = CopyStep("randomized", plan=default_plan(schema, epsilon=0.01).to_dict())
    recipe = _write(_recipe(adult, copies=[noisy]), tmp_path)
    assert main(["run", recipe, "--ledger", str(tmp_path / "l.sqlite3"), "--output-dir", str(tmp_path / "o"), "-q"]) == EXIT_USAGE
    assert "--accept-noise" in capsys.readouterr().err
    assert not (tmp_path / "l.sqlite3").exists() or not Catalog(tmp_path / "l.sqlite3").datasets()


def test_a_recipe_reads_a_changed_database_table_and_charges_each_release_once(adult, tmp_path, capsys):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[connections.census]\nurl = "{adult["sqlite"]}"\n', encoding="utf-8")
    recipe = _write(_recipe(adult, source=Source(connection="census", table="adult"), groups=[]), tmp_path)
    ledger_file = str(tmp_path / "l.sqlite3")
    common = ["--ledger", ledger_file, "--secrets", str(secrets), "-q"]
    assert main(["run", recipe, *common, "--output-dir", str(tmp_path / "q1")]) == EXIT_OK, capsys.readouterr().err
    # Next quarter: a copy of the table with a few rows changed, read through --source with another table.
    quarter = tmp_path / "next.sqlite"
    engine = sa.create_engine(f"sqlite:///{quarter}")
    with sa.create_engine(adult["sqlite"]).connect() as old:
        import pandas as pd

        frame = pd.read_sql_table("adult", old)
    frame.loc[:9, "hours-per-week"] = 41
    frame.to_sql("adult_q2", engine, index=False)
    engine.dispose()
    code = main(
        ["run", recipe, "--source", f"sqlite:///{quarter}", "--table", "adult_q2", *common, "--output-dir", str(tmp_path / "q2")]
    )
    assert code == EXIT_OK, capsys.readouterr().err
    ledger = _spends(ledger_file)  # one dataset: the same people
    labels = [s.label for s in ledger.spends()]
    assert len(labels) == 4 and labels[:2] == labels[2:]  # each release once a quarter: the changed table's copy is new
    assert [s.epsilon for s in ledger.spends()[:2]] == [s.epsilon for s in ledger.spends()[2:]]
    history = ledger.history()
    assert sum(history["event"] == "recipe run") == 2
    assert any("table adult_q2" in str(what) for what in history["what"])


def test_a_group_map_over_columns_without_bounds_is_refused_before_the_model_is_charged(adult, tmp_path, capsys):
    recipe = _write(_recipe(adult, groups=[GroupsStep(["age", "workclass"], 0.25)]), tmp_path)
    assert main(["run", recipe, "--ledger", str(tmp_path / "l.sqlite3"), "--output-dir", str(tmp_path / "o"), "-q"]) == EXIT_USAGE
    assert "groups[1]: These columns cannot be used to find groups: workclass" in capsys.readouterr().err
    assert not (tmp_path / "l.sqlite3").exists() or not Catalog(tmp_path / "l.sqlite3").datasets()


def test_a_release_that_fails_midway_keeps_what_was_made_and_says_where_it_stopped(adult, tmp_path, capsys, monkeypatch):
    from dpcore.cli import clustering
    from dpcore.exceptions import DataError

    def unreachable(_args):
        raise DataError("The database could not be reached.")

    monkeypatch.setattr(clustering, "run_cluster", unreachable)
    recipe = _write(_recipe(adult), tmp_path)
    ledger_file = str(tmp_path / "l.sqlite3")
    assert main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "o"), "-q"]) == EXIT_DATA
    assert "could not be reached" in capsys.readouterr().err
    ledger = _spends(ledger_file)
    assert len(ledger.spends()) == 2  # the model and the copy were made and charged; the map was not
    history = ledger.history()
    [stopped] = history[history["event"] == "recipe run stopped"]["what"]
    assert "stopped at release 3 of 3" in stopped


@pytest.fixture
def tiny(tmp_path):
    """The synthetic-copy tests' tiny table (600 rows, three declared columns): Private-PGM fits it in seconds."""
    import sys
    from pathlib import Path

    pytest.importorskip("mbi")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "synthetic"))
    from synthetic_testing import tiny_schema, tiny_table

    table = tmp_path / "tiny.csv"
    tiny_table(600).to_csv(table, index=False)
    return table, tiny_schema()


def _synthetic_recipe(tiny, total: float, total_delta: float = 1e-5) -> Recipe:
    table, schema = tiny
    return Recipe(
        name="tiny synthetic",
        source=Source(file=str(table)),
        schema=schema.to_dict(),
        total_epsilon=total,
        total_delta=total_delta,
        models=[ModelStep("dp_gaussian_nb", 0.25)],
        copies=[CopyStep("synthetic", epsilon=1.0)],
    )


def test_a_recipes_synthetic_copy_is_made_and_charged_once(tiny, tmp_path, capsys):
    recipe = _write(_synthetic_recipe(tiny, total=1.5), tmp_path)
    ledger_file = str(tmp_path / "l.sqlite3")
    code = main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "out"), "--seed", "3", "-q"])
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    assert "[2/2] making a synthetic copy at ε = 1" in captured.err
    import json

    import pandas as pd

    copy = pd.read_csv(tmp_path / "out" / "copy1_synthetic.csv", dtype=str)
    assert list(copy.columns) == ["smoker", "age", "sick"] and len(copy) > 0
    report = json.loads((tmp_path / "out" / "copy1_synthetic.json").read_text(encoding="utf-8"))
    assert report["kind"] == "synthetic" and report["epsilon"] == 1.0
    assert (tmp_path / "out" / "copy1_synthetic.md").exists()
    ledger = _spends(ledger_file)
    spends = ledger.spends()
    assert len(spends) == 2 and [s.epsilon for s in spends] == [0.25, 1.0]
    assert ledger.spent == pytest.approx(1.25) and ledger.spent_delta == pytest.approx(1e-6)
    # Run again, with ε = 0.25 left: refused whole before the model is trained again, nothing charged.
    code = main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "again"), "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_BUDGET and "synthetic copy: ε = 1" in err and "Nothing was made or charged" in err
    assert len(ledger.spends()) == 2 and ledger.spent == pytest.approx(1.25)
    assert not (tmp_path / "again").exists()


def test_a_recipes_aim_copy_is_made_by_aim_on_its_declared_workload(tiny, tmp_path, capsys):
    from dataclasses import replace

    aim = CopyStep("synthetic", epsilon=1.0, method="aim", workload=[["smoker", "sick"]])
    recipe = _write(replace(_synthetic_recipe(tiny, total=1.5), copies=[aim]), tmp_path)
    code = main(["run", recipe, "--ledger", str(tmp_path / "l.sqlite3"), "--output-dir", str(tmp_path / "out"), "-q"])
    assert code == EXIT_OK, capsys.readouterr().err
    import json

    report = json.loads((tmp_path / "out" / "copy1_synthetic.json").read_text(encoding="utf-8"))
    assert report["synthesizer"] == "aim" and report["selection"]["workload"] == [["smoker", "sick"]]


def test_a_recipes_synthetic_copy_whose_delta_is_not_left_is_refused_before_anything_is_spent(tiny, tmp_path, capsys):
    # The copy states no δ: it spends the command's default (1e-6), more than the 5e-7 this dataset has.
    recipe = _write(_synthetic_recipe(tiny, total=5.0, total_delta=5e-7), tmp_path)
    ledger_file = str(tmp_path / "l.sqlite3")
    code = main(["run", recipe, "--ledger", ledger_file, "--output-dir", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_BUDGET and "δ = 1e-06" in err and "Nothing was made or charged" in err
    ledger = _spends(ledger_file)
    assert ledger.spent == 0 and not ledger.spends()
    assert not (tmp_path / "out").exists()
