"""Releasing a CSV file (or a table kept in Parquet or CSV files, or read from a database) of any size, part by part, in bounded memory.

Three stages overlap: a thread reads and parses the next part (:func:`prefetch`), the calling
thread randomises the current one, and a writer thread formats and stores the previous one
(:class:`BackgroundWriter`). The released rows are put in the secret order in two passes
(:class:`ShuffleBuckets`), so for a given seed the file equals
:func:`~dpcore.release.table.release_table` on the whole table, whatever the chunk size
(:func:`release_csv`), and a table in files gives the Spark release's copy (:func:`release_files`).

A CSV file can also be read once for both the copy and the dataset it is charged to
(:class:`DatasetOnRead`): the reading thread hashes each chunk into the dataset's
identification as it parses it, the rows are randomised into the buckets before the dataset is
known (their randomness depends on the seed and the rows' keys alone), and the copy is written
out of the buckets inside the ledger's spend once the dataset is opened.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from dpcore.budget.accountant import REPLACE_ONE, BudgetLedger
from dpcore.budget.datasets import Catalog, TableMatch, TableReading
from dpcore.budget.identity import HashedColumn, VersionFingerprint, hashed_row_keys
from dpcore.budget.persons import person_keys
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.release import stored
from dpcore.release.buffers import SHUFFLE_BUCKET_BYTES, BackgroundWriter, ShuffleBuckets, prefetch
from dpcore.release.columns import Treatment, quoting
from dpcore.release.contributions import PersonBound, keep_mask, scan_units
from dpcore.release.padding import (
    COUNT_EPSILON,
    CUT_BITS,
    cut_census,
    cut_words,
    filler_rows,
    last_kept,
    noisy_row_count,
)
from dpcore.release.plan import ReleasePlan
from dpcore.release.randomness import FILLER, Draws, order_words, positions
from dpcore.release.randomness import entropy as make_entropy
from dpcore.release.result import ReleaseResult
from dpcore.release.staging import staging
from dpcore.release.stored import CopyWriter
from dpcore.release.table import Prepared, add_outside, check_columns, fingerprinted, prepare, release_chunk
from dpcore.tables.csv_reading import DEFAULT_CHUNKSIZE, read_chunks, read_plainly, sniff_file
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike


def _keep_mask(
    source: Path, encoding: str, delimiter: str, chunksize: int, bound: PersonBound | None, entropy: int
) -> tuple[np.ndarray | None, np.ndarray]:
    """The rows to keep, at most ``k`` per person (None: every row), and each row's person: a first pass.

    The mask is drawn on the whole column at once, exactly as the in-memory release draws it,
    so both keep the same rows for a given seed. The keys let the second pass check that every
    row still belongs to the person the mask was drawn for.
    """
    if bound is None:
        return None, np.empty(0, dtype=np.uint64)
    frames = (frame for frame, _ in read_chunks(source, encoding, delimiter, chunksize, {bound.column}, {bound.column}))
    keys = scan_units(frames, bound)
    return (keep_mask(keys, bound, entropy) if keys.size else None), keys


def _changed() -> DataError:
    return DataError(_("The file changed while it was being released. Release it again once nothing is writing to it."))


def _table_changed() -> DataError:
    return DataError(
        _(
            "The table or query gave other rows while it was being released than when it was identified. Release it "
            "again once nothing is writing to the table; a query must give the same rows each time (no random() or "
            "LIMIT without ORDER BY)."
        )
    )


#: A part of the table as the streamed release reads it: the cells (for the fingerprint), the rows to
#: randomise (at most ``k`` per person), their row keys, how far the reading has come, and the cells'
#: hashes when the read also identifies the dataset (:class:`~dpcore.budget.datasets.TableReading`).
Part = tuple[pd.DataFrame, pd.DataFrame, np.ndarray, int, "dict[str, HashedColumn] | None"]


def _csv_parts(
    source: Path,
    encoding: str,
    delimiter: str,
    prepared: Prepared,
    entropy: int,
    chunksize: int,
    reading: TableReading | None = None,
) -> Iterator[Part]:
    """A CSV file's chunks; each row's key is its position in the file, as in the in-memory release.

    With a privacy-unit column, a first pass reads the unit column and draws which rows to keep;
    the second keeps them by row position (with their own keys). With ``reading``, every column
    is read and each chunk, as :func:`~dpcore.tables.csv_reading.file_chunks` reads it, is hashed
    into the dataset's identification on the way (in the reading thread).
    """
    treatments, bound = prepared.treatments, prepared.bound
    mask, keys = _keep_mask(source, encoding, delimiter, chunksize, bound, entropy)
    categorical = {t.name for t in treatments if t.mechanism in ("coin", "k-ary")}
    # Only the columns the copy or its key reads are converted: dropped identifiers are skipped, unless the
    # dataset is identified by this read. Numbers are then read as the identification reads them, as text first.
    needed = None if reading is not None else set(fingerprinted(treatments, bound))
    numeric = set() if reading is not None else {t.name for t in treatments if t.mechanism in ("bins", "laplace")}
    rows = 0
    for frame, done in read_chunks(source, encoding, delimiter, chunksize, categorical, needed, numeric):
        hashed = None if reading is None else dict(zip(frame.columns, reading.add(read_plainly(frame)), strict=True))
        part, part_rows = frame, positions(rows, len(frame))
        if mask is not None and bound is not None:
            # Rewritten between the passes (even to as many rows), rows could move to other people.
            if rows + len(frame) > len(mask) or (person_keys(frame[bound.column]) != keys[rows : rows + len(frame)]).any():
                raise _changed()
            chosen = mask[rows : rows + len(frame)]
            part, part_rows = frame.loc[chosen, prepared.columns].reset_index(drop=True), part_rows[chosen]
        yield frame, part, part_rows, done, hashed
        rows += len(frame)
    if mask is not None and rows != len(mask):
        raise _changed()


def _file_parts(files: list[str]) -> Iterator[Part]:
    """The parts of a table kept in files, keyed by file and row (:func:`~dpcore.backends.tables.keyed_batches`)."""
    from dpcore.backends.tables import arrow_frame, keyed_batches

    done = 0
    for cells, keys in keyed_batches(files):
        frame = arrow_frame(cells)
        done += cells.nbytes
        yield frame, frame, keys, done, None


def _frame_parts(
    batches: Callable[[list[str] | None], Iterable[pd.DataFrame]],
    prepared: Prepared,
    entropy: int,
    row_bytes: int,
) -> Iterator[Part]:
    """A table read as DataFrame chunks (a database's rows); each row's key is its position, as in a CSV file.

    ``batches(columns)`` reads the rows again at each call (only ``columns`` when given). With a
    privacy-unit column, a first pass reads that column and draws which rows to keep, as
    :func:`_csv_parts` does; a table whose rows moved between the passes is refused.
    """
    bound = prepared.bound
    mask, keys = None, np.empty(0, dtype=np.uint64)
    if bound is not None:
        keys = scan_units(iter(batches([bound.column])), bound)
        mask = keep_mask(keys, bound, entropy) if keys.size else None
    rows = 0
    for frame in batches(None):
        part, part_rows = frame, positions(rows, len(frame))
        if mask is not None and bound is not None:
            if rows + len(frame) > len(mask) or (person_keys(frame[bound.column]) != keys[rows : rows + len(frame)]).any():
                raise _table_changed()
            chosen = mask[rows : rows + len(frame)]
            part, part_rows = frame.loc[chosen, prepared.columns].reset_index(drop=True), part_rows[chosen]
        rows += len(frame)
        yield frame, part, part_rows, rows * row_bytes, None
    if mask is not None and rows != len(mask):
        raise _table_changed()


@dataclass
class _Randomised:
    """A streamed copy after its first pass: the randomised rows in their buckets of the secret order, and their counts.

    ``census`` counts the rows' cut words (None when the copy cannot be cut); ``fingerprint`` is
    the released columns' version fingerprint (None when no copy is stored).
    """

    buckets: ShuffleBuckets
    census: np.ndarray | None
    outside: dict[str, int]
    rows: int
    kept: int
    fingerprint: str | None

    def close(self) -> None:
        self.buckets.close()


def _randomise(
    parts: Iterable[Part],
    treatments: list[Treatment],
    bound: PersonBound | None,
    draws: Draws,
    total: int,
    progress: Callable[[int, int], None] | None,
    *,
    cuts: bool,
    fingerprint: bool,
) -> _Randomised:
    """Pass one: randomise every part into the buckets of the secret order (``cuts``: with the rows' cut words).

    ``total`` is the table's size in bytes, the unit of the parts' progress. The copy's
    randomness depends only on the draws' key and the rows' keys, never on the dataset the copy
    is charged to, so the rows can be randomised before the dataset is known.
    """
    version = VersionFingerprint() if fingerprint else None
    covered = fingerprinted(treatments, bound)
    outside: dict[str, int] = {}
    rows = kept = 0
    buckets = ShuffleBuckets(math.ceil(total / SHUFFLE_BUCKET_BYTES))
    census = np.zeros(1 << CUT_BITS, dtype=np.int64) if cuts else None
    chunks = prefetch(parts)
    try:
        for frame, part, part_rows, done, hashed in chunks:
            if rows == 0:
                check_columns(frame.columns, treatments)
            released, flags = release_chunk(part, part_rows, treatments, draws.key)
            add_outside(outside, treatments, flags.sum(axis=0))
            words = cut_words(draws.key, part_rows) if census is not None else None
            if words is not None and census is not None:
                census += cut_census(words)
            buckets.add(released, order_words(draws.key, part_rows), part_rows, cuts=words)
            if version is not None and hashed is not None:  # the cells were hashed by the dataset's identification
                version.add_keys(hashed_row_keys([hashed[name] for name in covered], len(frame)), len(frame))
            elif version is not None:
                version.add(frame, covered)
            rows += len(frame)
            kept += len(part)
            if progress is not None:
                progress(min(done, total), total)
        if rows == 0:
            raise DataError(_("The file has a header but no data rows."))
    except BaseException:
        buckets.close()
        raise
    finally:
        chunks.close()
    return _Randomised(buckets, census, outside, rows, kept, None if version is None else version.hexdigest())


def _write(randomised: _Randomised, sink: IO[bytes], prepared: Prepared, draws: Draws, copy: CopyWriter | None) -> int:
    """Pass two: the buckets written out in order into ``sink`` (and ``copy``); returns the rows written.

    A padded copy gets its filler rows after the last part, or is cut to the noisy row count as
    it is written: the rows with the smallest cut words are kept, found from a census of those
    words and one cell's rows (:func:`~dpcore.release.padding.last_kept`), exactly the rows the
    in-memory release keeps.
    """
    treatments, protection, buckets, kept = prepared.treatments, prepared.protection, randomised.buckets, randomised.kept
    limit, last = kept, None
    if protection.padded:
        assert randomised.census is not None  # a copy that may be padded is randomised with its cut words
        limit = noisy_row_count(kept, protection.count_epsilon, draws.entropy)
        if limit > kept:
            fillers, filler_keys, filler_words = filler_rows(treatments, limit - kept, draws.key)
            # Fillers come only when nothing is cut: their cut words are never read.
            buckets.add(fillers, filler_words, filler_keys, FILLER, cuts=np.zeros(len(filler_keys), dtype=np.int64))
        elif limit < kept:
            last = last_kept(randomised.census, limit, buckets.cell_rows)
    writer = BackgroundWriter(sink, copy, quoting(treatments))
    failed, written = True, 0
    try:
        for index, table in enumerate(buckets.tables(last)):
            if index == 0 or table.num_rows:
                writer.put(table, header=index == 0)
            written += table.num_rows
        failed = False
    finally:
        writer.close(raise_errors=not failed)
    if written != limit:
        raise RuntimeError(f"the copy holds {written} rows, not {limit}")
    return written


def _stream(
    parts: Iterable[Part],
    sink: IO[bytes],
    prepared: Prepared,
    draws: Draws,
    total: int,
    copy: CopyWriter | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[str | None, dict[str, int], int, int]:
    """Release the parts into ``sink``; return the fingerprint (with a copy to store), the outside counts, the number of
    rows the person bound left out and the rows written (:func:`_randomise`, then :func:`_write`)."""
    randomised = _randomise(
        parts,
        prepared.treatments,
        prepared.bound,
        draws,
        total,
        progress,
        cuts=prepared.protection.padded,
        fingerprint=copy is not None,
    )
    try:
        written = _write(randomised, sink, prepared, draws, copy)
    finally:
        randomised.close()
    return randomised.fingerprint, randomised.outside, randomised.rows - randomised.kept, written


def release_csv(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    chunksize: int = DEFAULT_CHUNKSIZE,
    progress: Callable[[int, int], None] | None = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
    dataset: DatasetOnRead | None = None,
) -> ReleaseResult:
    """Release a CSV file of any size into ``destination``, chunk by chunk.

    Memory stays bounded by ``chunksize`` rows and one shuffle bucket (plus, when the schema
    names a privacy-unit column, a first pass over that column holding about eight bytes per row
    of the file, and briefly about fifty while the rows to keep are drawn). For a given seed the
    file equals :func:`~dpcore.release.table.release_table` on the whole table, whatever
    ``chunksize``. Other parameters as in :func:`~dpcore.release.table.release_table`;
    ``progress`` is called with ``(bytes_read, total_bytes)`` after every chunk.

    The copy is written to a temporary file beside ``destination`` (readable by its owner only)
    and renamed only once it has been charged (or the stored copy found); after any error no file
    is left behind, and one left by a killed release is removed when the next one starts
    (:mod:`~dpcore.release.staging`).

    With ``dataset`` instead of ``ledger``, the file is read once for both the copy and the
    dataset it is charged to (:class:`DatasetOnRead`); the copy is the same as with that
    dataset's ledger given.
    """
    source = Path(source)
    if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
        raise ValueError(f"chunksize must be a whole number >= 1, got {chunksize!r}")
    encoding, delimiter = sniff_file(source)
    if dataset is not None:
        if ledger is not None:
            raise ValueError("give a ledger or a dataset to find on the read, not both")
        randomised = _IdentifiedRelease(source, encoding, delimiter, chunksize, schema, plan, unit, count_epsilon)
        return randomised.release(destination, dataset, fresh, random_state, progress, label)
    prepared = prepare(schema, plan, ledger=ledger, unit=unit, count_epsilon=count_epsilon)

    def parts(attempt: str, entropy: int) -> Iterator[Part]:
        return _csv_parts(source, attempt, delimiter, prepared, entropy, chunksize)

    return _release_streamed(
        parts,
        list(dict.fromkeys([encoding, "latin-1"])),
        max(source.stat().st_size, 1),
        destination,
        plan,
        prepared,
        ledger=ledger,
        fresh=fresh,
        random_state=random_state,
        progress=progress,
        label=label,
    )


def release_files(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    progress: Callable[[int, int], None] | None = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
) -> ReleaseResult:
    """Release a table kept in files — a Parquet file or folder, or a glob of CSV files — into one CSV file, part by part.

    The local engine's counterpart of :func:`dpcore.release.spark.release_on_spark`:
    rows are keyed by their file and row (:func:`~dpcore.backends.tables.list_table_files`'s
    order), so for a given seed the file is the Spark copy's joined parts, and
    :func:`~dpcore.release.table.release_table` of :func:`~dpcore.backends.tables.read_table_local`
    with its row keys. Memory stays bounded by a part and a shuffle bucket. A table whose people
    can have several rows (a privacy-unit column) is released by :func:`release_csv` or
    :func:`~dpcore.release.table.release_table`. Other parameters as in
    :func:`~dpcore.release.table.release_table`.
    """
    from dpcore.backends.tables import file_format, list_table_files

    prepared = prepare(schema, plan, ledger=ledger, unit=unit, count_epsilon=count_epsilon)
    if prepared.bound is not None:
        raise DataError(
            _(
                "A table in parts whose people can have several rows (a privacy-unit column) cannot be released "
                "part by part yet: release it as one CSV file."
            )
        )
    files = list_table_files(source)
    # Parquet is compressed: about four bytes in memory for each byte on disk.
    total = max(sum(os.path.getsize(f) * (4 if file_format(f) == "parquet" else 1) for f in files), 1)
    return _release_streamed(
        lambda _attempt, _entropy: _file_parts(files),
        [""],
        total,
        Path(destination),
        plan,
        prepared,
        ledger=ledger,
        fresh=fresh,
        random_state=random_state,
        progress=progress,
        label=label,
    )


def release_batches(
    batches: Callable[[list[str] | None], Iterable[pd.DataFrame]],
    n_rows: int,
    destination: str | os.PathLike[str],
    schema: Schema,
    plan: ReleasePlan,
    *,
    ledger: BudgetLedger | None = None,
    fresh: bool = False,
    random_state: RandomStateLike = None,
    progress: Callable[[int, int], None] | None = None,
    label: str = "randomized-response release",
    unit: str | None = None,
    count_epsilon: float = COUNT_EPSILON,
) -> ReleaseResult:
    """Release a table read as DataFrame chunks — a database's rows (:meth:`dpcore.tables.sql_source.SqlSource.batches`).

    Rows are keyed by their position, as a CSV file's are, so for a given seed the copy equals
    :func:`release_csv`'s of the table's CSV export (with the same rows in the same order), whatever
    the chunk size. ``batches(columns)`` reads the table again at each call (only ``columns`` when
    given: the first pass of a privacy-unit column); ``n_rows`` (the database's count) sizes the
    shuffle buckets and the progress, which counts about 16 bytes per cell; the command line reads
    the rows it identified the dataset by (:class:`~dpcore.release.buffers.KeptRows`), so the copy
    is charged to the dataset of the very rows it is made of. Other parameters as in
    :func:`~dpcore.release.table.release_table`.
    """
    prepared = prepare(schema, plan, ledger=ledger, unit=unit, count_epsilon=count_epsilon)
    row_bytes = 16 * max(len(schema.columns), 1)
    return _release_streamed(
        lambda _attempt, entropy: _frame_parts(batches, prepared, entropy, row_bytes),
        [""],
        max(n_rows * row_bytes, 1),
        Path(destination),
        plan,
        prepared,
        ledger=ledger,
        fresh=fresh,
        random_state=random_state,
        progress=progress,
        label=label,
    )


def _hand_out_stored(new: stored.NewCopy, key: str, fresh: bool, temporary: Path, destination: Path) -> ReleaseResult | None:
    """The stored copy of the same rows, plan and randomness, written into ``temporary`` to be handed out again free
    (its new copy's writer discarded); None when there is none, or a ``fresh`` copy was asked for."""
    found = None if fresh else stored.find(new.ledger, key)
    if found is None:
        return None
    new.writer.discard()
    with open(temporary, "wb") as out:
        for part in found.csv_parts():
            out.write(part)
    result = ReleaseResult.handed_out_again(found.report, path=destination)
    result.epsilon_charged = 0.0
    return result


def _release_streamed(
    parts_of: Callable[[str, int], Iterator[Part]],
    encodings: list[str],
    total: int,
    destination: str | os.PathLike[str],
    plan: ReleasePlan,
    prepared: Prepared,
    *,
    ledger: BudgetLedger | None,
    fresh: bool,
    random_state: RandomStateLike,
    progress: Callable[[int, int], None] | None,
    label: str,
) -> ReleaseResult:
    """The streamed release's steps around :func:`_stream`: the budget, the stored copy, the file renamed into place.

    ``parts_of(encoding, entropy)`` reads the table; a text that does not decode is read again
    in the next of ``encodings``.
    """
    destination = Path(destination)
    treatments, protection = prepared.treatments, prepared.protection
    entropy, seeded = make_entropy(random_state)
    report = prepared.report(seeded)
    new = (
        None
        if ledger is None
        else stored.NewCopy.start(ledger, prepared.charge(plan, label, report), report, quoting(treatments))
    )
    # A fresh copy is checked before a row is read; any other may turn out to be stored, and handed out free.
    early = new.charging() if new is not None and fresh else nullcontext()
    with staging(destination.parent, f".{destination.name}.", folder=False) as temporary:
        try:
            with early:
                with open(temporary, "wb") as sink:
                    for attempt in encodings:
                        try:
                            copy = None if new is None else new.writer
                            fingerprint, outside, left_out, n_rows = _stream(
                                parts_of(attempt, entropy), sink, prepared, Draws.of(entropy), total, copy, progress
                            )
                            break
                        except UnicodeDecodeError:
                            if attempt == encodings[-1]:
                                raise DataError(
                                    _("The file's text could not be decoded. Save it as UTF-8 and try again.")
                                ) from None
                            sink.seek(0)
                            sink.truncate()
                            if new is not None:
                                new.restart()
                result = ReleaseResult.made(report, notes=prepared.notes(outside, left_out), path=destination, n_rows=n_rows)
                if new is not None:
                    assert fingerprint is not None  # computed with the ledger
                    new.key = stored.release_key(fingerprint, treatments, seeded, entropy, protection, prepared.bound)
                    again = _hand_out_stored(new, new.key, fresh, temporary, destination)
                    if again is not None:
                        result = again
                    else:
                        if not fresh:
                            with new.charging():
                                pass  # its rows are read: checked and charged at once
                        result.epsilon_charged = new.charge.epsilon
                    result.dataset_id = new.ledger.dataset_id
        except BaseException:
            if new is not None:
                new.writer.discard()
            raise
        os.replace(temporary, destination)
        return result


@dataclass(frozen=True)
class DatasetOnRead:
    """How a streamed release finds the dataset it is charged to from its own read of the file.

    Parameters
    ----------
    catalog : Catalog
        The ledger's datasets, which the table is matched against as it is read.
    open : callable
        ``open(match, n_rows)``: the ledger of the dataset the table was identified as
        (:meth:`~dpcore.budget.datasets.Catalog.open_match`), given the file's row count; it may
        refuse with an exception, and then nothing is released or charged.
    """

    catalog: Catalog
    open: Callable[[TableMatch, int], BudgetLedger]


@dataclass(frozen=True)
class _IdentifiedRelease:
    """A CSV file's copy made from one read that also identifies its dataset (:func:`release_csv` with ``dataset``).

    The read hashes every chunk for the dataset's identification and randomises it into the
    buckets of the secret order (the copy's randomness depends on the seed and the rows' keys
    alone, not on the dataset). Then the dataset is identified and opened, the copy's unit and
    cost are settled by it, and the copy is written into a temporary file beside the
    destination inside the ledger's spend (:meth:`~dpcore.release.stored.NewCopy.charging`):
    checked before, charged once it is written. Only then is it renamed into place; a refusal
    (of the dataset, of the noise, of the budget) leaves no file and spends nothing.
    """

    source: Path
    encoding: str
    delimiter: str
    chunksize: int
    schema: Schema
    plan: ReleasePlan
    unit: str | None
    count_epsilon: float

    def release(
        self,
        destination: str | os.PathLike[str],
        dataset: DatasetOnRead,
        fresh: bool,
        random_state: RandomStateLike,
        progress: Callable[[int, int], None] | None,
        label: str,
    ) -> ReleaseResult:
        destination = Path(destination)
        # Before the dataset is known: its treatments and person bound (the unit comes with the dataset).
        unread = prepare(self.schema, self.plan, unit=self.unit or REPLACE_ONE, count_epsilon=self.count_epsilon)
        entropy, seeded = make_entropy(random_state)
        draws = Draws.of(entropy)
        with staging(destination.parent, f".{destination.name}.", folder=False) as temporary:
            with TableReading(dataset.catalog) as reading:
                parts = _csv_parts(self.source, self.encoding, self.delimiter, unread, entropy, self.chunksize, reading)
                try:
                    randomised = _randomise(
                        parts, unread.treatments, unread.bound, draws, max(self.source.stat().st_size, 1), progress,
                        cuts=True, fingerprint=True,
                    )  # fmt: skip
                except UnicodeDecodeError:
                    raise DataError(_("The file's text could not be decoded. Save it as UTF-8 and try again.")) from None
                try:
                    match = reading.match()
                except BaseException:
                    randomised.close()
                    raise
            try:
                result = self._charged(
                    temporary, destination, randomised, dataset.open(match, randomised.rows), draws, fresh, seeded, label
                )
            finally:
                randomised.close()
            os.replace(temporary, destination)
            return result

    def _charged(
        self,
        temporary: Path,
        destination: Path,
        randomised: _Randomised,
        ledger: BudgetLedger,
        draws: Draws,
        fresh: bool,
        seeded: bool,
        label: str,
    ) -> ReleaseResult:
        """The copy written into ``temporary`` and charged to ``ledger`` (or the stored copy of the same rows and plan)."""
        prepared = prepare(self.schema, self.plan, ledger=ledger, unit=self.unit, count_epsilon=self.count_epsilon)
        report = prepared.report(seeded)
        new = stored.NewCopy.start(ledger, prepared.charge(self.plan, label, report), report, quoting(prepared.treatments))
        try:
            assert randomised.fingerprint is not None  # randomised with its fingerprint
            key = stored.release_key(
                randomised.fingerprint, prepared.treatments, seeded, draws.entropy, prepared.protection, prepared.bound
            )
            again = _hand_out_stored(new, key, fresh, temporary, destination)
            if again is not None:
                result = again
            else:
                with new.charging():
                    with open(temporary, "wb") as sink:
                        written = _write(randomised, sink, prepared, draws, new.writer)
                    new.key = key
                notes = prepared.notes(randomised.outside, randomised.rows - randomised.kept)
                result = ReleaseResult.made(report, notes=notes, path=destination, n_rows=written)
                result.epsilon_charged = new.charge.epsilon
        except BaseException:
            new.writer.discard()
            raise
        result.dataset_id = ledger.dataset_id
        return result
