"""``dpcore synthesize``: writes the synthetic copy and its report, charges the ledger, refuses what it cannot pay."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "synthetic"))
from synthetic_testing import tiny_schema, tiny_table  # noqa: E402

from dpcore.budget.datasets import Catalog  # noqa: E402
from dpcore.cli import EXIT_BUDGET, EXIT_OK, EXIT_USAGE, main  # noqa: E402

pytest.importorskip("mbi")


@pytest.fixture
def tiny_files(tmp_path):
    table, schema = tmp_path / "tiny.csv", tmp_path / "tiny.schema.json"
    tiny_table(600).to_csv(table, index=False)
    schema.write_text(tiny_schema().to_json(), encoding="utf-8")
    return table, schema


def _synthesize(tmp_path, table, schema, *extra: str) -> int:
    return main(
        [
            "synthesize",
            str(table),
            "--schema",
            str(schema),
            "--ledger",
            str(tmp_path / "ledger.sqlite3"),
            "-o",
            str(tmp_path / "copy.csv"),
            "--report",
            str(tmp_path / "copy.json"),
            *extra,
        ]
    )


def test_synthesize_writes_the_copy_and_report_and_charges_the_ledger(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    code = _synthesize(
        tmp_path,
        table,
        schema,
        "--epsilon",
        "1",
        "--epsilon-budget",
        "1.5",
        "--markdown",
        str(tmp_path / "copy.md"),
        "--seed",
        "3",
    )
    assert code == EXIT_OK
    captured = capsys.readouterr()
    assert "wrote the synthetic copy" in captured.out and "Fitting the model" in captured.err
    copy = pd.read_csv(tmp_path / "copy.csv", dtype=str)
    assert list(copy.columns) == ["smoker", "age", "sick"]
    report = json.loads((tmp_path / "copy.json").read_text(encoding="utf-8"))
    assert report["kind"] == "synthetic" and report["seeded"] and report["epsilon"] == 1.0
    assert "What you can trust" in (tmp_path / "copy.md").read_text(encoding="utf-8")
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()
    ledger = Catalog(tmp_path / "ledger.sqlite3").ledger(dataset)
    assert ledger.spent == pytest.approx(1.0) and ledger.spent_delta == pytest.approx(1e-6)
    assert _synthesize(tmp_path, table, schema, "--epsilon", "1", "-q") == EXIT_BUDGET
    assert "Nothing was measured or charged" in capsys.readouterr().err
    assert ledger.spent == pytest.approx(1.0)


def test_synthesize_with_aim_writes_an_aim_copy_says_its_rounds_and_charges_the_same(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    code = _synthesize(tmp_path, table, schema, "--epsilon", "1", "--method", "aim", "--seed", "3")
    assert code == EXIT_OK
    assert "Round 1:" in capsys.readouterr().err
    report = json.loads((tmp_path / "copy.json").read_text(encoding="utf-8"))
    assert report["method"].startswith("AIM") and report["epsilon"] == 1.0
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()
    assert Catalog(tmp_path / "ledger.sqlite3").ledger(dataset).spent == pytest.approx(1.0)


def test_synthesize_with_aim_adapts_to_a_declared_workload_and_mst_refuses_one(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    code = _synthesize(tmp_path, table, schema, "--epsilon", "1", "--method", "aim", "--workload", "smoker, sick", "--seed", "3")
    assert code == EXIT_OK
    report = json.loads((tmp_path / "copy.json").read_text(encoding="utf-8"))
    assert report["selection"]["workload"] == [["smoker", "sick"]]
    capsys.readouterr()
    assert _synthesize(tmp_path, table, schema, "--epsilon", "1", "--workload", "smoker,sick") == EXIT_USAGE
    assert "--method aim" in capsys.readouterr().err


def test_synthesize_with_aim_refuses_laplace_noise_and_names_the_way_out(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    assert _synthesize(tmp_path, table, schema, "--epsilon", "1", "--method", "aim", "--noise", "laplace") == EXIT_USAGE
    assert "--method mst" in capsys.readouterr().err


def test_synthesize_rejects_a_delta_with_laplace_noise(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    assert _synthesize(tmp_path, table, schema, "--epsilon", "1", "--noise", "laplace", "--delta", "1e-6") == EXIT_USAGE
    assert "Laplace" in capsys.readouterr().err


def test_the_buyer_reads_shares_with_intervals_from_a_synthetic_copy(tmp_path, tiny_files, capsys):
    table, schema = tiny_files
    assert _synthesize(tmp_path, table, schema, "--epsilon", "1", "--epsilon-budget", "1.5", "--seed", "3", "-q") == EXIT_OK
    capsys.readouterr()
    copy, report = str(tmp_path / "copy.csv"), str(tmp_path / "copy.json")
    assert main(["estimate", copy, "--report", report, "--column", "smoker", "--json"]) == EXIT_OK
    [shares] = json.loads(capsys.readouterr().out).values()
    assert sum(row["estimate"] for row in shares) == pytest.approx(1.0)
    assert all(row["ci_lower"] <= row["estimate"] <= row["ci_upper"] for row in shares)
    assert main(["estimate", copy, "--report", report]) == EXIT_OK
    out = capsys.readouterr().out
    assert "smoker  (synthetic)" in out and "sick  (synthetic)" in out and "lower bounds" in out
    assert main(["estimate", copy, "--report", report, "--joint", "smoker", "sick"]) == EXIT_USAGE
    assert "needs none" in capsys.readouterr().err
    assert main(["estimate", copy, "--report", report, "--column", "nope"]) == EXIT_USAGE
