"""Rows on Apache Spark: a table's histograms summed where its rows are, the model fitted on the driver.

:class:`SparkRows` is the Spark side of :class:`dpcore.backends.rows.Rows`. Its rows are a
DataFrame of the table's raw columns plus :data:`ROW_KEY`; in the executors each Arrow batch of
cells is designed row by row (:func:`dpcore.backends.tables.design_batch`, the numbers
``Design.from_table`` gives), the prepare functions are applied, and the job's ``int64``
histogram is summed over the partition's batches. Only those sums travel, and they are added in
a tree (``treeAggregate``), so the driver holds a few histograms whatever the number of rows. A
fit reads its rows many times (a pass per tree level), so the executors keep the designed rows
(pickled, on local disk, which the page cache keeps in memory while there is room) and later
passes convert no cell. Integer sums do not
depend on the order of addition and per-row randomness is keyed by :data:`ROW_KEY`, so a fit
on Spark is the fit on :class:`~dpcore.backends.rows.LocalRows` of the same rows with the same
keys, bit for bit.

Row keys are the ones :func:`dpcore.backends.tables.read_table_local` gives (``file ordinal ·
2^40 + row index within the file``): Parquet rows get theirs from Spark's hidden ``_metadata``
columns (``file_path``, ``row_index``), CSV files are read whole, one task per file, by the
engine's own CSV reader. :meth:`SparkRows.from_files` reads Parquet row groups with pyarrow in
the Python workers instead (the same rows and keys, no cell crossing the JVM: cheaper). On a
cluster every worker needs ``dpcore`` installed (the ``spark`` extra) and the table's files at
the same path.

This module is imported only when the Spark engine is asked for; the rest of the engine never
imports pyspark.
"""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import re
import sys
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray
from pyspark import RDD, StorageLevel
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StructField, StructType
from pyspark.taskcontext import TaskContext

from dpcore.backends.rows import Job, Prepare, RowBatch, Rows
from dpcore.backends.tables import (
    arrow_frame,
    check_partwise,
    csv_file_batches,
    design_batch,
    file_format,
    list_table_files,
    row_group_batches,
    row_groups,
    table_columns,
)
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms.keyed import ROWS_PER_FILE_BITS
from dpcore.tables.schema import Normaliser, Schema

#: The column holding each row's stable key (``long``; the same bits as the local ``uint64`` keys).
ROW_KEY = "__row_key"
#: Spark's log settings for a session started here: no failed task's traceback (it can quote a cell).
LOG_CONFIGURATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
#: Rows per Arrow batch handed to a job (more rows per batch, less per-batch overhead).
BATCH_ROWS = 1 << 16
#: Rows per kept batch read from Parquet row groups: a job's fixed cost (its histograms' size) is paid per batch.
KEPT_ROWS = 1 << 18
#: Where Debian's package libpostgresql-jdbc-java puts PostgreSQL's JDBC driver; ``$DPSTUDIO_JDBC_DRIVER`` names another.
POSTGRESQL_JAR = "/usr/share/java/postgresql.jar"
JDBC_DRIVER_ENV = "DPSTUDIO_JDBC_DRIVER"
_FILE_URI = re.compile(r"^file:/+")
_COUNTED = pa.schema([("partition", pa.int64()), ("rows", pa.int64()), ("lowest", pa.float64())])
_DATA_ERROR = re.compile(r"DataError: (.+)")
_EXCEPTION_KIND = re.compile(r"^(\w+(?:Error|Exception)):", re.MULTILINE)


def postgresql_jar() -> str | None:
    """PostgreSQL's JDBC driver (a ``.jar``): ``$DPSTUDIO_JDBC_DRIVER``, else :data:`POSTGRESQL_JAR`; None when it is not there."""
    path = os.environ.get(JDBC_DRIVER_ENV) or POSTGRESQL_JAR
    return path if os.path.isfile(path) else None


