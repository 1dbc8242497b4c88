"""``dpcore answer``: a file of queries answered by subsample and aggregate, each answer charged to the ledger."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from leak_tables import neighbours, read_from_data

from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.tables.schema import release_refusal

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
CALIFORNIA_SCHEMA = str(SAMPLES / "california_housing.schema.json")
ADULT_SCHEMA = str(SAMPLES / "adult.schema.json")


@pytest.fixture
def california(tmp_path, california_frame):
    table, queries = tmp_path / "california.csv", tmp_path / "houses.csv"
    california_frame.head(5000).to_csv(table, index=False)
    california_frame.tail(6).to_csv(queries, index=False)  # with its true target, which must not be echoed
    return table, queries


def _answer(tmp_path, table, queries, schema, *extra: str) -> int:
    return main(
        [
            "answer",
            str(table),
            "--schema",
            schema,
            "--queries",
            str(queries),
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "-q",
            *extra,
        ]
    )


def _ledger(tmp_path):
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    [dataset] = catalog.datasets()
    return catalog.ledger(dataset)


def test_answer_writes_one_answer_per_query_and_charges_each(tmp_path, california, capsys):
    table, queries = california
    assert (
        _answer(
            tmp_path, table, queries, CALIFORNIA_SCHEMA, "--epsilon-per-query", "0.5", "--epsilon-budget", "5", "--blocks", "30"
        )
        == EXIT_OK
    )
    out = capsys.readouterr().out
    assert "answered 6 queries at ε = 3" in out and "pure ε-DP" in out
    answers = pd.read_csv(tmp_path / "houses_answers.csv")
    assert len(answers) == 6 and answers["answer"].between(0, 500001).all()  # within the declared bounds
    assert "median_house_value" not in answers.columns
    ledger = _ledger(tmp_path)
    assert ledger.spent == pytest.approx(3.0)
    assert ledger.spends()[0].released == "6 answered queries"


def test_answer_refuses_a_batch_the_budget_cannot_pay_and_writes_nothing(tmp_path, california, capsys):
    table, queries = california
    out = tmp_path / "a.csv"
    assert (
        _answer(
            tmp_path,
            table,
            queries,
            CALIFORNIA_SCHEMA,
            "--epsilon-per-query",
            "0.5",
            "--epsilon-budget",
            "4",
            "--blocks",
            "30",
            "-o",
            str(out),
        )
        == EXIT_OK
    )
    out.unlink()
    assert _answer(tmp_path, table, queries, CALIFORNIA_SCHEMA, "--epsilon-per-query", "0.5", "-o", str(out)) == EXIT_BUDGET
    assert "Nothing was answered or charged" in capsys.readouterr().err
    assert not out.exists() and _ledger(tmp_path).spent == pytest.approx(3.0)


def test_answer_with_laplace_noise_is_labelled_approximate(tmp_path, california, capsys):
    table, queries = california
    assert (
        _answer(
            tmp_path,
            table,
            queries,
            CALIFORNIA_SCHEMA,
            "--epsilon-per-query",
            "0.5",
            "--delta-per-query",
            "1e-7",
            "--epsilon-budget",
            "5",
            "--blocks",
            "30",
        )
        == EXIT_OK
    )
    assert "approximate DP" in capsys.readouterr().out
    assert _ledger(tmp_path).spends()[0].delta == pytest.approx(6e-7)


def test_answer_votes_for_a_category(tmp_path, adult_frame):
    table, queries = tmp_path / "adult.csv", tmp_path / "people.csv"
    adult_frame.head(3000).to_csv(table, index=False)
    adult_frame.tail(5).to_csv(queries, index=False)
    assert (
        _answer(tmp_path, table, queries, ADULT_SCHEMA, "--epsilon-per-query", "1", "--epsilon-budget", "5", "--blocks", "20")
        == EXIT_OK
    )
    answers = pd.read_csv(tmp_path / "people_answers.csv")
    assert len(answers) == 5 and set(answers["answer"]) <= {"<=50K", ">50K"}


def test_answer_names_missing_query_columns_and_bad_options(tmp_path, california, capsys):
    table, queries = california
    pd.read_csv(queries).drop(columns=["median_income"]).to_csv(queries, index=False)
    assert _answer(tmp_path, table, queries, CALIFORNIA_SCHEMA, "--epsilon-per-query", "0.5") == EXIT_DATA
    assert "median_income" in capsys.readouterr().err
    assert _answer(tmp_path, table, queries, CALIFORNIA_SCHEMA, "--epsilon-per-query", "0") == EXIT_USAGE


@pytest.mark.parametrize(
    ("model", "params"),
    [
        ("dp_experts_reg", ["--param", "form=streaming"]),
        ("dp_sa_student_reg", ["--param", "aggregate=mean", "--param", "n_queries=50"]),
    ],
)
def test_train_writes_the_new_models_as_files_a_buyer_can_open(tmp_path, california, model, params, capsys):
    from dpcore.model_files import load_model

    table, _queries = california
    out = tmp_path / "m.skops"
    assert (
        main(
            [
                "train",
                str(table),
                "--schema",
                CALIFORNIA_SCHEMA,
                "--ledger",
                str(tmp_path / "ledger.sqlite3"),
                "-q",
                "--model",
                model,
                "--epsilon",
                "1",
                "-o",
                str(out),
                *params,
            ]
        )
        == EXIT_OK
    )
    opened = load_model(out)
    assert hasattr(opened, "predict") and opened.epsilon_spent_ == 1.0
    card = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert "ε = 1" in card and "APPROXIMATE" not in card
    assert _ledger(tmp_path).spent == pytest.approx(1.0)


def test_answer_refuses_bounds_read_from_the_data_in_the_apps_words_before_charging(tmp_path, capsys):
    """privacy-tests.md row 23: answers written to a file leave the screen, so a domain read from the data is refused."""
    _d, d_prime = neighbours()
    d_prime.to_csv(tmp_path / "people.csv", index=False)
    d_prime[["age"]].head(3).to_csv(tmp_path / "queries.csv", index=False)
    (tmp_path / "people.schema.json").write_text(read_from_data(d_prime).to_json(), encoding="utf-8")
    code = _answer(
        tmp_path,
        tmp_path / "people.csv",
        tmp_path / "queries.csv",
        str(tmp_path / "people.schema.json"),
        "--epsilon-per-query",
        "0.1",
    )
    err = capsys.readouterr().err
    assert code == EXIT_DATA and release_refusal(["age", "income"]) in err and "Traceback" not in err
    assert not (tmp_path / "queries_answers.csv").exists() and Catalog(tmp_path / "ledger.sqlite3").datasets() == []
