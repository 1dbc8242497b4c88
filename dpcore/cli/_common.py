"""What every command shares: exit codes, argument types, file checks, messages, and the dataset a table spends."""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from dpcore.i18n import N_, _, short

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

    from dpcore.budget.accountant import BudgetLedger
    from dpcore.budget.datasets import Catalog, Chunks, TableMatch
    from dpcore.release import ReleasePlan
    from dpcore.tables.schema import Schema
    from dpcore.tables.sql_source import SqlSource

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_DATA, EXIT_BUDGET = 0, 1, 2, 3, 4
#: A model family with a regression and a classification member (registry keys ``<family>_reg`` and
#: ``<family>_clf``) is named by the family; the schema's task adds the suffix.
TASK_SUFFIX = {"regression": "_reg", "classification": "_clf"}


class UsageError(Exception):
    """Bad command-line arguments (exit code 2)."""


class Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports errors as exceptions, so :func:`main` returns instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise Exit(status)


#: What each command's ``add_<name>`` function receives to add its parser to.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("expected a number, got {text}").format(text=repr(text))) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(_("expected a finite number greater than 0, got {text}").format(text=repr(text)))
    return value


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("expected a whole number, got {text}").format(text=repr(text))) from None
    if value < least:
        raise argparse.ArgumentTypeError(
            _("expected a whole number of at least {least}, got {text}").format(least=least, text=repr(text))
        )
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


def seed_number(text: str) -> int:
    return _whole_number(text, 0)


#: What the commands call their files (``existing_file(path, "schema file")``), for the catalog.
FILE_KINDS = (
    N_("--html file"),
    N_("--json file"),
    N_("Markdown report"),
    N_("input file"),
    N_("map card"),
    N_("map file"),
    N_("model card"),
    N_("model file"),
    N_("output file"),
    N_("plan file"),
    N_("released file"),
    N_("report file"),
    N_("schema file"),
)


def existing_file(path: str, what: str) -> Path:
    file = Path(path)
    if not file.is_file():
        raise UsageError(_("the {what} '{path}' does not exist or is not a file").format(what=_(what), path=path))
    return file


def output_file(path: str, what: str) -> Path:
    file = Path(path)
    if file.is_dir():
        raise UsageError(_("the {what} '{path}' is a directory; give a file name").format(what=_(what), path=path))
    if not (file.parent if str(file.parent) else Path(".")).is_dir():
        raise UsageError(_("the folder of the {what} '{path}' does not exist").format(what=_(what), path=path))
    return file


def distinct_files(message: str, *paths: Path) -> None:
    """Raise ``UsageError(message)`` unless ``paths`` (the input and what a command writes) are all different files."""
    if len({path.resolve() for path in paths}) != len(paths):
        raise UsageError(message)


