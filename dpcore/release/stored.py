"""Released copies kept beside the ledger, so the same table and plan get the same copy back.

A buyer holding two independent copies of a record could average their noise away, so a copy
is made once and kept. The ledger's ``releases`` table maps the copy's key (the released
columns' content, the plan and the unit) to the copy's report and its **content hash**: the
SHA-256 of a Parquet file named by that hash, in a folder beside the ledger database
(``ledger.sqlite3-copies/`` for ``ledger.sqlite3``; for a PostgreSQL ledger, under the data
directory, :func:`dpcore.data_home.beside_ledger`). The same key gets the same copy back at no
cost; a fresh copy is charged again and takes the key over.

* **Charged and stored together.** The Parquet file is written and named by its hash first;
  the spend and the row naming the file are then one ledger transaction. If the file cannot be
  written nothing is charged; if the spend is refused, the file is removed again. While it is
  written the file is an owner-only ``.copy-*.partial`` (:mod:`~dpcore.release.staging`); one a
  killed release left is removed when the next copy is written.
* **Checked when read.** A copy is hashed again before it is handed out: a file whose bytes
  changed, or that is missing, is refused with a sentence, never handed out.
* **The same bytes.** The file holds the released rows as written (category codes with their
  labels, so a copy of a gigabyte file takes tens of MB) and the CSV quoting style in its
  metadata, and renders the identical CSV again.
* **An in-memory ledger** (``path=":memory:"``) has no folder: the Parquet bytes of its copies
  are kept in its (in-memory) ``releases`` rows, hashed and checked alike, and go with it.
* **Older ledgers** kept each copy as a blob in its row (zstd Arrow IPC frames, at most about
  1 GB). Their blobs are moved into Parquet files when their copies are first looked up: each
  file is written first, then one statement records its hash and empties the blob, so an
  interruption leaves the blob or the file, never neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.budget.ledger_db import LedgerConnection, now
from dpcore.data_home import beside_ledger
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.release import staging
from dpcore.release.writing import write_csv

if TYPE_CHECKING:
    from dpcore.budget.accountant import BudgetLedger, Charge
    from dpcore.release.columns import Treatment
    from dpcore.release.contributions import PersonBound
    from dpcore.release.padding import Protection

COPIES_SUFFIX = "-copies"
_QUOTING = "dpcore.quoting"
_RENDER_ROWS = 1 << 17
_LEGACY_MAGIC = b"DPRC1"
_STAGING_PREFIX = ".copy-"
_LENGTH = struct.Struct("<Q")


def release_key(
    fingerprint: str,
    treatments: Iterable[Treatment],
    seeded: bool,
    entropy: int,
    protection: Protection,
    bound: PersonBound | None = None,
) -> str:
    """A copy's key: the released columns' content (a version fingerprint), the resolved plan and the unit.

    With a privacy-unit column the fingerprint covers that column too (it decides which rows are
    kept), and the key holds the column and ``k``: another declaration makes another copy. Without
    one the key is what it always was, so older ledgers find their copies.
    """
    plan = [t.entry() for t in treatments]
    parts: dict[str, object] = {
        "data": fingerprint,
        "plan": plan,
        "seed": entropy if seeded else None,
        "unit": protection.unit,
        "count_epsilon": protection.count_epsilon,
    }
    if bound is not None:
        parts["privacy_unit"] = bound.key()
    text = json.dumps(parts, sort_keys=True)
    return "rr-release/2:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def copies_folder(ledger: BudgetLedger) -> Path | None:
    """Where ``ledger`` keeps its copies: ``<ledger file>-copies`` beside it (None for an in-memory ledger)."""
    return None if ledger.path == ":memory:" else Path(str(beside_ledger(ledger.path)) + COPIES_SUFFIX)


class CopyWriter:
    """Writes a copy's chunks into a Parquet file as they are released, then names it by its hash.

    Parameters
    ----------
    folder : Path or None
        The ledger's copies folder; None keeps the file's bytes in memory.
    quoting : str
        The CSV writer's quoting style for this copy.
    """

    def __init__(self, folder: Path | None, quoting: str) -> None:
        self.folder, self.quoting = folder, quoting
        self._writer: pq.ParquetWriter | None = None
        self._path: Path | None = None
        self._lock: int | None = None
        if folder is None:
            self._sink = pa.BufferOutputStream()
        else:
            folder.mkdir(parents=True, exist_ok=True)
            # Unnamed, the file is a copy nobody was charged for: one a killed release left is removed by new_entry.
            self._path, self._lock = staging.new_entry(folder, _STAGING_PREFIX, folder=False)
            self._sink = self._path

    def append(self, table: pa.Table) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(str(self._sink) if self._path else self._sink, table.schema, compression="zstd")
        if table.num_rows:
            self._writer.write_table(table)

    def finish(self) -> tuple[str, bytes]:
        """Close the file and name it by its SHA-256; return that hash, and the bytes when kept in memory."""
        try:
            if self._writer is None:
                raise ValueError("a copy is finished only after its first chunk was appended (the file needs its schema)")
            self._writer.add_key_value_metadata({_QUOTING: self.quoting})
            self._writer.close()
            if self._path is None or self.folder is None:  # kept in memory (the two are None together)
                data = self._sink.getvalue().to_pybytes()
                return hashlib.sha256(data).hexdigest(), data
            with open(self._path, "rb") as handle:
                content = hashlib.file_digest(handle, "sha256").hexdigest()
            os.replace(self._path, self.folder / f"{content}.parquet")
            self._unlock()
            return content, b""
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Drop a copy that will not be stored (an error, or a stored copy found instead)."""
        if self._writer is not None and self._writer.is_open:
            self._writer.close()
        if self._path is not None:
            self._path.unlink(missing_ok=True)
        self._unlock()

    def _unlock(self) -> None:
        staging.unlock(self._lock)
        self._lock = None


