r"""Membership inference against a synthetic copy: can its buyer tell who was in the table?

A synthetic copy holds invented rows, but a synthesizer that learns too much reproduces its
people: their rows, or rows close to them, turn up in the copy more often than rows of people who
were not in it. The experiment (after Stadler et al. 2022 and van Breugel et al. 2023, "DOMIAS"):

1. Every person (every row, when the table names no privacy unit) is made a **member**, a
   **non-member** or a **reference** by a fair three-sided die, which never looks at the data.
   Members are the table the copy is made from; the attacker holds the copy and the reference
   people (a sample of the same population, as a buyer with public data would).
2. Two copies are attacked: the **synthetic copy** made from the members at the chosen ε, and,
   as the attack's control, **the members' rows themselves** — what a synthesizer that memorised
   its rows would sell. The control shows what the attacks can find when there is something to
   find; the copy must stay within what ε allows.
3. Two attacks score every member and non-member, in the copy's own cells (its bins and
   categories), by a distance that is the mean over columns of the gap between two cells (a
   category's gap is 0 or 1; a bin's is its distance in bins over the number of bins less one):

   * **distance to the closest record**: a row close to a row of the copy says "member";
   * **density ratio** (DOMIAS): the share of the copy's rows near the row, over the share of the
     reference rows near it; a row the copy crowds around more than the population does says
     "member". "Near" is within the median distance from a reference row to its closest other
     reference row, so the radius is set by the reference people only.

   A person's score is the mean of their rows' scores.
4. The ROC curve of each attack, its AUC and its true-positive rate at a 1 % false-positive rate
   are set beside the ceiling that the copy's (ε, δ) guarantees (:mod:`dpcore.attacks.statistics`).

Everything here reads the owner's raw rows: owner's eyes only, never released, and it charges
no budget (the copy made here is a measurement, thrown away; the one sold is made on the Export
page). The time is one synthetic copy of two thirds of the people at most :data:`MAX_PEOPLE` of
each role, and the distances in chunks (a target row against every copy row, vectorised).

References
----------
T. Stadler, B. Oprisanu, C. Troncoso. *Synthetic data — anonymisation groundhog day.* USENIX
Security 2022. B. van Breugel, H. Sun, Z. Qian, M. van der Schaar. *Membership inference attacks
against synthetic data through overfitting detection.* AISTATS 2023.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.attacks.membership import MembershipResult, ModelUnderAttack, _curve, _per_unit
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.progress import Clock, Progress
from dpcore.release import ReleasePlan
from dpcore.synthetic.budget import DEFAULT_DELTA
from dpcore.synthetic.domain import SyntheticColumn, copy_cells, encode, synthetic_columns
from dpcore.synthetic.table import synthetic_frame
from dpcore.tables.schema import Schema
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

COPY_ATTACKS = (N_("distance to the closest record"), N_("density ratio"))
#: At most this many people of each role (member, non-member, reference): a copy made in seconds, scores to ±0.03 AUC.
MAX_PEOPLE = 1_500
#: Target rows compared with every copy row at once (rows × copy rows × columns small integers in memory).
CHUNK_ROWS = 256


def cell_gaps(columns: list[SyntheticColumn]) -> NDArray[np.float64]:
    """Each column's step between neighbouring cells: 1 for categories (any two differ by 1), 1/(bins − 1) for bins."""
    return np.array([1.0 / max(c.size - 1, 1) if c.treatment.mechanism == "bins" else np.inf for c in columns], dtype=np.float64)


def _distances(targets: NDArray[np.int64], rows: NDArray[np.int64], gaps: NDArray[np.float64]) -> NDArray[np.float64]:
    """The mean gap over columns between each target row and each of ``rows`` (targets × rows)."""
    apart = np.abs(targets[:, None, :] - rows[None, :, :]).astype(np.float64)
    per_column = np.where(np.isinf(gaps), apart > 0, apart * np.where(np.isinf(gaps), 0.0, gaps))
    return np.asarray(per_column.mean(axis=2), dtype=np.float64)


