"""``datasets``: the datasets in the ledger with their budgets, and one dataset's history as CSV."""

from __future__ import annotations

import argparse
import sys

from dpcore.cli._common import EXIT_OK, LEDGER_HELP, Subparsers, UsageError, ledger_path, para
from dpcore.i18n import N_, _

DATASETS_HELP = N_("list the datasets in the ledger with their budgets; export one dataset's history")


def add_datasets(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "datasets",
        help=_(DATASETS_HELP),
        description=para(
            _(
                "List every dataset in the budget ledger: its unit of protection and the (ε, δ) spent of its total, "
                "every spend converted to that unit. With --history NAME, print that dataset's whole history (totals "
                "set, spends, recorded choices) as CSV."
            )
        ),
    )
    parser.add_argument("--ledger", metavar="PATH|URL", help=_(LEDGER_HELP))
    parser.add_argument("--history", metavar="NAME", help=_("print this dataset's history as CSV"))
    parser.set_defaults(handler=_run_datasets)


def _run_datasets(args: argparse.Namespace) -> int:
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(ledger_path(args))
    if args.history:
        found = catalog.find(args.history)
        if found is None:
            raise UsageError(_("datasets: there is no dataset called '{history}'").format(history=args.history))
        sys.stdout.write(catalog.ledger(found).history().to_csv(index=False))
        return EXIT_OK
    for info in catalog.datasets():
        print(f"{info.name}: {catalog.ledger(info).summary()}")
    return EXIT_OK
