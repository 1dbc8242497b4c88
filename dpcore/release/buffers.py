"""The plumbing of a streamed release: overlapped reading and writing, and the two-pass shuffle buckets.

:class:`KeptRows` keeps a database's rows as they are first read, so they are read from the
database once; :func:`prefetch` reads the next part in a thread while the caller randomises the current one;
:class:`BackgroundWriter` formats and stores the previous one; :class:`ShuffleBuckets` spills
released rows to disk by their order word and hands them back bucket by bucket, each sorted, so
the copy is in the secret order with memory bounded by one bucket (:mod:`dpcore.release.streaming`).
"""

from __future__ import annotations

import io
import queue
import shutil
import tempfile
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from dpcore.release.padding import cut_mask, in_cell
from dpcore.release.randomness import REAL, signed
from dpcore.release.stored import CopyWriter
from dpcore.release.writing import write_csv

#: Input bytes per shuffle bucket: memory in the second pass stays about this large.
SHUFFLE_BUCKET_BYTES = 64 << 20

_T = TypeVar("_T")


class KeptRows:
    """A table's chunks, kept in temporary Arrow files as they are first read, then read again from there.

    A database's rows are read once for a release: the reading that identifies the dataset keeps
    them (:meth:`keep`), and every later reading, the release's included, comes from these files
    (:meth:`chunks`), so the rows released are the rows identified even while the table is
    written to, and the database is not asked twice. The files, about as large as the table,
    are in the system's temporary folder (readable by this user alone) and removed by :meth:`close`.
    """

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="dpcore-rows-"))
        self.count = 0
        self.complete = False

    def keep(self, chunks: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """``chunks`` passed through, each kept; complete once the last one was passed on."""
        self.count, self.complete = 0, False  # a reading stopped early is kept again from the start
        for chunk in chunks:
            # One file per chunk: a column may come as numbers in one chunk and as text in another.
            table = pa.Table.from_pandas(chunk, preserve_index=False)
            with (
                pa.OSFile(str(self.folder / f"{self.count:08d}.arrow"), "wb") as sink,
                pa.ipc.new_file(sink, table.schema) as out,
            ):
                out.write_table(table)
            self.count += 1
            yield chunk
        self.complete = True

    def chunks(self, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The kept chunks (only ``columns`` when given), as they were read."""
        if not self.complete:
            raise RuntimeError("the rows were not all kept: read them through keep() to the end first")
        for index in range(self.count):
            with pa.memory_map(str(self.folder / f"{index:08d}.arrow")) as source:
                table = pa.ipc.open_file(source).read_all()
            if columns is not None:
                table = table.select(list(columns))
            yield table.to_pandas(types_mapper=_text_type)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _text_type(arrow_type: pa.DataType) -> Any:
    """Text as the readers give it (pyarrow-backed, NaN for missing); every other type as pandas makes it."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pd.StringDtype("pyarrow", na_value=np.nan)
    return None


def prefetch(iterable: Iterable[_T]) -> Generator[_T, None, None]:
    """Iterate ``iterable`` in a background thread, one item ahead (its errors are re-raised here)."""
    items: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def put(item: tuple[Any, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in iterable:
                if not put((item, None)):
                    return
            put((done, None))
        except BaseException as error:  # handed to the consumer, which re-raises it
            put((None, error))

    thread = threading.Thread(target=run, name="dpcore-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = items.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
        thread.join()


class BackgroundWriter:
    """Formats released chunks as CSV and writes them (and the stored copy) in a background thread."""

    def __init__(self, sink: IO[bytes], copy: CopyWriter | None, quoting: str) -> None:
        self.sink, self.copy, self.quoting = sink, copy, quoting
        self.items: queue.Queue[tuple[pa.Table, bool] | None] = queue.Queue(maxsize=1)  # one chunk written while the next is made
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="dpcore-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            if self.error is not None:
                continue
            try:
                table, header = item
                buffer = pa.BufferOutputStream()
                write_csv(table, buffer, header, self.quoting)
                self.sink.write(buffer.getvalue())
                if self.copy is not None:
                    self.copy.append(table)
            except BaseException as error:  # re-raised by put() or close()
                self.error = error

    def put(self, table: pa.Table, header: bool) -> None:
        if self.error is not None:
            raise self.error
        self.items.put((table, header))

    def close(self, raise_errors: bool = True) -> None:
        self.items.put(None)
        self.thread.join()
        if raise_errors and self.error is not None:
            raise self.error


WORD_COLUMN, SOURCE_COLUMN, ROW_COLUMN, CUT_COLUMN = "__order_word__", "__order_source__", "__order_row__", "__cut_word__"


class ShuffleBuckets:
    """The secret row order of a copy larger than memory, in two passes.

    Each released row carries its keyed 63-bit order word (and, to break ties, whether it is a
    filler and its row key). Pass one appends rows to ``n_buckets`` temporary Arrow files by the
    word's top bits; pass two reads one bucket at a time and sorts it. Concatenating the buckets
    in order gives exactly the rows in :func:`~dpcore.release.randomness.secret_order` — the
    order an in-memory sort gives — with memory bounded by one bucket. Rows of a copy that may be
    cut also carry their cut word (:func:`~dpcore.release.padding.cut_words`), so that the cut
    can be made as the buckets are written out.
    """

    def __init__(self, n_buckets: int) -> None:
        # A power of two, so the word's top bits name every bucket exactly.
        bits = max(0, int(n_buckets) - 1).bit_length()
        self.n_buckets = 1 << bits
        self.shift = 63 - bits
        self._directory = tempfile.TemporaryDirectory(prefix="dpcore-shuffle-")
        self._writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        self._files: dict[int, io.BufferedWriter] = {}
        self._schema: pa.Schema | None = None
        self._finished = False

    def add(
        self, table: pa.Table, words: np.ndarray, rows: np.ndarray, source: int = REAL, cuts: np.ndarray | None = None
    ) -> None:
        """Rows of ``table`` with their order words and row keys (``source``: real rows or fillers), and cut words.

        Every ``add`` of a copy gives cut words, or none does.
        """
        table = (
            table.append_column(WORD_COLUMN, pa.array(words, type=pa.int64()))
            .append_column(SOURCE_COLUMN, pa.array(np.full(len(words), source, dtype=np.int8)))
            .append_column(ROW_COLUMN, pa.array(signed(rows), type=pa.int64()))
        )
        if cuts is not None:
            table = table.append_column(CUT_COLUMN, pa.array(cuts, type=pa.int64()))
        self._schema = table.schema
        bucket = words >> self.shift  # non-negative words: one bucket (shift 63) puts every row in bucket 0
        order = np.argsort(bucket, kind="stable")
        table, bucket = table.take(pa.array(order)), bucket[order]
        bounds = np.searchsorted(bucket, np.arange(self.n_buckets + 1))
        for b in range(self.n_buckets):
            if bounds[b + 1] > bounds[b]:
                self._writer(b).write_table(table.slice(bounds[b], bounds[b + 1] - bounds[b]))

    def _writer(self, b: int) -> pa.ipc.RecordBatchStreamWriter:
        if b not in self._writers:
            handle = open(f"{self._directory.name}/{b}.arrow", "wb")  # noqa: SIM115 (closed in tables())
            self._files[b] = handle
            self._writers[b] = pa.ipc.new_stream(handle, self._schema)
        return self._writers[b]

    def _written(self) -> Iterator[pa.Table]:
        """The buckets as written, in order (writing is over)."""
        if not self._finished:
            self._finished = True
            for writer in self._writers.values():
                writer.close()
            for handle in self._files.values():
                handle.close()
        for b in range(self.n_buckets):
            if b in self._writers:
                with pa.memory_map(f"{self._directory.name}/{b}.arrow") as source:
                    yield pa.ipc.open_stream(source).read_all()

    def cell_rows(self, cell: int) -> tuple[np.ndarray, np.ndarray]:
        """The cut words and row keys of the rows in one census cell (:func:`~dpcore.release.padding.last_kept`)."""
        found = [
            in_cell(table.column(CUT_COLUMN).to_numpy(), table.column(ROW_COLUMN).to_numpy().view(np.uint64), cell)
            for table in self._written()
        ]
        return (
            np.concatenate([np.empty(0, dtype=np.int64)] + [words for words, _rows in found]),
            np.concatenate([np.empty(0, dtype=np.uint64)] + [rows for _words, rows in found]),
        )

    def tables(self, last: tuple[int, int] | None = None) -> Iterator[pa.Table]:
        """The buckets in order, each sorted, without the order's columns; with ``last``, only the rows a cut keeps."""
        keys = [(WORD_COLUMN, "ascending"), (SOURCE_COLUMN, "ascending"), (ROW_COLUMN, "ascending")]
        for table in self._written():
            table = table.take(pc.sort_indices(table, sort_keys=keys))
            if last is not None:
                rows = table.column(ROW_COLUMN).to_numpy().view(np.uint64)
                table = table.filter(pa.array(cut_mask(table.column(CUT_COLUMN).to_numpy(), rows, last)))
            yield table.drop_columns([name for name in table.column_names if name in (*dict(keys), CUT_COLUMN)])

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._directory.cleanup()
