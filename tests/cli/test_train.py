"""``dpcore train``: fits, charges the dataset's ledger, writes a skops model and its card; same model as the app's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from leak_tables import OLDEST, neighbours, read_from_data

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.model_files import load_model
from dpcore.tables.design import Design
from dpcore.tables.schema import release_refusal

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
SCHEMA = str(SAMPLES / "adult.schema.json")


def _train(tmp_path, source, *extra: str) -> int:
    return main(["train", str(source), "--schema", SCHEMA, "--ledger", str(tmp_path / "ledger.sqlite3"), "-q", *extra])


def test_train_writes_the_model_and_card_and_charges_the_ledger(tmp_path, adult_part, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _train(tmp_path, adult_part, "--model", "dp_boosting", "--epsilon", "0.5", "--epsilon-budget", "2") == EXIT_OK
    out = capsys.readouterr().out
    assert "held-out scores" in out and "for you, not the buyer" in out
    model = load_model(tmp_path / "adult_dp_boosting.skops")
    assert type(model).__name__ == "DPBoostingClassifier"
    card = (tmp_path / "adult_dp_boosting.md").read_text(encoding="utf-8")
    assert "ε = 0.5" in card and "Declared bounds" in card
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()
    ledger = Catalog(tmp_path / "ledger.sqlite3").ledger(dataset)
    assert ledger.spent == pytest.approx(0.5) and ledger.total == pytest.approx(2)


def test_train_refuses_what_the_budget_cannot_pay_and_writes_nothing(tmp_path, adult_part, capsys):
    common = ["--model", "dp_gaussian_nb", "-o", str(tmp_path / "m.skops")]
    assert _train(tmp_path, adult_part, *common, "--epsilon", "0.5", "--epsilon-budget", "0.6") == EXIT_OK
    (tmp_path / "m.skops").unlink()
    assert _train(tmp_path, adult_part, *common, "--epsilon", "0.5") == EXIT_BUDGET
    assert "Nothing was trained or charged" in capsys.readouterr().err
    assert not (tmp_path / "m.skops").exists()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--model", "dp_tree", "--epsilon", "1"], "regression model"),
        (["--model", "dp_boosting", "--epsilon", "1", "--param", "depth=x"], "expected NAME=VALUE"),
        (["--model", "dp_random_forest", "--epsilon", "1", "--param", "n_estimators=0"], "expected a number from"),
        (["--model", "dp_boosting", "--epsilon", "-1"], "greater than 0"),
    ],
)
def test_train_says_what_is_wrong_with_its_arguments(tmp_path, adult_part, capsys, extra, words):
    assert _train(tmp_path, adult_part, *extra) == EXIT_USAGE
    assert words in capsys.readouterr().err
    assert not (tmp_path / "ledger.sqlite3").exists() or not Catalog(tmp_path / "ledger.sqlite3").datasets()


def test_the_command_line_and_the_train_page_give_the_same_model_for_the_same_seed(app, tmp_path, capsys):
    from dpstudio.support.session import STATE_KEY
    from dpstudio.support.training import DEMO_SEED

    assert (
        main(
            [
                "train",
                str(SAMPLES / "adult.csv"),
                "--schema",
                SCHEMA,
                "--model",
                "dp_boosting",
                "--epsilon",
                "0.5",
                "--seed",
                str(DEMO_SEED),
                "--ledger",
                str(tmp_path / "cli.sqlite3"),
                "-o",
                str(tmp_path / "cli.skops"),
                "-q",
            ]
        )
        == EXIT_OK
    )
    from_cli = load_model(tmp_path / "cli.skops")

    at = app("data")
    at.selectbox[0].set_value("Adult census income (sample)").run()
    at.switch_page("pages/train.py").run()
    at.selectbox[0].set_value("dp_boosting_clf").run()
    at.text_input(key="train_epsilon").set_value("0.5").run()
    at.checkbox[0].check().run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    state = at.session_state[STATE_KEY]
    from_app = state.trained.model
    design = Design.from_table(state.dataset.frame, state.dataset.schema)
    assert np.array_equal(from_app.predict_proba(design.X[:500]), from_cli.predict_proba(design.X[:500]))


@pytest.mark.parametrize("model", ["dp_tree", "dp_additive"])  # the additive family picks the schema's regression task
def test_train_with_a_privacy_unit_spends_per_person(tmp_path, capsys, model):
    rng = np.random.default_rng(0)
    visits = tmp_path / "visits.csv"
    n = 600
    import pandas as pd

    pd.DataFrame(
        {"patient": [f"p{i // 3}" for i in range(n)], "age": rng.integers(20, 80, n), "stay": rng.integers(1, 10, n)}
    ).to_csv(visits, index=False)
    schema = tmp_path / "visits.schema.json"
    schema.write_text(
        json.dumps(
            {
                "columns": [
                    {"name": "patient", "role": "identifier", "kind": "categorical"},
                    {"name": "age", "kind": "numeric", "lower": 0, "upper": 110},
                    {"name": "stay", "role": "target", "kind": "numeric", "lower": 0, "upper": 30},
                ]
            }
        ),
        encoding="utf-8",
    )
    common = [
        "train",
        str(visits),
        "--schema",
        str(schema),
        "--model",
        model,
        "--epsilon",
        "1",
        "--ledger",
        str(tmp_path / "ledger.sqlite3"),
        "-o",
        str(tmp_path / "m.skops"),
        "-q",
    ]
    assert main([*common, "--privacy-unit", "patient"]) == EXIT_USAGE
    assert "--max-rows-per-person" in capsys.readouterr().err
    assert main([*common, "--privacy-unit", "patient", "--max-rows-per-person", "2", "--epsilon-budget", "3"]) == EXIT_OK
    assert "per person, counting up to 2 rows each" in capsys.readouterr().out
    assert load_model(tmp_path / "m.skops").epsilon == pytest.approx(0.5)
    card = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert "counting up to 2 rows each" in card and "p1" not in card


def test_release_with_a_privacy_unit_creates_a_budget_that_pays_for_the_person(tmp_path, capsys):
    import pandas as pd

    rng = np.random.default_rng(1)
    visits = tmp_path / "visits.csv"
    pd.DataFrame({"patient": [f"p{i // 2}" for i in range(400)], "smoker": rng.choice(["no", "yes"], 400)}).to_csv(
        visits, index=False
    )
    schema = tmp_path / "visits.schema.json"
    schema.write_text(
        json.dumps(
            {
                "columns": [
                    {"name": "patient", "role": "identifier", "kind": "categorical"},
                    {"name": "smoker", "kind": "categorical", "categories": ["no", "yes"], "may_be_missing": False},
                ]
            }
        ),
        encoding="utf-8",
    )
    assert (
        main(
            [
                "release",
                str(visits),
                "--schema",
                str(schema),
                "-o",
                str(tmp_path / "copy.csv"),
                "--report",
                str(tmp_path / "r.json"),
                "--ledger",
                str(tmp_path / "ledger.sqlite3"),
                "--privacy-unit",
                "patient",
                "--max-rows-per-person",
                "2",
                "-q",
            ]
        )
        == EXIT_OK
    )
    out = capsys.readouterr().out
    assert "per person (up to 2 rows each)" in out
    copy = (tmp_path / "copy.csv").read_text(encoding="utf-8")
    assert "patient" not in copy and "p1" not in copy


def test_train_refuses_bounds_read_from_the_data_in_the_apps_words_before_charging(tmp_path, capsys):
    """privacy-tests.md row 23: a model file and card would carry the data's extremes, so nothing is fitted, charged or written."""
    _d, d_prime = neighbours()
    d_prime.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "people.schema.json").write_text(read_from_data(d_prime).to_json(), encoding="utf-8")
    code = main(
        ["train", str(tmp_path / "people.csv"), "--schema", str(tmp_path / "people.schema.json"), "--model", "dp_tree"]
        + ["--epsilon", "1", "--ledger", str(tmp_path / "ledger.sqlite3"), "-o", str(tmp_path / "m.skops"), "-q"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_DATA and release_refusal(["age", "income"]) in err
    assert "Traceback" not in err and str(OLDEST) not in err
    assert not (tmp_path / "m.skops").exists() and not (tmp_path / "m.md").exists()
    assert Catalog(tmp_path / "ledger.sqlite3").datasets() == []
