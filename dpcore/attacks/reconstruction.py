r"""Reconstruction from the randomized copy: can an attacker who knows everything else guess a person's value?

The randomized copy (:mod:`dpcore.release`) randomises each value on its own: k-ary randomized
response keeps the true value with probability ``p = e^ε/(e^ε + k − 1)`` and otherwise writes
one of the other ``k − 1`` values. This module attacks one released column at a time with the
copy's own mechanism (:meth:`~dpcore.release.columns.Treatment.randomise`), for the worst
case the guarantee is about: the attacker has found the person's row in the copy and knows
**every other value** of that person.

Two attackers, both measured on the owner's rows:

* **From the copy alone**: guess the value the copy shows. Right with probability exactly ``p``
  — the guarantee ``e^ε/(e^ε + k − 1)`` for an attacker who had no better guess than a random
  one (a check that the mechanism does what it says).
* **Knowing everything else**: the attacker predicts the value from the person's other columns
  (a gradient-boosted classifier trained, two-fold, on the other people's true rows: an
  attacker with the rest of the table) and combines that prior with what the copy shows, by
  Bayes' rule. Its success rate with the real copy is shown beside its best guess from the
  prior alone (what it knew before the copy), and bounded with the same rule's success on a
  *blank copy*, in which the person's value was replaced by a random one before randomising:
  a copy that tells nothing about the person. Differential privacy bounds the difference
  whatever the attacker does: for every person and every guessing rule,
  ``P(right | real copy) ≤ e^ε · P(right | blank copy)`` and
  ``P(wrong | real copy) ≥ e^(−ε) · P(wrong | blank copy)`` (the value enters the copy only
  through an ε-DP mechanism), so

      success with the copy ≤ min(e^ε · s₀, 1 − e^(−ε) · (1 − s₀)),   s₀ = success on a blank copy.

  (A blank copy misleads a rule that trusts the copy, so ``s₀`` can be below the prior-only
  guess; the bound holds for the rule used, and it is the rigorous one.)

Figures are per row; when a person has several rows that share a value, each row's copy adds up
(ε per person is the sum over their rows). Laplace columns release a number, not a category,
and are not attacked here. Everything here is owner's eyes only and charges no budget.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.attacks.statistics import clopper_pearson
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.mechanisms import KaryRandomizedResponse
from dpcore.progress import Clock, Progress, TimeLeft
from dpcore.release import ReleasePlan, default_plan
from dpcore.release.columns import Treatment, numbers, resolve
from dpcore.release.randomness import Draws, positions
from dpcore.release.randomness import entropy as make_entropy
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

ATTACKED = ("coin", "k-ary", "bins")
#: The table's column names stay English (its CSV and JSON); the app shows them translated (``_(name)``).
TABLE_HEADERS = (
    N_("values (k)"),
    N_("guarantee e^ε/(e^ε+k−1)"),
    N_("guessed from the copy alone"),
    N_("knowing everything else, without the copy"),
    N_("the same, on a blank copy"),
    N_("knowing everything else, with the copy"),
    N_("ceiling with the copy"),
)
#: The attacker's prior is mixed with a uniform one by this share, so no value is ruled out entirely.
SMOOTHING = 0.01


@dataclass(frozen=True)
class ColumnReconstruction:
    """What the two attackers achieved on one released column (rates over ``n`` rows)."""

    column: str
    mechanism: str
    k: int
    epsilon: float
    n: int
    guarantee: float
    copy_only: float
    prior_only: float
    blank_copy: float
    with_copy: float
    ceiling: float
    confidence: float

    @property
    def error(self) -> float:
        """Half-width of a 95 % interval for a rate over ``n`` rows (the widest, at 1/2)."""
        return 1.96 * math.sqrt(0.25 / max(self.n, 1))

    @property
    def exceeds_ceiling(self) -> bool:
        """True if the informed attacker beat DP's ceiling beyond sampling error (it never should)."""
        alpha = (1.0 - self.confidence) / 2.0
        low = float(clopper_pearson(round(self.with_copy * self.n), self.n, alpha)[0])
        high_blank = float(clopper_pearson(round(self.blank_copy * self.n), self.n, alpha)[1])
        return low > copy_ceiling(high_blank, self.epsilon)


