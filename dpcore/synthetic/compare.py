"""The owner's look at a synthetic copy beside the real rows: each column's shares and every pair's error.

Owner-only, and free: it reads the real rows, so nothing in it may leave the owner's screen,
and it is not a release, so nothing is charged. It answers the question a buyer will ask
before paying — does the copy look like the table? — on the copy actually made, where the
utility preview (:mod:`~dpcore.synthetic.preview`) simulates one beforehand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.release.plan import ReleasePlan
from dpcore.synthetic.domain import copy_cells, encode, synthetic_columns
from dpcore.synthetic.measure import pair_counts
from dpcore.synthetic.preview import HOLDOUT, MAJORITY, REAL, SYNTHETIC, downstream_accuracy, shares, tv
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike, check_random_state


@dataclass(frozen=True)
class CopyComparison:
    """A synthetic copy beside the real rows it was made from (owner-only).

    Attributes
    ----------
    shares : pandas.DataFrame
        One row per (column, cell): ``column``, ``cell`` (the label the copy's file shows),
        ``position`` (the cell's place in the declared order), ``real`` and ``copy``, each the
        cell's share of its column's rows.
    pairs : pandas.DataFrame
        One row per pair of columns: ``first``, ``second`` and ``error``, the total-variation
        distance between the pair's real and copied two-way shares (0: the same, 1: disjoint).
    accuracy : pandas.DataFrame
        ``trained on`` (:data:`~dpcore.synthetic.preview.SYNTHETIC`, ``REAL`` or ``MAJORITY``) and
        ``accuracy`` on held-out real rows; empty when the copy does not hold the schema's target.
    """

    shares: pd.DataFrame
    pairs: pd.DataFrame
    accuracy: pd.DataFrame

    @property
    def one_way_error(self) -> float:
        """The mean total-variation distance of the single columns."""
        gaps = (self.shares["real"] - self.shares["copy"]).abs().groupby(self.shares["column"], sort=False).sum()
        return float(0.5 * gaps.mean())

    @property
    def two_way_error(self) -> float:
        """The mean of :attr:`pairs`' errors (NaN for a copy of one column)."""
        return float(self.pairs["error"].mean()) if len(self.pairs) else float("nan")


def compare_copy(
    frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, copy: pd.DataFrame, random_state: RandomStateLike = None
) -> CopyComparison:
    """The copy made with ``plan`` beside the real rows (owner-only): shares, pair errors, train-on-copy accuracy.

    The real rows are put in the copy's cells exactly as the copy's measurements put them (the
    declared categories and bins; a value outside the declared domain goes to a random cell,
    drawn from ``random_state``), so the two are compared cell by cell. Every pair of columns is
    counted (for 80 columns, 3,160 pairs: a column's pairs in one bincount, :func:`~dpcore.synthetic.measure.pair_counts`). When the copy holds the
    schema's target, a model trained on the copy and one trained on 80 % of the real rows are
    tested on the other 20 % (:func:`~dpcore.synthetic.preview.downstream_accuracy`); the copy
    was made from every row, those 20 % included, so its figure leans a little in its favour.
    """
    rng = check_random_state(random_state)
    columns = synthetic_columns(schema, plan)
    names, labels = [c.name for c in columns], [c.labels for c in columns]
    copied, real = copy_cells(copy, columns), encode(frame, columns, rng)
    shape = tuple(len(cells) for cells in labels)

    one_way = pd.DataFrame(
        {
            "column": np.repeat(names, [len(cells) for cells in labels]),
            "cell": [cell for cells in labels for cell in cells],
            "position": np.concatenate([np.arange(len(cells)) for cells in labels]) if labels else [],
            "real": np.concatenate([shares(real, shape, (i,)) for i in range(len(names))]) if names else [],
            "copy": np.concatenate([shares(copied, shape, (i,)) for i in range(len(names))]) if names else [],
        }
    )
    pairs = pd.DataFrame(
        [
            (names[i], names[i + 1 + n], tv(mine / max(len(real), 1), theirs / max(len(copied), 1)))
            for i in range(len(names))
            for n, (mine, theirs) in enumerate(zip(pair_counts(real, shape, i), pair_counts(copied, shape, i), strict=True))
        ],
        columns=["first", "second", "error"],
    )
    accuracy = pd.DataFrame(columns=["trained on", "accuracy"])
    target = schema.target.name if schema.target is not None else None
    if target in names and len(real) >= 10:
        at = names.index(target)
        order = rng.permutation(len(real))
        cut = int(round(len(real) * (1 - HOLDOUT)))
        train, test = real[order[:cut]], real[order[cut:]]
        majority = np.bincount(train[:, at], minlength=shape[at]).argmax()
        accuracy = pd.DataFrame(
            {
                "trained on": [SYNTHETIC, REAL, MAJORITY],
                "accuracy": [
                    downstream_accuracy(copied, test, shape, at),
                    downstream_accuracy(train, test, shape, at),
                    float(np.mean(test[:, at] == majority)),
                ],
            }
        )
    return CopyComparison(one_way, pairs, accuracy)
