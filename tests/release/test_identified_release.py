"""A CSV file's copy made from the read that also identifies its dataset (release_csv with ``dataset``)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from dpcore import release as R
from dpcore.budget.datasets import Catalog
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.release.streaming import DatasetOnRead
from dpcore.tables.csv_reading import file_chunks
from dpcore.tables.schema import ColumnSpec, Schema

CODES = [f"0{i}" for i in range(1, 10)]
MEMBERS = [f"0{i:04d}" for i in range(2000)]


def _awkward(n: int = 3000) -> tuple[pd.DataFrame, Schema]:
    """Columns whose reading differs with and without the release's hints: zero-padded codes and numbers-only
    categories (text to the release, numbers to a plain read), a chunk with a category all missing, dates, a
    number column with one text cell, and an identifier the copy drops."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "id": [f"P{i:05d}" for i in range(n)],
            "code": rng.choice(CODES, n),
            # Most sampled rows tell apart, some repeat: a key as codes, not as numbers.
            "member": rng.choice(MEMBERS, n),
            "grade": rng.choice(["1", "2", "3"], n),
            "smoker": rng.choice(["no", "yes"], n),
            "visit": pd.date_range("2021-01-01", periods=n, freq="5h").strftime("%d/%m/%Y"),
            "score": rng.integers(0, 100, n).astype(object),
        }
    )
    frame.loc[:999, "grade"] = ""  # the first chunk's grades all missing
    frame.loc[2500, "score"] = "unknown"
    schema = Schema(
        [
            ColumnSpec("id", role="identifier", kind="categorical"),
            ColumnSpec("code", kind="categorical", categories=CODES, match_numbers=False),
            ColumnSpec("member", kind="categorical", categories=MEMBERS, match_numbers=False),
            ColumnSpec("grade", kind="categorical", categories=["1", "2", "3"]),
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
            ColumnSpec("visit", role="ignore", kind="categorical"),
            ColumnSpec("score", kind="numeric", lower=0, upper=100),
        ]
    )
    return frame, schema


def _versions(path) -> list[tuple[str, bytes]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT fingerprint, sketch FROM versions ORDER BY id").fetchall()


def _spent(path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT epsilon FROM spends")]


@pytest.mark.parametrize("chunksize", [1000, 4096])
def test_one_read_identifies_and_releases_as_two_reads_did(tmp_path, chunksize):
    """The same version recorded (sketch and fingerprint bit for bit), the same copy and the same charge."""
    frame, schema = _awkward()
    source = tmp_path / "awkward.csv"
    frame.to_csv(source, index=False)
    plan = R.default_plan(schema)

    two_reads = Catalog(tmp_path / "two.sqlite3")
    found = two_reads.open_table(file_chunks(source, chunksize), "awkward", total_epsilon=50.0)
    R.release_csv(
        source, tmp_path / "two.csv", schema, plan, ledger=two_reads.ledger(found.dataset), random_state=4, chunksize=chunksize
    )

    one_read = Catalog(tmp_path / "one.sqlite3")
    counted = []

    def opened(match, n_rows):
        counted.append(n_rows)
        return one_read.ledger(one_read.open_match(match, "awkward", total_epsilon=50.0).dataset)

    result = R.release_csv(
        source,
        tmp_path / "one.csv",
        schema,
        plan,
        dataset=DatasetOnRead(one_read, opened),
        random_state=4,
        chunksize=chunksize,
    )
    assert counted == [len(frame)]
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    assert _versions(tmp_path / "one.sqlite3") == _versions(tmp_path / "two.sqlite3")
    assert _spent(tmp_path / "one.sqlite3") == _spent(tmp_path / "two.sqlite3")
    assert result.epsilon_charged > 0 and not result.reused

    again = R.release_csv(source, tmp_path / "again.csv", schema, plan, dataset=DatasetOnRead(one_read, opened), random_state=4)
    assert again.reused and again.epsilon_charged == 0.0
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert len(_spent(tmp_path / "one.sqlite3")) == 1


def _awkward_file(tmp_path):
    """500 awkward rows written to a CSV file, their schema, and an empty ledger beside them."""
    frame, schema = _awkward(500)
    source = tmp_path / "awkward.csv"
    frame.to_csv(source, index=False)
    return source, schema, Catalog(tmp_path / "ledger.sqlite3")


def test_a_refused_charge_leaves_no_file_and_spends_nothing(tmp_path):
    source, schema, catalog = _awkward_file(tmp_path)

    def opened(match, n_rows):
        return catalog.ledger(catalog.open_match(match, "awkward", total_epsilon=0.5).dataset)

    with pytest.raises(BudgetExceededError):
        R.release_csv(source, tmp_path / "copy.csv", schema, R.default_plan(schema), dataset=DatasetOnRead(catalog, opened))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["awkward.csv", "ledger.sqlite3", "ledger.sqlite3-copies"]
    assert not any((tmp_path / "ledger.sqlite3-copies").iterdir())
    assert _spent(tmp_path / "ledger.sqlite3") == []


def test_a_refusal_before_the_dataset_is_opened_records_nothing(tmp_path):
    """The noise check of the command line refuses after the read: no dataset, no version, no file."""
    source, schema, catalog = _awkward_file(tmp_path)

    def refused(match, n_rows):
        raise DataError("mostly noise")

    with pytest.raises(DataError, match="mostly noise"):
        R.release_csv(source, tmp_path / "copy.csv", schema, R.default_plan(schema), dataset=DatasetOnRead(catalog, refused))
    assert not (tmp_path / "copy.csv").exists()
    assert catalog.datasets() == [] and _versions(tmp_path / "ledger.sqlite3") == []


def test_the_release_command_reads_a_file_once_and_writes_the_in_memory_copy(tmp_path, capsys):
    """The command line's one read gives the in-memory copy (which the Spark copy equals), charged to the dataset."""
    from release_testing import small_frame, small_schema

    from dpcore.budget.accountant import ADD_REMOVE
    from dpcore.cli import EXIT_OK, main
    from dpcore.tables.loading import read_csv_path

    source = tmp_path / "table.csv"
    small_frame(2000).to_csv(source, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(small_schema().to_json())
    common = ["--schema", schema, "--ledger", tmp_path / "ledger.sqlite3", "--seed", 6, "--chunksize", 700, "-q"]
    argv = ["release", source, "-o", tmp_path / "copy.csv", "--report", tmp_path / "copy.json", "--epsilon-budget", 20]
    assert main([str(a) for a in [*argv, *common]]) == EXIT_OK
    frame, _ = read_csv_path(source)
    plan = R.default_plan(small_schema())
    expected = R.release_table(frame, small_schema(), plan, random_state=6, unit=ADD_REMOVE).csv
    assert (tmp_path / "copy.csv").read_bytes() == expected
    dataset = Catalog(tmp_path / "ledger.sqlite3").datasets()
    assert [d.name for d in dataset] == ["table"]
    assert (
        _versions(tmp_path / "ledger.sqlite3")[0][0]
        == Catalog(tmp_path / "other.sqlite3").identify(file_chunks(source)).fingerprint
    )