@dataclass(frozen=True)
class ReconstructionResult:
    columns: tuple[ColumnReconstruction, ...]
    n_rows: int
    seconds: float
    notes: tuple[str, ...] = ()

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "column": c.column,
                    "values (k)": c.k,
                    "ε": c.epsilon,
                    "guarantee e^ε/(e^ε+k−1)": c.guarantee,
                    "guessed from the copy alone": c.copy_only,
                    "knowing everything else, without the copy": c.prior_only,
                    "the same, on a blank copy": c.blank_copy,
                    "knowing everything else, with the copy": c.with_copy,
                    "ceiling with the copy": c.ceiling,
                    "±": c.error,
                }
                for c in self.columns
            ]
        )


def copy_ceiling(prior_success: float, epsilon: float, delta: float = 0.0) -> float:
    """The most an (ε, δ)-DP copy can raise a guess that is right ``prior_success`` of the time without it.

    (ε, δ)-DP bounds the guess's success, ``P' ≤ e^ε P + δ``, and its failure from below,
    ``1 − P' ≥ e^{−ε} (1 − P − δ)``; the ceiling is the smaller of the two.
    """
    return min(1.0, math.exp(epsilon) * prior_success + delta, 1.0 - math.exp(-epsilon) * (1.0 - prior_success - delta))


def attack_reconstruction(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan | None = None,
    *,
    epsilon: float = 1.0,
    columns: list[str] | None = None,
    max_rows: int | None = 5_000,
    prior_rounds: int = 30,
    time_limit: float | None = None,
    random_state: RandomStateLike = None,
    progress: Progress | None = None,
    clock: Clock = time.monotonic,
) -> ReconstructionResult:
    """Attack every randomized-response column of the copy ``plan`` would release.

    Parameters
    ----------
    frame, schema : the owner's table and declarations.
    plan : ReleasePlan, optional
        The copy's plan (default: :func:`~dpcore.release.default_plan` at ``epsilon`` per column).
    columns : list of str, optional
        Attack only these released columns.
    max_rows : int or None
        Attack a random sample of at most this many rows (None: all).
    prior_rounds : int
        Boosting rounds of the attacker's classifier (more: a stronger, slower attacker).
    time_limit : float, optional
        Seconds. A column's cost is measured per value it can take (the attacker's classifier
        fits one tree per value and round; two-value columns one), and a column whose measured
        cost would not finish within the limit is left out (the result names the columns left out).
    random_state : None, int or Generator
        For tests and benchmarks only.

    Raises
    ------
    DataError
        The plan does not fit the table, or it randomises no column by randomized response.
    """
    started = clock()
    check_epsilon(epsilon)
    plan = plan if plan is not None else default_plan(schema, epsilon)
    treatments, _unused, _unused = resolve(plan, schema)
    chosen = [t for t in treatments if t.mechanism in ATTACKED and (columns is None or t.name in columns)]
    if not chosen:
        raise DataError(_("The copy randomises no column by randomized response, so there is no value to guess back."))
    missing = [t.name for t in chosen if t.name not in frame.columns]
    if missing:
        raise DataError(
            _("The plan randomises columns that are not in the table: {names}.").format(
                names=", ".join(f"'{n}'" for n in missing)
            )
        )
    rng = check_random_state(random_state)
    if max_rows is not None and len(frame) > max_rows:
        frame = frame.iloc[np.sort(rng.choice(len(frame), max_rows, replace=False))]
    features = _known(frame, schema)
    work = TimeLeft([("values", sum(_weight(t) for t in chosen))], progress, clock)
    results: list[ColumnReconstruction | None] = []
    skipped: list[str] = []
    planned = list(chosen)
    while planned:
        t = planned.pop(0)
        results.append(_attack_column(t, frame, features, prior_rounds, rng))
        measured = work.stage("values")
        each = (measured.seconds + clock() - work.last) / (measured.done + _weight(t))
        if time_limit is not None:
            # Plan the cut now, so that the time left counts only the columns that will be attacked.
            left, kept = time_limit - work.elapsed, []
            for later in planned:
                if each * _weight(later) <= left:
                    kept.append(later)
                    left -= each * _weight(later)
                else:
                    skipped.append(later.name)
            planned = kept
            work.resize("values", work.stage("values").done + _weight(t) + sum(_weight(c) for c in planned))
        work.tick(_("guessed '{name}' back from the copy").format(name=t.name), _weight(t))
    notes = (
        [_("Laplace columns release a number, not a category, and were not attacked.")]
        if any(t.mechanism == "laplace" for t in treatments)
        else []
    )
    if skipped:
        notes.append(
            _(
                "{attacked} of {columns} columns were attacked: at the measured time per column the others would not "
                "finish within the time limit of {seconds} s. Left out: {names}. The thorough setting attacks them "
                "all."
            ).format(
                attacked=len(chosen) - len(skipped),
                columns=len(chosen),
                seconds=f"{time_limit:g}",
                names=", ".join(f"'{n}'" for n in skipped),
            )
        )
    if schema.privacy_unit is not None:
        notes.append(_("The figures are per row. A person's rows are randomised separately, so their ε adds up over their rows."))
    return ReconstructionResult(tuple(r for r in results if r is not None), len(frame), clock() - started, tuple(notes))


