"""What "the same model" means in the backend tests."""

from __future__ import annotations

import pickle


def fitted_state(model) -> bytes:  # noqa: ANN001
    """Every attribute a fit sets (names ending in ``_``), pickled: equal bytes, the same model."""
    return pickle.dumps({name: value for name, value in sorted(vars(model).items()) if name.endswith("_")})
