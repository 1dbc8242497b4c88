"""The ``synthesize`` command: a synthetic copy of a CSV file (MST with Private-PGM), charged to the dataset's budget."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dpcore.cli._common import (
    EXIT_OK,
    Subparsers,
    UsageError,
    add_input_arguments,
    add_spending_arguments,
    apply_person_arguments,
    copy_files,
    database_source,
    load_plan_file,
    load_schema_file,
    open_dataset,
    para,
    positive_float,
    positive_int,
    read_input,
    say,
    warn_seed,
    write_bytes,
    write_text,
)
from dpcore.i18n import N_, _

SYNTHESIZE_HELP = N_("make a synthetic copy of a CSV file: invented rows with the table's noisy marginals")


def add_synthesize(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "synthesize",
        help=_(SYNTHESIZE_HELP),
        description=para(
            _(
                "Make a synthetic copy of INPUT.csv: measure its one-way marginals and a spanning tree of two-way "
                "marginals (and, when the schema declares a target, the target's pair with every column) over the "
                "declared categories and bins, with calibrated noise; fit a graphical model to those noisy counts "
                "(Private-PGM) and draw rows from it. No row is a real person's. The copy costs --epsilon (and "
                "--delta with Gaussian noise) per person, charged to the dataset's budget; every run is a new copy "
                "and is charged again. The plan only says which columns the copy holds and their bins."
            )
        ),
        epilog=_(
            "example:\n  dpcore synthesize adult.csv --schema adult.schema.json --epsilon 1 \\\n      -o "
            "synthetic.csv --report synthetic.json --markdown synthetic.md"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(parser)
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    parser.add_argument(
        "--plan", metavar="PLAN.json", help=_("which columns the copy holds and their bins (default: the default plan)")
    )
    parser.add_argument("--epsilon", required=True, type=positive_float, metavar="EPS", help=_("the copy's ε per person"))
    parser.add_argument("--delta", type=float, metavar="DELTA", help=_("the copy's δ with Gaussian noise (default 1e-6)"))
    parser.add_argument(
        "--noise",
        choices=["gaussian", "laplace"],
        default="gaussian",
        help=_("Gaussian (zCDP, needs a δ; the default) or Laplace (pure ε-DP)"),
    )
    parser.add_argument(
        "--method",
        choices=["mst", "aim"],
        default="mst",
        help=_(
            "mst (fast): measures every column and a tree of pairs chosen privately, the default; aim (adaptive): spends "
            "the budget round by round on the pairs and target triples the model gets most wrong, slower and not yet more "
            "accurate than mst on the tables measured, Gaussian noise only"
        ),
    )
    parser.add_argument(
        "--workload",
        metavar="COLUMNS",
        help=_(
            "aim only: the pairs and triples of columns the buyer will study, each as comma-separated names, separated "
            'by semicolons ("age,income;age,sex,income"), or a JSON file of lists of names; default: every pair and the '
            "target's triples"
        ),
    )
    parser.add_argument(
        "--rows",
        type=positive_int,
        metavar="N",
        help=_("the copy's number of rows, when the table's size is public (default: a noisy count)"),
    )
    parser.add_argument("-o", "--output", required=True, metavar="OUT.csv", help=_("where to write the synthetic copy"))
    parser.add_argument("--report", required=True, metavar="REPORT.json", help=_("where to write the privacy report (JSON)"))
    parser.add_argument("--markdown", metavar="REPORT.md", help=_("also write the report for people (Markdown)"))
    add_spending_arguments(
        parser,
        _("fixed random seed — for tests only: a seeded copy must not be sold"),
        _("no progress or notes on standard error"),
    )
    parser.set_defaults(handler=run_synthesize)


def read_workload(given: str | None) -> list[list[str]]:
    """``--workload``: a JSON file of lists of column names, or names inline ("a,b;a,b,c")."""
    if given and given.endswith(".json"):
        try:
            workload = json.loads(Path(given).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise UsageError(_("synthesize: --workload: the file cannot be read as JSON lists of column names")) from None
        if not isinstance(workload, list) or not all(
            isinstance(entry, list) and all(isinstance(name, str) for name in entry) for entry in workload
        ):
            raise UsageError(_("synthesize: --workload: the file cannot be read as JSON lists of column names"))
        return workload
    return [[name.strip() for name in entry.split(",")] for entry in (given or "").split(";") if entry.strip()]


def run_synthesize(args: argparse.Namespace) -> int:
    from dpcore.progress import CostMemory, time_left_text
    from dpcore.release import default_plan
    from dpcore.synthetic import synthesize_table

    database = database_source(args, "synthesize")
    source, output, report_path, markdown_path = copy_files(
        args, _("synthesize: the input, the output and the report files must all be different")
    )
    if args.method == "aim" and args.noise == "laplace":
        raise UsageError(_("synthesize: --method aim adds Gaussian noise only; use --noise gaussian or --method mst"))
    if args.workload and args.method != "aim":
        raise UsageError(_("synthesize: --workload is for --method aim"))
    workload = read_workload(args.workload)
    if args.noise == "laplace" and args.delta:
        raise UsageError(_("synthesize: --delta is for Gaussian noise; Laplace noise has δ = 0"))
    if args.delta is not None and not 0 < args.delta < 1:
        raise UsageError(_("synthesize: argument --delta: expected a number between 0 and 1, e.g. 1e-6"))
    if args.separate_dataset and not args.dataset:
        raise UsageError(_("synthesize: --separate-dataset needs --dataset NAME for the new dataset"))
    schema = apply_person_arguments(load_schema_file(args.schema), args, "synthesize")
    plan = load_plan_file(args.plan) if args.plan else default_plan(schema)
    plan.check(schema)
    warn_seed(args, _("the copy"))
    frame, stem = read_input(source, database)
    # Not first_total(): the copy is measured with the unit's own sensitivities, so it costs exactly --epsilon there.
    ledger = open_dataset(args, "synthesize", lambda: [frame], stem, args.epsilon, database)
    shown = {"step": ""}

    def progress(fraction: float, seconds_left: float | None, sentence: str) -> None:
        if not args.quiet and sentence != shown["step"]:
            shown["step"] = sentence
            sys.stderr.write(f"{100 * fraction:5.1f}%  {sentence} ({time_left_text(seconds_left)})\n")
            sys.stderr.flush()

    result = synthesize_table(
        frame,
        schema,
        plan,
        epsilon=args.epsilon,
        delta=args.delta,
        noise=args.noise,
        ledger=ledger,
        public_rows=args.rows,
        random_state=args.seed,
        progress=progress,
        label=f"synthetic copy ({output.name})",
        costs=CostMemory(),
        method=args.method,
        workload=workload or None,
    )
    write_bytes(output, result.csv)
    write_text(report_path, json.dumps(result.report, indent=2, ensure_ascii=False) + "\n")
    if markdown_path is not None:
        write_text(markdown_path, result.markdown)
    if not args.quiet:
        for note in result.notes:
            say(_("note (for you, not the buyer): {note}").format(note=note))
        for warning in result.report["warnings"]:
            say(_("warning: {warning}").format(warning=warning))
    print(
        _(
            "wrote the synthetic copy to {path}: {rows} rows, ε = {epsilon}, δ = {delta} per person charged to the "
            "dataset's budget"
        ).format(
            path=output,
            rows=f"{result.report['rows']['count']:,}",
            epsilon=f"{result.epsilon_charged:g}",
            delta=f"{result.delta_charged:g}",
        )
    )
    print(
        _("wrote the privacy report to {path}").format(path=report_path)
        + (_(" and {path}").format(path=markdown_path) if markdown_path else "")
    )
    return EXIT_OK
