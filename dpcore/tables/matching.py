"""Matching a column's values to its declared categories, the same way for models, copies and checks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.budget.fingerprint import factorize


def _as_numbers(texts: pd.Index | list[str]) -> np.ndarray:
    return pd.to_numeric(pd.Series(list(texts), dtype=object), errors="coerce").to_numpy(dtype=float)


def repeated_numbers(categories: list[str]) -> bool:
    """True when two declared categories read as the same number (``"0"`` and ``"00"``)."""
    numbers = _as_numbers(categories)
    numbers = numbers[~np.isnan(numbers)]
    return bool(np.unique(numbers).size != numbers.size)


def match_categories(values: pd.Series, categories: list[str], match_numbers: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Each value's position in the declared ``categories`` (−1: undeclared, −2: missing), and which matched by number.

    A value matches the category spelled as it prints (``"A"``, ``39``); with ``match_numbers``
    a value left over that reads as a number matches the declared category that reads as the
    same number (``0.0`` and ``"00"`` match ``"0"``). Models (:class:`Normaliser`) and copies
    (:mod:`dpcore.release.columns`) both map through here, so they agree on every value. Only
    the distinct values are compared, so a column of millions of rows costs one factorisation.
    """
    codes, uniques = factorize(values)
    matched = np.full(len(uniques), -1, dtype=np.int64)
    by_number = np.zeros(len(uniques), dtype=bool)
    if len(uniques):
        text = pd.Index(uniques).astype(str).astype(object)
        matched = pd.Index(categories, dtype=object).get_indexer(text).astype(np.int64)
        unmatched = matched < 0
        declared = _as_numbers(categories)
        if match_numbers and unmatched.any() and not np.isnan(declared).all():
            spelled = _as_numbers(text[unmatched])
            found = pd.Index(np.where(np.isnan(declared), np.inf, declared)).get_indexer(pd.Index(spelled))
            matched[unmatched] = np.where(np.isnan(spelled), -1, found)
            by_number[unmatched] = matched[unmatched] >= 0
    lookup = np.append(matched, -2)
    return lookup[codes], np.append(by_number, False)[codes]