def spark_session(master: str = "local[2]", **conf: str) -> SparkSession:
    """The active Spark session, or a new one on ``master`` set up for the engine (``conf`` applies to a new one).

    A new session has its web UI off, few shuffle partitions (only small histograms are
    shuffled), Arrow on with large batches, the driver's Python on the workers and quiet logs,
    and PostgreSQL's JDBC driver in ``spark.jars`` when it is installed (:func:`postgresql_jar`),
    so a table can be read from a PostgreSQL server (:mod:`dpcore.backends.spark_database`).
    ``conf`` adds or overrides settings (``**{"spark.executor.memory": "4g"}``).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # Local workers run the driver's Python and import dpcore from where the driver does.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS),
        **conf,
    }
    jar = postgresql_jar()
    if jar is not None:  # Spark ships the jars it is given to every executor
        settings["spark.jars"] = ",".join(part for part in (conf.get("spark.jars"), jar) if part)
    # Spark's log config never prints a failed task's traceback (it can quote a cell), and stays when the caller
    # adds JVM options of their own. A local master's executors run in the driver's JVM; a cluster's executors
    # read the file only where dpcore sits at the same path (the driver's sentences never carry a cell anyway).
    for jvm in ("driver", "executor"):
        name = f"spark.{jvm}.extraJavaOptions"
        settings[name] = f"-Dlog4j2.configurationFile={LOG_CONFIGURATION} {conf.get(name, '')}".strip()
    builder = SparkSession.builder.master(master).appName("dpcore")
    for name, value in settings.items():
        builder = builder.config(name, value)
    with quiet_pandas():
        return builder.getOrCreate()


@contextlib.contextmanager
def quiet_pandas() -> Iterator[None]:
    """Without PySpark's warning about the pandas version (the engine hands Spark Arrow batches or plain frames)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        yield


def _map_in_arrow(frame: DataFrame, function: Any, schema: Any) -> DataFrame:
    """``frame.mapInArrow`` without PySpark's pandas-version warning (only Arrow batches pass here)."""
    with quiet_pandas():
        return frame.mapInArrow(function, schema)


# --- reading a table with its row keys ------------------------------------------------------------


def read_table(spark: SparkSession, source: str | os.PathLike[str] | DataFrame) -> DataFrame:
    """The table at ``source`` as a DataFrame of its columns plus :data:`ROW_KEY`.

    ``source`` is what :func:`~dpcore.backends.tables.list_table_files` takes (the keys are the
    local ones), or a DataFrame, whose rows are keyed by their position: partition by partition,
    in each partition's order. A DataFrame is first materialised (``localCheckpoint(eager=True)``)
    and counted and keyed from that copy, so every later job reads the same rows in the same
    partitions: a shuffle, a sample or a repartition recomputed differently cannot give two rows
    one key (and so the same randomness). The copy lives in the executors' storage; if an executor
    holding part of it is lost, the job fails rather than key the rows again.
    """
    if isinstance(source, DataFrame):
        return _positions(source)
    files = list_table_files(source)
    if file_format(files[0]) == "csv":
        return _read_csv(spark, files)
    return _read_parquet(spark, files)


def _read_parquet(spark: SparkSession, files: list[str]) -> DataFrame:
    table_columns(files)  # one sentence if the files disagree, before Spark merges them
    frame = spark.read.parquet(*files)
    ordinal_of = {path: i for i, path in enumerate(files)}
    # Spark names files by URI (file:/… or file:///…, percent-encoded); compare the decoded paths.
    ordinals: dict[str, int] = {}
    for uri in frame.inputFiles():
        local = _FILE_URI.sub("/", uri)
        path = os.path.abspath(unquote(local))
        if path not in ordinal_of:
            raise DataError(_("The table's files changed while they were being read. Read it again."))
        ordinals[local] = ordinal_of[path]
    file_path = F.regexp_replace(F.col("_metadata.file_path"), _FILE_URI.pattern, "/")
    ordinal = F.create_map(*[F.lit(v) for item in ordinals.items() for v in item])[file_path]
    key = F.when(ordinal.isNotNull(), ordinal.cast("long") * F.lit(1 << ROWS_PER_FILE_BITS) + F.col("_metadata.row_index"))
    checked = F.when(key.isNotNull(), key).otherwise(F.raise_error(F.lit("a Parquet file outside the table's list")))
    return frame.select(*[F.col(f"`{c}`") for c in frame.columns], checked.alias(ROW_KEY))


