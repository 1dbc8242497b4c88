"""Tables read from SQL databases: named connections, read-only queries, rows streamed in chunks.

An owner's table often lives in a database. This module reads one table, or the rows of one
read-only query, through a SQLAlchemy URL (SQLite and DuckDB files; PostgreSQL through psycopg by
the same code), and gives it to the rest of the engine as the CSV readers do: DataFrame chunks
(:meth:`SqlSource.chunks`) for the dataset's identification and the streamed release, or the
whole table (:meth:`SqlSource.read`) for the app and the models.

* **Passwords stay in the secrets file.** A connection is named in a TOML file
  (:func:`load_connections`: ``$DPSTUDIO_SECRETS``, else Streamlit's ``.streamlit/secrets.toml``
  here or in the home folder) and referred to by that name; a URL given instead is shown and
  stored as its dialect, host, port and database alone (:func:`masked`), never its user, password
  or query string. The workspace and the ledger keep the connection's name and the table or query.
* **Read only.** A query must be one ``SELECT`` (or ``WITH … SELECT``) statement
  (:func:`check_read_only`, one left-to-right scan that reads quotes and comments as what they
  are; DuckDB's own parser too), and the connection itself is opened read-only where the driver
  allows it: SQLite in ``mode=ro``, DuckDB with ``read_only`` and no access to files beside
  the database (a DuckDB URL's settings, which would override these, are refused, and each
  connection is checked), PostgreSQL with ``default_transaction_read_only``.
* **Streamed.** Rows come as Arrow record batches from DuckDB, through ``COPY … TO STDOUT`` parsed
  by Arrow from PostgreSQL (when every column is a number or text), else through a server-side
  cursor (``stream_results``), ``chunksize`` rows at a time, so a large table never sits in memory twice.
* **Read like a CSV.** Numbers become float64 and text the same string type the streaming CSV
  reader gives, stripped, with the same missing-value words (:data:`~dpcore.tables.csv_reading.MISSING_VALUES`),
  so the same people in a table and in its CSV export hash alike and spend one budget.
* **The database's schema is public knowledge**: its column types say which columns are numbers
  and which are text, ``NOT NULL`` says a value is never missing, an enum type or a
  ``CHECK (c IN (…))`` lists a column's categories, and ``CHECK (c BETWEEN a AND b)`` gives its
  bounds (:func:`database_declarations`, :func:`check_constraint_facts`).

Errors are :class:`~dpcore.exceptions.DataError` sentences that never quote a driver's message
(it can hold cell values or the URL with its password).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from dpcore.exceptions import DataError
from dpcore.i18n import _, integer
from dpcore.tables.csv_reading import DEFAULT_CHUNKSIZE, MISSING_VALUES
from dpcore.tables.schema import Schema, suggest_schema
from dpcore.tables.sql_connections import (
    MAX_QUERY_LENGTH,
    QUERY_EXAMPLE,
    SECRETS_ENV,
    SECRETS_EXAMPLE,
    _check_duckdb_statement,
    check_read_only,
    load_connections,
    masked,
    secrets_files,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection, Engine

    from dpcore.budget.accountant import BudgetLedger

__all__ = [
    "MAX_QUERY_LENGTH",
    "QUERY_EXAMPLE",
    "SECRETS_ENV",
    "SECRETS_EXAMPLE",
    "ColumnType",
    "SqlSource",
    "check_constraint_facts",
    "check_read_only",
    "cleaned_chunk",
    "database_declarations",
    "load_connections",
    "masked",
    "open_source",
    "secrets_files",
]

_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)


@dataclass(frozen=True)
class ColumnType:
    """What the database declares about one column: number or text, whether it may be empty, its allowed values.

    ``enums`` are an enum type's values or a ``CHECK (column IN (…))`` list; ``lower`` and ``upper``
    come from ``CHECK (column BETWEEN a AND b)`` or ``column >= a AND column <= b``.
    """

    name: str
    numeric: bool | None  # None: the database does not say (an expression of a query in SQLite)
    nullable: bool = True
    enums: tuple[str, ...] = ()
    lower: float | None = None
    upper: float | None = None


# A column: a plain word, or a quoted name ("my col", `my col`, [my col]) that may hold spaces.
_NAME = r"(?:\"(?P<quoted>(?:[^\"]|\"\")+)\"|`(?P<ticked>[^`]+)`|\[(?P<bracketed>[^\]]+)\]|(?P<bare>\w+))"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_BETWEEN_AND = re.compile(rf"(BETWEEN\s+\(?\s*{_NUMBER}\s*\)?\s+)AND\b", re.IGNORECASE)
_BETWEEN = re.compile(rf"{_NAME}\s+BETWEEN\s+\(?\s*(?P<low>{_NUMBER})\s*\)?\s+~\s+\(?\s*(?P<high>{_NUMBER})\s*\)?", re.IGNORECASE)
_COMPARED = re.compile(rf"{_NAME}\s*(?P<sign>>=|<=|>|<)\s*(?P<number>{_NUMBER})")
_IN_LIST = re.compile(rf"{_NAME}\s+IN\s*\(\s*(?P<values>§\d+§(?:\s*,\s*§\d+§)*)\s*\)?", re.IGNORECASE)


def _column(match: re.Match[str]) -> str:
    if match["quoted"] is not None:
        return match["quoted"].replace('""', '"')
    return str(match["ticked"] or match["bracketed"] or match["bare"])


def check_constraint_facts(sqltext: str) -> dict[str, dict[str, Any]]:
    """Bounds and value lists a ``CHECK`` constraint declares, by column: ``{"age": {"lower": 0.0, "upper": 120.0}}``.

    Read are the forms a schema uses for a domain: ``c BETWEEN a AND b``, ``c >= a AND c <= b``
    (``>``, ``<`` too: a bound that holds strictly holds), and ``c IN ('x', 'y')``. A constraint
    with ``OR`` or ``NOT`` in it says something else and is left unread; so is anything the
    patterns do not match. Only what the owner's database declares is read, never its rows.
    """
    literals: list[str] = []

    def hidden(match: re.Match[str]) -> str:  # quoted values may hold words, parentheses or AND
        literals.append(match[1].replace("''", "'"))
        return f"§{len(literals) - 1}§"

    text = _LITERAL.sub(hidden, str(sqltext))
    if re.search(r"\b(OR|NOT)\b", text, re.IGNORECASE):
        return {}
    facts: dict[str, dict[str, Any]] = {}
    # Each conjunct must be one whole form: "abs(x) < 5" or "y - x <= 10" bound no column, so they are left unread.
    for piece in re.split(r"\bAND\b", _BETWEEN_AND.sub(r"\1~", text), flags=re.IGNORECASE):
        piece = piece.strip().strip("()").strip()
        if found := _BETWEEN.fullmatch(piece):
            facts.setdefault(_column(found), {}).update(lower=float(found["low"]), upper=float(found["high"]))
        elif found := _COMPARED.fullmatch(piece):
            facts.setdefault(_column(found), {})["lower" if found["sign"].startswith(">") else "upper"] = float(found["number"])
        elif found := _IN_LIST.fullmatch(piece):
            values = tuple(literals[int(i)] for i in re.findall(r"§(\d+)§", found["values"]))
            facts.setdefault(_column(found), {})["enums"] = values
    return facts


def _column_type(name: str, sql_type: Any, nullable: bool = True) -> ColumnType:
    from sqlalchemy import types

    enums = tuple(str(v) for v in getattr(sql_type, "enums", None) or ())
    if isinstance(sql_type, types.Boolean) or enums:
        numeric: bool | None = False
    elif isinstance(sql_type, types.Numeric | types.Float | types.Integer):  # Float is no Numeric from SQLAlchemy 2.1
        numeric = True
    elif isinstance(sql_type, types.String | types.Date | types.DateTime | types.Time):
        numeric = False
    else:
        numeric = None
    return ColumnType(name, numeric, bool(nullable), enums)


@dataclass(frozen=True)
class SqlSource:
    """A table or a read-only query on one database connection.

    Parameters
    ----------
    url : sqlalchemy.engine.URL
        Where the database is (with its password: never shown, see :attr:`connection`).
    connection : str
        The connection's name in the secrets file, or the URL as :func:`masked` shows it: how
        every message, the workspace and the dataset's history name the database.
    table : str, optional
        A table (or view) to read whole, ``schema.table`` for another schema.
    query : str, optional
        One read-only SELECT statement (checked by :func:`check_read_only`). With neither, the
        source is the connection alone: it lists its :meth:`tables` and reads no rows.
    """

    url: URL = field(repr=False)  # its repr shows the query string, where a password may be
    connection: str
    table: str | None = None
    query: str | None = None

    def __post_init__(self) -> None:
        if self.table is not None and self.query is not None:
            raise ValueError("give a table or a query, not both")
        if self.query is not None:
            object.__setattr__(self, "query", check_read_only(self.query))
            if self.url.get_backend_name() == "duckdb":
                _check_duckdb_statement(str(self.query))

    # --- what is shown and recorded ---------------------------------------------------------

    @property
    def label(self) -> str:
        """How the table is named on screen and as a new dataset's name: the table, or "query on <connection>"."""
        if self.table is None:
            return _("query on {connection}").format(connection=self.connection)
        return self.table

    @property
    def description(self) -> str:
        """What was read, for the dataset's history and the workspace: the connection and the table or the query's text."""
        what = f"table {self.table}" if self.table is not None else f"query: {' '.join(str(self.query).split())}"
        return f"connection {self.connection}; {what}"

    def record_read(self, ledger: BudgetLedger, by: str) -> None:
        """Write what was read (the connection's name, the table or the query's text) into the dataset's history.

        ``by`` names the reader ("app", "dpcore train"); the history is exported, so it never holds the URL.
        """
        ledger.record_event(f"read from a database ({by})", self.description)

    def info(self, rows: int, columns: int) -> dict[str, Any]:
        """The facts the Data page shows and the workspace keeps (no URL, no password)."""
        return {
            "format": "database",
            "connection": self.connection,
            "table": self.table,
            "query": self.query,
            "rows": rows,
            "columns": columns,
            "header": True,
            "header_guessed": False,
            "decimal": ".",
        }

    # --- the connection ---------------------------------------------------------------------

    def engine(self) -> Engine:
        """A SQLAlchemy engine that opens the database read-only where the driver allows it."""
        from sqlalchemy import create_engine, event

        url, options = self.url, dict[str, Any]()
        backend = url.get_backend_name()
        if backend == "sqlite" and url.database and url.database != ":memory:":
            if not url.database.startswith("file:"):
                if not Path(url.database).is_file():
                    raise DataError(
                        _("The database file of the connection '{connection}' does not exist.").format(connection=self.connection)
                    )
                # percent-encoded: in a URI "#", "?" and "%" would open (and create, read-write) another file
                url = url.set(database=f"file:{quote(url.database, safe='/')}")
            url = url.update_query_dict({"mode": "ro", "uri": "true"})
        elif backend == "duckdb":
            if url.database and url.database != ":memory:" and not Path(url.database).is_file():
                raise DataError(
                    _("The database file of the connection '{connection}' does not exist.").format(connection=self.connection)
                )
            if url.query:
                # duckdb-engine applies the URL's settings over these options: ?access_mode=read_write would undo them
                raise DataError(
                    _(
                        "The DuckDB URL of the connection '{connection}' has settings after its '?', and DP Studio "
                        "reads DuckDB files only read-only and with no access to other files. Remove everything "
                        "from the '?' on."
                    ).format(connection=self.connection)
                )
            # Nor may a query read files or URLs beside the database (read_csv('/etc/…'), httpfs).
            options = {"read_only": True, "config": {"enable_external_access": False}}
        elif backend == "postgresql" and url.get_driver_name() == "psycopg":
            options = {"options": "-c default_transaction_read_only=on"}
        try:
            engine = create_engine(url, connect_args=options)
        except Exception:  # a driver that is not installed, a malformed URL: its message may quote the URL
            raise DataError(
                _(
                    "The connection '{connection}' cannot be opened: its database driver is not installed or its URL "
                    "is not valid. DP Studio reads SQLite, DuckDB (duckdb-engine) and PostgreSQL (psycopg) databases."
                ).format(connection=self.connection)
            ) from None
        if backend == "duckdb":
            event.listen(engine, "connect", self._check_duckdb_read_only)
        return engine

    def _check_duckdb_read_only(self, driver_connection: Any, _record: Any) -> None:
        """Refuse a DuckDB connection that could write or reach other files, whatever set it so."""
        settings = "SELECT current_setting('enable_external_access'), current_setting('access_mode')"
        [(external, mode)] = driver_connection.sql(settings).fetchall()  # a relation: no result left open
        if external is not False or str(mode).casefold() != "read_only":
            driver_connection.close()
            raise DataError(
                _(
                    "The DuckDB database of the connection '{connection}' did not open read-only with no access to "
                    "other files, so DP Studio does not read it. Give its URL without settings after the '?'."
                ).format(connection=self.connection)
            )

    def _failed(self) -> DataError:
        what = _("the table '{table}'").format(table=self.table) if self.table is not None else _("the query")
        return DataError(
            _(
                "Reading {what} from the connection '{connection}' failed: the database could not be reached, the "
                "table or a column does not exist, the query is not valid SQL, or the user may not read it. Check the "
                "connection's entry in the secrets file and the table's name or the query."
            ).format(what=what, connection=self.connection)
        )

    def _selection(self, columns: Sequence[str] | None = None, order: str | None = None) -> Any:
        """The statement that reads the rows: the table's (quoted by the dialect; in the order of the column ``order``
        when given) or the query's, wrapped to pick ``columns``."""
        from sqlalchemy import column, select, table, text

        if self.table is None and self.query is None:
            raise ValueError("a connection alone has no rows: give a table or a query")
        if self.table is not None:
            schema, _dot, name = self.table.rpartition(".")
            source = table(name, schema=schema or None)
            picked = select(*(column(c) for c in columns)) if columns else select(text("*"))
            picked = picked.select_from(source)
            return picked.order_by(column(order)) if order is not None else picked
        # Colons are escaped (SQLAlchemy reads ":word" as a parameter, "'12:30'" included), and the closing
        # newline ends a trailing "-- comment" before a wrapping ") AS q".
        query = text(str(self.query).replace(":", "\\:") + "\n")
        if not columns:
            return query
        return select(*(column(c) for c in columns)).select_from(query.columns().subquery("q"))

    @contextmanager
    def _connected(self, failed: Callable[[], DataError] | None = None) -> Iterator[Connection]:
        """One connection for one read: a driver's error becomes a sentence (``failed``'s, else :meth:`_failed`), never its words."""
        engine = self.engine()
        try:
            with engine.connect() as connection:
                yield connection
        except (DataError, GeneratorExit):
            raise
        except Exception:
            raise (failed or self._failed)() from None
        finally:
            engine.dispose()

    def order_key(self) -> str | None:
        """The column a PostgreSQL table's rows are read in the order of: its primary key, when that is one whole-number column.

        A PostgreSQL table has no row order of its own (a heap may be read from any page), while
        a seeded copy draws each row's noise by its place in the order read. A one-column
        whole-number primary key (a stored line number, a record number) gives every read, on
        this machine or on Spark, the same order; Spark's JDBC reads split its range between
        connections. A query's rows come in its own order (its ``ORDER BY``), and SQLite's and
        DuckDB's tables in their stored order.
        """
        if self.table is None or self.url.get_backend_name() != "postgresql":
            return None
        with self._connected() as connection:
            return self._order_key(connection)

    def key_range(self, key: str) -> tuple[int | None, int | None]:
        """The lowest and highest value of the table's column ``key`` (None, None for a table without rows).

        Read from the primary key's index: public to whoever may read the table, and used only to
        split the reading between connections, never released.
        """
        from sqlalchemy import column, func, select

        if self.table is None:
            raise ValueError("a key's range is a table's")
        with self._connected() as connection:
            rows = self._selection().subquery("keyed")
            found: Any = connection.execute(select(func.min(column(key)), func.max(column(key))).select_from(rows)).one()
        low, high = found[0], found[1]
        return (None, None) if low is None else (int(low), int(high))

    def _order_key(self, connection: Connection) -> str | None:
        from sqlalchemy import inspect, types

        if self.table is None or self.url.get_backend_name() != "postgresql":
            return None
        schema, _dot, name = self.table.rpartition(".")
        inspector = inspect(connection)
        key = inspector.get_pk_constraint(name, schema=schema or None).get("constrained_columns") or []
        if len(key) != 1:
            return None
        kinds = {c["name"]: c["type"] for c in inspector.get_columns(name, schema=schema or None)}
        return str(key[0]) if isinstance(kinds.get(key[0]), types.Integer) else None

    def tables(self) -> list[str]:
        """The tables and views the connection can read, for the owner to pick from."""
        from sqlalchemy import inspect

        with self._connected(self._listing_failed) as connection:
            inspector = inspect(connection)
            return sorted({*inspector.get_table_names(), *inspector.get_view_names()})

    def _listing_failed(self) -> DataError:
        return DataError(
            _(
                "The tables of the connection '{connection}' could not be listed: the database could not be reached "
                "or the user may not read it. Check its entry in the secrets file."
            ).format(connection=self.connection)
        )

    def column_types(self) -> list[ColumnType]:
        """What the database declares about each column: a table's reflected types, a query's result types."""
        from sqlalchemy import inspect

        with self._connected() as connection:
            if self.table is not None and self.url.get_backend_name() == "duckdb":
                return _information_schema_types(connection, self.table)
            if self.table is not None:
                schema, _dot, name = self.table.rpartition(".")
                inspector = inspect(connection)
                types = [
                    _column_type(c["name"], c["type"], c.get("nullable", True))
                    for c in inspector.get_columns(name, schema=schema or None)
                ]
                try:
                    checks = [c["sqltext"] for c in inspector.get_check_constraints(name, schema=schema or None)]
                except NotImplementedError:  # a dialect that cannot list them: the types alone
                    checks = []
                return _with_checks(types, checks)
            result = connection.execute(self._selection())  # a query: the driver's result types, no row fetched
            try:
                described = result.cursor.description if result.cursor is not None else None
                return [ColumnType(str(d[0]), None) for d in described or ()]
            finally:
                result.close()

    # --- the rows ---------------------------------------------------------------------------

    def batches(self, chunksize: int = DEFAULT_CHUNKSIZE, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The rows, ``chunksize`` at a time, read like a streamed CSV (see the module docstring).

        DuckDB hands out Arrow record batches; PostgreSQL's numbers and text come through ``COPY``
        as CSV that Arrow parses (:func:`_copied_batches`); other drivers and types stream rows
        through a server-side cursor (``stream_results``) into one DataFrame per chunk. Only one
        chunk (and the driver's buffer) is held at a time.
        """
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError(f"chunksize must be a whole number >= 1, got {chunksize!r}")
        with self._connected() as connection:
            statement = self._selection(columns, self._order_key(connection))
            if self.url.get_backend_name() == "duckdb":
                yield from self._arrow_batches(connection, statement, chunksize)
                return
            if (copied := _copy_columns(connection, statement)) is not None:
                yield from _copied_batches(connection, statement, copied, chunksize)
                return
            result = connection.execution_options(stream_results=True, max_row_buffer=chunksize).execute(statement)
            names = [str(k) for k in result.keys()]
            _check_names(names)
            for rows in result.partitions(chunksize):
                # plain tuples: pandas asks every SQLAlchemy Row for namedtuple fields, a slow key lookup each
                yield cleaned_chunk(pd.DataFrame.from_records(list(map(tuple, rows)), columns=names, coerce_float=True))

    def _arrow_batches(self, connection: Connection, statement: Any, chunksize: int) -> Iterator[pd.DataFrame]:
        """DuckDB's rows as Arrow record batches (its own columnar reader: no Python object per cell)."""
        compiled = statement.compile(connection, compile_kwargs={"literal_binds": True})
        duck = connection.connection.driver_connection
        reader = duck.sql(str(compiled)).to_arrow_reader(chunksize)  # type: ignore[union-attr]
        try:
            names = [str(n) for n in reader.schema.names]
            _check_names(names)
            for batch in reader:
                yield cleaned_chunk(batch.to_pandas())
        finally:  # a result left open keeps DuckDB's connection busy, even when the reading stopped early
            reader.close()

    def chunks(
        self, chunksize: int = DEFAULT_CHUNKSIZE, columns: Sequence[str] | None = None
    ) -> Callable[[], Iterator[pd.DataFrame]]:
        """A callable that reads the rows again at each call (for :meth:`dpcore.budget.datasets.Catalog.open_table`)."""
        return lambda: self.batches(chunksize, columns)

    def row_count(self) -> int:
        """How many rows the table or query has, counted by the database."""
        from sqlalchemy import func, select

        with self._connected() as connection:
            rows = self._selection()
            rows = rows.columns() if self.query is not None else rows  # a textual query becomes a selectable
            counted = select(func.count()).select_from(rows.subquery("counted"))
            return int(connection.execute(counted).scalar_one())

    def read(
        self, max_rows: int | None = None, max_columns: int | None = None, chunksize: int = DEFAULT_CHUNKSIZE
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The whole table in memory (the app's and the models' way), with the same guards as an upload.

        Parameters
        ----------
        max_rows, max_columns : int, optional
            Refuse, with a sentence, a table larger than this (counted by the database before any
            row is read): the app's limits are :data:`dpcore.tables.loading.MAX_ROWS` and
            :data:`~dpcore.tables.loading.MAX_COLUMNS`.
        """
        if max_rows is not None and self.row_count() > max_rows:
            raise DataError(
                _(
                    "The table has more than {max_rows} rows, more than DP Studio handles in the browser. Use the "
                    "command line (dpcore … --source) for large tables."
                ).format(max_rows=integer(max_rows))
            )
        parts = list(self.batches(chunksize))
        if not parts:  # no chunk at all, as from a CSV file of a header alone: the columns are there, the rows are not
            raise DataError(_("The table or query gives no rows."))
        frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        if frame.shape[1] < 2:
            raise DataError(_("The table or query gives fewer than two columns; DP Studio needs a table of several columns."))
        if len(frame) == 0:
            raise DataError(_("The table or query gives no rows."))
        if max_columns is not None and frame.shape[1] > max_columns:
            raise DataError(
                _("The table has more than {max_columns} columns. Select only the columns you need with a query.").format(
                    max_columns=max_columns
                )
            )
        return frame, self.info(len(frame), frame.shape[1])


def _with_checks(types: list[ColumnType], checks: Sequence[str]) -> list[ColumnType]:
    """``types`` with the bounds and value lists the table's ``CHECK`` constraints declare (see :func:`check_constraint_facts`)."""
    from dataclasses import replace

    facts: dict[str, dict[str, Any]] = {}
    for sqltext in checks:
        for column, found in check_constraint_facts(sqltext).items():
            facts.setdefault(column, {}).update(found)
    return [replace(t, **facts[t.name]) if t.name in facts else t for t in types]


def _information_schema_types(connection: Connection, table: str) -> list[ColumnType]:
    """A table's column types from the standard ``information_schema`` (duckdb-engine's reflection goes through
    PostgreSQL's catalog, which DuckDB lacks); an enum's values are read from its type's name, ``ENUM('a', 'b')``."""
    from sqlalchemy import text

    schema, _dot, name = table.rpartition(".")
    # the table read is the one in the schema given, else in the current one: a namesake elsewhere is another table
    where = {"name": name, "schema": schema or None}
    rows = connection.execute(
        text(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = :name "
            "AND table_schema = coalesce(:schema, current_schema()) AND table_catalog = current_database() "
            "ORDER BY ordinal_position"
        ),
        where,
    ).all()
    found = []
    for column, data_type, nullable in rows:
        kind = str(data_type).upper()
        values = re.findall(r"'((?:[^']|'')*)'", str(data_type))
        enums = tuple(v.replace("''", "'") for v in values) if kind.startswith("ENUM") else ()
        numeric = not enums and bool(re.match(r"(TINY|SMALL|BIG|U|HUGE)?INT|DECIMAL|NUMERIC|DOUBLE|FLOAT|REAL", kind))
        found.append(ColumnType(str(column), numeric, str(nullable).upper() != "NO", enums))
    checks = connection.execute(
        text(
            "SELECT expression FROM duckdb_constraints() WHERE constraint_type = 'CHECK' AND table_name = :name "
            "AND schema_name = coalesce(:schema, current_schema()) AND database_name = current_database()"
        ),
        where,
    ).scalars()
    return _with_checks(found, [str(c) for c in checks])


# PostgreSQL's types (by OID) whose COPY text reads back exactly as psycopg's values are read by
# cleaned_chunk: whole and decimal numbers (printed exactly, parsed to the same float64) and text.
_POSTGRES_NUMBERS = frozenset({20, 21, 23, 700, 701, 1700})  # int8, int2, int4, float4, float8, numeric
_POSTGRES_TEXT = frozenset({19, 25, 1042, 1043})  # name, text, char(n), varchar
_COPY_BLOCK_BYTES = 1 << 22


def _copy_columns(connection: Connection, statement: Any) -> dict[str, bool] | None:
    """The columns of a PostgreSQL statement (name → is a number), when COPY can read every one of them; else None.

    Only psycopg 3 on a UTF-8 connection, and only columns of the types above: any other
    (a boolean, a date, an array…) is read through the cursor, as its Python value says.
    """
    dialect = connection.dialect
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        return None
    driver = connection.connection.driver_connection
    if driver is None or driver.info.encoding != "utf-8":
        return None
    # A declared cursor is described without running its query (and keeps names a query repeats).
    with driver.cursor(name="dpstudio_described") as cursor:
        cursor.execute(_compiled(connection, statement).encode())
        columns = [(str(c.name), int(c.type_code)) for c in cursor.description or ()]
    _check_names([name for name, _oid in columns])
    if not columns or any(oid not in _POSTGRES_NUMBERS | _POSTGRES_TEXT for _name, oid in columns):
        return None
    return {name: oid in _POSTGRES_NUMBERS for name, oid in columns}


def _compiled(connection: Connection, statement: Any) -> str:
    return str(statement.compile(connection, compile_kwargs={"literal_binds": True}))


def _copied_batches(connection: Connection, statement: Any, numeric: dict[str, bool], chunksize: int) -> Iterator[pd.DataFrame]:
    """PostgreSQL's rows through ``COPY (…) TO STDOUT`` as CSV, parsed by Arrow: no Python object per cell.

    In PostgreSQL's CSV an empty unquoted field is NULL and a quoted one the empty text, which
    Arrow keeps apart (``quoted_strings_can_be_null=False``); numbers are parsed to float64 and
    text kept as text, so each chunk is the cursor's (:func:`cleaned_chunk` does the rest).
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = list(numeric)
    positional = [f"c{i}" for i in range(len(names))]  # a column's name may be anything, even empty
    types = {p: pa.float64() if numeric[n] else pa.string() for p, n in zip(positional, names)}
    driver = connection.connection.driver_connection
    with driver.cursor() as cursor:  # type: ignore[union-attr]
        copy_statement = f"COPY ({_compiled(connection, statement)}) TO STDOUT WITH (FORMAT csv)"
        with cursor.copy(copy_statement.encode()) as copy:
            stream = _CopyStream(copy)
            if stream.finished():  # no rows: Arrow would refuse an empty file
                return
            reader = pcsv.open_csv(
                stream,
                read_options=pcsv.ReadOptions(column_names=positional, block_size=_COPY_BLOCK_BYTES, use_threads=False),
                parse_options=pcsv.ParseOptions(newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(
                    column_types=types, null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False
                ),
            )
            pending: list[pa.RecordBatch] = []
            rows = 0
            for batch in reader:
                pending.append(batch)
                rows += batch.num_rows
                while rows >= chunksize:
                    table = pa.Table.from_batches(pending)
                    yield _arrow_chunk(table.slice(0, chunksize), names)
                    rest = table.slice(chunksize)
                    pending, rows = rest.to_batches(), rest.num_rows
            if rows:
                yield _arrow_chunk(pa.Table.from_batches(pending), names)


def _arrow_chunk(table: Any, names: list[str]) -> pd.DataFrame:
    frame = table.to_pandas(types_mapper=lambda t: _STR_DTYPE if t == "string" else None)
    frame.columns = names
    return cleaned_chunk(frame)


class _CopyStream(io.RawIOBase):
    """The bytes of a psycopg ``COPY … TO STDOUT`` as a file Arrow reads."""

    def __init__(self, copy: Any) -> None:
        self._copy, self._pending = copy, memoryview(b"")

    def readable(self) -> bool:
        return True

    def finished(self) -> bool:
        """True when no byte is left (the first row is read ahead to tell)."""
        if not self._pending:
            self._pending = memoryview(self._copy.read())
        return not self._pending

    def readinto(self, buffer: Any) -> int:
        size, filled = len(buffer), 0
        while filled < size:
            if not self._pending:
                data = self._copy.read()
                if not data:
                    break
                self._pending = memoryview(data)
            n = min(size - filled, len(self._pending))
            buffer[filled : filled + n] = self._pending[:n]
            self._pending, filled = self._pending[n:], filled + n
        return filled


def _check_names(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise DataError(_("Two columns of the query have the same name. Give each column its own name with AS."))


def cleaned_chunk(frame: pd.DataFrame) -> pd.DataFrame:
    """One chunk as the streaming CSV reader gives it: numbers as float64, everything else as stripped text.

    Every reader of a database's rows (the drivers here, Spark's JDBC reads) passes its chunks
    through this one function, so a row reads alike whoever read it.

    The kind of a column follows the values' types as the driver gives them (not the text's
    look), so every chunk of a column has the same kind: a number column stays numbers even in a
    chunk of empty cells, a text column of digits stays text.
    """
    out: dict[str, Any] = {}
    for name in frame.columns:  # a loop over columns; each conversion is vectorised
        values = frame[name]
        if pd.api.types.is_bool_dtype(values.dtype):
            out[name] = values.astype(_STR_DTYPE)
        elif pd.api.types.is_numeric_dtype(values.dtype):
            out[name] = values.astype(np.float64)
        elif pd.api.types.is_datetime64_any_dtype(values.dtype):
            out[name] = _timestamp_text(values)
        else:
            kind = pd.api.types.infer_dtype(values, skipna=True)
            if kind in ("decimal", "integer", "floating", "mixed-integer-float", "empty"):
                out[name] = pd.to_numeric(values, errors="coerce").astype(np.float64)
            else:
                try:
                    text = values.astype(_STR_DTYPE).str.strip()
                except Exception:  # bytes that are no text (a BLOB), or values of no known kind
                    raise DataError(
                        _(
                            "The column '{column}' could not be read as numbers or as text (it may hold binary data). "
                            "Leave it out with a query that selects only the other columns."
                        ).format(column=name)
                    ) from None
                out[name] = text.mask(text.isin(MISSING_VALUES))
    return pd.DataFrame(out, index=frame.index)


def _timestamp_text(values: pd.Series) -> pd.Series:
    """Timestamps as DuckDB's and PostgreSQL's CSV exports write them, so a table hashes alike with its export.

    ``2020-01-01 10:00:00``, with the fraction of a second when it is not zero (trailing zeros
    dropped: ``10:00:00.25``) and the UTC offset of a time zone-aware column (``+00``, ``+05:30``).
    """
    seconds = values.dt.floor("s")
    nanoseconds = (values - seconds).dt.total_seconds().mul(1e9).round().astype("Int64")
    fraction = ("." + nanoseconds.astype("string").str.zfill(9).str.rstrip("0")).where(nanoseconds > 0, "")
    text = values.dt.strftime("%Y-%m-%d %H:%M:%S").astype("string") + fraction.fillna("")
    if values.dt.tz is not None:
        offset = values.dt.strftime("%z").astype("string")
        text += offset.str[:3] + (":" + offset.str[3:]).where(offset.str[3:] != "00", "")
    return text.astype(_STR_DTYPE)


def database_declarations(frame: pd.DataFrame, types: Sequence[ColumnType]) -> Schema:
    """The declarations a table starts with: :func:`~dpcore.tables.schema.suggest_schema`, corrected by the database.

    The database's schema is public knowledge and costs nothing: a column it declares text is a
    category, whatever its values look like; a ``NOT NULL`` column is never missing; an enum
    type's values, or a ``CHECK``'s list, are the column's public categories, and a ``CHECK``'s
    range its public bounds (not read from the data, so no leak).
    Bounds and category lists read from the rows stay flagged as read from the data.
    """
    schema = suggest_schema(frame)
    declared = {t.name: t for t in types}
    for spec in schema.columns:
        known = declared.get(spec.name)
        if known is None:
            continue
        if not known.nullable:
            spec.may_be_missing = False
        if known.enums and spec.role != "identifier":
            spec.kind, spec.categories, spec.lower, spec.upper = "categorical", list(known.enums), None, None
            spec.bounds_from_data, spec.source = False, _("the database's enum type or CHECK constraint")
        elif known.lower is not None and known.upper is not None and known.numeric is not False and spec.role != "identifier":
            spec.kind, spec.categories, spec.lower, spec.upper = "numeric", [], known.lower, known.upper
            spec.bounds_from_data, spec.source = False, _("the database's CHECK constraint")
        elif known.numeric is False and spec.kind == "numeric":
            spec.kind, spec.lower, spec.upper = "categorical", None, None
            if spec.role != "identifier":
                spec.categories = sorted(map(str, frame[spec.name].dropna().astype("string").unique()))
                spec.bounds_from_data = True
                spec.source = _("the database declares it text; categories read from the data — replace with the public list")
    return schema


def open_source(
    source: str, *, table: str | None = None, query: str | None = None, secrets: str | os.PathLike[str] | None = None
) -> SqlSource:
    """A table or query on the connection ``source``: a name in the secrets file, or a URL (shown masked).

    Raises
    ------
    DataError
        An unknown name (the sentence lists the known ones and where they were looked up), or a
        query that is not read-only.
    """
    from sqlalchemy.engine import make_url

    if "://" in source:
        try:
            url = make_url(source)
        except Exception:
            raise DataError(_("'{source}' is not a database URL.").format(source=masked(source))) from None
        if "@" in (url.host or ""):
            # an unencoded "@" in the password: the rest of it would be read, and shown, as the host
            raise DataError(
                _(
                    "The database URL has more than one '@', so part of its password would be read as the host. Write "
                    "an '@' in the password as %40, or better, name the connection in the secrets file."
                )
            )
        return SqlSource(url, masked(url), table, query)
    connections = load_connections(secrets)
    if source not in connections:
        where = ", ".join(str(p) for p in ([Path(secrets)] if secrets is not None else secrets_files()))
        known = ", ".join(sorted(connections)) or _("none")
        raise DataError(
            _(
                "No connection is named '{name}' in the secrets file ({where}; known: {known}). Add a "
                '[connections.{name}] table with url = "…" there, or give the database\'s URL.'
            ).format(name=source, where=where, known=known)
        )
    return SqlSource(connections[source], source, table, query)
