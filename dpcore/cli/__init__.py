"""Command line: ``dpcore COMMAND ...`` (or ``python -m dpcore``) — the DP Studio engine without a browser.

Each command lives in a module of this package as an ``add_<name>(subparsers)`` function that
declares its arguments and sets ``handler`` to a ``run_<name>(args) -> int`` function; register
a new command by appending a :class:`Command` (its name, one-line help and ``add_`` function) to :data:`COMMANDS`.

Exit codes scripts can rely on: 0 ok, 2 bad arguments or usage, 3 bad data, schema, plan or
report, 4 privacy budget exceeded (1 for an unexpected internal error). Errors are one line on
standard error, never a traceback, never a cell value of the data. Progress goes to standard
error, results to standard output.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from dpcore.cli import answer, attack, clustering, datasets, release, run, synthesize, training
from dpcore.cli._common import (
    EXIT_BUDGET,
    EXIT_DATA,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Exit,
    Parser,
    Subparsers,
    UsageError,
    say,
)
from dpcore.i18n import LANGUAGES, N_, _, language, language_from_environment, supported

__all__ = ["EXIT_BUDGET", "EXIT_DATA", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "build_parser", "main", "main_exit"]

DESCRIPTION = N_("""\
DP Studio on the command line: learn from a sensitive table under differential privacy, and
sell a copy of it in which every value was randomized on its own (local differential privacy),
which the buyer can correct for the noise.

The usual flow:
  1. plan      write the default release plan for your schema, then edit it if you like
  2. release   randomize the CSV by the plan; writes the copy and its privacy report
  3. estimate  (the buyer) unbiased shares with 95% intervals from the copy and its report
