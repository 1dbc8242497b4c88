"""``cluster``: find dense groups in 2–4 numeric columns, charge the dataset's budget, write the map and its card."""

from __future__ import annotations

import argparse

from dpcore.cli._common import (
    EXIT_OK,
    Subparsers,
    UsageError,
    add_input_arguments,
    add_spending_arguments,
    apply_person_arguments,
    database_source,
    distinct_files,
    existing_file,
    first_total,
    load_schema_file,
    open_dataset,
    output_file,
    output_stem,
    para,
    positive_float,
    positive_int,
    read_input,
    spent_sentence,
    warn_seed,
    write_bytes,
    write_text,
)
from dpcore.i18n import N_, _

CLUSTER_HELP = N_("find dense groups in 2-4 numeric columns, charged to the table's budget; write the group map (CSV or JSON)")


def add_cluster(subparsers: Subparsers) -> None:
    from dpcore.models.clustering import NEIGHBOURHOODS

    parser = subparsers.add_parser(
        "cluster",
        help=_(CLUSTER_HELP),
        description=para(
            _(
                "Find where the dense groups are in 2 to 4 numeric columns of INPUT.csv (customers by location and "
                "income, patients by age and dose) under differential privacy, and charge the ε to the dataset's "
                "budget in the local ledger — after the map is computed, before anything is written. A grid is laid "
                "over the columns' declared bounds; every cell's row count gets noise; cells whose noisy count "
                "reaches the threshold are dense, and dense cells that touch form a group. What is written is the "
                "map: each cell's interval per column, its noisy count and its group (-1: in no group). No row and "
                "no row's group is ever written."
            )
        ),
        epilog=_(
            "examples:\n  dpcore cluster california.csv --schema california.schema.json --columns "
            "longitude,latitude \\\n      --epsilon 0.5 -o groups.csv\n  dpcore cluster patients.csv --schema "
            "patients.schema.json --columns age,dose --epsilon 1 \\\n      --resolution 20 -o groups.json --card "
            "groups.md"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(parser)
    parser.add_argument("--schema", required=True, metavar="SCHEMA.json", help=_("the schema: column roles and declared bounds"))
    parser.add_argument(
        "--columns",
        required=True,
        metavar="A,B[,C,D]",
        help=_("2 to 4 numeric columns with declared bounds, separated by commas"),
    )
    parser.add_argument("--epsilon", required=True, type=positive_float, metavar="EPS", help=_("the ε the map spends"))
    parser.add_argument(
        "--resolution",
        type=positive_int,
        metavar="N",
        help=_("cells per column (2-1024; about DBSCAN's Eps); default: chosen privately with 5%% of ε"),
    )
    parser.add_argument(
        "--min-pts",
        type=positive_float,
        metavar="M",
        help=_("a cell is dense from M rows by its noisy count, or the noise floor if higher (default 5)"),
    )
    parser.add_argument(
        "--neighbours",
        choices=NEIGHBOURHOODS,
        default=None,
        help=_("dense cells touching at a corner (default) or only at a face form one group"),
    )
    parser.add_argument(
        "--count-noise",
        choices=["laplace", "geometric"],
        default="geometric",
        help=_("noise for the cell counts (default geometric, as in the app)"),
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="MAP.csv|MAP.json",
        help=_("where to write the map; .json writes JSON, anything else CSV (default: INPUT_groups.csv)"),
    )
    parser.add_argument("--card", metavar="CARD.md", help=_("where to write the map's card (default: beside the map, .md)"))
    add_spending_arguments(parser, _("fixed random seed — for tests and demos only: a seeded map must not be released"))
    parser.set_defaults(handler=run_cluster)


def run_cluster(args: argparse.Namespace) -> int:
    from dpcore.clustering import check_features, find_groups, group_card, map_csv, map_json
    from dpcore.models.clustering import grid_problem
    from dpcore.tables.schema import check_releasable

    database = database_source(args, "cluster")
    source = None if database is not None else existing_file(args.input, "input file")
    schema = apply_person_arguments(load_schema_file(args.schema), args, "cluster")
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise UsageError(
            _("cluster: --columns: the schema declares no column {join}").format(join=", ".join(repr(c) for c in unknown))
        )
    problem = grid_problem(args.resolution, len(columns))
    if problem:
        raise UsageError(_("cluster: {problem}").format(problem=problem))
    check_features(schema, columns)
    check_releasable(schema.read_from_data(columns))  # the map would be written: refused before anything is charged
    map_path = output_file(args.output or f"{output_stem(source, database)}_groups.csv", "map file")
    card_path = output_file(args.card or str(map_path.with_suffix(".md")), "map card")
    distinct_files(
        _("cluster: the input, the map and the card must all be different files"),
        *([source] if source else []),
        map_path,
        card_path,
    )
    warn_seed(args, _("the map"))
    frame, stem = read_input(source, database)
    ledger = open_dataset(args, "cluster", lambda: [frame], stem, first_total(args), database)
    found = find_groups(
        frame,
        schema,
        columns,
        args.epsilon,
        ledger,
        resolution=args.resolution,
        min_pts=args.min_pts,
        neighbours=args.neighbours,
        count_noise=args.count_noise,
        seed=args.seed,
    )
    if map_path.suffix.lower() == ".json":
        write_text(map_path, map_json(found, ledger.unit))
    else:
        write_bytes(map_path, map_csv(found))
    write_text(card_path, group_card(found, ledger.unit))
    print(
        _("found {n_clusters} group(s) in a {grid} grid {spent_sentence}").format(
            n_clusters=found.n_clusters,
            grid=found.grid,
            spent_sentence=spent_sentence(ledger, args.epsilon, found.rows_per_person),
        )
    )
    print(_("wrote the map to {map_path} and its card to {card_path}").format(map_path=map_path, card_path=card_path))
    return EXIT_OK