def writer(ledger: BudgetLedger, quoting: str) -> CopyWriter:
    """A :class:`CopyWriter` into ``ledger``'s copies."""
    return CopyWriter(copies_folder(ledger), quoting)


@dataclass(frozen=True)
class StoredCopy:
    """A copy found in the ledger: its report, and its content hash (checked when it is read)."""

    report: dict[str, Any]
    content: str
    folder: Path | None
    data: bytes = b""

    def csv_parts(self) -> Iterator[bytes]:
        """The released file's bytes, in parts, once the stored file is checked against its hash."""
        source = self._open()
        try:
            yield from _render(pq.ParquetFile(source))
        finally:
            source.close()

    def _open(self) -> pa.NativeFile | BinaryIO:
        changed = DataError(
            "The stored copy of this release was changed or damaged after it was made (its content no longer matches the "
            "ledger), so it is not handed out. Restore it from a backup, or make a fresh copy (it is charged again)."
        )
        if self.folder is None:
            if hashlib.sha256(self.data).hexdigest() != self.content:
                raise changed
            return pa.BufferReader(self.data)
        try:
            handle = open(self.folder / f"{self.content}.parquet", "rb")  # noqa: SIM115 (closed by csv_parts)
        except FileNotFoundError:
            raise DataError(
                _(
                    "The stored copy of this release is missing from the folder '{folder}'. Restore it from a backup, or "
                    "make a fresh copy (it is charged again)."
                ).format(folder=self.folder)
            ) from None
        if hashlib.file_digest(handle, "sha256").hexdigest() != self.content:
            handle.close()
            raise changed
        handle.seek(0)
        return handle


def _render(parquet: pq.ParquetFile) -> Iterator[bytes]:
    """The CSV bytes of a stored copy, in parts (the header with the first)."""
    quoting = parquet.metadata.metadata[_QUOTING.encode()].decode()
    header = True
    for batch in parquet.iter_batches(batch_size=_RENDER_ROWS):
        yield _csv(pa.Table.from_batches([batch]), header, quoting)
        header = False
    if header:
        yield _csv(parquet.schema_arrow.empty_table(), True, quoting)


def _csv(table: pa.Table, header: bool, quoting: str) -> bytes:
    sink = pa.BufferOutputStream()
    write_csv(table, sink, header, quoting)
    return sink.getvalue().to_pybytes()


def find(ledger: BudgetLedger, key: str) -> StoredCopy | None:
    """The copy stored under ``key`` for ``ledger``'s dataset, or None."""
    folder = copies_folder(ledger)
    _move_blobs(ledger, folder)
    payload = "payload" if folder is None else "NULL"  # a file ledger's rows hold no bytes
    with ledger.connection() as conn:
        row = conn.execute(
            f"SELECT report, content, {payload} FROM releases WHERE key = ? AND dataset_id = ?",
            (_row_key(ledger, key), ledger.dataset_id),
        ).fetchone()
    if row is None:
        return None
    if row[1] is None:
        raise DataError(_("The stored copy in the ledger is damaged; make a fresh copy (it is charged again)."))
    return StoredCopy(json.loads(row[0]), row[1], folder, bytes(row[2] or b""))