def copy_files(args: argparse.Namespace, clash: str) -> tuple[Path | None, Path, Path, Path | None]:
    """A copy command's input (None for a database table), output, JSON report and optional Markdown report, checked
    and all different (``clash``: the command's sentence when two of them are the same file)."""
    source = None if args.input is None else existing_file(args.input, "input file")
    output = output_file(args.output, "output file")
    report = output_file(args.report, "report file")
    markdown = output_file(args.markdown, "Markdown report") if args.markdown else None
    distinct_files(clash, *([source] if source else []), output, report, *([markdown] if markdown else []))
    return source, output, report, markdown


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT.csv, or a table or read-only query of a database (``--source`` with ``--table`` or ``--query``)."""
    parser.add_argument(
        "input", metavar="INPUT.csv", nargs="?", help=_("the private table (comma, semicolon or tab separated), or --source")
    )
    parser.add_argument(
        "--source",
        metavar="NAME|URL",
        help=_(
            "read the table from a database instead: a connection named in the secrets file ($DPSTUDIO_SECRETS, else "
            ".streamlit/secrets.toml), or a SQLAlchemy URL (its password is never shown)"
        ),
    )
    parser.add_argument("--table", metavar="NAME", help=_("with --source: the table (or view) to read"))
    parser.add_argument("--query", metavar="SQL", help=_("with --source: one read-only SELECT statement to read instead"))
    parser.add_argument(
        "--secrets", metavar="FILE", help=_("with --source: the secrets file naming the connections (TOML, as Streamlit's)")
    )


def database_source(args: argparse.Namespace, command: str) -> SqlSource | None:
    """The database table of ``--source`` (None when INPUT.csv is given); a sentence for a wrong combination."""
    if args.source is None:
        if args.table is not None or args.query is not None:
            raise UsageError(_("{command}: --table and --query need --source NAME|URL").format(command=command))
        if args.input is None:
            raise UsageError(
                _("{command}: give the table: INPUT.csv, or --source NAME|URL with --table NAME or --query SQL").format(
                    command=command
                )
            )
        return None
    if args.input is not None:
        raise UsageError(_("{command}: give INPUT.csv or --source, not both").format(command=command))
    if (args.table is None) == (args.query is None):
        raise UsageError(_("{command}: --source needs either --table NAME or --query SQL").format(command=command))
    from dpcore.tables.sql_source import open_source

    database = open_source(args.source, table=args.table, query=args.query, secrets=args.secrets)
    if getattr(args, "engine", "local") == "spark":
        _check_jdbc(database, command)
    return database


def _check_jdbc(database: SqlSource, command: str) -> None:
    """Sentences, before a row is read or Spark starts, for a database Spark cannot read over JDBC."""
    import importlib.util

    from dpcore.exceptions import DataError
    from dpcore.tables.sql_connections import jdbc_connection

    if database.url.get_backend_name() != "postgresql":
        raise UsageError(
            _(
                "{command}: Spark reads only PostgreSQL databases (over JDBC); a SQLite or DuckDB file is read on this "
                "machine: leave out --engine spark"
            ).format(command=command)
        )
    jdbc_connection(database.url, database.connection)  # a sentence for a socket or a setting the driver does not take
    if importlib.util.find_spec("pyspark") is None:
        return  # spark_engine's sentence names the way to install PySpark
    from dpcore.backends.spark_database import require_jdbc_driver

    try:
        require_jdbc_driver()
    except DataError as missing:
        raise UsageError(f"{command}: {missing}") from None


def read_input(path: Path | None, database: SqlSource | None) -> tuple[pd.DataFrame, str]:
    """The whole table (a CSV file or a database's rows) and the name a new dataset would get."""
    from dpcore.tables.loading import read_csv_path

    if database is not None:
        return database.read()[0], database.label
    assert path is not None
    return read_csv_path(path)[0], path.stem


def output_stem(path: Path | None, database: SqlSource | None) -> str:
    """The start of a default output file's name: the CSV file's, or the database table's (a query's: "query")."""
    if database is None:
        assert path is not None
        return path.stem
    return re.sub(r"[^\w.-]+", "_", database.table) if database.table is not None else "query"


def write_bytes(path: Path, data: bytes) -> None:
    """Write a file atomically (a temporary file renamed into place)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def write_text(path: Path, text: str) -> None:
    """Write a small UTF-8 text file atomically."""
    write_bytes(path, text.encode("utf-8"))


def para(text: str) -> str:
    """A help paragraph wrapped for an 88-column terminal."""
    return textwrap.fill(" ".join(text.split()), 88)


def say(message: str) -> None:
    print(message, file=sys.stderr)


def load_schema_file(path: str) -> Schema:
    from dpcore.tables.schema import load_schema

    return load_schema(existing_file(path, "schema file"))


def load_plan_file(path: str) -> ReleasePlan:
    from dpcore.exceptions import DataError
    from dpcore.release import ReleasePlan

    file = existing_file(path, "plan file")
    try:
        return ReleasePlan.from_json(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError(_("The plan file is not valid UTF-8 text.")) from None


def warn_seed(args: argparse.Namespace, what: str) -> None:
    """The warning of ``train`` and ``cluster`` when --seed is given: ``what`` (the model, the map) must not be released."""
    if args.seed is not None and not args.quiet:
        say(
            _("warning: --seed makes {what}'s noise reproducible; use it for tests and demos only, never for a release.").format(
                what=what
            )
        )


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say which dataset (the people) a table belongs to, and its budget."""
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help=_(
            "the dataset (the people) this table belongs to; default: the known dataset whose rows it overlaps, "
            "else a new one named after the file"
        ),
    )
    parser.add_argument(
        "--separate-dataset",
        action="store_true",
        help=_("record --dataset as a separate dataset although the table overlaps a known one (say why with --reason)"),
    )
    parser.add_argument(
        "--reason", metavar="TEXT", help=_("why the overlapping table is a separate dataset (kept in its history)")
    )
    parser.add_argument(
        "--unit",
        choices=["add/remove", "replace-one"],
        default="add/remove",
        help=_(
            "the unit of protection of a NEW dataset: add/remove (default) or replace-one (one person's values "
            "may change; the row count is public)"
        ),
    )
    parser.add_argument(
        "--epsilon-budget",
        type=positive_float,
        metavar="EPS",
        help=_(
            "the total privacy budget ε of a NEW dataset (default: exactly what this command spends); an "
            "existing dataset keeps its total, which only --raise-budget raises"
        ),
    )
    parser.add_argument(
        "--raise-budget",
        type=positive_float,
        metavar="EPS",
        help=_("deliberately raise the dataset's total ε to EPS first (recorded in its history)"),
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH|URL",
        help=_(LEDGER_HELP),
    )


