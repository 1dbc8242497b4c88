"""Model files a buyer can open safely: skops instead of pickle.

Loading a pickle runs whatever code the file names, so a model file handed to a buyer would
be a way into the buyer's machine. :mod:`skops.io` stores the same estimator as data and, on
loading, refuses every type it was not told to trust. :func:`load_model` trusts what skops
trusts by default plus the estimators of this package, and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import skops.io as sio

from dpcore.exceptions import DataError
from dpcore.i18n import _

SUFFIX = ".skops"
TRUSTED_PREFIXES = ("dpcore.",)


def model_bytes(model: object) -> bytes:
    """The fitted estimator as a skops file."""
    return sio.dumps(model)


def save_model(model: object, path: str | Path) -> Path:
    """Write ``model`` to ``path`` (``.skops`` added when missing) and return the path written."""
    target = Path(path)
    if target.suffix != SUFFIX:
        target = target.with_name(target.name + SUFFIX)
    target.write_bytes(model_bytes(model))
    return target


def load_model(source: bytes | str | Path) -> object:
    """Open a model file written by :func:`save_model`.

    Raises
    ------
    DataError
        If the file is not a skops file, or names a type that is neither skops's trusted
        defaults nor one of this package's estimators (such a file could run code).
    """
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        unknown = sio.get_untrusted_types(data=data)
    except Exception as error:
        raise DataError(_("This is not a DP Studio model file (a .skops file written by DP Studio).")) from error
    foreign = [name for name in unknown if not name.startswith(TRUSTED_PREFIXES)]
    if foreign:
        raise DataError(_("This model file names types DP Studio does not trust, so it was not opened: {types}").format(
            types=", ".join(foreign[:5])))
    return sio.loads(data, trusted=unknown)
