"""Tables kept in files, read in parts: which files, in which order, and the design numbers of each part.

A table too large for one process is a Parquet file, a directory of Parquet files or a glob of
CSV files. Every backend must see the same rows under the same row keys, so the files are
listed in one stable order (:func:`list_table_files`: sorted paths) and a row's key is
``file ordinal · 2^40 + row index within the file`` (:func:`dpcore.mechanisms.keyed.file_row_keys`).

Every part of the table is turned into numbers by :func:`design_batch`, a row-by-row function
that gives exactly the numbers :meth:`dpcore.tables.design.Design.from_table` gives for those rows; the
cells reach it through :func:`arrow_frame`, whose column types do not depend on which rows a
part holds (an integer column stays integer when a part has a missing value), so a part of any
size, read by any backend, gives each row the same numbers.

CSV files are read as text (stripped, the missing-value words of :mod:`dpcore.tables.csv_reading`
missing) by one reader (:func:`csv_file_batches`) that the Spark backend runs too, one file per
task, so a CSV row means the same on every backend. This module never imports pyspark.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from dpcore.backends.rows import LocalRows
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms.keyed import file_row_keys
from dpcore.tables.csv_reading import read_chunks, sniff_file
from dpcore.tables.schema import Normaliser, Schema

PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
#: Rows per part when a file is read in parts (a CSV chunk, a Parquet batch).
PART_ROWS = 1 << 16


def _hidden(path: str) -> bool:
    # Spark and Hadoop leave _SUCCESS, _metadata and .crc files beside the parts.
    return os.path.basename(path).startswith(("_", "."))


def list_table_files(source: str | os.PathLike[str]) -> list[str]:
    """The files of a table, in the stable order that numbers them (absolute paths, sorted).

    ``source`` is a Parquet file, a directory of Parquet (or CSV) files, or a glob of CSV (or
    Parquet) files. Hidden files (``_SUCCESS``, ``.crc``) are skipped.

    Raises
    ------
    DataError
        If nothing matches, or the files mix Parquet and CSV.
    """
    text = os.fspath(source)
    if os.path.isdir(text):
        paths = [os.path.join(text, name) for name in os.listdir(text)]
    elif os.path.isfile(text):
        paths = [text]
    else:
        paths = glob.glob(text)
    files = sorted(os.path.abspath(p) for p in paths if os.path.isfile(p) and not _hidden(p))
    if not files:
        raise DataError(
            _(
                "No table files were found at '{source}'. Give a Parquet file, a folder of Parquet files or a "
                "pattern of CSV files."
            ).format(source=Path(text).name)
        )
    formats = {file_format(p) for p in files}
    if len(formats) > 1:
        raise DataError(_("The table's files mix Parquet and CSV. Keep one format per table."))
    return files


def file_format(path: str) -> str:
    """``"parquet"`` or ``"csv"``, by the file's name."""
    return "parquet" if path.lower().endswith(PARQUET_SUFFIXES) else "csv"


# --- cells → pandas, the same types whatever the part ---------------------------------------------


def _pandas_type(arrow_type: pa.DataType) -> Any:
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def arrow_frame(cells: pa.RecordBatch | pa.Table) -> pd.DataFrame:
    """Cells as a pandas table whose column types depend on the Arrow types only, never on the rows.

    pyarrow turns an integer column into floats when the part holds a missing value, and a
    category ``1`` would then read ``1.0``: integers and booleans become pandas' nullable types.
    """
    columns = {}
    for name, column in zip(cells.schema.names, cells.columns):
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        columns[name] = column
    table = pa.table(columns)
    return table.to_pandas(types_mapper=_pandas_type)


# --- reading files --------------------------------------------------------------------------------


class _Everything:
    """A container holding every name: read_chunks then reads every column as (dictionary) text."""

    def __contains__(self, item: object) -> bool:
        return True


def csv_file_batches(path: str, part_rows: int = PART_ROWS) -> Iterator[pa.RecordBatch]:
    """A CSV file as record batches of text columns (stripped; missing-value words are missing), in order."""
    encoding, delimiter = sniff_file(path)
    try:
        for frame, _done in read_chunks(path, encoding, delimiter, part_rows, categorical=_Everything()):
            yield pa.RecordBatch.from_pydict(
                {str(name): pa.array(frame[name].astype(object), type=pa.string(), from_pandas=True) for name in frame.columns}
            )
    except UnicodeDecodeError:
        raise DataError(_("The file's text could not be decoded. Save it as UTF-8 and try again.")) from None


def parquet_file(path: str) -> pq.ParquetFile:
    """A Parquet file opened for reading, or a sentence naming it (never a cell)."""
    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid):
        raise DataError(_("The file '{name}' could not be read as Parquet.").format(name=Path(path).name)) from None


def file_batches(path: str, part_rows: int = PART_ROWS) -> Iterator[pa.RecordBatch]:
    """The rows of one table file as record batches, in the file's order."""
    if file_format(path) == "csv":
        yield from csv_file_batches(path, part_rows)
        return
    yield from parquet_file(path).iter_batches(batch_size=part_rows)


def file_columns(path: str) -> list[str]:
    """A table file's column names (a Parquet footer, or a CSV's first part)."""
    if file_format(path) == "parquet":
        return list(parquet_file(path).schema_arrow.names)
    first = next(csv_file_batches(path, part_rows=1), None)
    if first is None:
        raise DataError(_("The file '{name}' has no rows.").format(name=Path(path).name))
    return list(first.schema.names)


