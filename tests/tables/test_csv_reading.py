"""One CSV reader for the engine: the app's whole-file read and the command line's stream agree.

A cell that one reader takes as missing and the other as text would give the same file two
fingerprints, and so two datasets and two budgets: every marker is checked through both.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dpcore.budget.datasets import Catalog
from dpcore.budget.identity import version_fingerprint
from dpcore.exceptions import DataError
from dpcore.release import default_plan, release_csv, release_table
from dpcore.tables.csv_reading import MISSING_VALUES, file_chunks, read_chunks, sniff_file
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import ColumnSpec, Schema

SCHEMA = Schema(
    [
        ColumnSpec("colour", kind="categorical", categories=["red", "green", "blue"]),
        ColumnSpec("score", kind="numeric", lower=0, upper=10),
        ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
    ]
)
MARKED = [*MISSING_VALUES, *(f"  {m} " for m in MISSING_VALUES if m), '"NA"']


def _file(tmp_path, marker: str):
    rows = ["colour,score,smoker", "red,1.5,no", f"{marker},{marker},yes", "blue,2,no", f"green,7,{marker}"]
    rows += [f"{c},{i % 10},{s}" for i, (c, s) in enumerate(zip(["red", "green", "blue"] * 6, ["no", "yes"] * 9, strict=True))]
    path = tmp_path / "marked.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _streamed(path) -> pd.DataFrame:
    return pd.concat(list(file_chunks(path, chunksize=7)()), ignore_index=True)


@pytest.mark.parametrize("marker", MARKED)
def test_each_marker_is_missing_in_the_app_and_on_the_command_line(tmp_path, marker):
    path = _file(tmp_path, marker)
    app, info = read_csv_path(path)
    cli = _streamed(path)
    assert info["header"] is True and list(app.columns) == list(cli.columns) == SCHEMA.names
    assert app.isna().sum().tolist() == cli.isna().sum().tolist() == [1, 1, 1]
    assert app.isna().equals(cli.isna())
    assert pd.api.types.is_numeric_dtype(app["score"]) and pd.api.types.is_numeric_dtype(cli["score"])
    assert version_fingerprint(app, app.columns) == version_fingerprint(cli, cli.columns)


@pytest.mark.parametrize("marker", ["?", "  NA ", "", "null"])
def test_a_marked_file_spends_one_budget_in_the_app_and_on_the_command_line(tmp_path, marker):
    """Opened in the app and then on the command line: the same dataset, and its stored copy at no cost."""
    path = _file(tmp_path, marker)
    catalog = Catalog(tmp_path / "ledger.sqlite3")
    app, _ = read_csv_path(path)
    opened = catalog.open_table(lambda: [app], "marked")
    again = catalog.open_table(file_chunks(path), "marked")
    assert opened.created and not again.created and again.dataset == opened.dataset
    ledger = catalog.ledger(opened.dataset)
    plan = default_plan(SCHEMA, budget=0.9)
    first = release_table(app, SCHEMA, plan, ledger=ledger)
    spent = ledger.spent
    streamed = release_csv(path, tmp_path / "copy.csv", SCHEMA, plan, ledger=ledger)
    assert streamed.reused and streamed.epsilon_charged == 0 and ledger.spent == spent
    assert (tmp_path / "copy.csv").read_bytes() == first.csv


def test_the_streaming_reader_strips_text_and_reads_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a;b\n 1 ; x \n2;y\n", encoding="latin-1")
    encoding, delimiter = sniff_file(path)
    ((frame, done),) = list(read_chunks(path, encoding, delimiter, 10))
    assert delimiter == ";" and done == path.stat().st_size
    assert frame["a"].tolist() == [1.0, 2.0] and frame["b"].tolist() == ["x", "y"]


def test_unreadable_rows_are_refused_without_quoting_them(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\nSECRET,3,4\n", encoding="utf-8")
    with pytest.raises(DataError, match="different number of fields") as caught:
        _streamed(path)
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize("late", ["", "n/a", " 4 ", "four", "1_000"])
def test_numbers_parsed_directly_mean_what_the_text_meant(tmp_path, monkeypatch, late):
    """A column the release reads as numbers gives the frames the text reader gives, even when a
    cell that is not a plain number turns up pieces and chunks after the first."""
    monkeypatch.setattr("dpcore.tables.csv_reading._PIECE_BYTES", 64)
    rows = [f"{i % 7}.50,x{i % 3}" for i in range(60)] + [f"{late},x1"] + ["3,x2"] * 5
    path = tmp_path / "t.csv"
    path.write_text("score,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    for chunksize in (7, 40, 100):
        direct = [f for f, _ in read_chunks(path, "utf-8", ",", chunksize, numeric={"score"})]
        text = [f for f, _ in read_chunks(path, "utf-8", ",", chunksize)]
        assert len(direct) == len(text)
        for a, b in zip(direct, text, strict=True):
            assert pd.to_numeric(a["score"], errors="coerce").equals(pd.to_numeric(b["score"], errors="coerce"))
            assert a["label"].tolist() == b["label"].tolist()
            assert version_fingerprint(a, ["score", "label"]) == version_fingerprint(b, ["score", "label"])
