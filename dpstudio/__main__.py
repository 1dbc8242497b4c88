"""Open DP Studio: ``dpstudio [streamlit options]`` runs the app with the settings it was tested with."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from dpcore.i18n import N_, _, language, language_from_environment

HERE = Path(__file__).resolve().parent
USAGE = N_("""usage: dpstudio [--server.port PORT] [other `streamlit run` options]

Opens DP Studio in your browser (http://localhost:8501 unless another port is given).
Upload a table or pick a bundled sample, declare its columns, then train models and
export a differentially private copy. The budget ledger is
~/.local/share/dpstudio/ledger.sqlite3 unless DPSTUDIO_LEDGER names another file.
""")


def streamlit_options() -> list[str]:
    """The server settings of ``streamlit.toml`` as command-line flags, so they hold whatever folder the app runs from."""
    settings = tomllib.loads((HERE / "streamlit.toml").read_text(encoding="utf-8"))
    return [f"--{section}.{key}={_flag(value)}" for section, values in settings.items() for key, value in values.items()]


def _flag(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def main(argv: list[str] | None = None) -> int:
    """Print the usage, or hand over to Streamlit's own command line with the app and its settings."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        with language(language_from_environment()):
            print(_(USAGE), end="")
        return 0
    try:
        from streamlit.web import cli
    except ImportError:
        with language(language_from_environment()):
            print(_("The app needs its extra dependencies: pip install 'dpstudio[app]'"), file=sys.stderr)
        return 2
    sys.argv = ["streamlit", "run", str(HERE / "app.py"), *streamlit_options(), *args]
    return cli.main()


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