def table_columns(files: list[str]) -> list[str]:
    """The columns every file of the table has (a sentence if two files disagree)."""
    names = file_columns(files[0])
    for path in files[1:]:
        if file_columns(path) != names:
            raise DataError(_("The table's files do not all have the same columns. Give files of one table."))
    return names


def keyed_batches(files: list[str], part_rows: int = PART_ROWS) -> Iterator[tuple[pa.RecordBatch, NDArray[np.uint64]]]:
    """``(cells, row keys)`` for every part of every file, in file order."""
    for ordinal, path in enumerate(files):
        first = 0
        for cells in file_batches(path, part_rows):
            yield cells, file_row_keys(ordinal, first, cells.num_rows)
            first += cells.num_rows


def row_groups(files: list[str]) -> list[tuple[int, str, int, int, int]]:
    """Every row group of Parquet ``files`` as ``(file ordinal, path, group, first row in file, rows)``, from the footers."""
    groups = []
    for ordinal, path in enumerate(files):
        metadata, first = parquet_file(path).metadata, 0
        for group in range(metadata.num_row_groups):
            rows = metadata.row_group(group).num_rows
            groups.append((ordinal, path, group, first, rows))
            first += rows
    return groups


def row_group_batches(
    ordinal: int, path: str, group: int, first: int, columns: list[str], batch_rows: int, start: int = 0, stop: int | None = None
) -> Iterator[tuple[pa.RecordBatch, NDArray[np.uint64]]]:
    """``(cells, row keys)`` of rows ``start … stop`` of one Parquet row group, ``batch_rows`` at a time.

    The keys are those :func:`keyed_batches` gives the same rows, so a reader of row groups (a
    Spark task) and a reader of whole files agree row for row.
    """
    cells = parquet_file(path).read_row_group(group, columns=columns)
    cells = cells.slice(start, (cells.num_rows if stop is None else stop) - start)
    first += start
    for part in cells.to_batches(max_chunksize=batch_rows):
        if part.num_rows:
            yield part, file_row_keys(ordinal, first, part.num_rows)
            first += part.num_rows


def read_table_local(source: str | os.PathLike[str]) -> tuple[pd.DataFrame, NDArray[np.uint64]]:
    """The whole table in memory, as :func:`arrow_frame` gives it, with each row's key."""
    files = list_table_files(source)
    names = table_columns(files)
    parts = list(keyed_batches(files))
    if not parts:
        return pd.DataFrame(columns=names), np.empty(0, dtype=np.uint64)
    table = (
        pa.Table.from_batches([cells for cells, _keys in parts])
        if len(parts) == 1
        else pa.concat_tables([pa.Table.from_batches([cells]) for cells, _keys in parts], promote_options="default")
    )
    return arrow_frame(table), np.concatenate([keys for _cells, keys in parts])


# --- design numbers, part by part -----------------------------------------------------------------


def check_partwise(schema: Schema, columns: list[str] | None = None) -> None:
    """Raise a sentence if ``schema`` cannot be used on a table read in parts (``columns``: the table's).

    A privacy unit needs every row of a person at once to keep at most ``rows_per_person`` of
    them, which parts read apart cannot give.
    """
    schema.check(need_target=True)
    if schema.privacy_unit is not None:
        raise DataError(
            _("A table with a privacy-unit column (several rows per person) cannot be read in parts yet: fit it on one machine.")
        )
    if columns is not None:
        missing = [spec.name for spec in schema.columns if spec.role in ("feature", "target") and spec.name not in columns]
        if missing:
            raise DataError(_("Column '{column}' is declared but not in the table.").format(column=missing[0]))


def design_batch(
    frame: pd.DataFrame, schema: Schema, encoding: str = "ordinal"
) -> tuple[NDArray[np.float64], NDArray[Any], NDArray[np.bool_]]:
    """``(X, y, keep)`` of some rows: exactly the numbers :meth:`Design.from_table` gives for them.

    ``keep`` marks the rows with a usable target; ``X`` and ``y`` are those rows' features and
    target. Each row's numbers depend on that row only, so parts can be designed apart.

    Raises
    ------
    DataError
        If a column declared numeric holds text (the sentence names the column, never a cell).
    """
    schema.check(frame, need_target=True)
    normaliser = Normaliser(schema, encoding=encoding)
    y, keep = normaliser.target(frame)
    return normaliser.features(frame[keep]), y, keep


def read_rows_local(source: str | os.PathLike[str], schema: Schema, encoding: str = "ordinal") -> LocalRows:
    """A table's files as :class:`LocalRows` of design numbers, keyed like every backend keys them."""
    files = list_table_files(source)
    check_partwise(schema, table_columns(files))
    d = len(Normaliser(schema, encoding=encoding).feature_names())
    X, y, keys = [np.empty((0, d))], [], [np.empty(0, dtype=np.uint64)]
    for cells, row_keys in keyed_batches(files):
        features, target, keep = design_batch(arrow_frame(cells), schema, encoding)
        X.append(features)
        y.append(target)
        keys.append(row_keys[keep])
    numeric = schema.task == "regression"
    target_all = np.concatenate(y) if y else np.empty(0, dtype=float if numeric else str)
    return LocalRows(np.concatenate(X), target_all, np.concatenate(keys))