def _read_csv(spark: SparkSession, files: list[str]) -> DataFrame:
    names = table_columns(files)
    schema = ", ".join(f"`{name}` string" for name in names) + f", `{ROW_KEY}` long"

    def read_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for listing in batches:
            for ordinal, path in zip(listing.column(0).to_pylist(), listing.column(1).to_pylist()):
                first = int(ordinal) << ROWS_PER_FILE_BITS
                for cells in csv_file_batches(path, BATCH_ROWS):
                    keys = pa.array(np.arange(first, first + cells.num_rows, dtype=np.int64))
                    first += cells.num_rows
                    yield pa.RecordBatch.from_arrays([*cells.columns, keys], names=[*names, ROW_KEY])

    # One file per task, read whole and in order: the row index is the line's place in its file.
    listing = spark.sparkContext.parallelize(list(enumerate(files)), numSlices=len(files))
    return _map_in_arrow(spark.createDataFrame(listing, "ordinal long, path string"), read_files, schema)


def _positions(frame: DataFrame, order: str | None = None) -> DataFrame:
    """``frame``, materialised, with each row's position as its key: partition by partition, or in the order of
    the column ``order``, whose values must not overlap between partitions (a JDBC read split by ranges of it)."""
    if order is not None:
        frame = frame.sortWithinPartitions(F.col(f"`{order}`"))
    frame = frame.localCheckpoint(eager=True)
    column = frame.columns.index(order) if order is not None else None

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows, lowest = 0, None
        for batch in batches:
            if lowest is None and batch.num_rows and column is not None:
                lowest = batch.column(column)[0].as_py()  # sorted: the partition's lowest value
            rows += batch.num_rows
        partition = TaskContext.get().partitionId()  # type: ignore[union-attr]
        yield pa.RecordBatch.from_pydict({"partition": [partition], "rows": [rows], "lowest": [lowest]}, schema=_COUNTED)

    counted = _map_in_arrow(frame, count, "partition long, rows long, lowest double").collect()
    counts = {partition: rows for partition, rows, _lowest in counted}
    # Partitions in the order of their lowest value (ranges do not overlap), else of their number.
    placed = sorted(counted, key=lambda c: (c[2] is None, c[2] or 0.0, c[0]))
    starts: dict[int, int] = {}
    first = 0
    for partition, _rows, _lowest in placed:
        starts[partition] = first
        first += counts[partition]
    schema = StructType([*frame.schema.fields, StructField(ROW_KEY, LongType(), nullable=False)])

    def keyed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first = starts[TaskContext.get().partitionId()]  # type: ignore[union-attr]
        for cells in batches:
            keys = pa.array(np.arange(first, first + cells.num_rows, dtype=np.int64))
            first += cells.num_rows
            yield pa.RecordBatch.from_arrays([*cells.columns, keys], names=[*cells.schema.names, ROW_KEY])

    return _map_in_arrow(frame, keyed, schema)


# --- rows -------------------------------------------------------------------------------------------


def _unpersist(kept: RDD[RowBatch]) -> None:
    try:
        kept.unpersist()
    except Exception:  # the session may be gone already; its storage went with it
        pass


class _Kept:
    """Prepared RowBatches kept by the executors (on local disk) until no rows object uses them.

    They are pickled Python objects in Spark's storage, so a pass over them converts no cell.
    """

    def __init__(self, batches: RDD[RowBatch]) -> None:
        # On local disk, not in the JVM's heap: a large table's kept rows (8·(d+2) bytes a row) far exceed
        # any heap, and the operating system's page cache keeps them in memory while there is room.
        self.batches = batches.filter(lambda batch: len(batch) > 0).persist(StorageLevel.DISK_ONLY)
        weakref.finalize(self, _unpersist, self.batches).atexit = False


