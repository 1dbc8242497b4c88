"""Command line: ``python -m dpcore COMMAND ...`` — the DP Studio engine without a browser.

Each command is one ``_add_<name>(subparsers)`` function that declares its arguments and sets
``handler`` to a ``_run_<name>(args) -> int`` function; register a new command (``benchmark``,
``train``, ...) by appending its ``_add_`` function to :data:`COMMANDS`.

Exit codes scripts can rely on: 0 ok, 2 bad arguments or usage, 3 bad data, schema, plan or
report, 4 privacy budget exceeded (1 for an unexpected internal error). Errors are one line on
standard error, never a traceback, never a cell value of the data. Progress goes to standard
error, results to standard output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_DATA, EXIT_BUDGET = 0, 1, 2, 3, 4

DESCRIPTION = """\
DP Studio on the command line: sell a copy of a sensitive table in which every value was
randomized on its own (local differential privacy), and let the buyer correct for the noise.

The usual flow:
  1. plan      write the default release plan for your schema, then edit it if you like
  2. release   randomize the CSV by the plan; writes the copy and its privacy report
  3. estimate  (the buyer) unbiased shares with 95% intervals from the copy and its report
"""

EPILOG = """\
examples:
  python -m dpcore plan --schema adult.schema.json -o plan.json
  python -m dpcore release adult.csv --schema adult.schema.json --plan plan.json \\
      -o copy.csv --report copy.json --markdown copy.md --epsilon-budget 20
  python -m dpcore estimate copy.csv --report copy.json

exit codes: 0 ok, 2 bad arguments, 3 bad data/schema/plan/report, 4 privacy budget exceeded.
Run 'python -m dpcore COMMAND --help' for a command's options.
"""


class UsageError(Exception):
    """Bad command-line arguments (exit code 2)."""


class _Exit(Exception):
    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports errors as exceptions, so :func:`main` returns instead of exiting."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status=0, message=None):
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number greater than 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return value


def _existing_file(path: str, what: str) -> Path:
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"the {what} '{path}' does not exist or is not a file")
    return file


def _output_file(path: str, what: str) -> Path:
    file = Path(path)
    if file.is_dir():
        raise UsageError(f"the {what} '{path}' is a directory; give a file name")
    if not (file.parent if str(file.parent) else Path(".")).is_dir():
        raise UsageError(f"the folder of the {what} '{path}' does not exist")
    return file


def _write_text(path: Path, text: str) -> None:
    """Write a small text file atomically (a temporary file renamed into place)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _para(text: str) -> str:
    """A help paragraph wrapped for an 88-column terminal."""
    return textwrap.fill(" ".join(text.split()), 88)


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _load_schema(path: str):
    from dpcore.schema import load_schema

    return load_schema(_existing_file(path, "schema file"))


