"""The oblivious trees boosting draws without looking at the records, and their sizes (spec §9).

Everything here is a function of public inputs (ε, a noisy or declared row count, declared
categories, released threshold knots, earlier rounds' released steps, the index of a first
level the exponential mechanism picked) and of a generator that never sees the data; reading a
record's leaf is the only place the records enter, and that is how the leaves are filled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: What the residuals are: ``y − F`` (target in [0, 1]), ``y − sigmoid(F)`` (y ∈ {0, 1}), ``one_hot(y) − softmax(F)``.
REGRESSION, BINARY, MULTICLASS = "regression", "binary", "multiclass"
#: A categorical feature with at most this many declared categories splits one branch per category.
MULTIWAY_CATEGORIES = 16
#: Share of each feature draw that follows earlier rounds' released steps, once every feature was split on (regressor).
FEATURE_WEIGHTING = 0.5
#: Share of numeric thresholds drawn uniformly between the DP quantiles rather than in the data range.
QUANTILE_THRESHOLDS = 0.3
#: Pure ε: multiclass trees keep depth 4 only from this many "records per unit of budget" (n̂·ε/4) on.
MULTICLASS_DEEPER = 3000
#: Share of each round's ε that picks its first level (pure ε): ``SMALL_TABLE_SELECT`` × the share of the
#: large-table rounds a small table's size cuts, and at least ``SELECT_SHARE`` with two classes.
SELECT_SHARE, SMALL_TABLE_SELECT = 0.2, 0.35


def declared_levels(categorical_levels: Mapping[int, int] | None, d: int) -> np.ndarray:
    """Number of declared categories per feature (0 for numeric)."""
    levels = np.zeros(d, dtype=np.int64)
    for feature, count in dict(categorical_levels or {}).items():
        if not 0 <= int(feature) < d or int(count) < 2:
            raise ValueError("categorical_levels maps feature indices to category counts >= 2")
        levels[int(feature)] = int(count)
    return levels


def auto_rounds(epsilon: float) -> int:
    """Rounds for a budget: more rounds when each can afford less noise (depends on ε only)."""
    return int(np.clip(round(40.0 * np.sqrt(epsilon)), 10, 160))


def sized_rounds_and_depth(n_hat: float, epsilon: float, rounds: int, depth: int) -> tuple[int, int]:
    """Rounds and depth for a table of about ``n_hat`` rows (a noisy count) at ``epsilon``.

    ``rounds`` and ``depth`` are the large-table defaults. With ``m = n_hat·ε`` "records per unit
    of budget", rounds are capped at ``m/50`` (at least 3) and depth at ``round(log₂ √m − 0.8)``
    (at least 1): the leaves of one tree grow like ``√m`` (about ``√m / 1.7``), so a leaf keeps
    enough records to rise above its noise on a small table, and a large one may afford finer
    trees. Fixed on public data: Congressional Voting (435 rows: 6 rounds of depth 3 at ε = 1,
    27 of depth 4 at ε = 4; the former linear rule, 8 of depth 2 and 34 of depth 4, was 0.010 and
    0.006 less accurate over 40 and 30 folds of seeds the benchmark does not use), Mushroom (8,124
    rows: 40 rounds of depth 6 at ε = 1, 0.002 above depth 5 over 10 folds), California (depth 5
    at ε = 0.25, 6 from ε = 1), Adult (depth 5 at ε = 0.1, 6 from ε = 1) and Nursery (the
    multiclass defaults).
    """
    m = max(float(n_hat), 1.0) * epsilon
    sized_rounds = int(np.clip(m // 50, 3, rounds))
    sized_depth = int(np.clip(round(np.log2(m) / 2 - 0.8), 1, depth))
    return min(rounds, sized_rounds), min(depth, sized_depth)


def default_sizes(epsilon: float, approximate: bool, task: str, n_hat: float | None) -> tuple[int, int, int]:
    """The ``"auto"`` rounds and depth of a fit, from public values and a noisy row count ``n_hat``, and the large-table rounds.

    ``n_hat`` is ``None`` when no row count was bought (the large-table defaults stand). Rounds:
    :func:`auto_rounds`, three quarters for more than two classes (half in the approximate mode,
    which then takes three times as many); depth 6 (4 for more classes; 5 and 3 in the
    approximate mode); both cut by :func:`sized_rounds_and_depth`, a multiclass table sized as if
    it had a quarter of its rows and kept at depth 3 below ``n̂·ε/4 = 3000``.
    """
    multiclass = task == MULTICLASS
    rounds = auto_rounds(epsilon)
    if multiclass:
        # Multiclass rounds release K sums per leaf at once, so each round is costlier: fewer of them
        # (three quarters under pure ε, where the trees are shallower; half in the approximate mode).
        rounds = max(10, rounds // 2 if approximate else rounds * 3 // 4)
    # Pure ε: deeper trees, which the sizing below trims on small tables; the approximate mode is not
    # sized and keeps the depths it was measured with (3 and 5).
    depth = (3 if multiclass else 5) if approximate else (4 if multiclass else 6)
    unsized_rounds = rounds
    if n_hat is not None:
        # A multiclass leaf releases K noisy sums: it needs more records to rise above them, so it is
        # sized as if the table were a quarter as large, and keeps depth 4 only once that is large
        # for its ε (Nursery: 3 at ε = 1, 0.896 → 0.903 over 15 probe folds; 4 from ε = 2).
        rounds, depth = sized_rounds_and_depth(n_hat / 4 if multiclass else n_hat, epsilon, rounds, depth)
        if multiclass and n_hat / 4 * epsilon < MULTICLASS_DEEPER:
            depth = min(depth, 3)
    # The approximate mode affords three times the rounds (zCDP noise grows only with √rounds).
    return (rounds * 3, depth, unsized_rounds * 3) if approximate else (rounds, depth, unsized_rounds)


def pick_share(task: str, approximate: bool, n_features: int, rounds: int, unsized_rounds: int) -> float:
    """The ``"auto"`` share of each round's budget that picks its first level (public values only).

    Pure ε: ``0.35 × (1 − rounds / large-table rounds)``, the share of the
    rounds a small table's size cuts, and at least 0.2 with two classes — 0.30 on Congressional
    Voting at ε = 1 (348 training rows: 6 of 40 rounds), 0.2 on Mushroom and Adult, 0.26 for a
    regression on 500 rows, 0 for a large table's regression. Chosen over probe folds at ε = 1:
    Voting 0.896 → 0.924 (a flat 0.2: 0.906, 0.35: 0.929, 0.5: 0.939, 0.7: 0.943; at ε = 4
    0.926 → 0.931), Mushroom 0.980 → 0.985 (0.35: 0.985, 0.5: 0.984), Adult 0.850 → 0.851 (0.35:
    0.849, 0.5: 0.846; at ε = 0.1 0.8194 → 0.8206 over 30 repetitions), California on 500 rows MAE 0.163 → 0.160
    (60 draws). On full California a flat 0.2 was as good as none (0.1004 → 0.1003) but cost the
    long-tailed wide-bounds table 1 % (20 probe folds), so a large regression picks nothing.
    Picks restricted to the current cycle of features lost on Mushroom and California.
    """
    # Each pick on a cut table sees as many records per unit of its budget as on a large table, and finding
    # the column counts for more than the leaves' noise. Multiclass keeps drawing: on Nursery the picks kept
    # returning to the column that had already decided a class. The approximate mode keeps its measured
    # defaults. A single column leaves nothing to choose.
    if task == MULTICLASS or approximate or n_features < 2:
        return 0.0
    cut = max(0.0, 1 - rounds / unsized_rounds)
    return max(SELECT_SHARE if task == BINARY else 0.0, SMALL_TABLE_SELECT * cut)


class Structures:
    """Every round's oblivious tree, drawn one round at a time from public values only.

    Arrays ``features``, ``thresholds`` and ``branches`` are ``(rounds, depth)``, ``subsets``
    ``(rounds, depth, max categories)``. ``levels`` holds each feature's number of declared
    categories (0 for numeric), ``knots`` ``(d, K)`` the released values a numeric feature's
    thresholds are drawn between: its range's ends, with its DP quantiles in between.
    Thresholds are uniform in the range, a share ``quantile_thresholds`` of them uniform in the
    knots' rank space instead. A tree has at most ``2**depth`` leaves. A level splits two ways (a
    threshold, or a category subset), or — for a categorical feature of at most ``multiway``
    categories that still fits in the leaves left — one branch per category, and that feature
    is not drawn again in the same tree; ``branches[r, j]`` counts a level's branches (1: round
    ``r`` has no level ``j``).

    Features come in shuffled cycles (every feature once before any twice) until each has been
    split on; from then on a share ``weighting`` of each draw follows how far earlier rounds'
    *released* steps moved between a feature's branches (:meth:`learn`), the rest stays uniform.
    Reading released steps is post-processing, so the structures cost no budget. A round's
    first level may instead be one of :meth:`candidates` (one split drawn per feature) that a
    paid mechanism picked outside this class (``draw(r, first)``).
    """

    def __init__(
        self,
        rng: np.random.Generator,
        levels: np.ndarray,
        knots: np.ndarray,
        rounds: int,
        depth: int,
        multiway: int = 0,
        weighting: float = 0.0,
        quantile_thresholds: float = QUANTILE_THRESHOLDS,
    ) -> None:
        self.rng, self.levels, self.knots, self.depth = rng, levels, knots, depth
        self.multiway, self.weighting, self.quantile_thresholds = multiway, weighting, quantile_thresholds
        self.features = np.zeros((rounds, depth), dtype=np.int64)
        self.thresholds = np.zeros((rounds, depth))
        self.branches = np.ones((rounds, depth), dtype=np.int64)
        self.subsets = np.zeros((rounds, depth, max(int(levels.max(initial=0)), 1)), dtype=bool)
        self._queue: list[int] = []
        self._effects, self._uses = np.zeros(levels.size), np.zeros(levels.size)

    def _next_feature(self, barred: set[int]) -> int:
        """The next feature of a level: the cycle's next one, or a weighted draw once every feature was split on."""
        d = self.levels.size
        if self.weighting and self._uses.min() > 0:
            effects = self._effects / self._uses
            weights = (1 - self.weighting) / d + self.weighting * effects / max(effects.sum(), 1e-300)
            weights[list(barred)] = 0.0
            if not (np.isfinite(weights).all() and weights.sum() > 0):  # no spread anywhere yet: uniform
                weights = np.where(np.isin(np.arange(d), list(barred)), 0.0, 1.0)
            return int(self.rng.choice(d, p=weights / weights.sum()))
        if all(f in barred for f in self._queue):
            self._queue.extend(int(f) for f in self.rng.permutation(d))
        feature = next(f for f in self._queue if f not in barred)
        self._queue.remove(feature)
        return feature

    def _wide(self, f: int, leaves: int) -> bool:
        """Whether feature ``f`` splits one branch per category below ``leaves`` leaves."""
        return bool(2 < self.levels[f] <= self.multiway and leaves * self.levels[f] <= 1 << self.depth)

    def candidates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One first-level split per feature, to choose from: thresholds ``(d,)``, subsets ``(d, W)``, branches ``(d,)``."""
        d = self.levels.size
        thresholds, subsets = self._splits(np.arange(d))
        return thresholds, subsets, np.array([self.levels[f] if self._wide(f, 1) else 2 for f in range(d)], dtype=np.int64)

    def draw(self, r: int, first: tuple[int, float, np.ndarray] | None = None) -> None:
        """Draw round ``r``'s tree (a loop over its levels, never over records); ``first``: a picked level 0 (feature, threshold, subset)."""
        budget, leaves = 1 << self.depth, 1
        barred: set[int] = set()
        for j in range(self.depth):
            if leaves * 2 > budget or len(barred) == self.levels.size:
                break
            f = first[0] if j == 0 and first is not None else self._next_feature(barred)
            wide = self._wide(f, leaves)
            self.features[r, j], self.branches[r, j] = f, self.levels[f] if wide else 2
            leaves *= int(self.branches[r, j])
            if wide:
                barred.add(f)
        self.thresholds[r], self.subsets[r] = self._splits(self.features[r])
        if first is not None:
            self.thresholds[r, 0], self.subsets[r, 0] = first[1], first[2]

    def up_to(self, r: int) -> dict[str, Any]:
        """Rounds ``0 … r−1`` as :class:`~dpcore.models._boosting.rows.RoundSums` fields."""
        return {
            "features": self.features[:r],
            "thresholds": self.thresholds[:r],
            "subsets": self.subsets[:r],
            "branches": self.branches[:r],
        }

    def _splits(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A threshold and a category subset for each of ``features`` (whichever its kind uses)."""
        levels, n = self.levels, len(features)
        # Uniform in each feature's released range, or, for a share of them, uniform in the rank space its
        # DP quantiles span (every gap between neighbouring knots equally likely), which puts more
        # thresholds where the data crowd: California MAE at ε = 1, 0.1022 → 0.1017 over 100 probe fits.
        knots = self.knots[features]  # (n, K), rows ascending
        position = self.rng.random(n) * (knots.shape[1] - 1)
        gap = np.minimum(position.astype(np.int64), knots.shape[1] - 2)
        rows = np.arange(n)
        ranked = knots[rows, gap] + (position - gap) * (knots[rows, gap + 1] - knots[rows, gap])
        uniform = knots[:, 0] + self.rng.random(n) * (knots[:, -1] - knots[:, 0])
        thresholds = np.where(self.rng.random(n) < self.quantile_thresholds, ranked, uniform)
        width = self.subsets.shape[2]
        subsets = self.rng.random((n, width)) < 0.5
        # A subset holding all or none of a feature's categories splits nothing: make it one category vs the rest.
        feature_levels = levels[features]
        inside = (subsets & (np.arange(width)[None, :] < feature_levels[:, None])).sum(axis=1)
        trivial = (feature_levels > 0) & ((inside == 0) | (inside == feature_levels))
        pick = (self.rng.random(n) * np.maximum(feature_levels, 1)).astype(np.int64)
        return thresholds, np.where(trivial[:, None], np.arange(width)[None, :] == pick[:, None], subsets)

    def learn(self, r: int, steps: np.ndarray, counts: np.ndarray) -> None:
        """Credit round ``r``'s features with the spread of its released ``steps`` ``(L, K)`` between their branches.

        A level's effect is the count-weighted variance, over its branches, of the mean step in
        each branch (summed over the K scores): a split whose branches the noisy steps move apart
        found something. Weights are the released noisy counts (at least 1).
        """
        branches = self.branches[r]
        used = int(np.prod(branches))
        leaf, weight = np.arange(used), np.maximum(counts[:used], 0.0) + 1.0
        stride = 1
        for j in np.flatnonzero(branches > 1):
            digit = (leaf // stride) % branches[j]
            stride *= int(branches[j])
            totals = np.bincount(digit, weight, branches[j])
            sums = np.stack([np.bincount(digit, weight * steps[:used, k], branches[j]) for k in range(steps.shape[1])], axis=1)
            means = sums / totals[:, None]
            overall = totals @ means / totals.sum()
            self._effects[self.features[r, j]] += float(totals @ ((means - overall) ** 2).sum(axis=1) / totals.sum())
            self._uses[self.features[r, j]] += 1


def leaf_index(
    X_unit: np.ndarray,
    features: np.ndarray,
    thresholds: np.ndarray,
    subsets: np.ndarray,
    levels: np.ndarray,
    branches: np.ndarray,
) -> np.ndarray:
    """Leaf of every record in every given round: ``(n, rounds)``.

    The leaf is a number in mixed radix, level 0 its lowest digit: a two-way level's digit is 1
    for left, a category-per-branch level's is the category's code. With two-way levels only,
    bit ``j`` set means left at level ``j``.
    """
    return leaves_by_round(X_unit, features, thresholds, subsets, levels, branches).T


def leaves_by_round(
    X_unit: np.ndarray,
    features: np.ndarray,
    thresholds: np.ndarray,
    subsets: np.ndarray,
    levels: np.ndarray,
    branches: np.ndarray,
) -> np.ndarray:
    """:func:`leaf_index` laid out ``(rounds, n)``: one round's leaves side by side.

    A numeric feature goes left at or below the threshold; a categorical one when its code
    (``round(value·(levels − 1))``) is in the level's subset, or, split one branch per category,
    follows its code. One level at a time, so only the categorical slots pay for the lookup.
    """
    rounds, depth = features.shape
    # The features used, each one's values side by side: gathering a round's column then copies a row.
    used, position = np.unique(features, return_inverse=True)
    columns = np.ascontiguousarray(X_unit[:, used].T)
    position = position.reshape(features.shape)
    strides = np.cumprod(np.column_stack([np.ones(rounds, dtype=np.int64), branches[:, :-1]]), axis=1)
    bits = np.uint8 if int(np.prod(branches, axis=1).max(initial=1)) <= 256 else np.int64  # narrow integers are cheaper
    leaves = np.zeros((rounds, len(X_unit)), dtype=bits)
    for j in range(depth):
        present = np.flatnonzero(branches[:, j] > 1)
        if not present.size:
            continue
        values = columns[position[present, j]]  # (rounds with a level j, n)
        digit = (values <= thresholds[present, j, None]).astype(bits)
        categorical = np.flatnonzero(levels[features[present, j]] > 0)
        if categorical.size:
            rows = present[categorical]
            scale = levels[features[rows, j]] - 1
            width = subsets.shape[2]
            codes = np.clip(np.rint(values[categorical] * scale[:, None]).astype(np.int64), 0, scale[:, None])
            table = subsets[rows, j].ravel()  # each categorical round's subset, one after another
            left = table.take(codes + (np.arange(rows.size) * width)[:, None])
            digit[categorical] = np.where(branches[rows, j, None] > 2, codes, left).astype(bits)
        leaves[present] += digit * strides[present, j, None].astype(bits)
    return leaves.astype(np.int64)


def round_records(
    names: Sequence[str],
    features: np.ndarray,
    thresholds: np.ndarray,
    subsets: np.ndarray,
    branches: np.ndarray,
    levels: np.ndarray,
    leaf_values: np.ndarray,
    picked: bool = False,
) -> list[dict[str, Any]]:
    """Each round as plain data: every level's split (``thresholds`` in declared units; ``picked`` marks
    a first level the exponential mechanism chose) and the leaf steps."""
    out = []
    for r in range(len(features)):
        split: list[dict[str, Any]] = []
        for j in np.flatnonzero(branches[r] > 1):
            f = features[r, j]
            if branches[r, j] > 2:
                level: dict[str, Any] = {"feature": str(names[f]), "branch_per_category": int(branches[r, j])}
            elif levels[f] > 0:
                level = {"feature": str(names[f]), "categories_left": np.flatnonzero(subsets[r, j, : levels[f]]).tolist()}
            else:
                level = {"feature": str(names[f]), "threshold": float(thresholds[r, j])}
            split.append(level | {"picked": True} if picked and j == 0 else level)
        out.append({"round": r, "levels": split, "leaf_steps": leaf_values[r].round(6).tolist()})
    return out
