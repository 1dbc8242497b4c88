"""DP partitioned regression forest (spec §3): one DP regression tree per disjoint part, averaged.

References
----------
"DPPartRegForest" as restated in ``shared/spec/algorithms.md`` §3, growing the DP regression
tree of §2 (:class:`~dpcore.models.DPRegressionTree`) on each part.
"""

from __future__ import annotations

import numpy as np

from dpcore.i18n import N_
from dpcore.mechanisms import keyed
from dpcore.models._base import NEIGHBOURS
from dpcore.models._forest import DisjointParts
from dpcore.models._tree_rows import Membership
from dpcore.models.regression_tree import _RegressionTreeBase
from dpcore.validation import Bounds, RandomStateLike, check_positive_int


class DPPartitionedForest(_RegressionTreeBase):
    r"""ε-DP partitioned regression forest: one DP tree per disjoint part, averaged.

    Parameters are those of :class:`~dpcore.models.DPRegressionTree` plus ``n_estimators``
    (τ, the number of parts); ``max_depth`` defaults to 5.

    Notes
    -----
    Privacy argument. Each record is assigned to one of ``n_estimators`` parts by an
    independent uniform draw that does not look at the data (so adding or removing a
    record changes no other record's part): a keyed draw, AES of a secret key and the
    record's stable row key (:mod:`dpcore.mechanisms.keyed`), so it is the same on every backend
    and however often the record is read. Each part grows a DP tree with the **full**
    ε, exactly as :class:`~dpcore.models.DPRegressionTree` argues. The parts are disjoint, so
    by parallel composition the forest is ε-DP; averaging the trees' predictions is
    post-processing.
    The paper shuffles and cuts into equal parts; a per-record draw gives near-equal parts
    and keeps the coupling between neighbouring datasets exact.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((5000, 3)); y = X[:, 0]
    >>> forest = DPPartitionedForest(n_estimators=5, epsilon=2.0, random_state=0).fit(X, y)
    >>> len(forest.tree_.roots)
    5
    """

    privacy_summary = NEIGHBOURS + N_(
        "Each record goes to one of n_estimators disjoint parts by a draw that never looks at the data, "
        "and each part grows a DP regression tree with the full ε (ε/(2·max_depth + 1) per split choice, count release and "
        "leaf value on a record's path). The parts are disjoint, so by parallel composition the forest is ε-DP; averaging "
        "the trees is post-processing."
    )

    def __init__(
        self,
        *,
        n_estimators: int = 25,
        epsilon: float = 1.0,
        max_depth: int = 5,
        min_samples_split: float = 20,
        min_samples_leaf: float = 10,
        n_thresholds: int = 40,
        leaf: str = "mean",
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        count_noise: str = "laplace",
        selection: str = "gumbel",
        random_state: RandomStateLike = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.n_thresholds = n_thresholds
        self.leaf = leaf
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.count_noise = count_noise
        self.selection = selection
        self.random_state = random_state

    def _membership(self, rng: np.random.Generator) -> tuple[Membership, int]:
        """Each record joins one of ``n_estimators`` parts by a keyed uniform draw; one tree grows per part."""
        n_parts = check_positive_int(self.n_estimators, "n_estimators")
        return DisjointParts(keyed.new_key(rng), n_parts), n_parts
