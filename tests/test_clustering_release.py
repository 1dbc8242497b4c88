"""The group map as a release (privacy-tests.md row 23): nothing laid over bounds read from the data leaves the screen.

The estimator and the charged fit are tested in ``tests/models/test_clustering.py``; here, the
issue's neighbouring tables — with bounds read from the data the map, its JSON and its card are
refused (the map still fits for the owner's eyes), with declared bounds they are released and
their bounds do not move when one person aged 97 joins; and the privacy line follows the
declarations and the spend.
"""

from __future__ import annotations

import json

import pytest
from leak_tables import OLDEST, declared, neighbours, read_from_data

from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger
from dpcore.clustering import find_groups, group_card, map_csv, map_json, owner_labels
from dpcore.exceptions import DataError
from dpcore.tables.schema import release_refusal

COLUMNS = ["age", "income"]


def _find(frame, schema, tmp_path, name="d", epsilon=1.0, seed=None):
    ledger = BudgetLedger(name, 5.0, path=tmp_path / "ledger.sqlite3")
    return find_groups(frame, schema, COLUMNS, epsilon, ledger, resolution=8, seed=seed), ledger


@pytest.mark.parametrize("release", [map_csv, map_json, group_card], ids=lambda f: f.__name__)
def test_a_map_over_bounds_read_from_the_data_is_refused_on_both_neighbours(tmp_path, release):
    d, d_prime = neighbours()
    for name, frame in (("d", d), ("d_prime", d_prime)):
        schema = read_from_data(frame, target=None)
        found, ledger = _find(frame, schema, tmp_path, name)
        assert found.read_from_data == COLUMNS and ledger.spent == 1.0  # fitted and paid: the owner may look at it
        assert owner_labels(found, frame, schema).shape == (len(frame),)
        with pytest.raises(DataError) as refused:
            release(found)
        assert str(refused.value) == release_refusal(COLUMNS)
        assert str(OLDEST) not in str(refused.value) and "29" not in str(refused.value)  # names columns, never values


def test_a_map_over_declared_bounds_is_released_and_its_bounds_do_not_move(tmp_path):
    d, d_prime = neighbours()
    documents = []
    for name, frame in (("d", d), ("d_prime", d_prime)):
        found, _ledger = _find(frame, declared(target=None), tmp_path, name)
        documents.append(json.loads(map_json(found)))
        assert "age_lower" in map_csv(found).decode() and "[0, 120]" in group_card(found)
    assert documents[0]["columns"] == documents[1]["columns"]
    assert documents[0]["columns"][0] == {"name": "age", "lower": 0.0, "upper": 120.0, "cells": 8}
    assert all(str(OLDEST) not in json.dumps(document["columns"]) for document in documents)


def test_the_maps_privacy_line_follows_what_was_declared_and_spent(tmp_path):
    d, _d_prime = neighbours()
    schema = declared(target=None, source="estimated privately (ε = 0.05)")
    found, _ledger = _find(d, schema, tmp_path, epsilon=0.5)
    privacy = json.loads(map_json(found, REPLACE_ONE))["privacy"]
    assert privacy.startswith("ε = 0.5 (pure ε-differential privacy, add/remove-one neighbours).")
    assert "it counts as ε = 1." in privacy  # converted to the dataset's unit, from what was spent
    assert "'age' — estimated privately (ε = 0.05); 'income' — declared." in privacy
    assert "demo seed" not in privacy
    schema["age"].source = "declared public by the owner"
    seeded, _ledger = _find(d, schema, tmp_path, "seeded", epsilon=0.25, seed=3)
    card = group_card(seeded)
    line = next(line for line in card.splitlines() if line.startswith("- **Privacy**"))
    assert "ε = 0.25" in line and "'age' — declared public by the owner" in line and "demo seed" in line
