"""``dpcore attack``: the three attacks on the command line, owner's eyes only, no ledger touched.

(Named ``test_attack_command`` because ``tests/app/test_attack.py`` holds the page's tests and
pytest cannot collect two test modules with one basename.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcore.cli import EXIT_DATA, EXIT_OK, EXIT_USAGE, main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
SCHEMA = str(SAMPLES / "adult.schema.json")
SENTINEL = "SENTINEL-5521"


@pytest.fixture(autouse=True)
def untouched_ledger(monkeypatch, tmp_path):
    """A ledger path that must stay untouched."""
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))


@pytest.fixture
def adult_part(tmp_path, adult_frame):
    path = tmp_path / "adult.csv"
    adult_frame.head(3000).to_csv(path, index=False)
    return path


def test_membership_prints_the_table_and_sentences_and_writes_the_summaries(tmp_path, adult_part, capsys):
    html, report = tmp_path / "attack.html", tmp_path / "attack.json"
    code = main(
        [
            "attack",
            "membership",
            str(adult_part),
            "--schema",
            SCHEMA,
            "--model",
            "dp_boosting",
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--html",
            str(html),
            "--json",
            str(report),
        ]
    )
    assert code == EXIT_OK
    out, err = capsys.readouterr()
    assert out.startswith("# owner's eyes only") and "LiRA" in out and "The guarantee: at ε = 1" in out
    assert "no privacy budget is charged" in err and "about" in err  # progress with time left
    page = html.read_text(encoding="utf-8")
    assert "Owner's eyes only" in page and "<svg" in page
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["marking"].startswith("Owner's eyes only") and len(data["membership"]["table"]) == 4
    assert not (tmp_path / "ledger.sqlite3").exists()  # nothing was charged, not even a dataset created


def test_reconstruction_attacks_the_chosen_columns_of_a_plan(tmp_path, adult_part, capsys):
    plan = tmp_path / "plan.json"
    assert main(["plan", "--schema", SCHEMA, "-o", str(plan)]) == EXIT_OK
    capsys.readouterr()  # the plan's own description
    code = main(
        [
            "attack",
            "reconstruction",
            str(adult_part),
            "--schema",
            SCHEMA,
            "--plan",
            str(plan),
            "--columns",
            "sex,race",
            "--seed",
            "1",
            "-q",
        ]
    )
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert "sex" in out and "race" in out and "occupation" not in out
    assert "helped no more than ε allows" in out


def test_the_audit_reports_the_model_and_its_control(tmp_path, adult_part, capsys):
    code = main(
        [
            "attack",
            "audit",
            str(adult_part),
            "--schema",
            SCHEMA,
            "--model",
            "dp_gaussian_nb",
            "--runs",
            "20",
            "--rows",
            "30",
            "--control",
            "frozen",
            "--seed",
            "2",
            "-q",
        ]
    )
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert "as built" in out and "broken: noise frozen" in out and "The data prove a privacy loss of at least" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["membership", "--model", "sk_tree"], "not differentially private"),
        (["membership", "--baseline", "dp_boosting"], "needs a non-private model"),
        (["membership", "--model", "dp_tree"], "regression model"),
        (["membership", "--references", "3"], "even number"),
        (["audit", "--control", "fast"], "invalid choice"),
    ],
)
def test_bad_arguments_are_one_line(adult_part, capsys, extra, message):
    kind, *rest = extra
    assert main(["attack", kind, str(adult_part), "--schema", SCHEMA, *rest]) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_no_attack_chosen_is_a_usage_error(capsys):
    assert main(["attack"]) == EXIT_USAGE
    assert "choose membership, reconstruction or audit" in capsys.readouterr().err


def test_bad_data_is_a_sentence_without_its_values(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("age,income\n" + "".join(f"{30 + i % 40},{SENTINEL}\n" for i in range(50)), encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "columns": [
                    {"name": "age", "role": "feature", "kind": "numeric", "lower": 17, "upper": 90},
                    {"name": "income", "role": "target", "kind": "categorical", "categories": ["<=50K", ">50K"]},
                ]
            }
        ),
        encoding="utf-8",
    )
    assert main(["attack", "membership", str(path), "--schema", str(schema), "-q"]) == EXIT_DATA
    err = capsys.readouterr().err
    assert "usable target" in err and SENTINEL not in err and "Traceback" not in err
