"""Model files a buyer can open safely: skops instead of pickle.

Loading a pickle runs whatever code the file names, so a model file handed to a buyer would
be a way into the buyer's machine. :mod:`skops.io` stores the same estimator as data and, on
loading, refuses every type it was not told to trust. :func:`load_model` trusts what skops
trusts by default plus the estimators of this package, and nothing else.

A model file leaves the owner's screen, so a model fitted on a domain read from the data is
refused (:func:`~dpcore.tables.schema.check_releasable`): every caller states which of the model's
columns were (``TrainedModel.read_from_data``), none by default.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.models.subsample_aggregate import is_teacher
from dpcore.tables.schema import check_releasable

SUFFIX = ".skops"
TRUSTED_PREFIXES = ("dpcore.",)


def kept_generators(model: object) -> list[str]:
    """Where in a model's object graph a random generator (or its state) is kept, as attribute paths.

    A saved model that held its noise generator would let its holder rewind the stream and
    subtract the noise, so :func:`model_bytes` refuses such a model.
    """
    return _generators(model, type(model).__name__, set())


def _generators(obj: object, path: str, seen: set[int]) -> list[str]:
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.random.Generator | np.random.BitGenerator | np.random.RandomState | np.random.SeedSequence):
        return [path]
    if isinstance(obj, dict):
        return [g for k, v in obj.items() for g in _generators(v, f"{path}[{k!r}]", seen)]
    if isinstance(obj, list | tuple):
        return [g for i, v in enumerate(obj) for g in _generators(v, f"{path}[{i}]", seen)]
    if hasattr(obj, "__dict__") and type(obj).__module__.startswith(("dpcore", "sklearn")):
        return [g for k, v in vars(obj).items() for g in _generators(v, f"{path}.{k}", seen)]
    return []


def model_bytes(model: object, *, read_from_data: Collection[str]) -> bytes:
    """The fitted estimator as a skops file.

    ``read_from_data`` names the columns whose domain was read from the data when ``model`` was
    fitted (:attr:`dpcore.training.TrainedModel.read_from_data`); it is a required word, so no
    caller can forget to say it.

    Raises
    ------
    DataError
        If any domain was read from the data (the file would carry the data's extremes or
        values: :func:`~dpcore.tables.schema.release_refusal`), if ``model`` is a subsample-and-aggregate teacher (it answers queries at a price per
        query and keeps its blocks' models, which saw the raw rows) or keeps a random generator
        after fitting (its holder could replay the noise).
    """
    check_releasable(read_from_data)
    if is_teacher(model):
        raise DataError(
            _(
                "A subsample-and-aggregate teacher cannot be saved or released: it keeps models fitted on "
                "the raw rows and its secret noise. Release what it answered, or the student trained on "
                "its answers, instead."
            )
        )
    if kept_generators(model):
        raise DataError(
            _(
                "This model keeps its random generator after fitting, so whoever holds the file could replay "
                "its noise; it cannot be saved."
            )
        )
    import skops.io as sio  # here, not above: it imports every estimator of scikit-learn (0.5 s a process)

    return sio.dumps(model)


def save_model(model: object, path: str | Path, *, read_from_data: Collection[str]) -> Path:
    """Write ``model`` to ``path`` (``.skops`` added when missing) and return the path written; refused as :func:`model_bytes`."""
    data = model_bytes(model, read_from_data=read_from_data)
    target = Path(path)
    if target.suffix != SUFFIX:
        target = target.with_name(target.name + SUFFIX)
    target.write_bytes(data)
    return target


def load_model(source: bytes | str | Path) -> object:
    """Open a model file written by :func:`save_model`.

    Raises
    ------
    DataError
        If the file is not a skops file, or names a type that is neither skops's trusted
        defaults nor one of this package's estimators (such a file could run code).
    """
    import skops.io as sio

    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        unknown = sio.get_untrusted_types(data=data)
    except Exception as error:
        raise DataError(_("This is not a DP Studio model file (a .skops file written by DP Studio).")) from error
    foreign = [name for name in unknown if not name.startswith(TRUSTED_PREFIXES)]
    if foreign:
        raise DataError(
            _("This model file names types DP Studio does not trust, so it was not opened: {types}").format(
                types=", ".join(foreign[:5])
            )
        )
    return sio.loads(data, trusted=unknown)
