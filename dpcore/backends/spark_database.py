"""A PostgreSQL table or read-only query read by Spark through JDBC, its rows as the local read gives them.

A table past one machine often lives in the team's PostgreSQL server. Spark's JDBC data source
(``spark.read.format("jdbc")``) reads it where the executors run, with the connection of the
secrets file (:func:`~dpcore.tables.sql_connections.jdbc_connection`: the user and password in
the driver's properties, never in a sentence, the workspace or the ledger; every transaction
read-only). What is read must be what the local read (:mod:`dpcore.tables.sql_source`) reads:

* **The same cells.** Each Arrow batch goes through
  :func:`~dpcore.tables.sql_source.cleaned_chunk`, the function every local chunk goes through
  (numbers as float64, text stripped with the missing-value words missing), with ``real``
  columns read through their shortest decimal text and timestamps without a time zone kept
  without one, as the local driver gives them.
* **The same order, so the same row keys.** Per-row randomness is keyed by a row's place in the
  order read. A query is read by one connection, in its own order (its ``ORDER BY``), as the
  local read reads it. A table with a one-column whole-number primary key
  (:meth:`~dpcore.tables.sql_source.SqlSource.order_key`, a stored line number) is read in that
  key's order, here and locally: Spark splits the key's range between ``numPartitions``
  connections (``partitionColumn``, ``lowerBound``, ``upperBound``; :func:`partitions_for`), each
  partition is sorted by the key, and the partitions follow one another by their lowest key. Any other table is read by
  one connection in the order the server gives.
* **Read once.** The rows are materialised by the executors (``localCheckpoint``) before they are
  keyed, so every later pass (the census, the randomisation, a fit's passes) reads the same
  rows, whatever the database does meanwhile.

The JDBC driver is Debian's ``libpostgresql-jdbc-java`` (:data:`~dpcore.backends.spark.POSTGRESQL_JAR`),
given to a new session by :func:`~dpcore.backends.spark.spark_session`; Maven Central is not
needed. This module imports pyspark: only ``--engine spark`` loads it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from dpcore.backends.spark import JDBC_DRIVER_ENV, POSTGRESQL_JAR, _map_in_arrow, _positions, postgresql_jar
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.tables.sql_connections import jdbc_connection
from dpcore.tables.sql_source import SqlSource, cleaned_chunk

JDBC_DRIVER_CLASS = "org.postgresql.Driver"
#: Rows each JDBC round trip fetches (PostgreSQL's driver otherwise fetches a whole result at once).
FETCH_ROWS = 10_000
#: At most this many connections read one table at once: a team server's default allows 100 connections in all.
MAX_CONNECTIONS = 16
#: Key values (about rows, for a line number) each connection reads at least. Every partition is a task in each of a
#: fit's hundreds of passes, at a fixed cost of its own, so a small table is read by one connection: a fit of Adult's
#: 32,561 rows took 82 s read by four connections, 19 s read by one (benchmarks/README.md §30).
ROWS_PER_CONNECTION = 250_000
_NUMBERS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
_TEXT = (T.StringType, T.VarcharType, T.CharType, T.BooleanType, T.DateType, T.TimestampType, T.TimestampNTZType)


def require_jdbc_driver() -> str:
    """The path of PostgreSQL's JDBC driver, or a sentence naming the way to install it (before Spark starts)."""
    jar = postgresql_jar()
    if jar is None:
        raise DataError(
            _(
                "Spark reads PostgreSQL through its JDBC driver, which is not installed here. Install it with "
                "'apt-get install libpostgresql-jdbc-java' (it goes to {path}), or set {variable} to the driver's "
                ".jar file, and start again."
            ).format(path=POSTGRESQL_JAR, variable=JDBC_DRIVER_ENV)
        )
    return jar


def _check_driver_loaded(spark: SparkSession) -> None:
    """A sentence when the running session cannot load the driver (started before it was installed, or without it)."""
    require_jdbc_driver()
    try:
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(  # type: ignore[union-attr]
            JDBC_DRIVER_CLASS, True, False
        )
    except Exception:
        raise DataError(
            _(
                "This Spark session was started without PostgreSQL's JDBC driver. Start Spark again (a new dpcore "
                "command does), with the driver's .jar in spark.jars."
            )
        ) from None