@dataclass
class NewCopy:
    """A copy on its way into ``ledger``: its rows go into ``writer``, and ``key`` names it once it is known.

    Start one with :meth:`start`, write it inside :meth:`charging`.
    """

    ledger: BudgetLedger
    charge: Charge
    report: dict[str, Any]
    writer: CopyWriter
    key: str | None = None

    @classmethod
    def start(cls, ledger: BudgetLedger, charge: Charge, report: dict[str, Any], quoting: str) -> NewCopy:
        return cls(ledger, charge, report, writer(ledger, quoting))

    def restart(self) -> None:
        """Drop the rows written so far (a file read again in another encoding)."""
        self.writer.discard()
        self.writer = CopyWriter(self.writer.folder, self.writer.quoting)

    @contextmanager
    def charging(self) -> Iterator[NewCopy]:
        """Charge the copy and store it, both or neither: :meth:`~dpcore.budget.accountant.BudgetLedger.charging` around its writing.

        The charge is checked before the block, which writes the copy's rows into ``writer``
        and sets ``key``. When the block ends without an error the file is named by its hash,
        and the spend and the row naming the file are one ledger transaction. If the block or
        the spend fails, nothing is charged and the file is removed.
        """
        ledger, content = self.ledger, None
        replaced: list[str] = []
        try:
            with ledger.charging(self.charge) as paid:
                yield self
                if self.key is None:
                    raise ValueError("a new copy is stored under its key: set it before the block ends")
                content, data = self.writer.finish()
                paid.alongside = partial(_store, ledger, self.key, self.report, content, data, replaced)
        except BaseException as error:
            if content is None:
                self.writer.discard()
            else:
                _remove_if_unused(ledger, self.writer.folder, content)
            if isinstance(error, sqlite3.DataError):  # only an in-memory ledger keeps a copy's bytes in SQLite: 1 GB at most
                raise DataError(
                    _("This copy is too large to keep in an in-memory ledger; nothing was charged. Use a ledger file.")
                ) from None
            raise
        for old in replaced:
            _remove_if_unused(ledger, self.writer.folder, old)


def _store(
    ledger: BudgetLedger,
    key: str,
    report: dict[str, Any],
    content: str,
    data: bytes,
    replaced: list[str],
    conn: LedgerConnection,
) -> None:
    """In the spend's transaction: name the copy's file under ``key`` (noting the file it replaces)."""
    old = conn.execute("SELECT content FROM releases WHERE key = ?", (_row_key(ledger, key),)).fetchone()
    if old is not None and old[0] not in (None, content):
        replaced.append(old[0])
    conn.execute(
        "INSERT INTO releases (key, dataset_id, payload, report, created, content) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET dataset_id = excluded.dataset_id, payload = excluded.payload, "
        "report = excluded.report, created = excluded.created, content = excluded.content",
        (_row_key(ledger, key), ledger.dataset_id, data, json.dumps(report), now(), content),
    )


def _row_key(ledger: BudgetLedger, key: str) -> str:
    return f"{ledger.dataset_id}/{key}"


def _remove_if_unused(ledger: BudgetLedger, folder: Path | None, content: str) -> None:
    if folder is None:
        return
    with ledger.connection() as conn:
        used = conn.execute("SELECT 1 FROM releases WHERE content = ? LIMIT 1", (content,)).fetchone()
    if used is None:
        (folder / f"{content}.parquet").unlink(missing_ok=True)


# --- copies stored by older ledgers --------------------------------------------------------------


def _move_blobs(ledger: BudgetLedger, folder: Path | None) -> None:
    """Move every copy an older ledger kept as a blob into a Parquet file (a damaged blob stays as it is)."""
    with ledger.connection() as conn:
        keys = [key for (key,) in conn.execute("SELECT key FROM releases WHERE content IS NULL")]
    for key in keys:
        with ledger.connection() as conn:
            row = conn.execute("SELECT payload FROM releases WHERE key = ? AND content IS NULL", (key,)).fetchone()
        if not row:  # another process moved it first
            continue
        try:
            quoting, tables = _legacy_tables(row[0])
        except (DataError, ValueError, struct.error, KeyError, pa.ArrowException):
            continue  # handing it out is refused with a sentence, as before
        if not tables:
            continue
        copy = CopyWriter(folder, quoting)
        try:
            for table in tables:
                copy.append(table)
        except BaseException:
            copy.discard()
            raise
        content, data = copy.finish()
        with ledger.connection() as conn:
            moved = conn.execute(
                "UPDATE releases SET content = ?, payload = ? WHERE key = ? AND content IS NULL", (content, data, key)
            ).rowcount
        if not moved:  # another process moved it first
            _remove_if_unused(ledger, folder, content)


def _legacy_tables(payload: bytes) -> tuple[str, list[pa.Table]]:
    """The quoting and the chunks of an older ledger's blob: a small JSON header, then length-prefixed IPC frames."""
    if not payload.startswith(_LEGACY_MAGIC):
        raise DataError(_("not a stored copy"))
    position = len(_LEGACY_MAGIC)
    (size,) = _LENGTH.unpack_from(payload, position)
    quoting = json.loads(payload[position + _LENGTH.size : position + _LENGTH.size + size])["quoting"]
    position += _LENGTH.size + size
    tables = []
    while position < len(payload):
        (size,) = _LENGTH.unpack_from(payload, position)
        position += _LENGTH.size
        tables.append(pa.ipc.open_stream(pa.py_buffer(payload[position : position + size])).read_all())
        position += size
    return quoting, tables
