"""``run``: make every release of a recipe again, on today's table, charged to its dataset's budget.

Each release runs through the command that makes it alone (``train``, ``release``,
``synthesize``, ``cluster``), so it calls the engine's own entry points and charges the ledger
through the one spend path exactly as that command and the app's page do. Before the first one,
the table is identified, the recipe's planned costs (:func:`dpcore.recipes.planned_costs`) are
added up, and a recipe that would pass what is left of the dataset's budget is refused: nothing
is made or charged. The run is recorded in the dataset's history ("recipe run", "recipe: NAME").
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dpcore.cli._common import (
    EXIT_OK,
    LEDGER_HELP,
    TASK_SUFFIX,
    Parser,
    Subparsers,
    UsageError,
    existing_file,
    ledger_path,
    para,
    positive_float,
    say,
    seed_number,
)
from dpcore.i18n import N_, _, short

if TYPE_CHECKING:
    import pandas as pd

    from dpcore.budget.accountant import BudgetLedger
    from dpcore.recipes import Recipe
    from dpcore.tables.sql_source import SqlSource

RUN_HELP = N_("make every release of a recipe (YAML) again on today's table, charged to its budget")


def add_run(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help=_(RUN_HELP),
        description=para(
            _(
                "Read the recipe a session saved (the Privacy page's 'Save as recipe', or a YAML file written by hand), "
                "read its table again — from the recipe's source, or from the one given here — and make each of its "
                "releases again: models, randomized and synthetic copies, group maps, each charged to the dataset's "
                "budget as the page or the command that makes it alone would charge it. A recipe whose releases add up "
                "to more than what is left of the budget is refused before anything is made or charged."
            )
        ),
        epilog=_(
            "examples:\n  dpcore run quarterly.recipe.yaml\n  dpcore run quarterly.recipe.yaml --source clinic --table "
            "visits_2027q1\n  dpcore run quarterly.recipe.yaml visits_2027q1.csv --output-dir 2027q1"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recipe", metavar="RECIPE.yaml", help=_("the recipe file"))
    parser.add_argument("input", metavar="INPUT.csv", nargs="?", help=_("read this file instead of the recipe's source"))
    parser.add_argument("--source", metavar="NAME|URL", help=_("read from this connection instead of the recipe's"))
    parser.add_argument("--table", metavar="NAME", help=_("with --source: the table to read instead of the recipe's"))
    parser.add_argument("--query", metavar="SQL", help=_("with --source: the read-only query to read instead of the recipe's"))
    parser.add_argument("--secrets", metavar="FILE", help=_("the secrets file naming the connections (TOML, as Streamlit's)"))
    parser.add_argument("--ledger", metavar="PATH|URL", help=_(LEDGER_HELP))
    parser.add_argument(
        "--raise-budget",
        type=positive_float,
        metavar="EPS",
        help=_("deliberately raise the dataset's total ε to EPS first (recorded in its history)"),
    )
    parser.add_argument(
        "--output-dir", metavar="DIR", help=_("where the models, copies and reports go (default: RECIPE-<UTC date and time>)")
    )
    parser.add_argument(
        "--seed", type=seed_number, metavar="N", help=_("fixed random seed — for tests and demos only: never release the result")
    )
    parser.add_argument("-q", "--quiet", action="store_true", help=_("no notes on standard error (the progress lines stay)"))
    parser.set_defaults(handler=run_recipe)


def _source_arguments(args: argparse.Namespace, recipe: Recipe) -> list[str]:
    """The table to read, as the commands take it: the command line's choice first, else the recipe's source."""
    if args.input is not None and args.source is not None:
        raise UsageError(_("run: give INPUT.csv or --source, not both"))
    if (args.table is not None or args.query is not None) and args.source is None and recipe.source.connection is None:
        raise UsageError(_("run: --table and --query need --source NAME|URL (the recipe reads a file)"))
    if args.table is not None and args.query is not None:
        raise UsageError(_("run: give either --table NAME or --query SQL, not both"))
    if args.input is not None:
        return [str(existing_file(args.input, "input file"))]
    connection = args.source or recipe.source.connection
    if connection is None:
        assert recipe.source.file is not None
        return [str(existing_file(recipe.source.file, "input file"))]
    if args.table is not None or args.query is not None:
        table, query = args.table, args.query
    else:
        table, query = recipe.source.table, recipe.source.query
    where = ["--table", table] if table is not None else ["--query", str(query)]
    return ["--source", connection, *where, *(["--secrets", args.secrets] if args.secrets else [])]


def _chunks(source: list[str]) -> tuple[Callable[[], Iterator[pd.DataFrame]], str, SqlSource | None]:
    """The table's chunks (for its identification), its name for a new dataset, and the database source if any."""
    if source[0] != "--source":
        from dpcore.tables.csv_reading import file_chunks

        path = Path(source[0])
        return file_chunks(path), path.stem, None
    from dpcore.tables.sql_source import open_source

    pairs = dict(zip(source[::2], source[1::2], strict=True))
    database = open_source(
        pairs["--source"], table=pairs.get("--table"), query=pairs.get("--query"), secrets=pairs.get("--secrets")
    )
    return database.chunks(), database.label, database


