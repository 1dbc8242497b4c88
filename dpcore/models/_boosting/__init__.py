"""The parts of DP boosting behind :mod:`dpcore.models.boosting`: sizes, rows, privacy words."""