def _designer(schema: Schema, encoding: str) -> Callable[[pa.RecordBatch, NDArray[np.uint64]], RowBatch]:
    """Raw cells and their row keys → their design numbers, row by row."""

    def design(cells: pa.RecordBatch, keys: NDArray[np.uint64]) -> RowBatch:
        X, y, keep = design_batch(arrow_frame(cells), schema, encoding)
        return RowBatch(X, y, keys[keep])

    return design


def _split_keys(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, NDArray[np.uint64]]:
    """A batch of cells and :data:`ROW_KEY` as (the cells, the keys)."""
    return batch.drop_columns([ROW_KEY]), batch.column(ROW_KEY).to_numpy(zero_copy_only=False).astype(np.uint64)


def _chained(prepares: tuple[Prepare, ...]) -> Callable[[RowBatch], RowBatch]:
    def prepared(batch: RowBatch) -> RowBatch:
        for prepare in prepares:
            batch = prepare(batch)
        return batch

    return prepared


class SparkRows(Rows):
    """A Spark table's rows as a model sees them: design numbers, keyed, summed where they are.

    A fit reads the same rows many times (a pass per tree level), so with ``store`` the rows are
    kept by the executors as RowBatches: the designed rows at the first pass over the cells, and
    prepared rows at their second pass (read from that copy, a first pass costs little). Later
    passes read pickled arrays instead of converting and designing every cell again; a copy is
    dropped when no rows object uses it.

    Parameters
    ----------
    frame : DataFrame
        The table's raw columns and :data:`ROW_KEY` (:func:`read_table`).
    schema : Schema
        The declarations (no privacy-unit column: a person's rows cannot be bounded part by part).
    encoding : {"ordinal", "onehot"}
        How categorical features become numbers, as for :meth:`dpcore.tables.design.Design.from_table`.
    store : bool
        Keep rows read more than once as described above (each kept copy costs the executors
        about ``8·(d + 2)`` bytes a row on their local disk).
    """

    def __init__(self, frame: DataFrame, schema: Schema, encoding: str = "ordinal", *, store: bool = True) -> None:
        if ROW_KEY not in frame.columns:
            raise ValueError(f"the DataFrame needs a {ROW_KEY} column (read it with read_table)")
        check_partwise(schema, [c for c in frame.columns if c != ROW_KEY])
        # Only the columns a model reads travel (Parquet reads no other column).
        used = Schema([spec for spec in schema.columns if spec.role in ("feature", "target")])
        self._raw = frame.select(*[F.col(f"`{spec.name}`") for spec in used.columns], F.col(ROW_KEY))
        self._n_features = len(Normaliser(used, encoding=encoding).feature_names())
        self._design = _designer(used, encoding)
        self._kept: _Kept | None = None  # the nearest copy kept by the executors (this rows object's or an ancestor's)
        self._pending: tuple[Prepare, ...] = ()  # prepares still to apply to what is read
        self._chain: tuple[Prepare, ...] = ()  # every prepare since the design
        self._store = store
        self._pieces: RDD[tuple[int, str, int, int, int, int]] | None = (
            None  # slices of Parquet row groups read by the workers (from_files)
        )
        self._passes = 0

    @property
    def n_features(self) -> int:
        return self._n_features

    def prepared(self, prepare: Prepare) -> SparkRows:
        rows = copy.copy(self)
        rows._pending, rows._chain, rows._passes = (*self._pending, prepare), (*self._chain, prepare), 0
        return rows

    @classmethod
    def from_files(
        cls, spark: SparkSession, source: str | os.PathLike[str], schema: Schema, encoding: str = "ordinal", *, store: bool = True
    ) -> SparkRows:
        """The rows of a Parquet or CSV table's files; Parquet row groups are read by pyarrow in the Python workers.

        The same rows under the same keys as ``SparkRows(read_table(spark, source), ...)``, but no
        cell of a Parquet file crosses the JVM: a task reads one row group with pyarrow, as
        :func:`~dpcore.backends.tables.read_rows_local` does. The files must be at the same path on
        every worker.
        """
        rows = cls(read_table(spark, source), schema, encoding, store=store)
        files = list_table_files(source)
        if file_format(files[0]) == "parquet":
            groups = row_groups(files)
            # At least two tasks per core, so a table of few row groups still keeps every core busy.
            slices = -(-2 * spark.sparkContext.defaultParallelism // max(len(groups), 1))
            pieces = [
                (ordinal, path, group, first, int(rows_in_group * s // slices), int(rows_in_group * (s + 1) // slices))
                for ordinal, path, group, first, rows_in_group in groups
                for s in range(slices)
            ]
            rows._pieces = spark.sparkContext.parallelize(pieces, max(len(pieces), 1))
        return rows

    def _raw_batches(self) -> RDD[RowBatch]:
        """The designed, prepared RowBatches of the raw cells (as Arrow from the JVM, or read by pyarrow)."""
        design, prepared = self._design, _chained(self._pending)
        if self._pieces is not None:
            names = [name for name in self._raw.columns if name != ROW_KEY]

            def read(piece: tuple[int, str, int, int, int, int]) -> Iterator[RowBatch]:
                ordinal, path, group, first, start, stop = piece
                for cells, keys in row_group_batches(ordinal, path, group, first, names, KEPT_ROWS, start, stop):
                    yield prepared(design(cells, keys))

            return self._pieces.flatMap(read)

        def pickled(cells: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for part in cells:
                if part.num_rows:
                    yield pa.RecordBatch.from_pydict({"batch": [pickle.dumps(prepared(design(*_split_keys(part))), protocol=5)]})

        frame = _map_in_arrow(self._raw, pickled, "batch binary")
        return frame.rdd.map(lambda row: pickle.loads(row.batch))

    def _batches(self) -> RDD[RowBatch]:
        """This pass's RowBatches, kept for the next passes as the class says."""
        self._passes += 1
        if self._kept is None:
            batches = self._raw_batches()
        else:
            batches = self._kept.batches.map(_chained(self._pending)) if self._pending else self._kept.batches
        if self._store and (self._kept is None or (self._pending and self._passes >= 2)):
            self._kept, self._pending = _Kept(batches), ()
            batches = self._kept.batches
        return batches

    def aggregate(self, job: Job) -> NDArray[np.int64]:
        def partition_sum(batches: Iterable[RowBatch]) -> Iterator[NDArray[np.int64]]:
            total: NDArray[np.int64] | None = None
            for batch in batches:
                counted = np.asarray(job(batch), dtype=np.int64)
                total = counted if total is None else total + counted
            if total is not None:
                yield total

        def add(left: NDArray[np.int64] | None, right: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
            return right if left is None else left if right is None else left + right

        try:
            total = self._batches().mapPartitions(partition_sum).treeAggregate(None, add, add)
        except PythonException as error:
            raise _data_error(error) from None
        if total is None:  # no partition has a row: the job's shape from an empty batch
            empty = self._design(*_split_keys(pa.RecordBatch.from_pylist([], schema=to_arrow_schema(self._raw.schema))))
            return np.asarray(job(_chained(self._chain)(empty)), dtype=np.int64)
        return np.asarray(total, dtype=np.int64)


def _data_error(error: PythonException) -> Exception:
    """An executor's failure as the driver says it: a :class:`DataError`'s own sentence, else only its kind.

    Any other failure's text is a worker's traceback, which can quote a cell (a parser's message
    naming the value it choked on), so only the exception's name crosses to the driver.
    """
    text = str(error)
    found = _DATA_ERROR.findall(text)
    if found:
        return DataError(found[-1].strip())
    kinds = _EXCEPTION_KIND.findall(text)
    return RuntimeError(
        _("A Spark task failed ({kind}); its message is not shown, as it can quote a cell.").format(
            kind=kinds[-1] if kinds else type(error).__name__
        )
    )