def partitions_for(spark: SparkSession, keys: int) -> int:
    """Connections a table of ``keys`` key values is read through: one per :data:`ROWS_PER_CONNECTION` values,
    at most two per core (so every core reads) and :data:`MAX_CONNECTIONS`."""
    most = min(2 * spark.sparkContext.defaultParallelism, MAX_CONNECTIONS)
    return max(1, min(most, -(-keys // ROWS_PER_CONNECTION)))


def read_database(spark: SparkSession, source: SqlSource, partitions: int | None = None) -> DataFrame:
    """The rows of ``source`` (a PostgreSQL table or query) as a DataFrame of its columns plus the row key.

    The cells and the keys are those of the local read (see the module's docstring), so a seeded
    fit or copy on Spark is the one made on this machine from the database, or from the table's
    CSV export.

    Parameters
    ----------
    partitions : int, optional
        Connections that read a table keyed by :meth:`~dpcore.tables.sql_source.SqlSource.order_key`
        (default :func:`partitions_for` its key's range); a query or a table without such a key is
        read by one.

    Raises
    ------
    DataError
        The driver is missing, the connection is not PostgreSQL's or cannot be reached, the
        table or query cannot be read, or a column holds neither numbers nor text. No sentence
        quotes the driver, whose messages can hold the URL or a cell.
    """
    _check_driver_loaded(spark)
    url, properties = jdbc_connection(source.url, source.connection)
    order = source.order_key()
    reader = spark.read.format("jdbc").options(
        url=url, driver=JDBC_DRIVER_CLASS, fetchsize=str(FETCH_ROWS), preferTimestampNTZ="true", **properties
    )
    if source.query is not None:
        # Wrapped here, not by Spark's "query" option, which trims the text: the newline ends a trailing "-- comment".
        reader = reader.option("dbtable", f"({source.query}\n) AS dpcore_query")
    else:
        assert source.table is not None
        reader = reader.option("dbtable", _quoted_table(source.table))
        if order is not None:
            low, high = source.key_range(order)
            connections = partitions or (partitions_for(spark, high - low + 1) if low is not None and high is not None else 1)
            if connections > 1 and low is not None and high is not None:
                reader = reader.options(
                    partitionColumn=order, lowerBound=str(low), upperBound=str(high + 1), numPartitions=str(connections)
                )
    try:
        frame = reader.load()
        return _positions(_read_like_locally(frame), order)
    except DataError:
        raise
    except Exception:  # Py4J's and Spark's errors quote the URL, the query's text and cells
        what = _("the table '{table}'").format(table=source.table) if source.table is not None else _("the query")
        raise DataError(
            _(
                "Spark could not read {what} from the connection '{connection}' over JDBC: the server could not be "
                "reached from Spark, the user or password was refused, the table or a column does not exist, or the "
                "query is not valid SQL. Check the connection's entry in the secrets file and the table's name or "
                "the query."
            ).format(what=what, connection=source.connection)
        ) from None


def _quoted_table(table: str) -> str:
    """``schema.table`` quoted as PostgreSQL reads it (the local read quotes it the same way)."""
    from sqlalchemy import table as table_clause
    from sqlalchemy.dialects import postgresql

    schema, _dot, name = table.rpartition(".")
    return str(postgresql.dialect().identifier_preparer.format_table(table_clause(name, schema=schema or None)))


def _read_like_locally(frame: DataFrame) -> DataFrame:
    """Every column as the local read gives it: numbers as ``double``, anything else as stripped text."""
    fields = []
    for field in frame.schema.fields:
        if isinstance(field.dataType, _NUMBERS):
            fields.append(T.StructField(field.name, T.DoubleType()))
        elif isinstance(field.dataType, _TEXT):
            fields.append(T.StructField(field.name, T.StringType()))
        else:
            raise DataError(
                _(
                    "The column '{column}' could not be read as numbers or as text (it may hold binary data). "
                    "Leave it out with a query that selects only the other columns."
                ).format(column=field.name)
            )
    schema = T.StructType(fields)
    kinds = [pa.float64() if isinstance(f.dataType, T.DoubleType) else pa.string() for f in fields]

    def cleaned(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield _cleaned_batch(batch, kinds)

    return _map_in_arrow(frame, cleaned, schema)


def _cleaned_batch(batch: pa.RecordBatch, kinds: list[pa.DataType]) -> pa.RecordBatch:
    """One JDBC batch through :func:`~dpcore.tables.sql_source.cleaned_chunk`, typed as ``kinds``."""
    columns = []
    for column in batch.columns:
        if pa.types.is_float32(column.type):  # the local driver reads a real from its shortest text: 0.1, not 0.100000001
            column = pc.cast(pc.cast(column, pa.string()), pa.float64())
        columns.append(column)
    frame = cleaned_chunk(pa.RecordBatch.from_arrays(columns, names=batch.schema.names).to_pandas())
    arrays = []
    for name, kind in zip(batch.schema.names, kinds, strict=True):
        values = frame[name]
        if pa.types.is_string(kind) and values.dtype.kind == "f":  # a batch of text cells all missing reads as numbers
            arrays.append(pa.nulls(len(values), pa.string()))
        else:
            arrays.append(pa.array(values, type=kind, from_pandas=True))
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
