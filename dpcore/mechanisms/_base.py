"""What every mechanism shares: its ε, its random generator, and the call recorder.

The recorder is the hook for call-recording privacy audits (after dp-recorder): inside
``record_mechanism_calls()``, each mechanism call logs its name, ε, declared sensitivity and
the exact query values it was asked to randomise. In replay mode the outputs of an earlier
run are returned instead of fresh noise, so a model trained on a neighbouring dataset walks
the same path and the two runs' query values can be compared call by call.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms import exact
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state, check_sensitivity


@dataclass
class MechanismCall:
    """One recorded mechanism call."""

    mechanism: str
    epsilon: float
    sensitivity: float
    query: np.ndarray
    output: np.ndarray


@dataclass
class CallRecorder:
    """Collects mechanism calls; replays ``replay`` outputs in order when given."""

    replay: list[MechanismCall] | None = None
    calls: list[MechanismCall] = field(default_factory=list)

    def handle(self, mechanism: str, epsilon: float, sensitivity: float, query: ArrayLike, output: Any) -> Any:
        """Record one call; return ``output``, or the recorded run's output for this call when replaying."""
        if self.replay is not None:
            position = len(self.calls)
            if position >= len(self.replay):
                raise AssertionError("replayed run made more mechanism calls than the recorded one")
            output = self.replay[position].output
        self.calls.append(MechanismCall(mechanism, epsilon, sensitivity, np.array(query, copy=True), np.array(output, copy=True)))
        return output


_active_recorder: contextvars.ContextVar[CallRecorder | None] = contextvars.ContextVar("dpcore_recorder", default=None)


@contextlib.contextmanager
def record_mechanism_calls(replay: list[MechanismCall] | None = None) -> Iterator[CallRecorder]:
    """Record every mechanism call made inside the block (a test and audit tool)."""
    recorder = CallRecorder(replay=replay)
    token = _active_recorder.set(recorder)
    try:
        yield recorder
    finally:
        _active_recorder.reset(token)


def refuse_non_finite(values: NDArray[np.float64]) -> None:
    """Refuse ``values`` when one is missing or infinite: noise on it would protect nothing, and it would pass as released."""
    if not np.isfinite(values).all():
        raise DataError(
            _(
                "Noise can only be added to finite numbers, and some values are missing or infinite. Fill or drop "
                "them first (the Data page marks missing values), or clip them to the column's declared bounds."
            )
        )


def noised_on_grid(
    values: NDArray[np.float64], grid: float, noise: Callable[[NDArray[np.int64]], NDArray[np.int64]]
) -> NDArray[np.float64]:
    """``values`` in whole steps of ``grid`` (:func:`~dpcore.mechanisms.exact.to_grid`) plus ``noise(indices)`` steps.

    Refuses non-finite values. A few values go through Python numbers, cheaper than numpy's
    calls: ``round`` rounds half to even as ``rint`` does, and ``int·grid`` rounds as numpy's
    int64-to-float product does, so the output is the same.
    """
    if values.size > exact.FEW:
        try:
            units = exact.to_grid(values, grid)
        except ValueError:
            refuse_non_finite(values)
            raise
        return np.asarray((units + noise(np.arange(values.size)).reshape(values.shape)) * grid, dtype=np.float64)
    try:
        steps = [round(value / grid) for value in values.ravel().tolist()]
    except (ValueError, OverflowError):
        refuse_non_finite(values)
        raise
    if steps and max(map(abs, steps)) >= 2**62:
        raise ValueError("a value is too large for its noise grid, or not a finite number")
    drawn = noise(_FEW_INDICES[: values.size]).tolist()
    return np.array([(step + z) * grid for step, z in zip(steps, drawn, strict=True)]).reshape(values.shape)


_FEW_INDICES = np.arange(exact.FEW)


class Mechanism:
    """Base class: holds ε, the declared sensitivity and a numpy Generator.

    Parameters
    ----------
    epsilon : float
        Privacy parameter of one call, > 0.
    sensitivity : float
        The most the query can change when one record is added or removed.
    random_state : None, int or numpy.random.Generator
        ``None`` (the default) uses operating-system entropy; a seed is for tests only.
    """

    name = "mechanism"

    def __init__(self, epsilon: float, sensitivity: float = 1.0, random_state: RandomStateLike = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.rng = check_random_state(random_state)

    def _released(self, query: ArrayLike, output: Any) -> Any:
        # Any: a mechanism's output is an array or a numpy scalar, and a replay returns the recorded array.
        recorder = _active_recorder.get()
        if recorder is None:
            return output
        return recorder.handle(self.name, self.epsilon, self.sensitivity, query, output)
