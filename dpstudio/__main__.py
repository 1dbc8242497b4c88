"""Open DP Studio: ``dpstudio [streamlit options]`` runs the app with the settings it was tested with."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from dpcore.i18n import N_, _, language, language_from_environment
from dpstudio.support.sign_in import address_from_flags, auth_section, open_address_refusal, secrets_files, sign_in_gaps

HERE = Path(__file__).resolve().parent
USAGE = N_("""usage: dpstudio [--server.port PORT] [other `streamlit run` options]

Opens DP Studio in your browser (http://localhost:8501 unless another port is given).
It listens on 127.0.0.1 only; --server.address for other machines needs sign-in
configured in .streamlit/secrets.toml (see the README).
Upload a table or pick a bundled sample, declare its columns, then train models and
export a differentially private copy. The budget ledger is
~/.local/share/dpstudio/ledger.sqlite3 unless DPSTUDIO_LEDGER names another file
or a postgresql:// server (its password in PGPASSWORD or ~/.pgpass).
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
    flags = [*streamlit_options(), *args]
    auth = auth_section(secrets_files())
    refusal = open_address_refusal(address_from_flags(flags), auth)
    if refusal is not None:
        gaps = ", ".join(sign_in_gaps(auth))
        with language(language_from_environment()):
            print(_(refusal).format(address=address_from_flags(flags) or "0.0.0.0", gaps=gaps), file=sys.stderr)
        return 2
    _register_pages_ourselves()
    sys.argv = ["streamlit", "run", str(HERE / "app.py"), *flags]
    return cli.main()


def _register_pages_ourselves() -> None:
    """Keep Streamlit from listing ``pages/`` by file name before app.py's navigation runs.

    A ``pages/`` folder beside the main script makes a new server's first run list every file
    there (``app``, ``attack``, ``compare``…) until ``st.navigation`` replaces them with the
    titles: a newcomer saw raw names flash in the sidebar. The app registers its pages itself
    (tests/browser/test_first_load_browser.py checks what the sidebar first shows).
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
