"""The randomized-response release on Spark: the local copy, byte for byte, written as parts.

The rows are randomised where they are, by the local code (:func:`~dpcore.release.table.release_chunk`
on each Arrow batch, ``mapInArrow``): every draw is keyed by the copy's secret key and the row's
stable key (:mod:`dpcore.release.randomness`), so a task that Spark retries or recomputes
randomises its rows exactly as before, and a buyer can never be handed two copies of one release.
A Parquet table's tasks read one row group each with pyarrow, as the local reader does, so no
cell crosses the JVM; CSV files and DataFrames come through :func:`dpcore.backends.spark.read_table`,
a PostgreSQL table or query through Spark's JDBC data source
(:func:`dpcore.backends.spark_database.read_database`).

* **The secret order.** Each row carries its keyed 63-bit order word. Rows go to *parts* by the
  word's top bits and are sorted within a part by ``(word, filler?, row key)``, so the parts in
  order are the rows in :func:`~dpcore.release.randomness.secret_order`: the local copy's order.
* **Two passes.** The first counts the rows (and, with a ledger, the table's version
  fingerprint; when padded, a census of the rows' keyed *cut words*); the driver then draws the
  noisy row count and makes the filler rows (keyed by their index). The second randomises,
  sorts and writes.
* **The cut.** A copy cut to a noisy row count keeps the rows with the smallest cut words (a
  stream apart from the order's): the census names the cell of the last one kept, one more small
  pass gathers that cell's rows, and the driver finds the exact last pair, which the second pass
  keeps up to. The kept rows are a uniformly random subset whatever the order, so the parts' sizes
  depend on the noisy count alone, never on where the true count cut the order.
* **Parts.** Each part is written by one task, by pyarrow's CSV writer (the local one), into a
  temporary file renamed into place: a retried task writes the same bytes under the same name.
  The copy is the folder's ``header.csv`` followed by its ``part-NNNNN.csv`` files in name order
  (``cat header.csv part-*.csv`` is the file the local release writes); the buyer's estimator
  reads the folder (:func:`dpcore.release.estimator.read_release`). ``parquet=True`` writes the
  same rows as ``part-NNNNN.parquet`` too.
* **Charged once.** The charge is checked before the parts are written (a fresh copy's before
  a row is read; any other's once the first pass shows it is not stored already), and made on
  the driver only after every part was written, in the ledger's one transaction with the
  stored copy (the parts' rows, appended one part at a time); the folder is renamed into place
  last.

On a cluster the destination must be a folder every worker can write (a shared mount), and
every worker needs ``dpcore`` installed. This module imports pyspark: only ``--engine spark``
loads it.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession

from dpcore.backends.spark import _data_error
from dpcore.budget.accountant import BudgetLedger
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.release import stored
from dpcore.release.columns import quoting
from dpcore.release.estimator import HEADER_FILE, part_file
from dpcore.release.padding import (
    COUNT_EPSILON,
    CUT_BITS,
    last_kept,
    noisy_row_count,
)
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import Draws
from dpcore.release.randomness import entropy as make_entropy
from dpcore.release.result import ReleaseResult
from dpcore.release.spark_shuffle import (
    PART,
    PART_BITS,
    PART_ROWS,
    ROW,
    SOURCE,
    STORED_FOLDER,
    WORD,
    _cell_rows,
    _census,
    _empty,
    _fillers,
    _kept_types,
    _randomised,
    _Source,
    _source,
    _write_parts,
)
from dpcore.release.staging import staging as staged
from dpcore.release.table import Prepared, add_outside, check_columns, fingerprinted, prepare
from dpcore.release.writing import write_csv
from dpcore.tables.schema import Schema
from dpcore.tables.sql_source import SqlSource
from dpcore.validation import RandomStateLike


def release_on_spark(
    spark: SparkSession,
    source: str | os.PathLike[str] | DataFrame | SqlSource,
    destination: str | os.PathLike[str],
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
    parquet: bool = False,
    part_rows: int = PART_ROWS,
) -> ReleaseResult:
    """Release a table on Spark into the folder ``destination``: the copy :func:`~dpcore.release.release_table` makes.

    ``source`` is a Parquet file or folder, a glob of CSV files, a DataFrame (rows keyed by
    :func:`dpcore.backends.spark.read_table`), or a PostgreSQL table or query read over JDBC
    (:func:`dpcore.backends.spark_database.read_database`). For a given seed, ``cat header.csv
    part-*.csv`` is byte for byte the file the local release writes for the same files (each row
    keyed by its file and row within it, :func:`~dpcore.backends.tables.read_table_local`), or
    for the same database rows in the same order. Other parameters as
    in :func:`~dpcore.release.release_table`; ``parquet`` also writes each part as Parquet.

    The folder is written beside ``destination`` (readable by its owner only, so every worker
    must run as the driver's user) and renamed into place only once the copy is charged (or the
    stored copy found); after an error nothing is left behind or charged, and a folder left by a
    killed release is removed when the next one starts (:mod:`dpcore.release.staging`).

    Raises
    ------
    DataError
        The plan does not fit the table, the schema names a privacy-unit column (not yet on
        Spark), or the table has no rows.
    BudgetExceededError
        The copy does not fit in the budget; nothing was charged or written.
    """
    prepared = prepare(schema, plan, ledger=ledger, unit=unit, count_epsilon=count_epsilon)
    if prepared.bound is not None:
        raise DataError(
            _(
                "A table whose people can have several rows (a privacy-unit column) cannot be released on "
                "Spark yet: release it with the local engine."
            )
        )
    treatments, protection = prepared.treatments, prepared.protection
    entropy, seeded = make_entropy(random_state)
    draws = Draws.of(entropy)
    report = prepared.report(seeded)
    new = (
        None
        if ledger is None
        else stored.NewCopy.start(ledger, prepared.charge(plan, label, report), report, quoting(treatments))
    )
    # A fresh copy is checked before a row is read; any other may turn out to be stored, and handed out free.
    early = new.charging() if new is not None and fresh else nullcontext()
    destination = Path(destination)
    with staged(destination.parent, f".{destination.name}.", folder=True) as staging:
        try:
            with early:
                table = _source(spark, source, prepared.columns)
                check_columns(table.columns, treatments)
                kept = _kept_types(table, treatments)
                try:
                    if ledger is not None or protection.padded:
                        fingerprint = fingerprinted(treatments, None) if ledger is not None else None
                        n, version, census = _census(table, draws, fingerprint, protection.padded)
                    else:  # only the number of parts depends on the row count (Parquet footers give it)
                        n = table.rows if table.rows is not None else table.frame.count()
                        version, census = None, np.zeros(1 << CUT_BITS, dtype=np.int64)
                except PythonException as error:
                    raise _data_error(error) from None
                if n == 0:
                    raise DataError(_("The table has no data rows."))
                later: AbstractContextManager[object] = nullcontext()
                if new is not None:
                    assert version is not None
                    new.key = stored.release_key(version, treatments, seeded, entropy, protection, None)
                    found = None if fresh else stored.find(new.ledger, new.key)
                    if found is not None:
                        new.writer.discard()
                        (staging / HEADER_FILE).write_bytes(b"")
                        with open(staging / part_file(0), "wb") as out:
                            for chunk in found.csv_parts():
                                out.write(chunk)
                        _move_into_place(staging, destination)
                        return ReleaseResult.handed_out_again(found.report, path=destination, dataset_id=new.ledger.dataset_id)
                    if not fresh:
                        later = new.charging()
                with later:
                    written, outside = _release_parts(
                        spark, table, kept, staging, prepared, draws, n, census, ledger is not None or parquet, part_rows
                    )
                    if new is not None:
                        new.writer.append(_empty(treatments, kept))  # the schema, even for a copy without rows
                        for part in sorted(p for p, rows in written.items() if rows):
                            new.writer.append(pq.read_table(staging / STORED_FOLDER / part_file(part, "parquet")))
        except BaseException:
            if new is not None:
                new.writer.discard()
            raise
        counts: dict[str, int] = {}
        add_outside(counts, treatments, outside)
        result = ReleaseResult.made(report, notes=prepared.notes(counts, 0), path=destination, n_rows=sum(written.values()))
        if new is not None:
            result.epsilon_charged, result.dataset_id = new.charge.epsilon, new.ledger.dataset_id
        if parquet:
            for parquet_part in (staging / STORED_FOLDER).glob("part-*.parquet"):
                os.replace(parquet_part, staging / parquet_part.name)
        shutil.rmtree(staging / STORED_FOLDER, ignore_errors=True)
        _move_into_place(staging, destination)
        return result


def _release_parts(
    spark: SparkSession,
    table: _Source,
    kept: dict[int, pa.DataType],
    staging: Path,
    prepared: Prepared,
    draws: Draws,
    n: int,
    census: np.ndarray,
    with_parquet: bool,
    part_rows: int,
) -> tuple[dict[int, int], np.ndarray]:
    """Randomise, order and write the parts (padded or cut under add/remove), with the ``kept`` columns' types; the
    rows of every part written, and each column's count of values outside its domain."""
    treatments, protection = prepared.treatments, prepared.protection
    limit = noisy_row_count(n, protection.count_epsilon, draws.entropy) if protection.padded else n
    # Parts of about ``part_rows`` rows, and at least two per core so that every core writes.
    wanted = max(limit / part_rows, 2 * spark.sparkContext.defaultParallelism)
    bits = min(PART_BITS, max(0, int(np.ceil(np.log2(wanted)))))
    shift = 63 - bits
    last = None
    if limit < n:  # the cut keeps the rows of the smallest cut words: the census names their last cell, one pass its rows
        try:
            last = last_kept(census, limit, lambda cell: _cell_rows(table, draws, cell))
        except PythonException as error:
            raise _data_error(error) from None
    rows = _randomised(table, treatments, kept, draws, shift, last)
    if limit > n:
        rows = rows.unionByName(_fillers(spark, treatments, limit - n, draws, shift))
    ordered = rows.repartition(max(1, min(1 << bits, 4 * spark.sparkContext.defaultParallelism)), PART).sortWithinPartitions(
        PART, WORD, SOURCE, ROW
    )
    sink = pa.BufferOutputStream()
    write_csv(_empty(treatments, kept), sink, True, quoting(treatments))
    (staging / HEADER_FILE).write_bytes(sink.getvalue().to_pybytes())
    parquet_folder = None
    if with_parquet:
        parquet_folder = str(staging / STORED_FOLDER)
        os.makedirs(parquet_folder, exist_ok=True)
    try:
        written, outside = _write_parts(ordered, treatments, kept, str(staging), quoting(treatments), parquet_folder)
    except PythonException as error:
        raise _data_error(error) from None
    if sum(written.values()) != limit:
        raise RuntimeError(f"the parts hold {sum(written.values())} rows, the copy {limit}")
    for leftover in staging.glob(".*.tmp"):  # a failed attempt's temporary file (its retry wrote the part)
        leftover.unlink()
    return written, outside


def _move_into_place(staging: Path, destination: Path) -> None:
    """Rename the finished folder to ``destination``, replacing an earlier copy there (never another folder)."""
    old = None
    if destination.exists():
        if not destination.is_dir() or not (destination / HEADER_FILE).exists():
            raise DataError(
                _("'{name}' exists and is not a released copy's folder; choose another output folder.").format(
                    name=destination.name
                )
            )
        old = destination.with_name(f".{destination.name}.{uuid.uuid4().hex}.old")
        os.replace(destination, old)
    os.replace(staging, destination)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