def _open_dataset(args: argparse.Namespace, recipe: Recipe, source: list[str]) -> BudgetLedger:
    """The dataset of the table (found by its people, as every command finds it), created with the recipe's budget if new."""
    from dpcore.budget.datasets import Catalog, OverlapRefused
    from dpcore.exceptions import DataError

    chunks, stem, database = _chunks(source)
    catalog = Catalog(ledger_path(args))
    try:
        found = catalog.open_table(chunks, stem, dataset=recipe.dataset, total_epsilon=recipe.total_epsilon, unit=recipe.unit)
    except OverlapRefused as refusal:
        raise DataError(
            str(refusal) + " " + _("Name the dataset these people belong to in the recipe's 'dataset' field.")
        ) from None
    ledger = catalog.ledger(found.dataset)
    if found.created and recipe.total_delta != ledger.total_delta:
        ledger.set_total(recipe.total_epsilon, recipe.total_delta, confirm_raise=True, reason=f"recipe: {recipe.name}")
    if database is not None:
        database.record_read(ledger, "dpcore run")
    if not args.quiet:
        say(found.sentence)
    if ledger.unit != recipe.unit and not args.quiet:
        say(
            _(
                "note: the dataset's unit of protection is {unit}, not the recipe's {recipe_unit}; costs are counted in {unit}."
            ).format(unit=ledger.unit, recipe_unit=recipe.unit)
        )
    if args.raise_budget is not None:
        ledger.set_total(args.raise_budget, confirm_raise=True, reason=f"raised to run recipe: {recipe.name}")
    return ledger


def _check_budget(recipe: Recipe, ledger: BudgetLedger) -> float:
    """The recipe's planned ε in all; refused (nothing spent) when it or its δ passes what is left."""
    from dpcore.exceptions import BudgetExceededError
    from dpcore.recipes import planned_costs

    costs = planned_costs(recipe, ledger.unit)
    epsilon, delta = sum(c.epsilon for c in costs), sum(c.delta for c in costs)
    left, left_delta = ledger.remaining, ledger.total_delta - ledger.spent_delta
    if epsilon > left + 1e-9 or delta > left_delta + 1e-15:
        parts = "; ".join(f"{c.what}: ε = {short(c.epsilon)}" for c in costs)
        raise BudgetExceededError(
            _(
                "The recipe '{name}' would spend ε = {epsilon} (δ = {delta}) in all ({parts}), but only ε = {left} "
                "(δ = {left_delta}) is left of the dataset '{dataset}'. Nothing was made or charged. Raise the dataset's "
                "total deliberately (the Privacy page, or --raise-budget EPS here), or lower the ε of the recipe's "
                "releases or remove some of them."
            ).format(
                name=recipe.name,
                epsilon=short(epsilon),
                delta=f"{delta:.3g}",
                parts=parts,
                left=short(max(left, 0.0)),
                left_delta=f"{max(left_delta, 0.0):.3g}",
                dataset=ledger.name,
            )
        )
    return epsilon