def add_spending_arguments(parser: argparse.ArgumentParser, seed_help: str, quiet_help: str | None = None) -> None:
    """What every command that spends budget takes: the dataset, the privacy unit, a demo seed and --quiet.

    ``seed_help`` says what a seed must not be used for (already translated)."""
    add_dataset_arguments(parser)
    add_person_arguments(parser)
    parser.add_argument("--seed", type=seed_number, metavar="N", help=seed_help)
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet_help or _("no notes on standard error"))


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--master``: read and compute on this machine (default) or on Apache Spark."""
    parser.add_argument(
        "--engine",
        choices=["local", "spark"],
        default="local",
        help=_(
            "where the rows are read and counted: on this machine (default) or on Apache Spark, for tables "
            "past one machine (INPUT may then be a Parquet file or folder or a CSV glob, or --source a PostgreSQL "
            "table or query, read over JDBC); the model or copy is the same either way"
        ),
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        default="local[2]",
        help=_("with --engine spark: the Spark master (default local[2]: both cores of this machine)"),
    )


def spark_engine(args: argparse.Namespace, command: str) -> SparkSession:
    """The Spark session of ``--engine spark`` on ``--master``; a sentence when PySpark or Java is missing."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        raise UsageError(
            _(
                "{command}: --engine spark needs PySpark and Java 17; install them with pip install "
                "'dpstudio[spark]' and your system's openjdk-17 package"
            ).format(command=command)
        )
    from dpcore.backends.spark import spark_session

    try:
        return spark_session(args.master)
    except Exception:  # pyspark's own errors: Java missing, a master that cannot be reached
        raise UsageError(
            _(
                "{command}: Spark could not start on the master '{master}'. Check that Java 17 is installed and the master's URL."
            ).format(command=command, master=args.master)
        ) from None


def open_table_files(args: argparse.Namespace, files: list[str], command: str, first_total: float) -> BudgetLedger:
    """The dataset the ``files`` of ``--engine spark``'s INPUT belong to.

    The dataset is found as on one machine — the table's rows streamed once through the
    identification (overlap with known datasets, version fingerprint) — so a table cannot escape
    its budget by being read on another engine. A folder names a new dataset; else its one file.
    """
    from dpcore.backends.tables import arrow_frame, keyed_batches

    given = Path(args.input)
    stem = given.name if given.is_dir() else Path(files[0]).stem if len(files) == 1 else Path(files[0]).parent.name
    return open_dataset(args, command, lambda: (arrow_frame(cells) for cells, _keys in keyed_batches(files)), stem, first_total)


def add_person_arguments(parser: argparse.ArgumentParser) -> None:
    """The options for a table in which one person can have several rows (else the schema's declaration holds)."""
    parser.add_argument(
        "--privacy-unit",
        metavar="COLUMN",
        help=_(
            "the column naming each person (patient, customer or employee number) when a person can have several "
            "rows; it is never used nor released, and every ε becomes per person"
        ),
    )
    parser.add_argument(
        "--max-rows-per-person",
        type=positive_int,
        metavar="K",
        help=_("with --privacy-unit: at most K rows of each person count (the rest are left out at random)"),
    )


def apply_person_arguments(schema: Schema, args: argparse.Namespace, command: str) -> Schema:
    """``schema`` with the privacy unit of the command line, if one was given."""
    if args.privacy_unit is None:
        if args.max_rows_per_person is not None and schema.privacy_unit is None:
            raise UsageError(
                _("{command}: --max-rows-per-person needs --privacy-unit COLUMN (or a schema that names one)").format(
                    command=command
                )
            )
        if args.max_rows_per_person is not None:
            schema.rows_per_person = args.max_rows_per_person
        return schema
    if args.privacy_unit not in schema.names:
        raise UsageError(
            _("{command}: --privacy-unit: the schema declares no column '{privacy_unit}'").format(
                command=command, privacy_unit=args.privacy_unit
            )
        )
    k = args.max_rows_per_person or (schema.rows_per_person if schema.privacy_unit else None)
    if k is None:
        raise UsageError(
            _("{command}: --privacy-unit needs --max-rows-per-person K (at most how many rows of a person count)").format(
                command=command
            )
        )
    schema.privacy_unit, schema.rows_per_person = args.privacy_unit, k
    schema[args.privacy_unit].role = "identifier"
    return schema


#: Every ``--ledger``'s help: a file, or a server whose password stays out of the command line.
LEDGER_HELP = N_(
    "the budget ledger: a SQLite file, or a postgresql://user@host:port/db URL for a team server, its password in "
    "PGPASSWORD or ~/.pgpass (default: $DPSTUDIO_LEDGER or ~/.local/share/dpstudio/ledger.sqlite3)"
)