Besides:
  synthesize   a synthetic copy instead: invented rows with the table's noisy marginals (MST, Private-PGM)
  train        fit a DP model on the table, charged to its budget; writes the model and its card
  cluster      find dense groups in 2-4 numeric columns, charged to its budget; writes the group map
  answer       answer a file of queries with models on secret blocks; every answer is charged to the budget
  attack       (owner's eyes only, no budget) see what DP protects: membership, reconstruction, audit
  datasets     the datasets in the ledger with their budgets, or one dataset's history
  run          make every release of a saved recipe again on today's table, charged to its budget
""")

EPILOG = N_("""\
examples:
  dpcore plan --schema adult.schema.json -o plan.json
  dpcore release adult.csv --schema adult.schema.json --plan plan.json \\
      -o copy.csv --report copy.json --markdown copy.md --epsilon-budget 20
  dpcore estimate copy.csv --report copy.json
  dpcore train adult.csv --schema adult.schema.json --model dp_boosting --epsilon 0.5

exit codes: 0 ok, 2 bad arguments, 3 bad data/schema/plan/report, 4 privacy budget exceeded.
Run 'dpcore COMMAND --help' for a command's options.
""")


@dataclass(frozen=True)
class Command:
    """One command: its names, its one-line help (as ``dpcore --help`` lists it) and the function that declares it."""

    name: str
    summary: str
    add: Callable[[Subparsers], None]
    aliases: tuple[str, ...] = ()


COMMANDS = [
    Command("plan", release.PLAN_HELP, release.add_plan),
    Command("release", release.RELEASE_HELP, release.add_release),
    Command("estimate", release.ESTIMATE_HELP, release.add_estimate),
    Command("synthesize", synthesize.SYNTHESIZE_HELP, synthesize.add_synthesize),
    Command("train", training.TRAIN_HELP, training.add_train, aliases=("fit",)),
    Command("cluster", clustering.CLUSTER_HELP, clustering.add_cluster),
    Command("answer", answer.ANSWER_HELP, answer.add_answer),
    Command("attack", attack.ATTACK_HELP, attack.add_attack),
    Command("datasets", datasets.DATASETS_HELP, datasets.add_datasets),
    Command("run", run.RUN_HELP, run.add_run),
]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with every command of :data:`COMMANDS` as a subcommand.

    Given the command line, only the command it names is declared in full; the others are listed
    by their one-line help. Declaring ``train`` or ``cluster`` imports scikit-learn and every
    model (their options list the models), which ``dpcore --help`` or ``dpcore release`` need not
    wait for.
    """
    from dpcore import __version__

    parser = Parser(
        prog="dpcore", description=_(DESCRIPTION), epilog=_(EPILOG), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"dpcore {__version__}")
    parser.add_argument(
        "--lang",
        metavar="LANG",
        choices=sorted(LANGUAGES),
        help=_("language of the messages, cards and reports: en or vi (default: the locale, LANG)"),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    named = _named_command(argv)
    for command in COMMANDS:
        if argv is None or command is named:
            command.add(subparsers)
        else:
            subparsers.add_parser(command.name, aliases=list(command.aliases), help=_(command.summary))
    return parser


def _named_command(argv: Sequence[str] | None) -> Command | None:
    """The command the line names: its first word that is not an option (``--lang`` was taken out before)."""
    first = next((word for word in argv or () if not word.startswith("-")), None)
    return next((c for c in COMMANDS if first == c.name or first in c.aliases), None)


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    """The commands the parser knows, in the order they were added."""
    return [name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices]


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command in the language of ``--lang`` or the locale; return its exit code (never raises for bad input,
    never prints a traceback)."""
    argv, code = _language_option(sys.argv[1:] if argv is None else list(argv))
    # argparse writes its own words ("usage:", "options", "show this help message and exit") through
    # gettext; they come from our catalog for the length of the call.
    with language(code), _argparse_words():
        return _main(argv)


#: argparse's own sentences that a person reads, for the catalog (argparse looks them up by these ids).
ARGPARSE_WORDS = (
    N_("usage: "),
    N_("options"),
    N_("positional arguments"),
    N_("show this help message and exit"),
    N_("show program's version number and exit"),
    N_("the following arguments are required: %s"),
    N_("unrecognized arguments: %s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("expected one argument"),
    N_("invalid %(type)s value: %(value)r"),
)


@contextmanager
def _argparse_words() -> Iterator[None]:
    plain = argparse._  # type: ignore[attr-defined]
    argparse._ = _  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._ = plain  # type: ignore[attr-defined]


def _language_option(argv: list[str]) -> tuple[list[str], str]:
    """``--lang vi`` anywhere on the line (else the locale's language), and the arguments without it."""
    rest, code = [], language_from_environment()
    words = iter(argv)
    for word in words:
        if word == "--lang":
            code = supported(next(words, None)) or code
        elif word.startswith("--lang="):
            code = supported(word.partition("=")[2]) or code
        else:
            rest.append(word)
    return rest, code


def _main(argv: Sequence[str]) -> int:
    from dpcore.exceptions import BudgetExceededError, DataError

    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            raise UsageError(_("choose a command: {commands}").format(commands=", ".join(_command_names(parser))))
        return args.handler(args)
    except Exit as done:
        return done.status
    except UsageError as error:
        say(_("error: {message} (see 'dpcore --help')").format(message=_one_line(error)))
        return EXIT_USAGE
    except DataError as error:
        say(_("error: {message}").format(message=_one_line(error)))
        return EXIT_DATA
    except BudgetExceededError as error:
        say(_("error: {message}").format(message=_one_line(error)))
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
        say(_("error: {message}").format(message=_one_line(error.strerror or _("the file could not be read or written"))) + where)
        return EXIT_USAGE
    except KeyboardInterrupt:
        say(_("interrupted: nothing was released"))
        return 130
    except Exception as error:  # an internal bug: one line, no traceback, no data
        if os.environ.get("DPCORE_DEBUG"):
            raise
        say(
            _("error: unexpected internal error ({kind}); nothing was released. Set DPCORE_DEBUG=1 to see the details.").format(
                kind=type(error).__name__
            )
        )
        return EXIT_INTERNAL


def main_exit() -> None:
    """The ``dpcore`` console script: :func:`main` with its exit code."""
    sys.exit(main())
