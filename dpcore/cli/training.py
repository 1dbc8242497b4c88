"""``train``: fit one DP model on a table, charge its dataset's budget, write the model file and its card."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcore.cli._common import (
    EXIT_OK,
    TASK_SUFFIX,
    Subparsers,
    UsageError,
    add_engine_arguments,
    add_input_arguments,
    add_spending_arguments,
    apply_person_arguments,
    database_source,
    distinct_files,
    existing_file,
    first_total,
    load_schema_file,
    open_dataset,
    open_table_files,
    output_file,
    output_stem,
    para,
    positive_float,
    read_input,
    spark_engine,
    spent_sentence,
    warn_seed,
    write_text,
)
from dpcore.i18n import N_, _, integer, short

if TYPE_CHECKING:
    from dpcore.budget.accountant import BudgetLedger
    from dpcore.models.registry import ModelSpec
    from dpcore.tables.schema import Schema
    from dpcore.tables.sql_source import SqlSource
    from dpcore.training import TrainedModel

# The DP families named without their task (see TASK_SUFFIX).
FAMILIES = ("dp_boosting", "dp_additive", "dp_extra_trees")

TRAIN_HELP = N_("fit a DP model on a table, charged to its budget; write the model (.skops) and its model card")


def add_train(subparsers: Subparsers) -> None:
    from dpcore.models.registry import models_for
    from dpcore.tables.design import ENCODINGS
    from dpcore.training import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION

    ours = [spec for task in ("regression", "classification") for spec in models_for(task, kinds=("ours",))]
    parser = subparsers.add_parser(
        "train",
        aliases=["fit"],
        help=_(TRAIN_HELP),
        description=para(
            _(
                "Fit one differentially private model on INPUT.csv, with the roles, categories and bounds of the schema, "
                "and charge its ε to the dataset's privacy budget in the local ledger — after the fit, before anything is "
                "written. A fifth of the rows (chosen at random, not by their values) is held out to tell you how good the "
                "model is; those scores are measured on your raw data and are for you, not for the buyer. The model file is "
                "a skops file (safe to open: it runs no code) and the card states its privacy guarantee. Models: {models}; "
                "or {families} for the version that fits the schema's target."
            ).format(models=", ".join(f"{spec.key} ({spec.task})" for spec in ours), families=_(" or ").join(FAMILIES))
        ),
        epilog=_(
            "example:\n  dpcore train adult.csv --schema adult.schema.json --model dp_boosting --epsilon 0.5 \\\n   "
            "   --param n_rounds=40 -o adult_model.skops --card adult_model.md"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(parser)
    add_engine_arguments(parser)
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    parser.add_argument(
        "--model",
        required=True,
        choices=sorted({*(spec.key for spec in ours), *FAMILIES}),
        metavar="MODEL",
        help=_("which model (see the list above); dp_boosting, dp_additive and dp_extra_trees pick the schema's task"),
    )
    parser.add_argument("--epsilon", required=True, type=positive_float, metavar="EPS", help=_("the ε this model spends"))
    parser.add_argument(
        "--delta",
        type=float,
        metavar="DELTA",
        help=_("the δ an approximate-DP model spends (default 1e-5; pure ε-DP models take none)"),
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=_("a model setting, e.g. max_depth=4 (repeat for several; see the model's docstring)"),
    )
    parser.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="ordinal",
        help=_("categorical features as one coded column each (default) or one 0/1 column per category"),
    )
    parser.add_argument(
        "--count-noise",
        choices=["laplace", "geometric"],
        default=DEFAULT_COUNT_NOISE,
        help=_("noise for counts (default {default_count_noise}, as in the app)").format(default_count_noise=DEFAULT_COUNT_NOISE),
    )
    parser.add_argument(
        "--selection",
        choices=["gumbel", "permute_and_flip"],
        default=DEFAULT_SELECTION,
        help=_("how splits are chosen privately (default {default_selection}, as in the app)").format(
            default_selection=DEFAULT_SELECTION
        ),
    )
    parser.add_argument("-o", "--output", metavar="MODEL.skops", help=_("where to write the model (default: INPUT_MODEL.skops)"))
    parser.add_argument("--card", metavar="CARD.md", help=_("where to write the model card (default: beside the model, .md)"))
    add_spending_arguments(
        parser,
        _("fixed random seed — for tests and demos only: a seeded model must not be released (the app's demo seed is 2024)"),
    )
    parser.set_defaults(handler=run_train)


def parse_params(pairs: list[str], spec: ModelSpec) -> dict[str, Any]:
    """``NAME=VALUE`` settings, checked against the settings the model offers."""
    offered = {p.name: p for p in spec.parameters}
    params: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or name not in offered:
            choices = ", ".join(offered) or "none"
            raise UsageError(
                _("train: --param {pair}: expected NAME=VALUE with NAME one of: {choices}").format(
                    pair=repr(pair), choices=choices
                )
            )
        setting = offered[name]
        if setting.choices:
            if text not in [str(c) for c in setting.choices]:
                raise UsageError(
                    _("train: --param {name}: expected one of {join}").format(
                        name=name, join=", ".join(map(str, setting.choices))
                    )
                )
            params[name] = next(c for c in setting.choices if str(c) == text)
            continue
        if isinstance(setting.default, str) and text == setting.default:  # e.g. epochs=auto
            params[name] = text
            continue
        try:
            value = int(text)
        except ValueError:
            raise UsageError(
                _("train: --param {name}: expected a whole number, got {text}").format(name=name, text=repr(text))
            ) from None
        low = setting.minimum if setting.minimum is not None else -float("inf")
        high = setting.maximum if setting.maximum is not None else float("inf")
        if not low <= value <= high:
            raise UsageError(
                _("train: --param {name}: expected a number from {low} to {high}").format(
                    name=name, low=short(low), high=short(high)
                )
            )
        params[name] = value
    return params


def run_train(args: argparse.Namespace) -> int:
    from dpcore.model_card import model_card
    from dpcore.model_files import SUFFIX, save_model
    from dpcore.models.registry import get
    from dpcore.tables.design import Design
    from dpcore.tables.schema import check_releasable
    from dpcore.training import train

    database = database_source(args, "train")
    source = (
        None if database is not None else Path(args.input) if args.engine == "spark" else existing_file(args.input, "input file")
    )
    schema = apply_person_arguments(load_schema_file(args.schema), args, "train")
    target = schema.target
    if target is None or schema.task is None:
        raise UsageError(_("train: the schema declares no target column (role 'target') to predict"))
    key = args.model + TASK_SUFFIX[schema.task] if args.model in FAMILIES else args.model
    spec = get(key)
    if spec.task != schema.task:
        raise UsageError(
            _("train: {key} is a {task} model but the schema's target '{name}' makes this a {task2} task").format(
                key=key, task=spec.task, name=target.name, task2=schema.task
            )
        )
    params = parse_params(args.param, spec)
    # The model file and card are written: a domain read from the data is refused before anything is charged.
    check_releasable(schema.read_from_data())
    if args.delta is not None and not spec.approximate:
        raise UsageError(_("train: --delta is for approximate-DP models; {key} is pure ε-DP and spends no δ").format(key=key))
    if args.delta is not None and not 0 < args.delta < 1:
        raise UsageError(_("train: argument --delta: expected a number between 0 and 1, e.g. 1e-5"))
    model_path = output_file(args.output or f"{output_stem(source, database)}_{args.model}{SUFFIX}", "model file")
    card_path = output_file(args.card or str(Path(model_path).with_suffix(".md")), "model card")
    distinct_files(
        _("train: the input, the model file and the model card must all be different files"),
        *([source] if source else []),
        model_path,
        card_path,
    )
    warn_seed(args, _("the model"))
    if args.engine == "spark":
        trained, ledger = _train_on_spark(args, schema, key, params, database)
        rows_per_person = 1
    else:
        frame, stem = read_input(source, database)
        design = Design.from_table(frame, schema, args.encoding, random_state=args.seed)
        ledger = open_dataset(args, "train", lambda: [frame], stem, first_total(args), database)
        trained = train(
            design,
            key,
            args.epsilon,
            ledger,
            params=params,
            count_noise=args.count_noise,
            selection=args.selection,
            seed=args.seed,
            delta=args.delta,
        )
        rows_per_person = design.rows_per_person
    written = save_model(trained.model, model_path, read_from_data=trained.read_from_data)
    write_text(card_path, model_card(trained, schema, ledger.unit))
    print(
        _("trained {name} {spent_sentence}").format(
            name=trained.name, spent_sentence=spent_sentence(ledger, args.epsilon, rows_per_person)
        )
    )
    if trained.delta:
        print(
            _("approximate DP: δ = {delta} per person spent as well; {left} of δ = {total} left for this dataset").format(
                delta=f"{trained.delta:.3g}",
                left=f"{max(ledger.total_delta - ledger.spent_delta, 0.0):.3g}",
                total=f"{ledger.total_delta:.3g}",
            )
        )
    if trained.metrics:
        scores = ", ".join(f"{name} {value:.4g}" for name, value in trained.metrics.items())
        print(
            _("held-out scores on {n_test} of your rows (for you, not the buyer): {scores}").format(
                n_test=integer(trained.details["n_test"]), scores=scores
            )
        )
    print(_("wrote the model to {written} and its card to {card_path}").format(written=written, card_path=card_path))
    return EXIT_OK


def _train_on_spark(
    args: argparse.Namespace, schema: Schema, key: str, params: dict[str, Any], database: SqlSource | None
) -> tuple[TrainedModel, BudgetLedger]:
    """Fit on a table read by Spark: the driver holds the histograms, never the rows.

    The dataset is found as on one machine (:func:`open_table_files`, or the database's rows
    streamed once through the identification, the read recorded in its history), so a table
    cannot escape its budget by changing engine.
    """
    from dpcore.backends.tables import check_partwise, list_table_files, table_columns
    from dpcore.tables.design import Design
    from dpcore.training_rows import check_fits_rows, train_rows

    check_fits_rows(key)  # sentences before any row is read or Spark starts
    domain = Design.domain(schema, args.encoding)
    if database is not None:
        check_partwise(schema)
        ledger = open_dataset(args, "train", database.chunks(), database.label, first_total(args), database)
        session = spark_engine(args, "train")
        from dpcore.backends.spark import SparkRows
        from dpcore.backends.spark_database import read_database

        rows = SparkRows(read_database(session, database), schema, args.encoding)
    else:
        files = list_table_files(args.input)
        check_partwise(schema, table_columns(files))
        ledger = open_table_files(args, files, "train", first_total(args))
        session = spark_engine(args, "train")
        from dpcore.backends.spark import SparkRows

        rows = SparkRows.from_files(session, args.input, schema, args.encoding)
    trained = train_rows(
        domain,
        rows,
        key,
        args.epsilon,
        ledger,
        params=params,
        count_noise=args.count_noise,
        selection=args.selection,
        seed=args.seed,
        delta=args.delta,
    )
    return trained, ledger
