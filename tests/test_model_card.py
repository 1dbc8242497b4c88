"""Model cards as a release (privacy-tests.md row 23): refused on a domain read from the data; a privacy line that follows the facts.

The issue's neighbouring tables: with bounds read from the data the card is refused on both
(it would print 29 or 97); with declared bounds it is written and its bounds do not move. Its
privacy line is built from what the model spent, in the dataset's unit, and from where each
column's domain came from — not a fixed phrase.
"""

from __future__ import annotations

import pytest
from leak_tables import OLDEST, declared, neighbours, read_from_data

from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger
from dpcore.exceptions import DataError
from dpcore.model_card import model_card
from dpcore.tables.design import Design
from dpcore.tables.schema import release_refusal
from dpcore.training import train


def _train(frame, schema, tmp_path, name, **options):
    ledger = BudgetLedger(name, 5.0, path=tmp_path / "ledger.sqlite3")
    return train(Design.from_table(frame, schema), "dp_tree", options.pop("epsilon", 1.0), ledger, holdout=0, **options)


def _privacy(card: str) -> str:
    return next(line for line in card.splitlines() if line.startswith("- **Privacy**"))


def test_the_card_of_a_model_on_bounds_read_from_the_data_is_refused(tmp_path):
    d, d_prime = neighbours()
    for name, frame in (("d", d), ("d_prime", d_prime)):
        schema = read_from_data(frame)
        trained = _train(frame, schema, tmp_path, name)
        with pytest.raises(DataError) as refused:
            model_card(trained, schema)
        assert str(refused.value) == release_refusal(["age", "income"]) and str(OLDEST) not in str(refused.value)


def test_a_clean_model_gets_no_card_that_would_print_bounds_read_since(tmp_path):
    d, _d_prime = neighbours()
    trained = _train(d, declared(), tmp_path, "d")
    later = read_from_data(d)  # the declarations were replaced by a suggestion after training
    with pytest.raises(DataError, match="'age', 'income'"):
        model_card(trained, later)


def test_the_card_on_declared_bounds_is_written_and_its_bounds_do_not_move(tmp_path):
    d, d_prime = neighbours()
    cards = [
        model_card(_train(frame, declared(), tmp_path, name), declared()) for name, frame in (("d", d), ("d_prime", d_prime))
    ]
    bounds = [[line for line in card.splitlines() if line.startswith("- `")] for card in cards]
    assert bounds[0] == bounds[1] == ["- `age` (numeric): [0, 120]", "- `income` (numeric): [0, 5000]"]
    assert all(str(OLDEST) not in card for card in cards)


def test_the_privacy_line_follows_what_was_declared_and_spent(tmp_path):
    d, _d_prime = neighbours()
    estimated = declared(source="estimated privately (ε = 0.05)")
    line = _privacy(model_card(_train(d, estimated, tmp_path, "a", epsilon=0.5), estimated, REPLACE_ONE))
    assert "ε = 0.5 (pure ε-differential privacy" in line and "it counts as ε = 1." in line
    assert "'age' — estimated privately (ε = 0.05); 'income' — declared." in line and "demo seed" not in line
    vouched = declared(source="declared public by the owner")
    line = _privacy(model_card(_train(d, vouched, tmp_path, "b", epsilon=0.25, seed=1), vouched))
    assert "ε = 0.25" in line and "'age' — declared public by the owner" in line and "demo seed" in line