def closest_and_near(
    targets: NDArray[np.int64], rows: NDArray[np.int64], gaps: NDArray[np.float64], radius: float, skip_self: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Each target's distance to its closest row of ``rows``, and how many rows lie within ``radius``.

    ``skip_self``: the targets are ``rows`` themselves, and a row is not its own neighbour.
    """
    closest = np.empty(len(targets), dtype=np.float64)
    near = np.empty(len(targets), dtype=np.int64)
    for start in range(0, len(targets), CHUNK_ROWS):
        distance = _distances(targets[start : start + CHUNK_ROWS], rows, gaps)
        if skip_self:
            own = np.arange(start, start + len(distance))
            distance[np.arange(len(distance)), own] = np.inf
        closest[start : start + len(distance)] = distance.min(axis=1) if rows.size else np.inf
        near[start : start + len(distance)] = (distance <= radius).sum(axis=1)
    return closest, near


def attack_copy(
    frame: pd.DataFrame,
    schema: Schema,
    plan: ReleasePlan,
    epsilon: float,
    *,
    delta: float = DEFAULT_DELTA,
    max_people: int = MAX_PEOPLE,
    random_state: RandomStateLike = None,
    progress: Progress | None = None,
    clock: Clock = time.monotonic,
) -> MembershipResult:
    """Attack a synthetic copy made at (``epsilon``, ``delta``) with ``plan``'s columns, and its control (module docstring).

    Returns a :class:`~dpcore.attacks.membership.MembershipResult` whose two "models" are the
    members' rows themselves (no DP) and the synthetic copy; owner's eyes only, nothing charged.
    """
    check_epsilon(epsilon)
    started = clock()
    rng = check_random_state(random_state)
    columns = synthetic_columns(schema, plan)
    if schema.privacy_unit is not None:
        people, _names = pd.factorize(frame[schema.privacy_unit].astype(str))
        people = np.asarray(people, dtype=np.int64)
    else:
        people = np.arange(len(frame), dtype=np.int64)
    n_people = int(people.max()) + 1 if len(people) else 0
    role = rng.integers(0, 3, size=n_people)  # 0 member, 1 non-member, 2 reference: a die that never reads the data
    for kind in range(3):  # at most max_people of each role, chosen at random among them
        chosen = np.flatnonzero(role == kind)
        if len(chosen) > max_people:
            role[rng.choice(chosen, size=len(chosen) - max_people, replace=False)] = -1
    if min(int((role == kind).sum()) for kind in range(3)) < 20:
        raise DataError(_("The table is too small to attack a copy of it: it needs at least 60 people."))
    row_role = role[people]
    cells = encode(frame, columns, rng)
    gaps = cell_gaps(columns)
    members = row_role == 0
    if progress is not None:
        progress(0.0, None, _("Making a synthetic copy of the members…"))

    def copy_progress(share: float, seconds_left: float | None, what: str) -> None:
        if progress is not None:
            progress(0.8 * share, None if seconds_left is None else seconds_left + 0.25 * (clock() - started), what)

    synthetic = synthetic_frame(
        frame[members], schema, plan, epsilon=epsilon, delta=delta, random_state=rng, progress=copy_progress
    )
    copies = {"rows": cells[members], "synthetic": copy_cells(synthetic, columns)}
    reference = cells[row_role == 2]
    targets = (row_role == 0) | (row_role == 1)
    target_cells, target_people = cells[targets], people[targets]
    closest_reference, _count = closest_and_near(reference, reference, gaps, np.inf, skip_self=True)
    radius = float(np.median(closest_reference))
    _closest, reference_near = closest_and_near(target_cells, reference, gaps, radius)
    in_people = np.flatnonzero((role == 0) | (role == 1))
    is_member = role[in_people] == 0
    confidence = 0.95
    models = []
    for step, (key, name, private) in enumerate(
        (("rows", N_("the members' rows themselves (no DP)"), False), ("synthetic", N_("synthetic copy"), True))
    ):
        if progress is not None:
            progress(0.8 + 0.1 * step, None, _("Measuring how close each person is to the copy…"))
        copy = copies[key]
        closest, near = closest_and_near(target_cells, copy, gaps, radius)
        density = np.log((near + 1.0) / (len(copy) + 1.0)) - np.log((reference_near + 1.0) / (len(reference) + 1.0))
        curves = []
        for attack, row_scores in zip(COPY_ATTACKS, (-closest, density), strict=True):
            scores = _per_unit(row_scores, target_people, n_people, mean=True)[in_people]
            curves.append(_curve(attack, scores, is_member, confidence, delta if private else 0.0, rng))
        models.append(ModelUnderAttack(key, _(name), epsilon if private else None, delta if private else 0.0, tuple(curves), 0))
    notes = (
        _(
            "The copy was made from the members only, with the plan's columns; the attacker held it and {reference} other "
            "people of the same table; distances are measured in the copy's bins and categories."
        ).format(reference=int((role == 2).sum())),
    )
    if progress is not None:
        progress(1.0, 0.0, _("Done."))
    return MembershipResult(
        tuple(models),
        "copy",
        int(is_member.sum()),
        int((~is_member).sum()),
        "person" if schema.privacy_unit is not None else "row",
        schema.rows_per_person if schema.privacy_unit is not None else 1,
        clock() - started,
        confidence,
        notes,
    )
