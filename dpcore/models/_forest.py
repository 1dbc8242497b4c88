"""What the DP tree ensembles share: how records are shared out between trees, and voting."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcore.backends import Rows
from dpcore.mechanisms import keyed
from dpcore.models._tree import GrowthSettings, TreeArrays, grow
from dpcore.models._tree_rows import Membership

SAMPLINGS = ("disjoint", "subsample")

#: Streams of the keyed membership draws (each fit draws its own key; these keep its uses apart).
PART_STREAM = 1
SUBSAMPLE_STREAM = 1 << 16  # tree t draws from stream SUBSAMPLE_STREAM + t


@dataclass(frozen=True)
class EveryRow:
    """Every row grows under root 0."""

    def __call__(self, row_keys: NDArray[np.uint64]) -> NDArray[np.int64]:
        return np.zeros(len(row_keys), dtype=np.int64)


@dataclass(frozen=True)
class DisjointParts:
    """Each row grows under one of ``n_parts`` roots, by a uniform keyed draw from its row key."""

    key: bytes
    n_parts: int

    def __call__(self, row_keys: NDArray[np.uint64]) -> NDArray[np.int64]:
        return keyed.integers(self.key, row_keys, PART_STREAM, self.n_parts)[:, 0]


@dataclass(frozen=True)
class Subsample:
    """Tree ``tree`` keeps each row (root 0) with probability ``probability``, by a keyed draw; others get -1."""

    key: bytes
    tree: int
    probability: float

    def __call__(self, row_keys: NDArray[np.uint64]) -> NDArray[np.int64]:
        kept = keyed.uniforms(self.key, row_keys, SUBSAMPLE_STREAM + self.tree)[:, 0] < self.probability
        return np.where(kept, 0, -1).astype(np.int64)


def tree_memberships(key: bytes, n_trees: int, sampling: str, max_samples: float) -> tuple[list[Membership], int, float]:
    """Which rows each tree sees, and the budget share each tree may spend.

    ``"disjoint"``: every record goes to one tree by an independent uniform draw; trees see
    disjoint records, so each may spend the full ε (parallel composition).
    ``"subsample"``: every tree keeps each record independently with probability
    ``max_samples`` — *without* replacement, so a record counts at most once per tree; trees
    overlap, so each spends ε / n_trees (sequential composition). Bootstrap sampling with
    replacement is deliberately not offered: a record drawn k times has k times the
    sensitivity.

    The draws are keyed (:mod:`dpcore.mechanisms.keyed`): a pseudo-random function of the secret
    ``key`` and the record's stable row key, so adding or removing a record leaves every other
    record's draws unchanged, and every backend and every re-read of a row draws the same.

    Returns ``(memberships, n_roots, share)``: one membership for all trees at once (disjoint:
    ``n_roots = n_trees``) or one per tree (subsample: ``n_roots = 1``), and the fraction of ε
    per tree.
    """
    if sampling == "disjoint":
        return [DisjointParts(key, n_trees)], n_trees, 1.0
    if sampling == "subsample":
        if not 0.0 < max_samples <= 1.0:
            raise ValueError(f"max_samples must be in (0, 1], got {max_samples!r}")
        return [Subsample(key, t, float(max_samples)) for t in range(n_trees)], 1, 1.0 / n_trees
    raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")


def class_probabilities(noisy_counts: np.ndarray) -> np.ndarray:
    """Normalised leaf class distributions from noisy counts (negative counts → 0; empty → uniform)."""
    clipped = np.maximum(noisy_counts, 0.0)
    totals = clipped.sum(axis=-1, keepdims=True)
    k = noisy_counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, clipped / totals, 1.0 / k)


def grow_ensemble(
    rows: Rows,
    n_trees: int,
    sampling: str,
    max_samples: float,
    epsilon: float,
    queries: int,
    make_settings: Callable[[float, np.random.Generator], GrowthSettings],
    rng_structure: np.random.Generator,
) -> tuple[list[TreeArrays], float]:
    """Grow ``n_trees`` trees as :func:`tree_memberships` shares out records and budget.

    ``rows`` come through the :func:`~dpcore.models._tree.growth_map` of the settings.
    ``make_settings(budget_per_query, candidate_rng)`` gives the growth settings; the budget
    per query is the tree's share of ε divided by the queries on one root-to-leaf path.
    Returns the list of grown :class:`~dpcore.models._tree.TreeArrays` and the budget per query.
    """
    # The membership key gets its own stream, so the candidate splits drawn afterwards never depend on it.
    membership_rng, candidate_rng = rng_structure.spawn(2)
    memberships, n_roots, share = tree_memberships(keyed.new_key(membership_rng), n_trees, sampling, max_samples)
    budget_per_query = epsilon * share / queries
    settings = make_settings(budget_per_query, candidate_rng)
    return [grow(rows, membership, n_roots, settings) for membership in memberships], budget_per_query


def ensemble_leaf_values(trees: Sequence[TreeArrays], X_unit: np.ndarray) -> np.ndarray:
    """Leaf values of every tree for every record: ``(n, n_trees[, K])``."""
    return np.concatenate([t.value[t.apply(X_unit)] for t in trees], axis=1)
