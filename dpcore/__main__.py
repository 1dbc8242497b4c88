"""``python -m dpcore``: the command line of :mod:`dpcore.cli`."""

from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, main, main_exit

__all__ = ["EXIT_BUDGET", "EXIT_DATA", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "main", "main_exit"]

if __name__ == "__main__":
    main_exit()
