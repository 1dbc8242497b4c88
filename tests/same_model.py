"""What "the same model" means when a fit is compared across backends, batchings or code paths."""

from __future__ import annotations

import pickle

#: Private sizes a fit sets besides its public ``…_`` attributes (boosting's rounds, depth and clip).
PRIVATE_SIZES = ("_rounds", "_depth", "_clip")


def fitted_state(model) -> bytes:  # noqa: ANN001
    """Every attribute a fit sets (names ending in ``_``, and the private sizes), pickled: equal bytes, the same model."""
    names = sorted(n for n in vars(model) if n.endswith("_") or n in PRIVATE_SIZES)
    return pickle.dumps({n: getattr(model, n) for n in names})
