"""The release commands: ``plan`` (the default plan to edit), ``release`` (the randomized copy) and ``estimate`` (the buyer's side)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcore.cli._common import (
    EXIT_OK,
    Subparsers,
    UsageError,
    add_dataset_arguments,
    add_engine_arguments,
    add_input_arguments,
    add_person_arguments,
    apply_person_arguments,
    copy_files,
    database_source,
    dataset_catalog,
    distinct_files,
    existing_file,
    ledger_path,
    load_plan_file,
    load_schema_file,
    open_dataset,
    open_identified,
    open_table_files,
    output_file,
    para,
    positive_float,
    positive_int,
    say,
    seed_number,
    spark_engine,
    write_text,
)
from dpcore.data_home import mask_password
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer, percent, short

if TYPE_CHECKING:
    import pandas as pd

    from dpcore.release import ReleasePlan
    from dpcore.tables.schema import Schema
    from dpcore.tables.sql_source import SqlSource

PLAN_HELP = N_("write the default release plan for a schema, to edit before releasing")
RELEASE_HELP = N_("randomize a CSV file by a plan; write the copy and its privacy report")
ESTIMATE_HELP = N_("the buyer's side: unbiased shares with 95%% intervals from a released copy")


def _load_plan(path: str | None, schema: Schema) -> ReleasePlan:
    from dpcore.release import default_plan

    if path is None:
        say(_("note: no --plan given, so the default plan is used (write it with 'dpcore plan' to edit it)"))
        return default_plan(schema)
    return load_plan_file(path)


# --- plan ------------------------------------------------------------------------------------------


def add_plan(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help=_(PLAN_HELP),
        description=para(
            _(
                "Write the release plan a careful owner would start from: identifiers and ignored columns dropped, "
                "two-category columns randomized by the two-coin method (ε = ln 3), other categories by k-ary "
                "randomized response, numbers put into equal-width bins over their declared bounds and then "
                "randomized. Edit the JSON (mechanism: drop, keep, coin, k-ary, bins or laplace; epsilon; bins; "
                "missing) and pass it to 'release --plan'."
            )
        ),
        epilog=_("example:\n  dpcore plan --schema adult.schema.json -o plan.json --epsilon 0.5 --bins 6"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    parser.add_argument("-o", "--output", required=True, metavar="PLAN.json", help=_("where to write the plan"))
    parser.add_argument(
        "--epsilon",
        type=positive_float,
        default=1.0,
        metavar="EPS",
        help=_("ε of each randomized column other than the coin (default 1)"),
    )
    parser.add_argument(
        "--bins", type=positive_int, default=8, metavar="N", help=_("number of bins for numeric columns (default 8)")
    )
    parser.set_defaults(handler=_run_plan)


def _run_plan(args: argparse.Namespace) -> int:
    from dpcore.release import default_plan, describe_plan

    if args.bins < 2:
        raise UsageError(_("plan: argument --bins: expected at least 2 bins"))
    schema = load_schema_file(args.schema)
    output = output_file(args.output, "plan file")
    plan = default_plan(schema, epsilon=args.epsilon, n_bins=args.bins)
    write_text(output, plan.to_json() + "\n")
    table = describe_plan(plan, schema)
    for row in table.itertuples(index=False):
        print(f"{row.column:>24}  {row.mechanism:<8} ε = {row.ε:<7.4g} {row[3]}")
    print(
        _("\nper-record ε of this plan: {per_record_epsilon}. Plan written to {output}.").format(
            per_record_epsilon=short(plan.per_record_epsilon), output=output
        )
    )
    return EXIT_OK


# --- release ---------------------------------------------------------------------------------------


def add_release(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "release",
        help=_(RELEASE_HELP),
        description=para(
            _(
                "Randomize every planned column of INPUT.csv value by value and write the copy a buyer may have, "
                "with a privacy report (JSON for programs, optionally Markdown for people). The release is charged "
                "to the dataset's privacy budget in a local ledger. Releasing the same table with the same plan "
                "again writes the same copy at no cost; --fresh makes a new copy and charges it again. Large files "
                "are read in chunks."
            )
        ),
        epilog=_(
            "example:\n  dpcore release adult.csv --schema adult.schema.json --plan plan.json \\\n      -o copy.csv "
            "--report copy.json --markdown copy.md --epsilon-budget 20"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(parser)
    add_engine_arguments(parser)
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    parser.add_argument("--plan", metavar="PLAN.json", help=_("the release plan (default: the default plan, see 'plan')"))
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT.csv",
        help=_("where to write the randomized copy (with --engine spark: a folder of parts)"),
    )
    parser.add_argument("--parquet", action="store_true", help=_("with --engine spark: also write the parts as Parquet"))
    parser.add_argument("--report", required=True, metavar="REPORT.json", help=_("where to write the privacy report (JSON)"))
    parser.add_argument("--markdown", metavar="REPORT.md", help=_("also write the report for people (Markdown)"))
    add_dataset_arguments(parser)
    add_person_arguments(parser)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help=_("make a new copy even if this table was released with this plan before (charged again)"),
    )
    parser.add_argument(
        "--accept-noise",
        action="store_true",
        help=_("release even when the copy is mostly noise for most of its randomized columns (refused by default)"),
    )
    parser.add_argument(
        "--seed", type=seed_number, metavar="N", help=_("fixed random seed — for tests only: a seeded copy must not be sold")
    )
    parser.add_argument("--chunksize", type=positive_int, metavar="ROWS", help=_("rows per chunk (default 262144)"))
    parser.add_argument("-q", "--quiet", action="store_true", help=_("no progress or notes on standard error"))
    parser.set_defaults(handler=_run_release)


def _refuse_noise(plan: ReleasePlan, schema: Schema, n_rows: int) -> None:
    """Refuse, before anything is charged or a dataset recorded, a copy whose verdict is mostly noise for most columns.

    ``n_rows`` counts the file's rows (before any per-person bound, so the verdict errs towards useful).
    """
    from dpcore.release import mostly_noise, noise_advice, usefulness, usefulness_summary

    table = usefulness(plan, schema, max(n_rows, 1))
    if mostly_noise(table):
        raise UsageError(
            _(
                "release: {summary} {advice} Nothing was charged. 'dpcore synthesize' makes the synthetic "
                "copy; to release this one anyway, add --accept-noise."
            ).format(summary=usefulness_summary(table), advice=noise_advice(table))
        )


def _progress(quiet: bool) -> Callable[[int, int], None] | None:
    """A progress callback printing to standard error: every second on a terminal, every 5 s in a log."""
    if quiet:
        return None
    stream, started = sys.stderr, time.monotonic()
    interval = 1.0 if stream.isatty() else 5.0
    state = {"time": 0.0, "finished": False}

    def show(done: int, total: int) -> None:
        now, finished = time.monotonic(), done >= total
        if state["finished"] or (now - state["time"] < interval and not finished):
            return
        state["time"], state["finished"] = now, finished
        rate = done / max(now - started, 1e-6) / 1e6
        text = _("releasing: read {share}  ({done} of {total} MB, {rate} MB/s)").format(
            share=percent(done / total, 1), done=integer(done / 1e6), total=integer(total / 1e6), rate=integer(rate)
        )
        stream.write(("\r" + text + ("\n" if finished else "")) if stream.isatty() else text + "\n")
        stream.flush()

    return show


def _run_release(args: argparse.Namespace) -> int:
    from dpcore.release import copy_epsilon, counted_rows_per_person

    clash = _("release: the input, the output and the report files must all be different")
    database = database_source(args, "release")
    source, output, report_path, markdown_path = (
        _spark_files(args, clash, database) if args.engine == "spark" else copy_files(args, clash)
    )
    schema = apply_person_arguments(load_schema_file(args.schema), args, "release")
    plan = _load_plan(args.plan, schema)
    plan.check(schema)
    if args.seed is not None:
        say(
            _(
                "warning: --seed makes the noise reproducible: anyone who knows the seed can undo it. Use it for "
                "tests only; a seeded copy must never be sold or shared."
            )
        )
    if args.separate_dataset and not args.dataset:
        raise UsageError(_("release: --separate-dataset needs --dataset NAME for the new dataset"))
    if not args.quiet:
        per_person = " " + _("(up to {k} rows per person)").format(k=schema.rows_per_person) if schema.privacy_unit else ""
        say(
            _("plan: {count} columns released, per-record ε = {per_record_epsilon}{per_person}; ledger {ledger_path}").format(
                count=len(plan.released_columns),
                per_record_epsilon=short(plan.per_record_epsilon),
                per_person=per_person,
                ledger_path=mask_password(ledger_path(args)),
            )
        )
    first_total = copy_epsilon(plan, args.unit, rows_per_person=counted_rows_per_person(schema))
    if args.engine == "spark":
        result = _release_on_spark(args, output, schema, plan, first_total, database)
    elif database is not None:
        result = _release_from_database(args, database, output, schema, plan, first_total)
    else:
        assert source is not None
        result = _release_file(args, source, output, schema, plan, first_total)
    write_text(report_path, json.dumps(result.report, indent=2, ensure_ascii=False) + "\n")
    if markdown_path is not None:
        write_text(markdown_path, result.markdown)
    if not args.quiet:
        for note in result.notes:
            say(_("note (for you, not the buyer): {note}").format(note=note))
        for warning in result.report.get("warnings", []):
            say(_("warning: {warning}").format(warning=warning))
    if result.reused:
        print(
            _(
                "wrote the same copy as the earlier release of this table with this plan to {output} (no ε charged; "
                "--fresh makes a new one and charges it again)"
            ).format(output=output)
        )
    else:
        per_person = (
            _("ε = {epsilon} per person (up to {k} rows each), ").format(
                epsilon=short(result.per_person_epsilon), k=schema.rows_per_person
            )
            if schema.privacy_unit
            else ""
        )
        print(
            _(
                "wrote the randomized copy to {output}: per-record ε = {epsilon}, {per_person}charged {charged} to the "
                "dataset's budget"
            ).format(
                output=output,
                epsilon=short(result.per_record_epsilon),
                per_person=per_person,
                charged=short(result.epsilon_charged),
            )
        )
    if markdown_path:
        print(_("wrote the privacy report to {report} and {markdown}").format(report=report_path, markdown=markdown_path))
    else:
        print(_("wrote the privacy report to {report}").format(report=report_path))
    return EXIT_OK


def _release_file(
    args: argparse.Namespace, source: Path, output: Path, schema: Schema, plan: ReleasePlan, first_total: float
) -> Any:
    """The copy of a CSV file, made from the same read that identifies the dataset it is charged to.

    The file is parsed once: each chunk is hashed for the dataset's identification and randomised
    for the copy. Once it is read, a copy that would be mostly noise is refused, the dataset is
    opened, and the copy is written beside ``output`` inside the ledger's spend, then renamed into
    place; a refusal leaves no file and charges nothing.
    """
    from dpcore.budget.datasets import TableMatch
    from dpcore.release import DEFAULT_CHUNKSIZE, release_csv
    from dpcore.release.streaming import DatasetOnRead

    catalog = dataset_catalog(args, "release")

    def opened(match: TableMatch, n_rows: int) -> Any:
        if not args.accept_noise:
            _refuse_noise(plan, schema, n_rows)
        return open_identified(args, "release", catalog, match, source.stem, first_total)

    return release_csv(
        source,
        output,
        schema,
        plan,
        dataset=DatasetOnRead(catalog, opened),
        fresh=args.fresh,
        random_state=args.seed,
        chunksize=args.chunksize or DEFAULT_CHUNKSIZE,
        progress=_progress(args.quiet),
        label=f"randomized-response copy ({output.name})",
    )


def _release_from_database(
    args: argparse.Namespace, database: SqlSource, output: Path, schema: Schema, plan: ReleasePlan, first_total: float
) -> Any:
    """The copy of a database's table or query, streamed in chunks, charged to the dataset its rows belong to.

    The rows are read from the database once: the reading that identifies the dataset keeps them
    (:class:`~dpcore.release.buffers.KeptRows`), and the copy is made of those very rows.
    """
    from dpcore.release import DEFAULT_CHUNKSIZE, release_batches
    from dpcore.release.buffers import KeptRows

    chunksize = args.chunksize or DEFAULT_CHUNKSIZE
    n_rows = database.row_count()
    if not args.accept_noise:
        _refuse_noise(plan, schema, n_rows)
    kept = KeptRows()
    try:

        def identified_chunks() -> Iterator[pd.DataFrame]:  # the catalog may read the rows more than once
            return kept.chunks() if kept.complete else kept.keep(database.batches(chunksize))

        ledger = open_dataset(args, "release", identified_chunks, database.label, first_total, database)
        return release_batches(
            kept.chunks,
            n_rows,
            output,
            schema,
            plan,
            ledger=ledger,
            fresh=args.fresh,
            random_state=args.seed,
            progress=_progress(args.quiet),
            label=f"randomized-response copy ({output.name})",
        )
    finally:
        kept.close()


def _spark_files(args: argparse.Namespace, clash: str, database: SqlSource | None) -> tuple[Path | None, Path, Path, Path | None]:
    """The table (a Parquet file or folder, or a CSV glob; None for a database's), the copy's folder and the reports,
    all different."""
    from dpcore.backends.tables import list_table_files

    if database is None:
        list_table_files(args.input)  # a sentence when nothing matches
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UsageError(
            _("release: with --engine spark the output '{path}' is a folder of parts; give a folder name").format(
                path=args.output
            )
        )
    if not (output.parent if str(output.parent) else Path(".")).is_dir():
        raise UsageError(_("the folder of the {what} '{path}' does not exist").format(what=_("output file"), path=args.output))
    report = output_file(args.report, "report file")
    markdown = output_file(args.markdown, "Markdown report") if args.markdown else None
    source = None if database is not None else Path(args.input)
    distinct_files(clash, *([source] if source else []), output, report, *([markdown] if markdown else []))
    return source, output, report, markdown


def _release_on_spark(
    args: argparse.Namespace, output: Path, schema: Schema, plan: ReleasePlan, first_total: float, database: SqlSource | None
) -> Any:
    """The copy made on Spark into the folder ``output``, charged to the dataset the table's rows belong to.

    A database's rows are streamed once through the identification on this machine, as a file's
    are (and the read is recorded in the dataset's history); Spark then reads them over JDBC.
    """
    from dpcore.backends.tables import list_table_files
    from dpcore.release import DEFAULT_CHUNKSIZE

    if database is not None:
        if not args.accept_noise:
            _refuse_noise(plan, schema, database.row_count())
        chunks = database.chunks(args.chunksize or DEFAULT_CHUNKSIZE)
        ledger = open_dataset(args, "release", chunks, database.label, first_total, database)
    else:
        files = list_table_files(args.input)
        if not args.accept_noise:
            _refuse_noise(plan, schema, _table_rows(files))
        ledger = open_table_files(args, files, "release", first_total)
    session = spark_engine(args, "release")
    from dpcore.release.spark import release_on_spark

    return release_on_spark(
        session,
        database if database is not None else args.input,
        output,
        schema,
        plan,
        ledger=ledger,
        fresh=args.fresh,
        random_state=args.seed,
        label=f"randomized-response copy ({output.name})",
        parquet=args.parquet,
    )


def _table_rows(files: list[str]) -> int:
    """Rows in a table's files: from the footers of Parquet files, by reading CSV files (a pass on this machine)."""
    from dpcore.backends.tables import csv_file_batches, file_format, parquet_file

    return sum(
        parquet_file(path).metadata.num_rows
        if file_format(path) == "parquet"
        else sum(batch.num_rows for batch in csv_file_batches(path))
        for path in files
    )


# --- estimate --------------------------------------------------------------------------------------


def add_estimate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help=_(ESTIMATE_HELP),
        description=para(
            _(
                "Correct a randomized copy for its noise: for every randomized column, the estimated true share of "
                "each category (or the mean, for Laplace columns) with its standard error and a confidence interval, "
                "computed from the copy and its privacy report only; beside them, 'consistent' shares (the "
                "maximum-likelihood shares, which sum to 1 and stay in [0, 1] but are slightly biased)."
            )
        ),
        epilog=_(
            "examples:\n  dpcore estimate copy.csv --report copy.json\n  dpcore estimate copy.csv --report "
            "copy.json --column sex --joint sex income"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "released",
        metavar="OUT.csv",
        help=_("the randomized (or synthetic) copy: a file, or the folder of a copy released on Spark"),
    )
    parser.add_argument("--report", required=True, metavar="REPORT.json", help=_("its privacy report (JSON)"))
    parser.add_argument("--column", action="append", metavar="NAME", help=_("only this column (repeat for several)"))
    parser.add_argument(
        "--joint", nargs=2, metavar=("A", "B"), help=_("also the debiased joint shares of two randomized columns")
    )
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL", help=_("interval level (default 0.95)"))
    parser.add_argument("--json", action="store_true", help=_("print JSON instead of tables"))
    parser.set_defaults(handler=_run_estimate)


def _load_report(path: str) -> dict[str, Any]:

    file = existing_file(path, "report file")
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(_("The report file is not valid JSON.")) from None
    if not isinstance(report, dict) or not isinstance(report.get("columns"), list):
        raise DataError(_("The report file is not a release report (it has no 'columns' list)."))
    return report


def _run_estimate(args: argparse.Namespace) -> int:
    from dpcore.release import estimate_joint, estimate_release, read_release, report_entry

    if not 0 < args.confidence < 1:
        raise UsageError(_("estimate: argument --confidence: expected a level between 0 and 1, e.g. 0.95"))
    folder = Path(args.released)  # a copy released on Spark is a folder of parts
    released = folder if folder.is_dir() else existing_file(args.released, "released file")
    report = _load_report(args.report)
    if report.get("kind") == "synthetic":
        return _estimate_synthetic(released, report, args)
    try:
        for name in (args.column or []) + (args.joint or []):
            report_entry(report, name)
    except KeyError as missing:
        raise UsageError(_("estimate: the report has no column {missing}").format(missing=missing)) from None
    except (TypeError, AttributeError):
        raise DataError(_("The report file is not a release report.")) from None
    try:
        results = estimate_release(released, report, columns=args.column, confidence=args.confidence)
    except (KeyError, TypeError):
        raise DataError(_("The report file is not a release report this version understands.")) from None
    joint = None
    if args.joint:
        a, b = (report_entry(report, name) for name in args.joint)
        if a["mechanism"] not in ("coin", "k-ary", "bins") or b["mechanism"] not in ("coin", "k-ary", "bins"):
            raise UsageError(_("estimate: --joint needs two randomized-response columns (coin, k-ary or bins)"))
        table = read_release(released)
        joint = estimate_joint(table[a["header"]], a, table[b["header"]], b, args.confidence)
    if args.json:
        out = {name: frame.to_dict("records") for name, frame in results.items()}
        if joint is not None:
            out["joint"] = joint.to_dict("records")
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return EXIT_OK
    level = f"{100 * args.confidence:g}%"
    for name, frame in results.items():
        entry = report_entry(report, name)
        print(f"\n{name}  ({entry['mechanism']}, ε = {entry['epsilon']:.4g})")
        print(f"  {'category':<28} {'estimate':>9} {'std.err':>8}   {f'{level} interval':<20} {'consistent':>10}")
        for row in frame.itertuples(index=False):
            interval = f"[{row.ci_lower:.4f}, {row.ci_upper:.4f}]"
            print(
                f"  {str(row.category)[:28]:<28} {row.estimate:>9.4f} {row.std_error:>8.4f}   "
                f"{interval:<20} {row.consistent:>10.4f}"
            )
        note = _noise_note(name, entry, frame)
        if note:
            print(_("  note: {note}").format(note=note))
    if joint is not None:
        first, second = joint.columns[0], joint.columns[1]
        print(_("\njoint shares of {first} and {second}").format(first=first, second=second))
        for row in joint.itertuples(index=False):
            print(
                f"  {str(row[0])[:20]:<20} {str(row[1])[:20]:<20} {row.estimate:>9.4f} {row.std_error:>8.4f}   "
                f"[{row.ci_lower:.4f}, {row.ci_upper:.4f}]"
            )
    print(
        _(
            "\nShares are unbiased estimates of the true shares; they can fall slightly outside [0, 1]. The "
            "'consistent' column holds the maximum-likelihood shares instead: they sum to 1 and stay in [0, 1] "
            "but are slightly biased."
        )
    )
    return EXIT_OK


def _estimate_synthetic(released: Path, report: dict[str, Any], args: argparse.Namespace) -> int:
    """The buyer's shares of a synthetic copy: its rows need no debiasing, only the measurement noise's interval."""
    from dpcore.synthetic import read_synthetic, synthetic_shares

    if args.joint:
        raise UsageError(
            _("estimate: --joint debiases two randomized columns; a synthetic copy needs none, so count its pairs directly")
        )
    names = [entry["column"] for entry in report["columns"]]
    unknown = [name for name in args.column or [] if name not in names]
    if unknown:
        raise UsageError(_("estimate: the report has no column {missing}").format(missing=", ".join(unknown)))
    try:
        copy = read_synthetic(released.read_bytes(), report)
        results = {name: synthetic_shares(copy, report, name, args.confidence) for name in args.column or names}
    except (KeyError, TypeError, StopIteration):
        raise DataError(_("The synthetic copy does not match its report (a column or its cells are missing).")) from None
    if args.json:
        print(json.dumps({name: frame.to_dict("records") for name, frame in results.items()}, indent=2, ensure_ascii=False))
        return EXIT_OK
    level = f"{100 * args.confidence:g}%"
    for name, frame in results.items():
        print("\n" + _("{name}  (synthetic)").format(name=name))
        print(f"  {'category':<28} {'share':>9} {'std.err':>8}   {f'{level} interval':<20}")
        for row in frame.itertuples(index=False):
            interval = f"[{row.ci_lower:.4f}, {row.ci_upper:.4f}]"
            print(f"  {str(row.category)[:28]:<28} {row.estimate:>9.4f} {row.std_error:>8.4f}   {interval:<20}")
    print(
        _(
            "\nA synthetic copy's shares are read off its rows; the intervals cover the noise of the measured one-way "
            "counts only, so the model's own error comes on top: read them as lower bounds of the uncertainty."
        )
    )
    return EXIT_OK


def _noise_note(name: str, entry: dict[str, Any], frame: pd.DataFrame) -> str | None:
    """A sentence for the buyer when a column's estimates are mostly noise (from their own standard errors)."""
    from dpcore.release.usefulness import verdict

    error = float(frame["std_error"].mean())
    if entry["mechanism"] == "laplace":
        level, sentence = verdict(name, error, lower=entry["lower"], upper=entry["upper"], who="your", advise=False)
    else:
        level, sentence = verdict(name, error, k=int(entry["n_categories"]), who="your", advise=False)
    return sentence if level == "noise" else None