def _steps(recipe: Recipe, folder: Path, scratch: Path) -> list[tuple[str, list[str]]]:
    """Each release as (its progress words, the command line that makes it alone); the schema and plans go to ``scratch``."""
    schema = str(scratch / "schema.json")
    (scratch / "schema.json").write_text(json.dumps(recipe.schema, indent=2, ensure_ascii=False), encoding="utf-8")
    steps: list[tuple[str, list[str]]] = []
    for i, model in enumerate(recipe.models, 1):
        stem = folder / f"model{i}_{model.model}"
        line = ["train", "--schema", schema, "--model", model.model, "--epsilon", repr(model.epsilon)]
        line += ["--delta", repr(model.delta)] if model.delta is not None else []
        line += [f"--param={name}={value}" for name, value in model.params.items()]
        line += ["--encoding", model.encoding, "-o", f"{stem}.skops", "--card", f"{stem}.md"]
        steps.append((_("training {model} at ε = {epsilon}").format(model=model.model, epsilon=short(model.epsilon)), line))
    for i, copy in enumerate(recipe.copies, 1):
        stem = folder / f"copy{i}_{copy.kind}"
        plan: list[str] = []
        if copy.plan is not None:
            (scratch / f"copy{i}.plan.json").write_text(json.dumps(copy.plan, indent=2), encoding="utf-8")
            plan = ["--plan", str(scratch / f"copy{i}.plan.json")]
        outputs = ["-o", f"{stem}.csv", "--report", f"{stem}.json", "--markdown", f"{stem}.md"]
        if copy.kind == "synthetic":
            epsilon = float(copy.epsilon or 0.0)
            line = ["synthesize", "--schema", schema, *plan, "--epsilon", repr(epsilon), "--noise", copy.noise, *outputs]
            line += ["--method", copy.method, *(["--delta", repr(copy.delta)] if copy.delta is not None else [])]
            if copy.workload is not None:  # a file: column names may hold commas and semicolons
                (scratch / f"copy{i}.workload.json").write_text(json.dumps(copy.workload, ensure_ascii=False), encoding="utf-8")
                line += ["--workload", str(scratch / f"copy{i}.workload.json")]
            steps.append((_("making a synthetic copy at ε = {epsilon}").format(epsilon=short(epsilon)), line))
        else:
            line = ["release", "--schema", schema, *plan, *outputs, *(["--accept-noise"] if copy.accept_noise else [])]
            steps.append((_("making a randomized copy by its plan"), line))
    for i, groups in enumerate(recipe.groups, 1):
        stem = folder / f"groups{i}"
        line = ["cluster", "--schema", schema, "--columns", ",".join(groups.columns), "--epsilon", repr(groups.epsilon)]
        line += ["--resolution", str(groups.resolution)] if groups.resolution is not None else []
        line += ["-o", f"{stem}.csv", "--card", f"{stem}.md"]
        steps.append((_("finding groups in {columns} at ε = {epsilon}").format(columns=", ".join(groups.columns), epsilon=short(groups.epsilon)), line))  # fmt: skip
    return steps


