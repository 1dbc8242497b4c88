"""Budgets and repeated exports: stored copies (dpcore.release.stored)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from release_testing import adult_table, plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.mechanisms import COIN_EPSILON
from dpcore.release import stored


def test_same_table_same_plan_gives_the_same_copy(tmp_path):
    frame, schema = adult_table()
    frame = frame.head(4000)
    plan = R.default_plan(schema)
    book = BudgetLedger("adult", total_epsilon=30.0, path=tmp_path / "ledger.sqlite3", unit=REPLACE_ONE)
    first = R.release_table(frame, schema, plan, ledger=book)
    assert first.epsilon_charged == pytest.approx(plan.per_record_epsilon) and book.spent == pytest.approx(
        plan.per_record_epsilon
    )
    # The same rows in another order, re-read from a file: the same copy, nothing charged.
    source = tmp_path / "shuffled.csv"
    frame.sample(frac=1.0, random_state=1).to_csv(source, index=False, sep=";")
    again = R.release_csv(source, tmp_path / "again.csv", schema, plan, ledger=book)
    assert again.reused and again.epsilon_charged == 0 and (tmp_path / "again.csv").read_bytes() == first.csv
    assert again.report == first.report and book.spent == pytest.approx(plan.per_record_epsilon)
    # A fresh copy is different and charged again.
    fresh = R.release_table(frame, schema, plan, ledger=book, fresh=True)
    assert not fresh.reused and fresh.csv != first.csv and book.spent == pytest.approx(2 * plan.per_record_epsilon)
    # A third copy does not fit: refused, nothing charged, the stored copy unchanged.
    with pytest.raises(BudgetExceededError):
        R.release_table(frame, schema, plan, ledger=book, fresh=True)
    assert book.spent == pytest.approx(2 * plan.per_record_epsilon)
    assert R.release_table(frame, schema, plan, ledger=book).csv == fresh.csv
    # Another plan is another release, charged on the same dataset budget.
    smaller = R.ReleasePlan([R.ColumnPlan("sex", "coin")])
    R.release_table(frame, schema, smaller, ledger=book)
    assert book.spent == pytest.approx(2 * plan.per_record_epsilon + COIN_EPSILON, abs=1e-8)
    assert {s.relation for s in book.spends()} == {REPLACE_ONE}


def test_overspend_is_refused(tmp_path):
    plan = plan_with(smoker={"mechanism": "coin"}, colour={"mechanism": "k-ary", "epsilon": 2.0})
    assert plan.per_record_epsilon == pytest.approx(2.0 + COIN_EPSILON, abs=1e-8)
    with pytest.raises(BudgetExceededError, match="Or drop or coarsen columns"):
        R.release_table(small_frame(20), small_schema(), plan, ledger=BudgetLedger.in_memory(3.0, unit=REPLACE_ONE))
    book = BudgetLedger("d", total_epsilon=3.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_table(small_frame(20), small_schema(), plan, ledger=book)
    assert book.spent == 0
    source = tmp_path / "in.csv"
    small_frame(20).to_csv(source, index=False)
    small = BudgetLedger("e", total_epsilon=1.0, path=tmp_path / "l.sqlite3", unit=REPLACE_ONE)
    with pytest.raises(BudgetExceededError):
        R.release_csv(source, tmp_path / "out.csv", small_schema(), plan, ledger=small)
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(TypeError, match="BudgetLedger"):
        R.release_table(small_frame(20), small_schema(), plan, ledger=tmp_path / "l.sqlite3")


# --- Parquet files named by their hash ------------------------------------------------------------------


def _release(ledger, **options):
    return R.release_table(
        small_frame(300),
        small_schema(),
        plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0}, score={"mechanism": "laplace", "epsilon": 1.0}),
        ledger=ledger,
        **options,
    )


def _rows(ledger):
    with ledger.connection() as conn:
        return conn.execute("SELECT content, payload FROM releases").fetchall()


@pytest.fixture
def book(tmp_path) -> BudgetLedger:
    return BudgetLedger("d", total_epsilon=5.0, path=tmp_path / "ledger.sqlite3", unit=REPLACE_ONE)


def test_a_copy_is_a_parquet_file_beside_the_ledger_named_by_its_hash(book, tmp_path):
    first = _release(book)
    (file,) = (tmp_path / "ledger.sqlite3-copies").iterdir()
    content = hashlib.sha256(file.read_bytes()).hexdigest()
    assert file.name == f"{content}.parquet" and _rows(book) == [(content, b"")]
    again = _release(book)
    assert again.reused and again.epsilon_charged == 0 and again.csv == first.csv and again.report == first.report
    assert book.spent == pytest.approx(2.0)
    fresh = _release(book, fresh=True)  # charged again; it takes the key over and the old file goes
    assert fresh.csv != first.csv and book.spent == pytest.approx(4.0)
    assert [f.name for f in (tmp_path / "ledger.sqlite3-copies").iterdir()] == [f"{_rows(book)[0][0]}.parquet"]


def test_a_changed_or_missing_copy_is_refused_in_a_sentence(book, tmp_path):
    _release(book)
    (file,) = (tmp_path / "ledger.sqlite3-copies").iterdir()
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))
    with pytest.raises(DataError, match="changed or damaged after it was made"):
        _release(book)
    file.unlink()
    with pytest.raises(DataError, match="missing from the folder"):
        _release(book)
    assert book.spent == pytest.approx(2.0)
    assert not _release(book, fresh=True).reused and book.spent == pytest.approx(4.0)


def test_nothing_is_charged_when_the_copy_cannot_be_written(book, tmp_path, monkeypatch):
    def full_disk(self, table, *args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(stored.pq.ParquetWriter, "write_table", full_disk)
    with pytest.raises(OSError):
        _release(book)
    source = tmp_path / "in.csv"
    small_frame(300).to_csv(source, index=False)
    with pytest.raises(OSError):
        R.release_csv(source, tmp_path / "out.csv", small_schema(), plan_with(smoker={"mechanism": "coin"}), ledger=book)
    monkeypatch.undo()
    assert book.spent == 0 and book.spends() == [] and _rows(book) == []
    assert list((tmp_path / "ledger.sqlite3-copies").iterdir()) == [] and not (tmp_path / "out.csv").exists()


def test_a_refused_charge_leaves_no_copy(book, tmp_path, monkeypatch):
    """The budget check up front passes, but another tab spends while the copy is made: the transaction refuses it."""
    append = stored.CopyWriter.append

    def another_tab_spends_first(self, table):
        BudgetLedger("d", path=book.path).spend("someone else", 4.0, relation=REPLACE_ONE)
        append(self, table)

    monkeypatch.setattr(stored.CopyWriter, "append", another_tab_spends_first)
    with pytest.raises(BudgetExceededError):
        _release(book)
    assert _rows(book) == [] and list((tmp_path / "ledger.sqlite3-copies").iterdir()) == []


def test_an_in_memory_ledger_keeps_its_copies_in_its_rows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    book = BudgetLedger("m", total_epsilon=5.0, path=":memory:", unit=REPLACE_ONE)
    first = _release(book)
    ((content, data),) = _rows(book)
    assert hashlib.sha256(data).hexdigest() == content and data.startswith(b"PAR1")
    assert _release(book).csv == first.csv and list(tmp_path.iterdir()) == []
    with book.connection() as conn:
        conn.execute("UPDATE releases SET payload = ?", (data[:-9] + b"X" + data[-8:],))
    with pytest.raises(DataError, match="changed or damaged"):
        _release(book)


def _blob(table: pa.Table, quoting: str) -> bytes:
    """A copy as the ledgers before Parquet stored it: a JSON header, then length-prefixed zstd Arrow IPC frames."""
    header = json.dumps({"quoting": quoting}).encode()
    parts = [b"DPRC1", struct.pack("<Q", len(header)), header]
    for chunk in (table.slice(0, 100), table.slice(100)):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, chunk.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as stream:
            stream.write_table(chunk)
        frame = sink.getvalue().to_pybytes()
        parts += [struct.pack("<Q", len(frame)), frame]
    return b"".join(parts)


def test_an_older_ledgers_blob_is_moved_into_a_parquet_file(tmp_path):
    # The copy as a ledger of today stores it ...
    today = BudgetLedger("abc", total_epsilon=5.0, path=tmp_path / "today.sqlite3", unit=REPLACE_ONE)
    made = _release(today, random_state=7)
    with today.connection() as conn:
        key, report, content = conn.execute("SELECT key, report, content FROM releases").fetchone()
    parquet = pq.ParquetFile(tmp_path / "today.sqlite3-copies" / f"{content}.parquet")
    quoting = parquet.metadata.metadata[b"dpcore.quoting"].decode()
    # ... and as the first ledger format stored it, with its charge.
    old = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(old)
    conn.executescript("""
        CREATE TABLE budgets (dataset_id TEXT PRIMARY KEY, total TEXT NOT NULL, created TEXT NOT NULL);
        CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT NOT NULL, label TEXT NOT NULL,
                             epsilon TEXT NOT NULL, composition TEXT NOT NULL, created TEXT NOT NULL);
        CREATE TABLE releases (key TEXT PRIMARY KEY, dataset_id TEXT NOT NULL, payload BLOB NOT NULL, report TEXT NOT NULL,
                               created TEXT NOT NULL);
        INSERT INTO budgets VALUES ('abc', '5', '2026-01-01 00:00:00');
        INSERT INTO spends VALUES (1, 'abc', 'randomized-response release', '2', 'sequential', '2026-01-01 00:00:05');
    """)
    conn.execute(
        "INSERT INTO releases VALUES (?, 'abc', ?, ?, '2026-01-01 00:00:05')", (key, _blob(parquet.read(), quoting), report)
    )
    conn.commit()
    conn.close()
    book = BudgetLedger("abc", path=old)
    again = _release(book, random_state=7)
    assert again.reused and again.epsilon_charged == 0 and again.csv == made.csv and book.spent == pytest.approx(2.0)
    ((moved, payload),) = _rows(book)
    assert payload == b"" and (tmp_path / "old.sqlite3-copies" / f"{moved}.parquet").exists()
    assert _release(book, random_state=7).csv == made.csv


def test_a_streamed_copy_is_checked_before_a_row_is_read_when_fresh_and_handed_out_free_when_stored(book, tmp_path, monkeypatch):
    """A fresh copy is refused up front; any other may be a stored copy, handed out free even when nothing is left."""
    from dpcore.release import streaming

    source = tmp_path / "in.csv"
    small_frame(300).to_csv(source, index=False)
    plan = plan_with(smoker={"mechanism": "coin"})
    first = R.release_csv(source, tmp_path / "first.csv", small_schema(), plan, ledger=book, random_state=4)
    book.spend("everything else", book.available(REPLACE_ONE), relation=REPLACE_ONE)
    again = R.release_csv(source, tmp_path / "again.csv", small_schema(), plan, ledger=book, random_state=4)
    assert again.reused and (tmp_path / "again.csv").read_bytes() == (tmp_path / "first.csv").read_bytes()
    spends = len(book.spends())

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read before the budget was checked")

    monkeypatch.setattr(streaming, "_csv_parts", no_reading)
    with pytest.raises(BudgetExceededError, match="Nothing was made or charged"):
        R.release_csv(source, tmp_path / "fresh.csv", small_schema(), plan, ledger=book, fresh=True)
    assert len(book.spends()) == spends and not (tmp_path / "fresh.csv").exists() and first.epsilon_charged > 0
