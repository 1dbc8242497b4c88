"""Model files as a release (privacy-tests.md row 23): a model fitted on a domain read from the data is never written.

The issue's neighbouring tables: with bounds read from the data, training still works for the
owner's screen but the model file is refused on both tables (it would carry the data's exact
minimum and maximum, 29 or 97); with declared bounds the file is written and opens again.
"""

from __future__ import annotations

import pytest
from leak_tables import OLDEST, declared, neighbours, read_from_data

from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import DataError
from dpcore.model_files import load_model, model_bytes, save_model
from dpcore.tables.design import Design
from dpcore.tables.schema import release_refusal
from dpcore.training import train


def _train(frame, schema, tmp_path, name):
    ledger = BudgetLedger(name, 5.0, path=tmp_path / "ledger.sqlite3")
    return train(Design.from_table(frame, schema), "dp_tree", 1.0, ledger, holdout=0), ledger


def test_a_model_on_bounds_read_from_the_data_trains_for_the_owner_but_its_file_is_refused(tmp_path):
    d, d_prime = neighbours()
    for name, frame in (("d", d), ("d_prime", d_prime)):
        trained, ledger = _train(frame, read_from_data(frame), tmp_path, name)
        assert trained.read_from_data == ["age", "income"] and ledger.spent == 1.0
        assert trained.model.predict(Design.from_table(frame, read_from_data(frame)).X).shape == (len(frame),)
        with pytest.raises(DataError) as refused:
            model_bytes(trained.model, read_from_data=trained.read_from_data)
        assert str(refused.value) == release_refusal(["age", "income"]) and str(OLDEST) not in str(refused.value)
        with pytest.raises(DataError, match="Cannot leave this screen"):
            save_model(trained.model, tmp_path / name, read_from_data=trained.read_from_data)
        assert not (tmp_path / f"{name}.skops").exists()


def test_declaring_after_training_does_not_release_a_model_fitted_on_data_read_bounds(tmp_path):
    d, _d_prime = neighbours()
    schema = read_from_data(d)
    trained, _ledger = _train(d, schema, tmp_path, "d")
    for spec in schema.columns:
        spec.bounds_from_data = False  # the owner vouches afterwards: the fitted model still holds what was read
    assert trained.read_from_data == ["age", "income"]
    with pytest.raises(DataError, match="'age', 'income'"):
        model_bytes(trained.model, read_from_data=trained.read_from_data)


def test_a_model_on_declared_bounds_is_written_and_opens_again(tmp_path):
    d, d_prime = neighbours()
    for name, frame in (("d", d), ("d_prime", d_prime)):
        trained, _ledger = _train(frame, declared(), tmp_path, name)
        assert trained.read_from_data == []
        path = save_model(trained.model, tmp_path / name, read_from_data=trained.read_from_data)
        assert type(load_model(path)) is type(trained.model)
