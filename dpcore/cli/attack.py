"""``attack``: show what DP protects on your own table — membership inference, reconstruction, an audit.

Nothing this command prints or writes is differentially private: it is measured on the raw
rows, for the owner's eyes only, and it charges no privacy budget (no ledger is opened).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcore.cli._common import (
    EXIT_OK,
    TASK_SUFFIX,
    Subparsers,
    UsageError,
    add_person_arguments,
    apply_person_arguments,
    existing_file,
    load_plan_file,
    load_schema_file,
    output_file,
    para,
    positive_float,
    positive_int,
    say,
    seed_number,
    write_text,
)
from dpcore.cli.training import FAMILIES as TRAINED_FAMILIES
from dpcore.i18n import N_, _
from dpcore.progress import time_left_text

if TYPE_CHECKING:
    import pandas as pd

    from dpcore.attacks import AuditResult, MembershipResult, ReconstructionResult
    from dpcore.tables.schema import Schema

# The families named without their task (see TASK_SUFFIX): train's DP ones and the non-private baselines.
FAMILIES = (*TRAINED_FAMILIES, "sk_tree", "sk_forest")
MARKING = N_("owner's eyes only: measured on your raw data, nothing is released and no privacy budget is charged")

ATTACK_HELP = N_("attack your own table to see what DP protects (owner's eyes only; charges no budget)")


def add_attack(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "attack",
        help=_(ATTACK_HELP),
        description=para(
            _(
                "Attack your own table the way an adversary would, to see what differential privacy protects: "
                "'membership' trains a model with and without DP and lets two attacks tell who was in the training "
                "data; 'reconstruction' guesses people's values back from the randomized copy; 'audit' fits a DP "
                "model many times with and without one record and bounds its ε from below. Everything is measured on "
                "your raw data, for your eyes only: nothing is released and no privacy budget is charged."
            )
        ),
        epilog=_(
            "examples:\n  dpcore attack membership adult.csv --schema adult.schema.json --model dp_boosting "
            "--epsilon 1 --html attack.html\n  dpcore attack reconstruction adult.csv --schema adult.schema.json "
            "--epsilon 1\n  dpcore attack audit adult.csv --schema adult.schema.json --model dp_boosting "
            "--epsilon 1 --runs 300"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(dest="attack", metavar="ATTACK", parser_class=type(parser))
    membership = kinds.add_parser(
        "membership",
        help=_("can an attacker tell who was in the training data?"),
        description=para(
            _(
                "Members are drawn by a fair coin per row (per person with a privacy unit); the model is trained on "
                "them with and without DP, and a loss threshold attack and a LiRA attack with reference models try "
                "to tell members from non-members."
            )
        ),
    )
    _common(membership)
    membership.add_argument(
        "--model",
        default="dp_boosting",
        metavar="MODEL",
        help=_("the DP model (a registry key, or dp_boosting / dp_additive / dp_extra_trees for the schema's task)"),
    )
    membership.add_argument(
        "--baseline",
        default="sk_tree",
        metavar="MODEL",
        help=_("the non-private model attacked beside it (a registry key, sk_tree, sk_forest or none)"),
    )
    membership.add_argument("--epsilon", type=positive_float, default=1.0, metavar="EPS", help=_("ε of the DP model (default 1)"))
    membership.add_argument(
        "--thorough",
        action="store_true",
        help=_(
            "every row and 16 reference models (slower) instead of the quick attack (at most 10,000 rows, 4 reference models)"
        ),
    )
    membership.add_argument("--references", type=_even, metavar="N", help=_("reference models per model (an even number)"))
    membership.add_argument("--time-limit", type=positive_float, metavar="SECONDS", help=_("time for the whole attack"))
    membership.set_defaults(handler=run_membership)
    reconstruction = kinds.add_parser(
        "reconstruction",
        help=_("can an attacker guess people's values back from the copy?"),
        description=para(
            _(
                "Randomises the table as the release plan would and lets two attackers guess every "
                "randomized-response value back: from the copy alone, and knowing everything else about the person."
            )
        ),
    )
    _common(reconstruction)
    reconstruction.add_argument(
        "--plan", metavar="PLAN.json", help=_("the release plan (default: the default plan at --epsilon)")
    )
    reconstruction.add_argument(
        "--epsilon", type=positive_float, default=1.0, metavar="EPS", help=_("ε per column of the default plan (default 1)")
    )
    reconstruction.add_argument("--columns", metavar="A,B", help=_("attack only these columns (comma separated)"))
    reconstruction.add_argument(
        "--max-rows",
        type=positive_int,
        default=5_000,
        metavar="N",
        help=_("attack a random sample of at most N rows (default 5,000)"),
    )
    reconstruction.set_defaults(handler=run_reconstruction)
    audit = kinds.add_parser(
        "audit",
        help=_("fit a DP model many times with and without one record; bound its ε from below"),
        description=para(
            _(
                "Fits the model on a small random sample of your rows and on the same sample plus one record, many "
                "times, and turns how often its prediction at that record crosses a threshold into a lower bound on "
                "ε (Clopper–Pearson, 95 %). Deliberately broken versions of the model are audited too, as controls."
            )
        ),
    )
    _common(audit)
    audit.add_argument("--model", default="dp_boosting", metavar="MODEL", help=_("the DP model to audit"))
    audit.add_argument(
        "--epsilon", type=positive_float, default=1.0, metavar="EPS", help=_("the claimed ε per record (default 1)")
    )
    audit.add_argument("--runs", type=positive_int, default=200, metavar="N", help=_("fits on each table (default 200)"))
    audit.add_argument("--rows", type=positive_int, default=50, metavar="N", help=_("rows of the audited sample (default 50)"))
    audit.add_argument(
        "--canary",
        choices=["outlier", "row"],
        default="outlier",
        help=_("the added record: a made-up outlier (default) or a random row of the table"),
    )
    audit.add_argument(
        "--control",
        choices=["budget", "frozen", "none"],
        action="append",
        help=_("broken controls (repeat for several; default: budget and frozen)"),
    )
    audit.add_argument(
        "--factor",
        type=positive_float,
        default=10.0,
        metavar="X",
        help=_("how many times ε the broken controls spend (default 10)"),
    )
    audit.add_argument("--time-limit", type=positive_float, metavar="SECONDS", help=_("time for the whole audit"))
    audit.set_defaults(handler=run_audit)
    parser.set_defaults(handler=_no_attack)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT.csv", help=_("the private table (comma, semicolon or tab separated)"))
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    add_person_arguments(parser)
    parser.add_argument("--html", metavar="FILE.html", help=_("also write a one-page summary marked owner's eyes only"))
    parser.add_argument("--json", metavar="FILE.json", help=_("also write the tables and sentences as JSON"))
    parser.add_argument("--seed", type=seed_number, metavar="N", help=_("fixed random seed, for tests and benchmarks only"))
    parser.add_argument("-q", "--quiet", action="store_true", help=_("no progress or notes on standard error"))


def _even(text: str) -> int:
    value = positive_int(text)
    if value % 2:
        raise argparse.ArgumentTypeError(
            _("expected an even number (pairs of complementary halves), got {text}").format(text=repr(text))
        )
    return value


def _no_attack(args: argparse.Namespace) -> int:
    raise UsageError(_("attack: choose membership, reconstruction or audit"))


def _load(args: argparse.Namespace, command: str) -> tuple[pd.DataFrame, Schema]:
    from dpcore.tables.loading import read_csv_path

    source = existing_file(args.input, "input file")
    for option in ("html", "json"):
        if getattr(args, option):
            output_file(getattr(args, option), f"--{option} file")
    schema = apply_person_arguments(load_schema_file(args.schema), args, command)
    if not args.quiet:
        say(_("note: {marking}").format(marking=MARKING))
    frame, _info = read_csv_path(source)
    return frame, schema


def _task(schema: Schema, command: str) -> str:
    if schema.task is None:
        raise UsageError(
            _("{command}: the schema declares no target column (role 'target') for the model to predict").format(command=command)
        )
    return schema.task


def _key(name: str, task: str, command: str, private: bool) -> str:
    from dpcore.models.registry import MODELS

    key = name + TASK_SUFFIX[task] if name in FAMILIES else name
    spec = MODELS.get(key)
    if spec is None:
        raise UsageError(
            _("{command}: unknown model {name}; see 'dpcore train --help' for the registry's models").format(
                command=command, name=repr(name)
            )
        )
    if spec.task != task:
        raise UsageError(
            _("{command}: {key} is a {task} model but the schema's target makes this a {task2} task").format(
                command=command, key=key, task=spec.task, task2=task
            )
        )
    if spec.private != private:
        if private:
            raise UsageError(
                _("{command}: {key} is not differentially private; --model needs a DP model").format(command=command, key=key)
            )
        raise UsageError(
            _("{command}: {key} is differentially private; --baseline needs a non-private model").format(command=command, key=key)
        )
    return key


def _progress(quiet: bool) -> Any:
    if quiet:
        return None
    last = [0.0]

    def report(share: float, seconds_left: float | None, what: str) -> None:
        now = time.monotonic()
        if now - last[0] < 1.0 and share < 1.0:
            return
        last[0] = now
        say(f"[{100 * share:3.0f} %, {time_left_text(seconds_left)}] {what}")

    return report


def _finish(args: argparse.Namespace, table: pd.DataFrame, sentences: list[str], notes: tuple[str, ...], **results: Any) -> int:
    from dpcore.attacks import as_json, html_report

    print(f"# {_(MARKING)}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print()
    for sentence in [*sentences, *notes]:
        print(sentence)
    if args.html:
        write_text(output_file(args.html, "--html file"), html_report(table_name=Path(args.input).stem, **results))
    if args.json:
        write_text(output_file(args.json, "--json file"), as_json(**results))
    if not args.quiet and (args.html or args.json):
        say(
            _("wrote {files} (owner's eyes only: do not share)").format(
                files=_(" and ").join(f for f in (args.html, args.json) if f)
            )
        )
    return EXIT_OK


def run_membership(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from dpcore.attacks import QUICK, THOROUGH, attack_membership, membership_sentences
    from dpcore.tables.design import Design

    frame, schema = _load(args, "attack membership")
    task = _task(schema, "attack membership")
    model = _key(args.model, task, "attack membership", private=True)
    baseline = None if args.baseline == "none" else _key(args.baseline, task, "attack membership", private=False)
    settings = THOROUGH if args.thorough else QUICK
    if args.references is not None:
        settings = replace(settings, n_references=args.references)
    if args.time_limit is not None:
        settings = replace(settings, time_limit=args.time_limit)
    design = Design.from_table(frame, schema, random_state=args.seed)
    result: MembershipResult = attack_membership(
        design, model, args.epsilon, baseline=baseline, settings=settings, random_state=args.seed, progress=_progress(args.quiet)
    )
    return _finish(args, result.table(), membership_sentences(result), result.notes, membership=result)


def run_reconstruction(args: argparse.Namespace) -> int:
    from dpcore.attacks import attack_reconstruction, reconstruction_sentences

    frame, schema = _load(args, "attack reconstruction")
    plan = load_plan_file(args.plan) if args.plan is not None else None
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    result: ReconstructionResult = attack_reconstruction(
        frame,
        schema,
        plan,
        epsilon=args.epsilon,
        columns=columns,
        max_rows=args.max_rows,
        random_state=args.seed,
        progress=_progress(args.quiet),
    )
    return _finish(args, result.table(), reconstruction_sentences(result), result.notes, reconstruction=result)


def run_audit(args: argparse.Namespace) -> int:
    from dpcore.attacks import audit_model, audit_sentences
    from dpcore.tables.design import Design

    frame, schema = _load(args, "attack audit")
    model = _key(args.model, _task(schema, "attack audit"), "attack audit", private=True)
    chosen = args.control or ["budget", "frozen"]
    controls = () if "none" in chosen else tuple(dict.fromkeys(chosen))
    design = Design.from_table(frame, schema, random_state=args.seed)
    result: AuditResult = audit_model(
        design,
        model,
        args.epsilon,
        n_runs=args.runs,
        n_rows=args.rows,
        canary=args.canary,
        controls=controls,
        broken_factor=args.factor,
        time_limit=args.time_limit,
        random_state=args.seed,
        progress=_progress(args.quiet),
    )
    return _finish(args, result.table(), audit_sentences(result), result.notes, audit=result)
