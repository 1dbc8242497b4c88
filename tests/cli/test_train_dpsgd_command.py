"""``dpcore train --model dp_sgd_logistic --epsilon 1 --delta 1e-5``: an approximate-DP model from the command line."""

from __future__ import annotations

import pytest
from test_train import _train

from dpcore.budget.accountant import BudgetLedger
from dpcore.budget.datasets import Catalog
from dpcore.cli import EXIT_OK, EXIT_USAGE
from dpcore.model_files import load_model


def test_dp_sgd_spends_epsilon_and_delta_and_says_so(tmp_path, adult_part, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _train(
        tmp_path, adult_part, "--model", "dp_sgd_logistic", "--epsilon", "1", "--delta", "1e-5", "--epsilon-budget", "3"
    )
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert "approximate DP: δ = 1e-05 per person" in out
    model = load_model(tmp_path / "adult_dp_sgd_logistic.skops")
    assert type(model).__name__ == "DPSGDClassifier" and model.delta_spent_ == 1e-5
    card = (tmp_path / "adult_dp_sgd_logistic.md").read_text(encoding="utf-8")
    assert "APPROXIMATE DP" in card and ("δ = 0.00001" in card or "δ = 1e-05" in card)
    [dataset] = Catalog(tmp_path / "ledger.sqlite3").datasets()
    ledger = BudgetLedger(dataset.dataset_id, path=tmp_path / "ledger.sqlite3")
    assert (ledger.spent, ledger.spent_delta) == (pytest.approx(1.0), pytest.approx(1e-5))


def test_delta_is_refused_for_a_pure_model_and_out_of_range(tmp_path, adult_part, capsys):
    assert _train(tmp_path, adult_part, "--model", "dp_boosting", "--epsilon", "1", "--delta", "1e-5") == EXIT_USAGE
    assert "pure ε-DP and spends no δ" in capsys.readouterr().err
    assert _train(tmp_path, adult_part, "--model", "dp_sgd_logistic", "--epsilon", "1", "--delta", "2") == EXIT_USAGE
    assert "between 0 and 1" in capsys.readouterr().err


def test_a_second_model_that_needs_more_delta_than_is_left_is_refused(tmp_path, adult_part, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ("--model", "dp_sgd_logistic", "--epsilon", "0.5", "--epsilon-budget", "3")
    assert _train(tmp_path, adult_part, *args) == EXIT_OK
    capsys.readouterr()
    assert _train(tmp_path, adult_part, *args, "-o", "second.skops") != EXIT_OK
    assert "δ budget" in capsys.readouterr().err
    assert not (tmp_path / "second.skops").exists()
