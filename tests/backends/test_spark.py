"""Spark sums a job's histograms exactly as numpy does, over the same rows under the same keys.

The tables are small but split into several files, row groups and partitions (and repartitioned),
so the sums really combine across partitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_tables import messy_frame, messy_schema, write_parts

from dpcore.backends import tables
from dpcore.backends.rows import RowBatch, exact_bincount, fixed
from dpcore.exceptions import DataError
from dpcore.mechanisms import keyed

pytestmark = pytest.mark.spark
spark_module = pytest.importorskip("pyspark") and pytest.importorskip("dpcore.backends.spark")
MEMBERSHIP_STREAM = 11


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """The same 600 rows as three Parquet files (row groups of 64) and as three CSV files."""
    folder = tmp_path_factory.mktemp("table")
    frame = messy_frame(600, seed=3)
    write_parts(frame, folder / "parquet", "parquet")
    write_parts(frame, folder / "csv", "csv")
    return {"parquet": str(folder / "parquet"), "csv": str(folder / "csv" / "*.csv"), "frame": frame}


def spark_keys(frame) -> np.ndarray:  # noqa: ANN001
    rows = frame.select(spark_module.ROW_KEY).collect()
    return np.sort(np.array([r[0] for r in rows], dtype=np.uint64))


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_spark_row_keys_are_the_local_keys(spark, table, kind):
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")  # Parquet files split across tasks
    try:
        frame = spark_module.read_table(spark, table[kind])
        assert frame.rdd.getNumPartitions() > 1
        pairs = {int(r[spark_module.ROW_KEY]): r["id"] for r in frame.select(spark_module.ROW_KEY, "id").collect()}
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    cells, keys = tables.read_table_local(table[kind])
    assert sorted(pairs) == keys.tolist()
    assert [int(pairs[int(k)]) for k in keys] == cells["id"].astype(int).tolist()


def test_a_dataframe_given_directly_is_keyed_by_position(spark, table):
    frame = spark.createDataFrame(table["frame"][["id", "age"]]).repartition(1).sortWithinPartitions("id")
    keyed_frame = spark_module.read_table(spark, frame)
    assert {int(r[spark_module.ROW_KEY]): int(r["id"]) for r in keyed_frame.collect()} == {i: i for i in range(600)}


def test_a_dataframe_given_directly_is_materialised_once_then_keyed(spark, table):
    """Counting and keying read one materialised copy: a DataFrame Spark would compute again (a shuffle, a sample)
    cannot move rows between partitions and give two rows one key."""
    reads = spark.sparkContext.accumulator(0)

    def counted(batches):  # noqa: ANN001, ANN202
        for batch in batches:
            reads.add(batch.num_rows)
            yield batch

    source = spark.createDataFrame(table["frame"][["id", "age"]]).repartition(3)
    frame = spark_module._map_in_arrow(source, counted, source.schema)
    keyed_frame = spark_module.read_table(spark, frame)
    first = {int(r["id"]): int(r[spark_module.ROW_KEY]) for r in keyed_frame.collect()}
    second = {int(r["id"]): int(r[spark_module.ROW_KEY]) for r in keyed_frame.collect()}
    assert first == second and sorted(first.values()) == list(range(600))
    assert reads.value == 600  # the rows were computed once, whatever job read them later


def jobs(n_classes: int) -> dict:
    """A few jobs as models write them: counts, fixed-point sums and squares, keyed memberships."""
    secret = keyed.new_key(np.random.default_rng(5))

    def counts(batch: RowBatch) -> np.ndarray:
        return exact_bincount((batch.key % np.uint64(13)).astype(np.intp), None, 13)

    def sums(batch: RowBatch) -> np.ndarray:
        cell = np.minimum((batch.X[:, 0] / 100 * 8).astype(np.intp), 7)
        if n_classes:
            value = (batch.y == "yes").astype(float)
        else:
            value = fixed(batch.y / 100)
        return np.stack([exact_bincount(cell, value, 8), exact_bincount(cell, value * value, 8)])

    def memberships(batch: RowBatch) -> np.ndarray:
        member = keyed.integers(secret, batch.key, MEMBERSHIP_STREAM, 4)[:, 0]
        code = np.rint(batch.X[:, 1] * 3).astype(np.intp)  # city: north, south, missing, other
        return exact_bincount(member * 4 + code, None, 16).reshape(4, 4)

    return {"counts": counts, "sums": sums, "memberships": memberships}


@pytest.mark.parametrize(("kind", "target"), [("parquet", "income"), ("csv", "label")])
def test_spark_histograms_equal_numpys_exactly(spark, table, kind, target):
    schema = messy_schema(target)
    local = tables.read_rows_local(table[kind], schema)
    rows = spark_module.SparkRows(spark_module.read_table(spark, table[kind]).repartition(3), schema, store=kind == "parquet")
    assert rows.n_features == local.n_features == 3
    for name, job in jobs(2 if target == "label" else 0).items():  # passes 2 and 3 read the kept rows (Parquet)
        expected = local.aggregate(job)
        assert np.array_equal(rows.aggregate(job), expected), name
    assert local.aggregate(jobs(0)["counts"]).sum() == len(local) > 300


def test_rows_read_by_pyarrow_in_the_workers_are_the_same_rows(spark, table):
    schema = messy_schema()
    local = tables.read_rows_local(table["parquet"], schema)
    rows = spark_module.SparkRows.from_files(spark, table["parquet"], schema)  # one task per row group of 64 rows
    for name, job in jobs(0).items():
        assert np.array_equal(rows.aggregate(job), local.aggregate(job)), name


def test_prepared_chains_and_empty_tables_give_numpys_sums(spark, table):
    schema = messy_schema()
    local = tables.read_rows_local(table["parquet"], schema)
    rows = spark_module.SparkRows(spark_module.read_table(spark, table["parquet"]).repartition(4), schema)

    def older(batch: RowBatch) -> RowBatch:
        return batch.take(batch.X[:, 0] > 40)

    def rescaled(batch: RowBatch) -> RowBatch:
        return RowBatch(batch.X, np.clip(batch.y / 50, 0, 1), batch.key)

    job = jobs(0)["sums"]
    assert np.array_equal(rows.aggregate(job), local.aggregate(job))
    assert np.array_equal(rows.aggregate(job), local.aggregate(job))  # read from the designed rows kept at the first pass
    chain, local_chain = rows.prepared(older).prepared(rescaled), local.prepared(older).prepared(rescaled)
    for _pass in range(3):  # through the parent's copy, then kept prepared, then from that copy
        assert np.array_equal(chain.aggregate(job), local_chain.aggregate(job))
    assert np.array_equal(chain.prepared(older).aggregate(jobs(0)["counts"]), local_chain.aggregate(jobs(0)["counts"]))
    nobody = rows.prepared(lambda batch: batch.take(batch.y > 1000))
    assert np.array_equal(nobody.aggregate(job), np.zeros((2, 8), dtype=np.int64))
    empty = spark_module.SparkRows(spark_module.read_table(spark, table["parquet"]).limit(0), schema)
    assert empty.aggregate(lambda batch: np.array([len(batch), batch.X.shape[1]])).tolist() == [0, 3]


def test_a_bad_cell_found_on_an_executor_is_a_sentence_on_the_driver(spark, tmp_path, table):
    frame = table["frame"].copy()
    frame["age"] = frame["age"].astype(object)
    frame.loc[5, "age"] = "SENTINEL-9731"
    write_parts(frame, tmp_path / "bad", "csv")
    rows = spark_module.SparkRows(spark_module.read_table(spark, str(tmp_path / "bad" / "*.csv")), messy_schema())
    with pytest.raises(DataError, match="declared numeric") as raised:
        rows.aggregate(jobs(0)["counts"])
    assert "SENTINEL" not in str(raised.value)


def test_a_task_failure_other_than_a_data_error_reaches_the_driver_without_its_text():
    from dpcore.backends.spark import _data_error

    traceback = "Traceback (most recent call last):\n  File ...\nValueError: could not convert 'Jane Doe, 1961-02-03' to float"
    said = _data_error(Exception(traceback))
    assert isinstance(said, RuntimeError) and "ValueError" in str(said) and "Jane" not in str(said)
    assert (
        str(_data_error(Exception("...\ndpcore.exceptions.DataError: The column 'age' has text.")))
        == "The column 'age' has text."
    )
