"""What the DP tree ensembles share: how records are shared out between trees, and voting."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dpcore.models._tree import GrowthSettings, TreeArrays, grow

SAMPLINGS = ("disjoint", "subsample")


def tree_memberships(
    rng: np.random.Generator, n_records: int, n_trees: int, sampling: str, max_samples: float
) -> tuple[np.ndarray | list[np.ndarray], float]:
    """Which records each tree sees, and the budget share each tree may spend.

    ``"disjoint"``: every record goes to one tree by an independent uniform draw; trees see
    disjoint records, so each may spend the full ε (parallel composition).
    ``"subsample"``: every tree keeps each record independently with probability
    ``max_samples`` — *without* replacement, so a record counts at most once per tree; trees
    overlap, so each spends ε / n_trees (sequential composition). Bootstrap sampling with
    replacement is deliberately not offered: a record drawn k times has k times the
    sensitivity.

    Returns ``(roots, share)``: ``roots`` is a list of per-tree arrays giving each record's
    root (0) or -1, or for disjoint sampling one array of tree indices; ``share`` the
    fraction of ε per tree.
    """
    if sampling == "disjoint":
        return rng.integers(0, n_trees, size=n_records), 1.0
    if sampling == "subsample":
        if not 0.0 < max_samples <= 1.0:
            raise ValueError(f"max_samples must be in (0, 1], got {max_samples!r}")
        # Drawn record-major, so adding a record leaves every other record's draws unchanged.
        keep = rng.random((n_records, n_trees)) < max_samples
        return [np.where(k, 0, -1) for k in keep.T], 1.0 / n_trees
    raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")


def class_probabilities(noisy_counts: np.ndarray) -> np.ndarray:
    """Normalised leaf class distributions from noisy counts (negative counts → 0; empty → uniform)."""
    clipped = np.maximum(noisy_counts, 0.0)
    totals = clipped.sum(axis=-1, keepdims=True)
    k = noisy_counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, clipped / totals, 1.0 / k)


def grow_ensemble(
    X_unit: np.ndarray, y: np.ndarray, n_trees: int, sampling: str, max_samples: float, epsilon: float, queries: int,
    make_settings: Callable[[float, np.random.Generator], GrowthSettings], rng_structure: np.random.Generator,
) -> tuple[list[TreeArrays], float]:
    """Grow ``n_trees`` trees as :func:`tree_memberships` shares out records and budget.

    ``make_settings(budget_per_query, candidate_rng)`` gives the growth settings; the budget per query is
    the tree's share of ε divided by the queries on one root-to-leaf path. Returns the list
    of grown :class:`~dpcore.models._tree.TreeArrays` and the budget per query.
    """
    # Memberships get their own stream: how many draws they take depends on the number of
    # records, and that must not shift the candidate splits drawn afterwards.
    membership_rng, candidate_rng = rng_structure.spawn(2)
    roots, share = tree_memberships(membership_rng, len(y), n_trees, sampling, max_samples)
    budget_per_query = epsilon * share / queries
    settings = make_settings(budget_per_query, candidate_rng)
    if isinstance(roots, np.ndarray):  # disjoint sampling: one array of tree indices
        return [grow(X_unit, y, roots, n_trees, settings)], budget_per_query
    return [grow(X_unit, y, r, 1, settings) for r in roots], budget_per_query


def ensemble_leaf_values(trees: Sequence[TreeArrays], X_unit: np.ndarray) -> np.ndarray:
    """Leaf values of every tree for every record: ``(n, n_trees[, K])``."""
    return np.concatenate([t.value[t.apply(X_unit)] for t in trees], axis=1)
