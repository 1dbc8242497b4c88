"""``answer``: answer a file of queries with subsample and aggregate, each answer charged to the dataset's budget."""

from __future__ import annotations

import argparse

from dpcore.cli._common import (
    EXIT_OK,
    Subparsers,
    UsageError,
    add_spending_arguments,
    apply_person_arguments,
    distinct_files,
    existing_file,
    first_total,
    load_schema_file,
    open_dataset,
    output_file,
    para,
    positive_float,
    positive_int,
    say,
    spent_sentence,
    warn_seed,
    write_bytes,
)
from dpcore.i18n import N_, _, short

ANSWER_HELP = N_(
    "answer a file of queries privately with models fitted on secret blocks of the table; every answer is charged to its budget"
)


def add_answer(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "answer",
        help=_(ANSWER_HELP),
        description=para(
            _(
                "Fit one model per secret block of INPUT.csv (subsample and aggregate), and answer each row of QUERIES.csv "
                "with the noisy median of the blocks' predictions (the target is a number) or a noisy vote (the target is a "
                "category). Every answered query spends --epsilon-per-query again: answering m queries costs m times as much, "
                "and the whole batch is checked against the dataset's budget before anything is fitted and charged before "
                "anything is written. The block models themselves are never written. To release a model that answers "
                "without limit instead, train dp_sa_student_reg or dp_sa_student_clf (dpcore train)."
            )
        ),
        epilog="example:\n  dpcore answer california.csv --schema california.schema.json --queries houses.csv \\\n"
        "      --epsilon-per-query 0.5 -o answers.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="INPUT.csv", help=_("the private table"))
    parser.add_argument(
        "--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles, categories and bounds")
    )
    parser.add_argument(
        "--queries",
        required=True,
        metavar="QUERIES.csv",
        help=_("the rows to answer: the schema's feature columns (the target column, if present, is ignored)"),
    )
    parser.add_argument(
        "--epsilon-per-query", required=True, type=positive_float, metavar="EPS", help=_("the ε each answered query spends")
    )
    parser.add_argument(
        "--delta-per-query",
        type=positive_float,
        metavar="DELTA",
        help=_(
            "numbers only: Laplace noise with this δ per query — APPROXIMATE DP ((ε, δ)); without it the answers are pure ε-DP"
        ),
    )
    parser.add_argument("--blocks", type=positive_int, metavar="K", help=_("the number of secret blocks (default 100)"))
    parser.add_argument(
        "-o",
        "--output",
        metavar="ANSWERS.csv",
        help=_("where to write the queries with their answers (default: QUERIES_answers.csv)"),
    )
    add_spending_arguments(parser, _("fixed random seed — for tests and demos only: seeded answers must not be released"))
    parser.set_defaults(handler=run_answer)


def run_answer(args: argparse.Namespace) -> int:
    from dpcore.exceptions import DataError
    from dpcore.tables.design import Design
    from dpcore.tables.loading import read_csv_path
    from dpcore.tables.schema import Normaliser, check_releasable
    from dpcore.training import answer_queries
    from dpcore.validation import check_delta

    source = existing_file(args.input, "input file")
    queries_path = existing_file(args.queries, "queries file")
    schema = apply_person_arguments(load_schema_file(args.schema), args, "answer")
    if schema.target is None or schema.task is None:
        raise UsageError(_("answer: the schema declares no target column (role 'target') to answer with"))
    delta = check_delta(args.delta_per_query or 0.0, "--delta-per-query")
    if delta and schema.task != "regression":
        raise UsageError(_("answer: --delta-per-query is for a numeric target; a category is answered by a pure ε-DP vote"))
    check_releasable(schema.read_from_data())  # the answers are written: refused before anything is charged
    out = output_file(args.output or str(queries_path.with_name(f"{queries_path.stem}_answers.csv")), "answers file")
    distinct_files(_("answer: the input, the queries and the answers must all be different files"), source, queries_path, out)
    warn_seed(args, "the answers")
    frame, _encoding = read_csv_path(source)
    queries, _encoding = read_csv_path(queries_path)
    missing = [c.name for c in schema.features if c.name not in queries.columns]
    if missing:
        raise DataError(_("The queries file lacks the feature columns: {columns}.").format(columns=", ".join(missing)))
    design = Design.from_table(frame, schema, random_state=args.seed)
    X_queries = Normaliser(schema).features(queries)
    args.epsilon = args.epsilon_per_query * len(X_queries)  # what a new dataset's first total must cover
    ledger = open_dataset(args, "answer", lambda: [frame], source.stem, first_total(args))
    answered = answer_queries(
        design, X_queries, args.epsilon_per_query, ledger, delta_per_query=delta, n_blocks=args.blocks, seed=args.seed
    )
    # Only the features asked about go back out: any other column of the queries file (a true target, an
    # identifier) was never paid for and must not ride along with the DP answers.
    result = queries[[c.name for c in schema.features]].copy()
    result["answer"] = answered.answers
    write_bytes(out, result.to_csv(index=False).encode("utf-8"))
    kind = _("approximate DP, δ = {delta} in all").format(delta=short(answered.delta)) if answered.delta else _("pure ε-DP")
    print(
        _("answered {n} queries {spent} ({kind})").format(
            n=answered.n_queries, spent=spent_sentence(ledger, answered.epsilon, design.rows_per_person), kind=kind
        )
    )
    if not args.quiet:
        say(_("each answer spent ε = {epsilon}; asking again spends again").format(epsilon=short(args.epsilon_per_query)))
    print(_("wrote the answers to {path}").format(path=out))
    return EXIT_OK
