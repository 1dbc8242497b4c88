"""Connections to SQL databases: named in a secrets file, shown without their secrets, queried read-only.

* A connection is named in a TOML file (:func:`load_connections`: ``$DPSTUDIO_SECRETS``, else
  Streamlit's ``.streamlit/secrets.toml`` here or in the home folder) and referred to by that name;
  a URL given instead is shown and stored as its dialect, host, port and database alone
  (:func:`masked`), never its user, password or query string.
* A query must be one ``SELECT`` (or ``WITH … SELECT``) statement (:func:`check_read_only`: one
  left-to-right scan that reads quotes and comments as what they are; DuckDB's own parser too).
* A PostgreSQL connection is also given to Spark's JDBC data source (:func:`jdbc_connection`):
  the same secrets, its user and password in the driver's properties, never in a message.

:mod:`~dpcore.tables.sql_source` reads the rows.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

#: The environment variable naming the secrets file of the command line and the app.
SECRETS_ENV = "DPSTUDIO_SECRETS"
#: What a secrets file looks like (no real password in it), for an owner who has none yet.
SECRETS_EXAMPLE = """[connections.clinic]
url = "postgresql+psycopg://reader:PASSWORD@db.example.org:5432/clinic"

[connections.warehouse]
url = "duckdb:////srv/data/warehouse.duckdb"
"""
#: A query as an owner would write one (SQL: the same in every language).
QUERY_EXAMPLE = "SELECT age, sex, income FROM census WHERE year = 2024"
# A query's words that write, lock or reach outside the database, whatever the statement starts with
# (PostgreSQL's data-modifying WITH, SELECT … INTO, DuckDB's COPY and ATTACH).
_WRITING = frozenset(
    {
        "alter", "attach", "begin", "call", "checkpoint", "cluster", "commit", "copy", "create", "deallocate", "delete",
        "detach", "discard", "do", "drop", "execute", "export", "grant", "import", "insert", "install", "into", "listen",
        "load", "lock", "merge", "notify", "pragma", "prepare", "refresh", "reindex", "reset", "revoke", "rollback",
        "savepoint", "set", "truncate", "update", "upsert", "use", "vacuum",
    }
)  # fmt: skip
#: The longest query read: the check below reads it once, left to right, and so stays fast.
MAX_QUERY_LENGTH = 100_000
# One token of a query, read left to right so that a quote inside a comment, or "--" inside a quote, is read
# as what it is: comments, strings (PostgreSQL's E'\'' with backslash escapes too), quoted names (DuckDB's and
# SQLite's [name] too), the opening of a dollar quote ($$ or $tag$), a word, a semicolon, anything else. A quote
# left open is refused; a comment left open runs to the end (the database refuses it).
_TOKEN = re.compile(
    r"""(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<quoted>[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])
    |(?P<unclosed>[eE]?'|["`\[])
    |(?P<dollar>\$(?:[^\W\d][\w]*)?\$)
    |(?P<word>[^\W\d][\w$]*)
    |(?P<semicolon>;)
    |(?P<space>\s+)
    |(?P<other>[^\w\s'"`\[$;/-]+|.)""",
    re.DOTALL | re.VERBOSE,
)
_WAY_OUT = N_(
    "Write one SELECT (or WITH … SELECT) statement; to read the result of anything else, have the database's "
    "administrator make a view of it and read that view as a table."
)


def secrets_files() -> list[Path]:
    """Where connections are looked up: ``$DPSTUDIO_SECRETS`` alone when it is set, else Streamlit's two places."""
    given = os.environ.get(SECRETS_ENV)
    if given:
        return [Path(given).expanduser()]
    return [Path.cwd() / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]


def load_connections(path: str | os.PathLike[str] | None = None) -> dict[str, URL]:
    """The named connections of a secrets file, as Streamlit's ``st.connection`` reads them.

    Each ``[connections.NAME]`` table holds either ``url = "dialect+driver://user:password@host/db"``
    or its parts (``dialect``, ``driver``, ``username``, ``password``, ``host``, ``port``,
    ``database``). Without ``path`` the files of :func:`secrets_files` are read, the first one
    winning on a name both define; files that do not exist are skipped.

    Returns
    -------
    dict
        ``NAME → sqlalchemy.engine.URL`` (whose ``repr`` hides the password).
    """
    from sqlalchemy.engine import URL, make_url
    from sqlalchemy.exc import ArgumentError

    files = [Path(path)] if path is not None else secrets_files()
    found: dict[str, URL] = {}
    for file in reversed(files):  # the first file wins
        if not file.is_file():
            if path is not None:
                raise DataError(_("The secrets file '{path}' does not exist.").format(path=file))
            continue
        try:
            secrets = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            # tomllib's message quotes the line, which may hold a password
            raise DataError(
                _("The secrets file '{path}' is not valid TOML. Check its quotes and brackets.").format(path=file)
            ) from None
        connections = secrets.get("connections") or {}
        if not isinstance(connections, dict):
            raise DataError(
                _(
                    "In the secrets file '{path}', connections is not a table of connections. Write each one as "
                    '[connections.NAME] with url = "dialect://user@host/db" under it.'
                ).format(path=file)
            )
        for name, entry in connections.items():
            if not isinstance(entry, dict):
                continue
            try:
                if "url" in entry:
                    if not isinstance(entry["url"], str):
                        raise TypeError("a URL is text")
                    found[str(name)] = make_url(entry["url"])
                elif "dialect" in entry:
                    dialect = str(entry["dialect"]) + (f"+{entry['driver']}" if entry.get("driver") else "")
                    port = entry.get("port")
                    found[str(name)] = URL.create(
                        dialect,
                        username=entry.get("username"),
                        password=entry.get("password"),
                        host=entry.get("host"),
                        port=int(port) if port is not None else None,
                        database=entry.get("database"),
                    )
            except (ValueError, TypeError, ArgumentError):  # the message may quote the URL, password and all
                raise DataError(
                    _(
                        "The connection '{name}' in '{path}' has no valid url. Write it as url = \"dialect://user@host/db\"."
                    ).format(name=name, path=file)
                ) from None
    return found


def masked(url: URL | str) -> str:
    """The URL as it may be shown or stored: its dialect, host, port and database alone.

    Never its user name, password or query string (``?password=…``, ``?motherduck_token=…``):
    any of them may hold a secret. A host with ``@`` in it is a password's tail and is hidden too.
    """
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url) if isinstance(url, str) else url
        host = parsed.host or ""
        if "@" in host:
            host = "***"
        port = f":{parsed.port}" if parsed.port else ""
        return f"{parsed.drivername}://{host}{port}/{parsed.database or ''}"
    except Exception:  # not a URL at all: show nothing of it
        return "***"


#: libpq's settings of a PostgreSQL URL that PostgreSQL's JDBC driver takes too, by the driver's name for them.
_JDBC_SETTINGS = {
    "sslmode": "sslmode",
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "application_name": "ApplicationName",
    "connect_timeout": "connectTimeout",
}
#: What every JDBC connection of DP Studio asks of PostgreSQL: read-only transactions, as the local read's.
JDBC_READ_ONLY = "-c default_transaction_read_only=on"


def jdbc_connection(url: URL, connection: str) -> tuple[str, dict[str, str]]:
    """A PostgreSQL URL as Spark's JDBC data source takes it: ``jdbc:postgresql://host:port/db`` and its properties.

    The user and the password (the URL's, else ``$PGPASSWORD``, as libpq reads it; the JDBC
    driver reads ``~/.pgpass`` itself) go into the properties, never into the JDBC URL, and
    every connection asks for read-only transactions (:data:`JDBC_READ_ONLY`), as the local
    read's does. The URL's ``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``,
    ``application_name`` and ``connect_timeout`` are passed on under the driver's names; any
    other setting after the ``?`` is refused, named, rather than silently dropped.

    Parameters
    ----------
    url : sqlalchemy.engine.URL
        A ``postgresql://`` (or ``postgresql+psycopg://``) URL, from the secrets file or the command line.
    connection : str
        The connection's name, or its masked URL: how the sentences name it.

    Raises
    ------
    DataError
        Not a PostgreSQL URL, a server reached through a unix socket (the JDBC driver needs a
        host name), or a setting the JDBC driver does not take. No sentence quotes the URL.

    Examples
    --------
    >>> from sqlalchemy.engine import make_url
    >>> jdbc_connection(make_url("postgresql+psycopg://reader:secret@db.example:5433/clinic?sslmode=require"), "clinic")
    ('jdbc:postgresql://db.example:5433/clinic', {'options': '-c default_transaction_read_only=on', 'sslmode': 'require', \
'user': 'reader', 'password': 'secret'})
    """
    if url.get_backend_name() != "postgresql":
        raise DataError(
            _(
                "The connection '{connection}' is not a PostgreSQL database, and Spark reads only PostgreSQL over "
                "JDBC. Read a SQLite or DuckDB file on this machine: leave out --engine spark."
            ).format(connection=connection)
        )
    settings = {key: value if isinstance(value, str) else ",".join(value) for key, value in url.query.items()}
    host = settings.pop("host", None) or url.host
    port = settings.pop("port", None) or url.port
    user = settings.pop("user", None) or url.username
    password = settings.pop("password", None) or url.password or os.environ.get("PGPASSWORD")
    if not host or host.startswith("/") or "," in str(host) or "@" in str(host):
        raise DataError(
            _(
                "The connection '{connection}' reaches PostgreSQL through a unix socket (or several hosts), and Spark's "
                "JDBC driver needs one host name and port. Give the server's host and port in the connection's URL."
            ).format(connection=connection)
        )
    unknown = sorted(set(settings) - set(_JDBC_SETTINGS) - {"options"})
    if unknown:
        raise DataError(
            _(
                "The connection '{connection}' has the setting '{setting}' after its '?', which DP Studio does not "
                "pass to Spark's JDBC driver. Remove it from the URL (the driver takes sslmode, sslrootcert, sslcert, "
                "sslkey, application_name and connect_timeout)."
            ).format(connection=connection, setting=unknown[0])
        )
    options = " ".join(part for part in (settings.pop("options", ""), JDBC_READ_ONLY) if part)
    properties = {"options": options, **{_JDBC_SETTINGS[key]: value for key, value in sorted(settings.items())}}
    if user:
        properties["user"] = str(user)
    if password:
        properties["password"] = str(password)
    host_text = f"[{host}]" if ":" in str(host) else str(host)  # an IPv6 address is written in brackets
    address = f"{host_text}:{port}" if port else host_text
    database = quote(url.database or "", safe="")
    return f"jdbc:postgresql://{address}/{database}", properties


def check_read_only(query: str) -> str:
    """The query without its trailing semicolon, if it is one read-only ``SELECT`` (or ``WITH … SELECT``) statement.

    One scan, left to right (linear, on at most :data:`MAX_QUERY_LENGTH` characters), skips
    comments, quoted text, quoted names (``"…"``, `` `…` ``, ``[…]``), PostgreSQL's ``E'…'``
    and dollar quotes together, so that none hides another. The words outside them must start
    with ``SELECT`` or ``WITH`` and hold no word that writes (``INSERT``, ``UPDATE``, ``DELETE``,
    ``INTO``, ``COPY``, ``ATTACH``, ``PRAGMA``, ``SET``, …); after a ``;`` only comments may
    follow; a quote left open is refused. The connection is read-only as well wherever the
    driver allows it (:meth:`SqlSource.engine`).

    Raises
    ------
    DataError
        With a sentence naming the way out (a view read as a table).
    """
    text = str(query).strip()
    if len(text) > MAX_QUERY_LENGTH:
        raise DataError(
            _("The query is longer than {length} characters. Read a view of it as a table instead.").format(
                length=integer(MAX_QUERY_LENGTH)
            )
        )
    words, end, position, ended = [], len(text), 0, None
    while position < len(text):
        token = _TOKEN.match(text, position)
        assert token is not None  # "other" matches any one character
        kind, piece, position = token.lastgroup, token[0], token.end()
        if kind in ("comment", "space"):
            continue
        if ended is not None:  # anything but a comment after the first semicolon is a second statement
            raise DataError(_("Only one statement can be read, and this query holds several. ") + _(_WAY_OUT))
        if kind == "semicolon":
            ended, end = True, token.start()
        elif kind == "dollar":  # $tag$ … $tag$: a string in PostgreSQL, read to its closing tag
            closing = text.find(piece, position)
            if closing < 0:
                raise DataError(_("A quote in the query is not closed. Close it, or write the query again."))
            position = closing + len(piece)
        elif kind == "unclosed":
            raise DataError(_("A quote in the query is not closed. Close it, or write the query again."))
        elif kind == "quoted":
            if piece[0] == "[" and ";" in piece:  # a DuckDB list or a PostgreSQL subscript, not only a name
                raise DataError(_("Only one statement can be read, and this query holds several. ") + _(_WAY_OUT))
        elif kind == "word":
            words.append(piece.casefold())
    if not words:
        raise DataError(_("The query is empty. Write a SELECT statement, or choose a table."))
    if words[0] not in ("select", "with") or not _WRITING.isdisjoint(words):
        raise DataError(_("Only a query that reads can be used: a SELECT statement that changes nothing. ") + _(_WAY_OUT))
    return text[:end].rstrip()


def _check_duckdb_statement(query: str) -> None:
    """DuckDB's own parser must read the query as exactly one SELECT statement (after :func:`check_read_only`)."""
    import duckdb

    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error:
        raise DataError(_("DuckDB cannot read the query as SQL. Check its spelling and its quotes.")) from None
    if len(statements) != 1:
        raise DataError(_("Only one statement can be read, and this query holds several. ") + _(_WAY_OUT))
    if statements[0].type != duckdb.StatementType.SELECT:
        raise DataError(_("Only a query that reads can be used: a SELECT statement that changes nothing. ") + _(_WAY_OUT))
