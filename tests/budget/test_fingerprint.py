"""The first ledger format's table fingerprint: its values must never change (old budgets are found by it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpcore.budget.fingerprint import Fingerprint, cell_hashes
from dpcore.tables.csv_reading import file_chunks
from dpcore.tables.loading import read_csv_path

ADULT = Path(__file__).resolve().parents[2] / "sample_data" / "adult.csv"


def _digest(*frames) -> str:
    fingerprint = Fingerprint(frames[0].columns)
    for frame in frames:
        fingerprint.add(frame)
    return fingerprint.hexdigest()


def test_the_fingerprint_of_a_table_is_what_the_first_format_wrote():
    assert _digest(pd.DataFrame({"x": [1, 2.5, None], "y": ["a", " 3", None]})) == "c86133139ff31b0130a6bb97ea75dde6"


def test_row_order_chunks_and_parsing_do_not_change_it():
    whole, _ = read_csv_path(ADULT)
    streamed = list(file_chunks(ADULT, chunksize=5000)())  # text columns as read by the stream, numbers as numbers
    assert _digest(whole) == _digest(*streamed) == _digest(whole.sample(frac=1.0, random_state=0))


def test_numbers_and_number_like_text_hash_alike_and_missing_values_alike():
    hashes = cell_hashes(pd.Series(["39", "39.0", None, "x"], dtype=object))
    assert hashes[0] == hashes[1] == cell_hashes(pd.Series([39]))[0]
    assert hashes[2] == cell_hashes(pd.Series([float("nan")]))[0] and hashes[3] != hashes[0]
