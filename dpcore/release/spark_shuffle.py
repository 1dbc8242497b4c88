"""The Spark release's machinery: reading the table with row keys, the census, the rows through the shuffle, the parts.

:mod:`dpcore.release.spark` runs these steps in order. The rows are read (Parquet row
groups by pyarrow in the tasks; CSV and DataFrames through :func:`~dpcore.backends.spark.read_table`;
a PostgreSQL table or query through :func:`~dpcore.backends.spark_database.read_database`)
and counted with the cut words' census; randomised by the local ``release_chunk``; carried through
Spark's shuffle as one fixed-width binary record a row with the order word whose top bits name the
part; then each part's task sorts its rows and writes them with pyarrow's CSV writer into a
temporary file renamed into place, so a retried task writes the same bytes under the same name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import BinaryType, ByteType, IntegerType, LongType, StructField, StructType
from pyspark.taskcontext import TaskContext

from dpcore.backends.spark import BATCH_ROWS, ROW_KEY, _map_in_arrow, quiet_pandas, read_table
from dpcore.backends.spark_database import read_database
from dpcore.backends.tables import (
    arrow_frame,
    file_format,
    list_table_files,
    parquet_file,
    row_group_batches,
    row_groups,
    table_columns,
)
from dpcore.budget.identity import VersionFingerprint
from dpcore.mechanisms.keyed import file_row_keys
from dpcore.release.columns import Treatment
from dpcore.release.estimator import part_file
from dpcore.release.padding import (
    CUT_BITS,
    cut_census,
    cut_mask,
    cut_words,
    filler_rows,
    in_cell,
)
from dpcore.release.randomness import FILLER, REAL, Draws, order_words, signed
from dpcore.release.table import release_chunk
from dpcore.release.writing import keep_array, write_csv
from dpcore.tables.sql_source import SqlSource

#: Released rows per part the copy aims at (parts are a power of two, at least two per core, at most ``2^PART_BITS``).
PART_ROWS = 1 << 20
PART_BITS = 12
WORD, SOURCE, ROW, PART, PAYLOAD = "__order_word", "__order_source", "__order_row", "__part", "__record"
WRITTEN = pa.schema([("parts", pa.list_(pa.int64())), ("rows", pa.list_(pa.int64())), ("outside", pa.binary())])
STORED_FOLDER = "_stored"
#: Test-only: a folder; when set, every writing task's first attempt fails after its first rows (leaving a mark there).
_fail_first_attempt: str | None = None


# --- where the cells come from ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """The table as the tasks read it: Spark's cells with their keys, or Parquet row groups that pyarrow reads.

    A Parquet table's tasks each read one row group with pyarrow, as the local reader does
    (:func:`~dpcore.backends.tables.read_table_local`): no cell crosses the JVM, and the row count
    and every row key are known from the footers.
    """

    frame: DataFrame  # what the tasks map over: cells and ROW_KEY, or one row per row group
    columns: list[str]  # the table's columns
    cells: pa.Schema  # the released columns' Arrow types
    rows: int | None = None  # known from the Parquet footers

    @property
    def pieces(self) -> bool:
        """Whether the tasks read Parquet row groups (else Spark's cells with their keys)."""
        return self.rows is not None


def _source(spark: SparkSession, source: str | os.PathLike[str] | DataFrame | SqlSource, wanted: list[str]) -> _Source:
    if isinstance(source, SqlSource):  # a PostgreSQL table or query, read over JDBC and keyed as the local read keys it
        return _cells_source(read_database(spark, source), wanted)
    if not isinstance(source, DataFrame):
        files = list_table_files(source)
        if file_format(files[0]) == "parquet":
            columns = table_columns(files)
            pieces = row_groups(files)
            listing = spark.sparkContext.parallelize(pieces, max(len(pieces), 1))
            frame = spark.createDataFrame(listing, "ordinal long, path string, grp long, first long, rows long")
            arrow = parquet_file(files[0]).schema_arrow
            cells = pa.schema([arrow.field(name) for name in wanted if name in columns])
            return _Source(frame, columns, cells, sum(piece[4] for piece in pieces))
    return _cells_source(read_table(spark, source), wanted)


def _cells_source(table: DataFrame, wanted: list[str]) -> _Source:
    """A keyed table's ``wanted`` columns, as Spark's cells."""
    columns = [c for c in table.columns if c != ROW_KEY]
    frame = table.select(*[F.col(f"`{name}`") for name in wanted if name in columns], F.col(ROW_KEY))
    cells = to_arrow_schema(frame.drop(ROW_KEY).schema)
    return _Source(frame, columns, cells)


def _cells(
    batches: Iterator[pa.RecordBatch], columns: list[str], pieces: bool, with_cells: bool
) -> Iterator[tuple[pa.RecordBatch | None, np.ndarray]]:
    """A task's cells (None unless ``with_cells``) and row keys, batch by batch."""
    for batch in batches:
        if not pieces:
            keys = batch.column(ROW_KEY).to_numpy(zero_copy_only=False).astype(np.uint64)
            yield (batch.drop_columns([ROW_KEY]) if with_cells else None), keys
            continue
        for ordinal, path, group, first, rows in zip(*(batch.column(i).to_pylist() for i in range(5)), strict=True):
            if not with_cells:
                for start in range(0, rows, BATCH_ROWS):
                    yield None, file_row_keys(ordinal, first + start, min(BATCH_ROWS, rows - start))
                continue
            yield from row_group_batches(ordinal, path, group, first, columns, BATCH_ROWS)


# --- pass one: rows, the version fingerprint and the rows per part ----------------------------------


def _census(source: _Source, draws: Draws, fingerprint: list[str] | None, padded: bool) -> tuple[int, str | None, np.ndarray]:
    """Rows, the table's version fingerprint (with a ledger), and the cut words' census (when padded, else zeros).

    Without a ledger only the row keys are read.
    """
    key, cut_cells, columns, pieces = draws.key, 1 << CUT_BITS, source.cells.names, source.pieces
    frame = source.frame if fingerprint is not None or pieces else source.frame.select(ROW_KEY)

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        total = np.zeros(3 + cut_cells, dtype=np.uint64)
        version = VersionFingerprint()
        for cells, rows in _cells(batches, columns, pieces, fingerprint is not None):
            total[0] += len(rows)
            if cells is not None and fingerprint is not None:
                version.add(arrow_frame(cells), fingerprint)
            if padded:
                total[3:] += cut_census(cut_words(key, rows)).astype(np.uint64)
        total[1:3] = version.lanes
        yield pa.RecordBatch.from_pydict({"sums": [total.tobytes()]})

    total = np.zeros(3 + cut_cells, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for row in _map_in_arrow(frame, count, "sums binary").collect():
            total += np.frombuffer(row.sums, dtype=np.uint64)
    n, digest = int(total[0]), None
    if fingerprint is not None:
        version = VersionFingerprint()
        version.lanes, version.rows = total[1:3].copy(), n
        digest = version.hexdigest()
    return n, digest, total[3:].astype(np.int64)


def _cell_rows(source: _Source, draws: Draws, cell: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut words and row keys of the rows in one census cell (reading only the row keys where it can)."""
    key, pieces = draws.key, source.pieces
    frame = source.frame if pieces else source.frame.select(ROW_KEY)

    def gather(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        found = [in_cell(cut_words(key, rows), rows, cell) for _unused, rows in _cells(batches, [], pieces, False)]
        words = np.concatenate([np.empty(0, dtype=np.int64)] + [words for words, _rows in found])
        keys = np.concatenate([np.empty(0, dtype=np.uint64)] + [rows for _words, rows in found])
        yield pa.RecordBatch.from_pydict({"words": [words.tobytes()], "rows": [keys.tobytes()]})

    found = _map_in_arrow(frame, gather, "words binary, rows binary").collect()
    return (
        np.concatenate([np.frombuffer(row.words, dtype=np.int64) for row in found]),
        np.concatenate([np.frombuffer(row.rows, dtype=np.uint64) for row in found]),
    )


# --- pass two: randomise, order, write --------------------------------------------------------------


def _payload(treatments: Sequence[Treatment]) -> np.dtype:
    """One row's fixed-width record: its outside-the-domain flags, then each column's code or Laplace number.

    Spark carries the record as one binary cell: far cheaper to convert and shuffle than a
    column per released column.
    """
    fields: list[tuple[Any, ...]] = [("outside", "u1", (len(treatments),))]
    for i, t in enumerate(treatments):
        if t.mechanism == "laplace":
            fields.append((f"c{i}", "<f8"))
        elif t.mechanism != "keep":
            fields.append((f"c{i}", "i1" if t.k <= 127 else "<i4"))
    return np.dtype(fields)


def _kept_types(source: _Source, treatments: Sequence[Treatment]) -> dict[int, pa.DataType]:
    """The Arrow type of each column kept unchanged, as the local release writes it (numbers stay numbers)."""
    cells = arrow_frame(pa.RecordBatch.from_pylist([], schema=source.cells))
    return {i: keep_array(cells[t.name]).type for i, t in enumerate(treatments) if t.mechanism == "keep"}


def _empty(treatments: Sequence[Treatment], kept: dict[int, pa.DataType]) -> pa.Table:
    """A released table without rows: the copy's header and its stored file's schema."""
    arrays = [
        pa.array([], kept[i])
        if t.mechanism == "keep"
        else pa.array([], pa.float64())
        if t.mechanism == "laplace"
        else t.as_array(np.empty(0, dtype=np.int64))
        for i, t in enumerate(treatments)
    ]
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments])


def _spark_schema(treatments: Sequence[Treatment], kept: dict[int, pa.DataType]) -> StructType:
    fields = [
        StructField(WORD, LongType()),
        StructField(SOURCE, ByteType()),
        StructField(ROW, LongType()),
        StructField(PART, IntegerType()),
        StructField(PAYLOAD, BinaryType()),
    ]
    fields += [StructField(f"c{i}", from_arrow_type(kind)) for i, kind in kept.items()]
    return StructType(fields)


def _transport(
    table: pa.Table,
    flags: np.ndarray,
    words: np.ndarray,
    rows: np.ndarray,
    source: int,
    shift: int,
    treatments: Sequence[Treatment],
    kept: dict[int, pa.DataType],
    cut: np.ndarray | None = None,
) -> pa.RecordBatch:
    """Released rows as Spark carries them: the order's columns, each row's record (:func:`_payload`), kept text.

    Rows the cut leaves out (``cut``) go to part −1, which is never written: they still travel, so
    that their values outside the domain are counted, as the local release counts them.
    """
    record = np.zeros(len(words), dtype=_payload(treatments))
    record["outside"] = flags
    carried, names = [], []
    for i, (t, column) in enumerate(zip(treatments, table.columns, strict=True)):
        column = column.combine_chunks()
        if t.mechanism == "keep":
            carried.append(column.cast(kept[i]))
            names.append(f"c{i}")
        elif t.mechanism == "laplace":
            record[f"c{i}"] = column.to_numpy(zero_copy_only=False)
        else:
            record[f"c{i}"] = column.indices.to_numpy(zero_copy_only=False)
    width = record.dtype.itemsize
    offsets = pa.py_buffer((np.arange(len(words) + 1, dtype=np.int32) * width).tobytes())
    payload = pa.Array.from_buffers(pa.binary(), len(words), [None, offsets, pa.py_buffer(record.tobytes())])
    parts = (words >> shift).astype(np.int32)
    if cut is not None:
        parts[cut] = -1
    arrays = [
        pa.array(words, pa.int64()),
        pa.array(np.full(len(words), source, dtype=np.int8)),
        pa.array(signed(rows), pa.int64()),
        pa.array(parts),
        payload,
        *carried,
    ]
    return pa.RecordBatch.from_arrays(arrays, names=[WORD, SOURCE, ROW, PART, PAYLOAD, *names])


def _records(batch: pa.RecordBatch, treatments: Sequence[Treatment]) -> np.ndarray:
    """The rows' records back from their binary cells (every cell is one record wide)."""
    payload = batch.column(PAYLOAD)
    dtype = _payload(treatments)
    offset_type = np.int64 if pa.types.is_large_binary(payload.type) else np.int32
    first = int(np.frombuffer(payload.buffers()[1], dtype=offset_type)[payload.offset])
    data = np.frombuffer(payload.buffers()[2], dtype=np.uint8)[first : first + len(payload) * dtype.itemsize]
    return data.view(dtype)


def _released(
    batch: pa.RecordBatch, records: np.ndarray, treatments: Sequence[Treatment], kept: dict[int, pa.DataType]
) -> pa.Table:
    """Transported rows back as the local release's table (dictionary columns of escaped labels)."""
    arrays = []
    for i, t in enumerate(treatments):
        if t.mechanism == "keep":
            arrays.append(batch.column(f"c{i}").cast(kept[i]))
        elif t.mechanism == "laplace":
            arrays.append(pa.array(records[f"c{i}"]))
        else:
            arrays.append(t.as_array(records[f"c{i}"]))
    return pa.Table.from_arrays(arrays, names=[t.header for t in treatments])


class _PartWriter:
    """Writes one part's rows into temporary files and renames them into place when the part is complete."""

    def __init__(self, folder: str, part: int, attempt: int, mode: str, parquet_folder: str | None) -> None:
        self.folder, self.part, self.mode, self.rows = folder, part, mode, 0
        self.temporary = os.path.join(folder, f".{part_file(part)}.{attempt}.tmp")
        self.handle = open(self.temporary, "wb")  # noqa: SIM115 (closed in finish or abort)
        self.parquet: pq.ParquetWriter | None = None
        self.parquet_path = None if parquet_folder is None else os.path.join(parquet_folder, part_file(part, "parquet"))
        self.parquet_temporary = None if parquet_folder is None else os.path.join(parquet_folder, f".{part}.{attempt}.tmp")

    def write(self, table: pa.Table) -> None:
        sink = pa.BufferOutputStream()
        write_csv(table, sink, False, self.mode)
        self.handle.write(sink.getvalue().to_pybytes())
        if self.parquet_temporary is not None:
            if self.parquet is None:
                self.parquet = pq.ParquetWriter(self.parquet_temporary, table.schema, compression="zstd")
            self.parquet.write_table(table)
        self.rows += table.num_rows

    def finish(self) -> None:
        self.handle.close()
        if not self.rows:  # every row of this part was cut: no file
            os.unlink(self.temporary)
            return
        os.replace(self.temporary, os.path.join(self.folder, part_file(self.part)))
        if self.parquet is not None and self.parquet_temporary is not None and self.parquet_path is not None:
            self.parquet.close()
            os.replace(self.parquet_temporary, self.parquet_path)


def _write_parts(
    frame: DataFrame,
    treatments: Sequence[Treatment],
    kept: dict[int, pa.DataType],
    folder: str,
    mode: str,
    parquet_folder: str | None,
) -> tuple[dict[int, int], np.ndarray]:
    """Write every part (rows sorted within it; part −1, the rows cut, is not written); return the rows written per
    part, and each column's count of values outside its domain (before any cut)."""
    fail = _fail_first_attempt

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        assert context is not None
        attempt = context.taskAttemptId()
        writer: _PartWriter | None = None
        written: list[tuple[int, int]] = []
        outside = np.zeros(len(treatments), dtype=np.int64)
        for batch in batches:
            records = _records(batch, treatments)
            outside += records["outside"].sum(axis=0, dtype=np.int64)
            parts = batch.column(PART).to_numpy(zero_copy_only=False)
            bounds = np.flatnonzero(np.diff(parts)) + 1
            for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(parts)], strict=True):
                if start == stop:
                    continue
                part = int(parts[start])
                if part < 0:
                    continue
                if writer is None or writer.part != part:
                    if writer is not None:
                        writer.finish()
                        written.append((writer.part, writer.rows))
                    writer = _PartWriter(folder, part, attempt, mode, parquet_folder)
                writer.write(_released(batch.slice(start, stop - start), records[start:stop], treatments, kept))
                if fail is not None and context.attemptNumber() == 0:
                    Path(fail, f"failed-{context.partitionId()}").touch()
                    raise RuntimeError("test-only forced failure of a task's first attempt")
        if writer is not None:
            writer.finish()
            written.append((writer.part, writer.rows))
        yield pa.RecordBatch.from_pydict(
            {"parts": [[p for p, _r in written]], "rows": [[r for _p, r in written]], "outside": [outside.tobytes()]},
            schema=WRITTEN,
        )

    results = _map_in_arrow(frame, write, "parts array<long>, rows array<long>, outside binary").collect()
    written = [(int(p), int(r)) for row in results for p, r in zip(row.parts, row.rows, strict=True)]
    if len({part for part, _rows in written}) != len(written):  # two tasks would have written one name
        raise RuntimeError("a part was split between tasks")
    outside = sum((np.frombuffer(row.outside, dtype=np.int64) for row in results), np.zeros(len(treatments), dtype=np.int64))
    return dict(written), outside


def _randomised(
    source: _Source,
    treatments: Sequence[Treatment],
    kept: dict[int, pa.DataType],
    draws: Draws,
    shift: int,
    last: tuple[int, int] | None,
) -> DataFrame:
    """The randomised rows, in the parts of their order words; with ``last``, the rows a cut leaves out in part −1."""
    key, schema, columns, pieces = draws.key, _spark_schema(treatments, kept), source.cells.names, source.pieces

    def randomise(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for cells, rows in _cells(batches, columns, pieces, True):
            assert cells is not None
            table, flags = release_chunk(arrow_frame(cells), rows, treatments, key)
            cut = None if last is None else ~cut_mask(cut_words(key, rows), rows, last)
            yield _transport(table, flags, order_words(key, rows), rows, REAL, shift, treatments, kept, cut)

    return _map_in_arrow(source.frame, randomise, schema)


def _fillers(spark: SparkSession, treatments: Sequence[Treatment], count: int, draws: Draws, shift: int) -> DataFrame:
    table, index, words = filler_rows(treatments, count, draws.key)
    # A padded copy keeps no column unchanged (check_padding), so fillers carry no kept text.
    batch = _transport(table, np.zeros((count, len(treatments)), dtype=bool), words, index, FILLER, shift, treatments, {})
    with quiet_pandas():
        return spark.createDataFrame(pa.Table.from_batches([batch]).to_pandas(), _spark_schema(treatments, {}))


# --- the release ------------------------------------------------------------------------------------