def _weight(t: Treatment) -> int:
    """A column's share of the work: the attacker's classifier fits a tree per value and round (one for two values)."""
    return t.k if t.k > 2 else 1


def _known(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Every column an attacker may know about a person, as numbers (categories as codes; missing stays NaN)."""
    out = {}
    for spec in schema.columns:
        if spec.role in ("identifier", "ignore") or spec.name == schema.privacy_unit or spec.name not in frame.columns:
            continue
        if spec.kind == "numeric":
            out[spec.name] = numbers(frame[spec.name])
        else:
            codes, _unused = pd.factorize(frame[spec.name], use_na_sentinel=True)
            out[spec.name] = np.where(codes < 0, np.nan, codes.astype(float))
    return pd.DataFrame(out, index=frame.index)


def _attack_column(
    t: Treatment, frame: pd.DataFrame, features: pd.DataFrame, rounds: int, rng: np.random.Generator
) -> ColumnReconstruction | None:
    codes, _unused = t.inputs(frame)
    valid = (codes >= 0) & (codes < t.k)
    if valid.sum() < 20:
        return None
    truth = codes[valid].astype(np.int64)
    rows = positions(0, len(codes))  # the copy's row keys; each randomisation draws its own secret key
    real = t.randomise(codes, rows, Draws.of(make_entropy(rng)[0]).key)[valid]
    blank = t.randomise(rng.integers(0, t.k, size=len(codes)), rows, Draws.of(make_entropy(rng)[0]).key)[valid]
    others = features.drop(columns=[t.name], errors="ignore").to_numpy(dtype=float)[valid]
    prior = _prior(others, truth, t.k, rounds, rng)
    response = KaryRandomizedResponse(t.epsilon, t.k)  # the copy's own p = e^ε/(e^ε + k − 1) and q
    p, q = response.keep_probability, response.other_probability

    def guess(released: NDArray[np.int64]) -> NDArray[np.int64]:
        likelihood = np.full(prior.shape, q)
        likelihood[np.arange(len(released)), released] = p
        return np.argmax(prior * likelihood, axis=1)

    blank_copy = float(np.mean(guess(blank) == truth))
    return ColumnReconstruction(
        column=t.name,
        mechanism=t.mechanism,
        k=t.k,
        epsilon=t.epsilon,
        n=int(valid.sum()),
        guarantee=p,
        copy_only=float(np.mean(real == truth)),
        prior_only=float(np.mean(np.argmax(prior, axis=1) == truth)),
        blank_copy=blank_copy,
        with_copy=float(np.mean(guess(real) == truth)),
        ceiling=copy_ceiling(blank_copy, t.epsilon),
        confidence=0.95,
    )


def _prior(
    others: NDArray[np.float64], truth: NDArray[np.int64], k: int, rounds: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """``P(value | other columns)`` for every row, from a classifier trained on the other half of the rows."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    share = np.bincount(truth, minlength=k) / len(truth)
    prior = np.tile(share, (len(truth), 1))
    if others.shape[1] == 0 or rounds < 1:
        return (1 - SMOOTHING) * prior + SMOOTHING / k
    fold = rng.random(len(truth)) < 0.5
    for train in (fold, ~fold):
        seen = np.unique(truth[train])
        if seen.size < 2 or (~train).sum() == 0:
            continue
        model = HistGradientBoostingClassifier(max_iter=rounds, early_stopping=False, random_state=int(rng.integers(2**31 - 1)))
        model.fit(others[train], truth[train])
        rows = np.flatnonzero(~train)
        block = np.zeros((rows.size, k))
        block[:, model.classes_.astype(int)] = model.predict_proba(others[~train])
        prior[rows] = block
    return (1 - SMOOTHING) * prior + SMOOTHING / k
