"""The release on Spark (dpcore.release.spark): the local copy, byte for byte, whatever Spark retries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from release_testing import plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.backends.tables import read_table_local
from dpcore.budget.accountant import ADD_REMOVE, REPLACE_ONE, BudgetLedger
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.release.estimator import copy_parts
from dpcore.tables.schema import ColumnSpec, Schema

pytestmark = pytest.mark.spark
PLAN = plan_with(
    smoker={"mechanism": "coin"},
    colour={"mechanism": "k-ary", "epsilon": 1.0, "missing": "category"},
    score={"mechanism": "laplace", "epsilon": 1.0},
)


def _parquet_table(folder: Path, n: int = 3000, files: int = 3) -> Path:
    """``n`` rows in ``files`` Parquet files of several row groups (so Spark reads them in several partitions)."""
    frame = small_frame(n)
    frame.loc[[5, 17], "colour"] = [None, "purple"]  # missing and undeclared: a uniform code each
    table = folder / "table"
    table.mkdir()
    size = n // files
    for i in range(files):
        part = frame.iloc[i * size : (i + 1) * size].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), table / f"part-{i}.parquet", row_group_size=250)
    return table


def _joined(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in copy_parts(folder))


def _release(spark, source, out, seed, **options):
    from dpcore.release.spark import release_on_spark

    return release_on_spark(spark, source, out, small_schema(), PLAN, random_state=seed, part_rows=400, **options)


@pytest.mark.parametrize(("unit", "seed"), [(REPLACE_ONE, 1), (ADD_REMOVE, 3), (ADD_REMOVE, 5)])
def test_a_seeded_spark_copy_is_the_local_copy(spark, tmp_path, unit, seed):
    """Replace-one, padded with fillers (seed 3: five more rows) and cut (seed 5: 74 fewer rows)."""
    source = _parquet_table(tmp_path)
    frame, keys = read_table_local(source)
    expected = R.release_table(frame, small_schema(), PLAN, random_state=seed, row_keys=keys, unit=unit)
    result = _release(spark, source, tmp_path / "copy", seed, unit=unit, parquet=True)
    parts = sorted(p.name for p in (tmp_path / "copy").glob("part-*.csv"))
    assert len(parts) > 2
    assert _joined(tmp_path / "copy") == expected.csv
    assert result.report["columns"] == expected.report["columns"] and result.notes == expected.notes
    joined = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "copy").glob("part-*.parquet"))])
    assert joined.num_rows == len(expected.table)
    assert _joined(tmp_path / "copy").count(b"\n") == len(expected.table) + 1


def test_a_csv_table_on_spark_is_the_streamed_local_copy(spark, tmp_path):
    source = tmp_path / "table.csv"
    small_frame(2000).to_csv(source, index=False)
    R.release_csv(source, tmp_path / "local.csv", small_schema(), PLAN, random_state=8, unit=ADD_REMOVE)
    _release(spark, str(source), tmp_path / "copy", 8, unit=ADD_REMOVE)
    assert _joined(tmp_path / "copy") == (tmp_path / "local.csv").read_bytes()


def test_a_retried_task_writes_the_same_copy(spark, tmp_path, monkeypatch):
    # tests/conftest.py's session is local[2,4]: up to four attempts per task, so a failed first attempt is retried.
    assert spark.sparkContext.master == "local[2,4]"
    from dpcore.release import spark_shuffle

    source = _parquet_table(tmp_path)
    _release(spark, source, tmp_path / "first", 4, unit=ADD_REMOVE)
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(spark_shuffle, "_fail_first_attempt", str(marks))  # every writing task dies half-way, once
    _release(spark, source, tmp_path / "retried", 4, unit=ADD_REMOVE)
    assert len(list(marks.iterdir())) >= 2  # several tasks failed and were retried
    assert _joined(tmp_path / "retried") == _joined(tmp_path / "first")
    assert not list((tmp_path / "retried").glob(".*"))  # the failed attempt's temporary file is gone


def test_charged_once_handed_out_again_and_read_by_the_estimator(spark, tmp_path):
    source = _parquet_table(tmp_path)
    book = BudgetLedger("warehouse", total_epsilon=10.0, path=tmp_path / "ledger.sqlite3")
    first = _release(spark, source, tmp_path / "copy", None, ledger=book)
    assert len(book.spends()) == 1 and first.epsilon_charged == pytest.approx(PLAN.per_record_epsilon + R.COUNT_EPSILON)
    again = _release(spark, source, tmp_path / "again", None, ledger=book)
    assert again.reused and again.epsilon_charged == 0 and len(book.spends()) == 1
    assert _joined(tmp_path / "again") == _joined(tmp_path / "copy")
    estimates = R.estimate_release(tmp_path / "copy", first.report)
    whole = R.estimate_release(_joined(tmp_path / "copy"), first.report)
    for header, table in estimates.items():
        assert np.allclose(table["estimate"], whole[header]["estimate"])
    assert len(R.read_release(tmp_path / "copy", first.report)) == len(R.read_release(_joined(tmp_path / "copy")))
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_a_fresh_copy_that_does_not_fit_is_refused_before_spark_reads_a_row(spark, tmp_path, monkeypatch):
    from dpcore.release import spark as spark_release

    def no_reading(*args, **kwargs):
        raise AssertionError("the table was read before the budget was checked")

    monkeypatch.setattr(spark_release, "_source", no_reading)
    book = BudgetLedger.in_memory(PLAN.per_record_epsilon)  # the noisy row count does not fit as well
    with pytest.raises(BudgetExceededError, match="Nothing was made or charged"):
        _release(spark, _parquet_table(tmp_path), tmp_path / "copy", None, ledger=book, fresh=True)
    assert book.spends() == [] and not (tmp_path / "copy").exists()


def test_a_privacy_unit_is_refused_with_a_sentence(spark, tmp_path):
    from dpcore.release.spark import release_on_spark

    schema = Schema([*small_schema().columns], privacy_unit="id", rows_per_person=2)
    with pytest.raises(DataError, match="privacy-unit column"):
        release_on_spark(spark, _parquet_table(tmp_path), tmp_path / "copy", schema, PLAN, random_state=1)
    assert not (tmp_path / "copy").exists()


def test_a_column_missing_from_the_table_is_a_sentence(spark, tmp_path):
    from dpcore.release.spark import release_on_spark

    schema = small_schema(extra=ColumnSpec("extra", kind="categorical", categories=["a", "b"]))
    plan = plan_with(extra={"mechanism": "coin"})
    with pytest.raises(DataError, match="'extra'"):
        release_on_spark(spark, _parquet_table(tmp_path), tmp_path / "copy", schema, plan, random_state=1)


def test_the_release_command_on_spark_writes_the_local_copy(spark, tmp_path, capsys):
    from dpcore.cli import EXIT_OK, main

    source = _parquet_table(tmp_path)
    schema = tmp_path / "schema.json"
    schema.write_text(small_schema().to_json())
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN.to_json())
    common = ["--schema", schema, "--plan", plan, "--ledger", tmp_path / "ledger.sqlite3", "--epsilon-budget", 20, "--seed", 6]
    code = main(
        [
            str(a)
            for a in [
                "release",
                source,
                "--engine",
                "spark",
                "-o",
                tmp_path / "copy",
                "--report",
                tmp_path / "copy.json",
                *common,
            ]
        ]
    )
    assert code == EXIT_OK
    frame, keys = read_table_local(source)
    expected = R.release_table(frame, small_schema(), PLAN, random_state=6, row_keys=keys, unit=ADD_REMOVE).csv
    assert _joined(tmp_path / "copy") == expected
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "copy"), "--report", str(tmp_path / "copy.json")]) == EXIT_OK
    assert "colour" in capsys.readouterr().out


@pytest.mark.parametrize("spark", [None])  # no session: the sentence comes before Spark is started
def test_without_pyspark_the_command_says_so(tmp_path, capsys, monkeypatch, spark):
    import importlib.util

    from dpcore.cli import EXIT_USAGE, main

    source = _parquet_table(tmp_path)
    schema = tmp_path / "schema.json"
    schema.write_text(small_schema().to_json())
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    code = main(
        [
            str(a)
            for a in [
                "release",
                source,
                "--engine",
                "spark",
                "--schema",
                schema,
                "-o",
                tmp_path / "copy",
                "--report",
                tmp_path / "copy.json",
                "--ledger",
                tmp_path / "l.sqlite3",
                "-q",
            ]
        ]
    )
    assert code == EXIT_USAGE
    assert "needs PySpark" in capsys.readouterr().err
    assert not (tmp_path / "copy").exists()


@pytest.mark.parametrize("spark", [None])  # no session: the refusal comes before Spark is started
def test_a_copy_that_is_mostly_noise_is_refused_on_spark_too(tmp_path, capsys, spark):
    from dpcore.cli import EXIT_USAGE, main

    source = _parquet_table(tmp_path)
    schema = tmp_path / "schema.json"
    schema.write_text(small_schema().to_json())
    plan = tmp_path / "plan.json"
    plan.write_text(
        plan_with(colour={"mechanism": "k-ary", "epsilon": 0.01}, score={"mechanism": "laplace", "epsilon": 0.01}).to_json()
    )
    code = main(
        [
            str(a)
            for a in [
                "release",
                source,
                "--engine",
                "spark",
                "--schema",
                schema,
                "--plan",
                plan,
                "-o",
                tmp_path / "copy",
                "--report",
                tmp_path / "copy.json",
                "--ledger",
                tmp_path / "l.sqlite3",
                "-q",
            ]
        ]
    )
    assert code == EXIT_USAGE
    assert "--accept-noise" in capsys.readouterr().err and not (tmp_path / "copy").exists()


def test_columns_kept_unchanged_are_written_as_locally(spark, tmp_path):
    """A public column is copied as it is: numbers (with a gap) and text, spelled as the local writer spells them."""
    frame = small_frame(600).assign(
        year=np.where(np.arange(600) % 7 == 0, np.nan, 2000.5 + np.arange(600) % 3),
        town=np.where(np.arange(600) % 5 == 0, "=cmd", "Hà Nội"),
    )
    (tmp_path / "table").mkdir()
    for i in range(2):
        part = frame.iloc[i * 300 : (i + 1) * 300].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), tmp_path / "table" / f"p{i}.parquet", row_group_size=100)
    schema = small_schema(
        year=ColumnSpec("year", kind="numeric", lower=1900, upper=2100, public=True),
        town=ColumnSpec("town", kind="categorical", categories=["Hà Nội"], public=True),
    )
    plan = plan_with(year={"mechanism": "keep"}, town={"mechanism": "keep"}, colour={"mechanism": "k-ary", "epsilon": 1.0})
    whole, keys = read_table_local(tmp_path / "table")
    expected = R.release_table(whole, schema, plan, random_state=2, row_keys=keys, unit=REPLACE_ONE)
    from dpcore.release.spark import release_on_spark

    release_on_spark(spark, tmp_path / "table", tmp_path / "copy", schema, plan, random_state=2, unit=REPLACE_ONE, part_rows=100)
    assert _joined(tmp_path / "copy") == expected.csv


def test_a_dataframe_is_released_with_its_rows_keyed_by_position(spark, tmp_path):
    source = _parquet_table(tmp_path, n=900, files=1)
    frame, keys = read_table_local(source)
    expected = R.release_table(frame, small_schema(), PLAN, random_state=9, unit=REPLACE_ONE)
    assert np.array_equal(keys, np.arange(900))  # one file: its row keys are the positions
    _release(spark, spark.read.parquet(str(source)), tmp_path / "copy", 9, unit=REPLACE_ONE)
    assert _joined(tmp_path / "copy") == expected.csv


def test_a_cut_keeps_on_spark_the_rows_it_keeps_locally(spark, tmp_path):
    """The census, the boundary cell's rows and the driver's last pair keep exactly the rows of the smallest cut words."""
    from dpcore.release import padding, randomness
    from dpcore.release import spark as spark_release

    source = _parquet_table(tmp_path, n=60, files=2)
    frame, keys = read_table_local(source)
    epsilon = 0.05
    seed = next(s for s in range(100) if 0 < R.noisy_row_count(60, epsilon, randomness.entropy(s)[0]) < 55)
    limit = R.noisy_row_count(60, epsilon, randomness.entropy(seed)[0])
    draws = randomness.Draws.of(randomness.entropy(seed)[0])
    table = spark_release._source(spark, source, ["smoker", "colour", "score"])
    n, _version, census = spark_release._census(table, draws, None, True)
    assert n == 60
    last = padding.last_kept(census, limit, lambda cell: spark_release._cell_rows(table, draws, cell))
    on_spark = padding.cut_mask(padding.cut_words(draws.key, keys), keys, last)
    assert np.array_equal(on_spark, padding.smallest(padding.cut_words(draws.key, keys), keys, limit))
    expected = R.release_table(
        frame, small_schema(), PLAN, random_state=seed, row_keys=keys, unit=ADD_REMOVE, count_epsilon=epsilon
    )
    assert len(expected.table) == limit
    _release(spark, source, tmp_path / "copy", seed, unit=ADD_REMOVE, count_epsilon=epsilon)
    assert _joined(tmp_path / "copy") == expected.csv