def _parsed(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed as ``dpcore`` parses it, with only its command declared (argparse's error is a sentence)."""
    from dpcore.cli import clustering, release, synthesize, training

    commands = {
        "train": training.add_train,
        "release": release.add_release,
        "synthesize": synthesize.add_synthesize,
        "cluster": clustering.add_cluster,
    }
    parser = Parser(prog="dpcore")
    commands[argv[0]](parser.add_subparsers(dest="command", parser_class=Parser))
    return parser.parse_args(argv)


def _check_steps(steps: list[tuple[str, list[str]]], source: list[str], recipe: Recipe) -> None:
    """Every release's command line and model settings checked before the first release spends anything."""
    from dpcore.cli.training import FAMILIES, parse_params
    from dpcore.clustering import check_features
    from dpcore.exceptions import DataError
    from dpcore.models.clustering import grid_problem
    from dpcore.models.registry import get
    from dpcore.tables.schema import Schema

    schema = Schema.from_dict(recipe.schema)
    task = schema.task
    for _words, line in steps:
        argv = [line[0], *source, *line[1:]]
        _parsed(argv)
    for i, model in enumerate(recipe.models, 1):
        key = model.model + TASK_SUFFIX[task] if model.model in FAMILIES and task in TASK_SUFFIX else model.model
        spec = get(key)
        if spec.task != task:
            raise UsageError(
                _("run: the recipe's models[{number}] is a {kind} model but its schema's target makes this a {task} task").format(
                    number=i, kind=spec.task, task=task
                )
            )
        try:
            parse_params([f"{name}={value}" for name, value in model.params.items()], spec)
        except UsageError as error:
            raise UsageError(_("run: the recipe's models[{number}].params: {problem}").format(number=i, problem=error)) from None
    for i, groups in enumerate(recipe.groups, 1):
        try:
            check_features(schema, groups.columns)
            problem = grid_problem(groups.resolution, len(groups.columns))
            if problem:
                raise DataError(problem)
        except DataError as error:
            raise UsageError(_("run: the recipe's groups[{number}]: {problem}").format(number=i, problem=error)) from None


def _check_copies_are_worth_making(recipe: Recipe, source: list[str]) -> None:
    """A randomized copy the owner did not accept as mostly noise is refused as ``release`` refuses it, but before any release."""
    from dpcore.cli.release import _refuse_noise
    from dpcore.release.plan import ReleasePlan
    from dpcore.tables.csv_reading import count_rows
    from dpcore.tables.schema import Schema

    unchecked = [copy for copy in recipe.copies if copy.kind == "randomized" and not copy.accept_noise]
    if not unchecked:
        return
    _chunks_of_table, _stem, database = _chunks(source)
    n_rows = database.row_count() if database is not None else count_rows(Path(source[0]))
    schema = Schema.from_dict(recipe.schema)
    for copy in unchecked:
        _refuse_noise(ReleasePlan.from_dict(copy.plan), schema, n_rows)


def run_recipe(args: argparse.Namespace) -> int:
    from dpcore.recipes import RUN_EVENT, RUN_STOPPED_EVENT, load_recipe

    recipe = load_recipe(existing_file(args.recipe, "recipe file"))
    source = _source_arguments(args, recipe)
    folder = Path(args.output_dir or f"{Path(args.recipe).name.split('.')[0]}-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    with tempfile.TemporaryDirectory(prefix="dpcore-recipe-") as scratch:
        steps = _steps(recipe, folder, Path(scratch))
        _check_steps(steps, source, recipe)
        _check_copies_are_worth_making(recipe, source)
        ledger = _open_dataset(args, recipe, source)
        planned = _check_budget(recipe, ledger)
        folder.mkdir(parents=True, exist_ok=True)
        common = ["--dataset", ledger.name, *(["--ledger", args.ledger] if args.ledger else [])]
        common += [*(["--seed", str(args.seed)] if args.seed is not None else []), *(["-q"] if args.quiet else [])]
        ledger.record_event(
            RUN_EVENT, f"recipe: {recipe.name}; {len(steps)} releases planned, at most ε = {short(planned)} in the dataset's unit"
        )
        spent_before = ledger.spent
        for number, (words, line) in enumerate(steps, 1):
            say(_("[{number}/{count}] {words}…").format(number=number, count=len(steps), words=words))
            argv = [line[0], *source, *line[1:], *common]
            try:
                step = _parsed(argv)
                step.handler(step)
            except BaseException:
                ledger.record_event(
                    RUN_STOPPED_EVENT,
                    f"recipe: {recipe.name}; stopped at release {number} of {len(steps)}; the releases before it were made",
                )
                raise
    print(
        _("recipe '{name}': {count} releases made in {folder}; ε = {spent} charged, {left} of ε = {total} left").format(
            name=recipe.name,
            count=len(steps),
            folder=folder,
            spent=short(ledger.spent - spent_before),
            left=short(ledger.remaining),
            total=short(ledger.total),
        )
    )
    return EXIT_OK