def _load_plan(path: str | None, schema):
    from dpcore.exceptions import DataError
    from dpcore.release import ReleasePlan, default_plan

    if path is None:
        _say("note: no --plan given, so the default plan is used (write it with 'python -m dpcore plan' to edit it)")
        return default_plan(schema)
    file = _existing_file(path, "plan file")
    try:
        return ReleasePlan.from_json(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError("The plan file is not valid UTF-8 text.") from None


# --- plan ------------------------------------------------------------------------------------------


def _add_plan(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="write the default release plan for a schema, to edit before releasing",
        description=_para(
            "Write the release plan a careful owner would start from: identifiers and ignored columns dropped, "
            "two-category columns randomized by the two-coin method (ε = ln 3), other categories by k-ary randomized "
            "response, numbers put into equal-width bins over their declared bounds and then randomized. Edit the JSON "
            "(mechanism: drop, keep, coin, k-ary, bins or laplace; epsilon; bins; missing) and pass it to 'release --plan'."
        ),
        epilog="example:\n  python -m dpcore plan --schema adult.schema.json -o plan.json --epsilon 0.5 --bins 6",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--schema", required=True, metavar="SCHEMA.json", help="the schema: column roles, categories and bounds")
    parser.add_argument("-o", "--output", required=True, metavar="PLAN.json", help="where to write the plan")
    parser.add_argument(
        "--epsilon",
        type=_positive_float,
        default=1.0,
        metavar="EPS",
        help="ε of each randomized column other than the coin (default 1)",
    )
    parser.add_argument(
        "--bins", type=_positive_int, default=8, metavar="N", help="number of bins for numeric columns (default 8)"
    )
    parser.set_defaults(handler=_run_plan)


def _run_plan(args) -> int:
    from dpcore.release import default_plan, describe_plan

    if args.bins < 2:
        raise UsageError("plan: argument --bins: expected at least 2 bins")
    schema = _load_schema(args.schema)
    output = _output_file(args.output, "plan file")
    plan = default_plan(schema, epsilon=args.epsilon, n_bins=args.bins)
    _write_text(output, plan.to_json() + "\n")
    table = describe_plan(plan, schema)
    for row in table.itertuples(index=False):
        print(f"{row.column:>24}  {row.mechanism:<8} ε = {row.ε:<7.4g} {row[3]}")
    print(f"\nper-record ε of this plan: {plan.per_record_epsilon:g}. Plan written to {output}.")
    return EXIT_OK


# --- release ---------------------------------------------------------------------------------------


def _add_release(subparsers) -> None:
    parser = subparsers.add_parser(
        "release",
        help="randomize a CSV file by a plan; write the copy and its privacy report",
        description=_para(
            "Randomize every planned column of INPUT.csv value by value and write the copy a buyer may have, "
            "with a privacy report (JSON for programs, optionally Markdown for people). The release is charged to the "
            "dataset's privacy budget in a local ledger. Releasing the same table with the same plan again writes the same "
            "copy at no cost; --fresh makes a new copy and charges it again. Large files are read in chunks."
        ),
        epilog="example:\n  python -m dpcore release adult.csv --schema adult.schema.json --plan plan.json \\\n"
        "      -o copy.csv --report copy.json --markdown copy.md --epsilon-budget 20",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="INPUT.csv", help="the private table (comma, semicolon or tab separated)")
    parser.add_argument("--schema", required=True, metavar="SCHEMA.json", help="the schema: column roles, categories and bounds")
    parser.add_argument("--plan", metavar="PLAN.json", help="the release plan (default: the default plan, see 'plan')")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.csv", help="where to write the randomized copy")
    parser.add_argument("--report", required=True, metavar="REPORT.json", help="where to write the privacy report (JSON)")
    parser.add_argument("--markdown", metavar="REPORT.md", help="also write the report for people (Markdown)")
    parser.add_argument(
        "--dataset", metavar="NAME",
        help="the dataset (the people) this table belongs to; default: the known dataset whose rows it overlaps, "
        "else a new one named after the file",
    )
    parser.add_argument(
        "--separate-dataset", action="store_true",
        help="record --dataset as a separate dataset although the table overlaps a known one (say why with --reason)",
    )
    parser.add_argument("--reason", metavar="TEXT", help="why the overlapping table is a separate dataset (kept in its history)")
    parser.add_argument(
        "--unit", choices=["add/remove", "replace-one"], default="add/remove",
        help="the unit of protection of a NEW dataset: add/remove (default; the copy is padded to a noisy row count) or "
        "replace-one (one person's values may change; the row count is public)",
    )
    parser.add_argument(
        "--epsilon-budget",
        type=_positive_float,
        metavar="EPS",
        help="the total privacy budget ε of a NEW dataset (default: exactly this release's ε); an existing "
        "dataset keeps its total, which only --raise-budget raises",
    )
    parser.add_argument(
        "--raise-budget", type=_positive_float, metavar="EPS",
        help="deliberately raise the dataset's total ε to EPS before releasing (recorded in its history)",
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="the budget ledger database (default: $DPSTUDIO_LEDGER or ~/.local/share/dpstudio/ledger.sqlite3)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="make a new copy even if this table was released with this plan before (charged again)",
    )
    parser.add_argument(
        "--seed", type=_seed, metavar="N", help="fixed random seed — for tests only: a seeded copy must not be sold"
    )
    parser.add_argument("--chunksize", type=_positive_int, metavar="ROWS", help="rows per chunk (default 262144)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or notes on standard error")
    parser.set_defaults(handler=_run_release)


def _progress(quiet: bool):
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
        text = f"releasing: read {100 * done / total:5.1f}%  ({done / 1e6:,.0f} of {total / 1e6:,.0f} MB, {rate:,.0f} MB/s)"
        stream.write(("\r" + text + ("\n" if finished else "")) if stream.isatty() else text + "\n")
        stream.flush()

    return show


def _run_release(args) -> int:
    from dpcore.accountant import default_ledger_path
    from dpcore.release import DEFAULT_CHUNKSIZE, release_csv

    source = _existing_file(args.input, "input file")
    output = _output_file(args.output, "output file")
    report_path = _output_file(args.report, "report file")
    markdown_path = _output_file(args.markdown, "Markdown report") if args.markdown else None
    outputs = [output.resolve(), report_path.resolve()] + ([markdown_path.resolve()] if markdown_path else [])
    if source.resolve() in outputs or len(set(outputs)) != len(outputs):
        raise UsageError("release: the input, the output and the report files must all be different")
    schema = _load_schema(args.schema)
    plan = _load_plan(args.plan, schema)
    plan.check(schema)
    if args.seed is not None:
        _say(
            "warning: --seed makes the noise reproducible: anyone who knows the seed can undo it. "
            "Use it for tests only; a seeded copy must never be sold or shared."
        )
    if args.separate_dataset and not args.dataset:
        raise UsageError("release: --separate-dataset needs --dataset NAME for the new dataset")
    ledger_path = Path(args.ledger) if args.ledger else default_ledger_path()
    if not args.quiet:
        _say(f"plan: {len(plan.released_columns)} columns released, per-record ε = {plan.per_record_epsilon:g}; "
             f"ledger {ledger_path}")
    ledger = _open_dataset(args, source, ledger_path, plan)
    result = release_csv(
        source,
        output,
        schema,
        plan,
        ledger=ledger,
        fresh=args.fresh,
        random_state=args.seed,
        chunksize=args.chunksize or DEFAULT_CHUNKSIZE,
        progress=_progress(args.quiet),
        label=f"randomized-response copy ({output.name})",
    )
    _write_text(report_path, json.dumps(result.report, indent=2, ensure_ascii=False) + "\n")
    if markdown_path is not None:
        _write_text(markdown_path, result.markdown)
    if not args.quiet:
        for note in result.notes:
            _say(f"note (for you, not the buyer): {note}")
        for warning in result.report.get("warnings", []):
            _say(f"warning: {warning}")
    if result.reused:
        print(
            f"wrote the same copy as the earlier release of this table with this plan to {output} (no ε charged; "
            "--fresh makes a new one and charges it again)"
        )
    else:
        print(
            f"wrote the randomized copy to {output}: per-record ε = {result.per_record_epsilon:g}, "
            f"charged {result.epsilon_charged:g} to the dataset's budget"
        )
    print(f"wrote the privacy report to {report_path}" + (f" and {markdown_path}" if markdown_path else ""))
    return EXIT_OK


def _open_dataset(args, source: Path, ledger_path: Path, plan):
    """The dataset's ledger for this file: found by overlap, named by --dataset, or created."""
    from dpcore.accountant import ADD_REMOVE
    from dpcore.datasets import Catalog
    from dpcore.release import COUNT_EPSILON, file_chunks

    catalog = Catalog(ledger_path)
    first_total = args.epsilon_budget or plan.per_record_epsilon + (COUNT_EPSILON if args.unit == ADD_REMOVE else 0.0)
    found = catalog.open_table(
        file_chunks(source), source.stem, dataset=args.dataset, separate=args.separate_dataset,
        reason=args.reason or "", total_epsilon=first_total, unit=args.unit,
    )
    ledger = catalog.ledger(found.dataset)
    if not args.quiet:
        _say(found.sentence + f" Unit of protection: {ledger.unit}.")
    if args.epsilon_budget is not None and not found.created and args.epsilon_budget != ledger.total:
        raise UsageError(
            f"release: the dataset '{found.dataset.name}' already has a total ε = {ledger.total:g}; --epsilon-budget only "
            "sets the total of a new dataset. Use --raise-budget EPS to raise it deliberately."
        )
    if args.raise_budget is not None:
        ledger.set_total(args.raise_budget, confirm_raise=True, reason="raised on the command line (--raise-budget)")
        if not args.quiet:
            _say(f"the dataset's total ε is now {args.raise_budget:g} (recorded in its history)")
    return ledger


# --- datasets ---------------------------------------------------------------------------------------


def _add_datasets(subparsers) -> None:
    parser = subparsers.add_parser(
        "datasets",
        help="list the datasets in the ledger with their budgets; export one dataset's history",
        description=_para(
            "List every dataset in the budget ledger: its unit of protection and the (ε, δ) spent of its total, every "
            "spend converted to that unit. With --history NAME, print that dataset's whole history (totals set, spends, "
            "recorded choices) as CSV."
        ),
    )
    parser.add_argument("--ledger", metavar="PATH", help="the budget ledger database")
    parser.add_argument("--history", metavar="NAME", help="print this dataset's history as CSV")
    parser.set_defaults(handler=_run_datasets)


def _run_datasets(args) -> int:
    from dpcore.accountant import default_ledger_path
    from dpcore.datasets import Catalog

    catalog = Catalog(Path(args.ledger) if args.ledger else default_ledger_path())
    if args.history:
        found = catalog.find(args.history)
        if found is None:
            raise UsageError(f"datasets: there is no dataset called '{args.history}'")
        sys.stdout.write(catalog.ledger(found).history().to_csv(index=False))
        return EXIT_OK
    for info in catalog.datasets():
        print(f"{info.name}: {catalog.ledger(info).summary()}")
    return EXIT_OK


# --- estimate --------------------------------------------------------------------------------------


def _add_estimate(subparsers) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="the buyer's side: unbiased shares with 95%% intervals from a released copy",
        description=_para(
            "Correct a randomized copy for its noise: for every randomized column, the estimated true share of "
            "each category (or the mean, for Laplace columns) with its standard error and a confidence interval, "
            "computed from the copy and its privacy report only; beside them, 'consistent' shares (the "
            "maximum-likelihood shares, which sum to 1 and stay in [0, 1] but are slightly biased)."
        ),
        epilog="examples:\n  python -m dpcore estimate copy.csv --report copy.json\n"
        "  python -m dpcore estimate copy.csv --report copy.json --column sex --joint sex income",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("released", metavar="OUT.csv", help="the randomized copy")
    parser.add_argument("--report", required=True, metavar="REPORT.json", help="its privacy report (JSON)")
    parser.add_argument("--column", action="append", metavar="NAME", help="only this column (repeat for several)")
    parser.add_argument("--joint", nargs=2, metavar=("A", "B"), help="also the debiased joint shares of two randomized columns")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL", help="interval level (default 0.95)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(handler=_run_estimate)


def _load_report(path: str) -> dict:
    from dpcore.exceptions import DataError

    file = _existing_file(path, "report file")
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError("The report file is not valid JSON.") from None
    if not isinstance(report, dict) or not isinstance(report.get("columns"), list):
        raise DataError("The report file is not a release report (it has no 'columns' list).")
    return report


def _run_estimate(args) -> int:
    from dpcore.exceptions import DataError
    from dpcore.release import estimate_joint, estimate_release, read_release, report_entry

    if not 0 < args.confidence < 1:
        raise UsageError("estimate: argument --confidence: expected a level between 0 and 1, e.g. 0.95")
    released = _existing_file(args.released, "released file")
    report = _load_report(args.report)
    try:
        for name in (args.column or []) + (args.joint or []):
            report_entry(report, name)
    except KeyError as missing:
        raise UsageError(f"estimate: the report has no column {missing}") from None
    except (TypeError, AttributeError):
        raise DataError("The report file is not a release report.") from None
    try:
        results = estimate_release(released, report, columns=args.column, confidence=args.confidence)
    except (KeyError, TypeError):
        raise DataError("The report file is not a release report this version understands.") from None
    joint = None
    if args.joint:
        a, b = (report_entry(report, name) for name in args.joint)
        if a["mechanism"] not in ("coin", "k-ary", "bins") or b["mechanism"] not in ("coin", "k-ary", "bins"):
            raise UsageError("estimate: --joint needs two randomized-response columns (coin, k-ary or bins)")
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
            print(f"  note: {note}")
    if joint is not None:
        a, b = joint.columns[0], joint.columns[1]
        print(f"\njoint shares of {a} and {b}")
        for row in joint.itertuples(index=False):
            print(
                f"  {str(row[0])[:20]:<20} {str(row[1])[:20]:<20} {row.estimate:>9.4f} {row.std_error:>8.4f}   "
                f"[{row.ci_lower:.4f}, {row.ci_upper:.4f}]"
            )
    print(
        "\nShares are unbiased estimates of the true shares; they can fall slightly outside [0, 1]. The 'consistent' "
        "column holds the maximum-likelihood shares instead: they sum to 1 and stay in [0, 1] but are slightly biased."
    )
    return EXIT_OK


def _noise_note(name: str, entry: dict, frame) -> str | None:
    """A sentence for the buyer when a column's estimates are mostly noise (from their own standard errors)."""
    from dpcore import _release_report as fmt

    error = float(frame["std_error"].mean())
    if entry["mechanism"] == "laplace":
        level, sentence = fmt.verdict(name, error, lower=entry["lower"], upper=entry["upper"], who="your", advise=False)
    else:
        level, sentence = fmt.verdict(name, error, k=int(entry["n_categories"]), who="your", advise=False)
    return sentence if level == "noise" else None


# --- entry point -----------------------------------------------------------------------------------

COMMANDS = [_add_plan, _add_release, _add_estimate, _add_datasets]


def build_parser() -> argparse.ArgumentParser:
    """The parser with every command of :data:`COMMANDS` as a subcommand."""
    from dpcore import __version__

    parser = _Parser(
        prog="python -m dpcore", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"dpcore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in COMMANDS:
        add(subparsers)
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv=None) -> int:
    """Run one command; return its exit code (never raises for bad input, never prints a traceback)."""
    from dpcore.exceptions import BudgetExceededError, DataError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            raise UsageError("choose a command: plan, release, estimate or datasets")
        return args.handler(args)
    except _Exit as done:
        return done.status
    except UsageError as error:
        _say(f"error: {_one_line(error)} (see 'python -m dpcore --help')")
        return EXIT_USAGE
    except DataError as error:
        _say(f"error: {_one_line(error)}")
        return EXIT_DATA
    except BudgetExceededError as error:
        _say(f"error: {_one_line(error)}")
        return EXIT_BUDGET
    except BrokenPipeError:
        # The reader went away (``… | head``): not an error of ours; stop quietly.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (replaces the closed pipe until exit)
        except OSError:
            pass
        return 0
    except OSError as error:
        where = f" ({error.filename})" if getattr(error, "filename", None) else ""
        _say(f"error: {_one_line(error.strerror or 'the file could not be read or written')}{where}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted: nothing was released")
        return 130
    except Exception as error:  # an internal bug: one line, no traceback, no data
        if os.environ.get("DPCORE_DEBUG"):
            raise
        _say(
            f"error: unexpected internal error ({type(error).__name__}); nothing was released. "
            "Set DPCORE_DEBUG=1 to see the details."
        )
        return EXIT_INTERNAL


def main_exit() -> None:
    """The ``dpcore`` console script: :func:`main` with its exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