def ledger_path(args: argparse.Namespace) -> str:
    """The ledger named by ``--ledger`` or the default: a SQLite file's path or a ``postgresql://`` URL."""
    from dpcore.budget.accountant import default_ledger

    return str(args.ledger) if args.ledger else default_ledger()


def dataset_catalog(args: argparse.Namespace, command: str) -> Catalog:
    """The ledger's datasets, once the options naming the dataset are checked (before a row is read)."""
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(ledger_path(args))
    if args.separate_dataset and not (args.reason or "").strip():
        raise UsageError(
            _(
                "{command}: --separate-dataset needs --reason TEXT: why these are different people (kept in the "
                "new dataset's history)"
            ).format(command=command)
        )
    return catalog


def open_dataset(
    args: argparse.Namespace,
    command: str,
    chunks: Chunks,
    stem: str,
    first_total: float,
    database: SqlSource | None = None,
) -> BudgetLedger:
    """The dataset's ledger for a table: found by overlap, named by --dataset, or created with ``first_total``.

    A table read from a ``database`` is identified by its rows as a file is, and what was read (the
    connection's name or masked URL, and the table or the query's text) goes into the dataset's history.
    """
    catalog = dataset_catalog(args, command)
    return open_identified(args, command, catalog, catalog.identify(chunks), stem, first_total, database)


def open_identified(
    args: argparse.Namespace,
    command: str,
    catalog: Catalog,
    match: TableMatch,
    stem: str,
    first_total: float,
    database: SqlSource | None = None,
) -> BudgetLedger:
    """:func:`open_dataset` of a table already identified (``match``), as a release identifies it on its own read."""
    from dpcore.budget.datasets import OverlapRefused
    from dpcore.exceptions import DataError

    try:
        found = catalog.open_match(
            match,
            stem,
            dataset=args.dataset,
            separate=args.separate_dataset,
            reason=(args.reason or "").strip(),
            total_epsilon=args.epsilon_budget or first_total,
            unit=args.unit,
        )
    except OverlapRefused as refusal:
        raise DataError(
            str(refusal) + " " + _("To record it as a separate dataset: --separate-dataset --dataset NAME --reason TEXT.")
        ) from None
    ledger = catalog.ledger(found.dataset)
    if database is not None:
        database.record_read(ledger, f"dpcore {command}")
    if not args.quiet:
        way_out = _("If these are in fact other people: --separate-dataset --dataset NAME --reason TEXT.")
        attached = not found.created and not found.legacy and not args.separate_dataset
        say(
            " ".join(
                [found.sentence, *([way_out] if attached else []), _("Unit of protection: {unit}.").format(unit=ledger.unit)]
            )
        )
    if args.epsilon_budget is not None and not found.created and args.epsilon_budget != ledger.total:
        raise UsageError(
            _(
                "{command}: the dataset '{name}' already has a total ε = {total}; --epsilon-budget only sets the "
                "total of a new dataset. Use --raise-budget EPS to raise it deliberately."
            ).format(command=command, name=found.dataset.name, total=short(ledger.total))
        )
    if args.raise_budget is not None:
        ledger.set_total(args.raise_budget, confirm_raise=True, reason="raised on the command line (--raise-budget)")
        if not args.quiet:
            say(
                _("the dataset's total ε is now {raise_budget} (recorded in its history)").format(
                    raise_budget=short(args.raise_budget)
                )
            )
    return ledger


def first_total(args: argparse.Namespace) -> float:
    """A new dataset's total when none is given: exactly the ``--epsilon`` of this command, in the unit it is created with."""
    from decimal import Decimal

    from dpcore.budget.accountant import ADD_REMOVE, convert
    from dpcore.validation import epsilon_decimal

    return float(convert(epsilon_decimal(args.epsilon), Decimal(0), ADD_REMOVE, args.unit)[0])


def spent_sentence(ledger: BudgetLedger, epsilon: float, rows_per_person: int) -> str:
    """``at ε = …`` for ``train`` and ``cluster``: per person or not, in the dataset's unit, and what is left."""
    per = " " + _("per person, counting up to {k} rows each,").format(k=rows_per_person) if rows_per_person > 1 else ""
    counted = ledger.cost(epsilon)
    return (
        _("at ε = {epsilon}").format(epsilon=short(epsilon))
        + per
        + (" " + _("(counts as {counted} in this dataset's unit)").format(counted=short(counted)) if counted != epsilon else "")
        + "; "
        + _("{left} of ε = {total} left for this dataset").format(left=short(ledger.remaining), total=short(ledger.total))
    )
