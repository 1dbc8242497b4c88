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

from dpcore.i18n import _
from dpcore.progress import CostMemory, Stage, TimeLeft, remember_stages, with_remembered_priors
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


#: Seconds per (pair of columns × row of the table and of the copy) and per (row × feature) of a train-on-copy fit,
#: measured on a 2-core machine (Adult's 15 columns and its 76-column analog, 32,561 rows): the comparison's time left
#: before this machine has compared a copy of its own (:func:`comparison_stages`).
FIRST_PAIR_ROW, FIRST_FEATURE_ROW = 1.2e-8, 3.5e-7
#: The comparison's stages whose cost per unit a :class:`~dpcore.progress.CostMemory` keeps for the next comparison.
COMPARISON_STAGES = ("comparing", "training")
COMPARISON_COSTS = "copy comparison"


def comparison_stages(frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, costs: CostMemory | None = None) -> list[Stage]:
    """:func:`compare_copy`'s work for :class:`~dpcore.progress.TimeLeft`, to follow the copy's stages on one bar.

    ``comparing``: every pair of the copy's columns counted in the table's rows and the copy's (as many, until
    the copy is made); ``training``: the two train-on-copy fits, per row and feature (none when the copy has no
    target to train for). Each is predicted from ``costs`` (this machine's last comparison) or
    :data:`FIRST_PAIR_ROW` / :data:`FIRST_FEATURE_ROW`, then measured as it goes.
    """
    names = [c.name for c in synthetic_columns(schema, plan)]
    n_rows = len(frame)
    trains = _target_at(schema, names, n_rows) is not None
    stages = [
        Stage("comparing", _pair_rows(len(names), n_rows, n_rows), prior=FIRST_PAIR_ROW),
        Stage("training", _feature_rows(len(names), n_rows, n_rows) if trains else 0, prior=FIRST_FEATURE_ROW),
    ]
    return with_remembered_priors(stages, costs, COMPARISON_COSTS, COMPARISON_STAGES)


def _target_at(schema: Schema, names: list[str], n_rows: int) -> int | None:
    """Where the schema's target is among the copy's columns, when there are rows enough to train and test on it."""
    target = schema.target.name if schema.target is not None else None
    return names.index(target) if target in names and n_rows >= 10 else None


def _pair_rows(n_columns: int, n_rows: int, copy_rows: int) -> int:
    return n_columns * (n_columns - 1) // 2 * (n_rows + copy_rows)


def _feature_rows(n_columns: int, n_rows: int, copy_rows: int) -> int:
    """The rows of both train-on-copy fits (the copy's, and the 80 % of the table's they are compared with) × features."""
    return (copy_rows + int(round(n_rows * (1 - HOLDOUT)))) * max(n_columns - 1, 0)


def remember_comparison_costs(work: TimeLeft, costs: CostMemory | None) -> None:
    """Keep this comparison's measured seconds per unit for the next one's first estimate."""
    remember_stages(work, costs, COMPARISON_COSTS, COMPARISON_STAGES)


def compare_copy(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    copy: pd.DataFrame,
    random_state: RandomStateLike = None,
    work: TimeLeft | None = None,
) -> CopyComparison:
    """The copy made with ``plan`` beside the real rows (owner-only): shares, pair errors, train-on-copy accuracy.

    The real rows are put in the copy's cells exactly as the copy's measurements put them (the
    declared categories and bins; a value outside the declared domain goes to a random cell,
    drawn from ``random_state``), so the two are compared cell by cell. Every pair of columns is
    counted (for 80 columns, 3,160 pairs: a column's pairs in one bincount,
    :func:`~dpcore.synthetic.measure.pair_counts`). When the copy holds the
    schema's target, a model trained on the copy and one trained on 80 % of the real rows are
    tested on the other 20 % (:func:`~dpcore.synthetic.preview.downstream_accuracy`); the copy
    was made from every row, those 20 % included, so its figure leans a little in its favour.

    With ``work`` (holding :func:`comparison_stages`), each column's pairs and each fit tick its bar.
    """
    rng = check_random_state(random_state)
    work = work if work is not None else TimeLeft([Stage("comparing", 0), Stage("training", 0)])  # says nothing
    work.begin("comparing", _("Comparing the copy with your table…"))
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
    at = _target_at(schema, names, len(real))
    work.resize("comparing", _pair_rows(len(names), len(real), len(copied)))
    work.resize("training", _feature_rows(len(names), len(real), len(copied)) if at is not None else 0)
    work.begin("comparing")  # the clock of a pair starts here: reading the cells is no pair's cost
    found = []
    for i in range(len(names)):
        for n, (mine, theirs) in enumerate(zip(pair_counts(real, shape, i), pair_counts(copied, shape, i), strict=True)):
            found.append((names[i], names[i + 1 + n], tv(mine / max(len(real), 1), theirs / max(len(copied), 1))))
        work.tick(_("Comparing pairs of columns…"), (len(names) - 1 - i) * (len(real) + len(copied)))
    pairs = pd.DataFrame(found, columns=["first", "second", "error"])
    accuracy = pd.DataFrame(columns=["trained on", "accuracy"])
    if at is not None:
        order = rng.permutation(len(real))
        cut = int(round(len(real) * (1 - HOLDOUT)))
        train, test = real[order[:cut]], real[order[cut:]]
        majority = np.bincount(train[:, at], minlength=shape[at]).argmax()
        work.begin("training", _("Training a model on the copy and one on your table…"))
        scores = []
        for cells in (copied, train):
            scores.append(downstream_accuracy(cells, test, shape, at))
            work.tick(_("Training a model on the copy and one on your table…"), len(cells) * (len(names) - 1))
        accuracy = pd.DataFrame(
            {"trained on": [SYNTHETIC, REAL, MAJORITY], "accuracy": [*scores, float(np.mean(test[:, at] == majority))]}
        )
    return CopyComparison(one_way, pairs, accuracy)
