"""Parameter checks shared by every mechanism and model.

``TypeError`` for a wrong type, ``ValueError`` for a wrong value; each message names the
parameter and its value, never a data value.
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_CEILING, Decimal
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: What ``random_state`` may be: ``None`` (operating-system entropy), a seed, or a Generator.
RandomStateLike: TypeAlias = int | np.integer[Any] | np.random.Generator | None
#: Declared bounds: a pair ``(lower, upper)`` of scalars or per-feature sequences.
Bounds: TypeAlias = tuple[ArrayLike, ArrayLike]


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking it is a finite positive number."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(epsilon).__name__}")
    value = float(epsilon)
    if math.isnan(value) or math.isinf(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number greater than 0, got {epsilon!r}")
    return value


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float in [0, 1)."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(delta).__name__}")
    value = float(delta)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {delta!r}")
    return value


def check_sensitivity(sensitivity: object, name: str = "sensitivity") -> float:
    """Return a finite, non-negative sensitivity."""
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(sensitivity).__name__}")
    value = float(sensitivity)
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {sensitivity!r}")
    return value


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def check_bounds(
    bounds: Bounds | None, n_features: int | None = None, name: str = "bounds"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return declared ``(lower, upper)`` arrays, broadcast to ``n_features``.

    ``bounds`` is a pair ``(lower, upper)`` of scalars or per-feature sequences. ``None``
    means the unit interval. Lower must be strictly below upper for every feature.
    """
    if bounds is None:
        bounds = (0.0, 1.0)
    try:
        given_lower, given_upper = bounds
        lower = np.asarray(given_lower, dtype=float)
        upper = np.asarray(given_upper, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (lower, upper) of numbers or sequences of numbers") from None
    if n_features is not None:
        try:
            lower = np.broadcast_to(lower, (n_features,)).astype(float)
            upper = np.broadcast_to(upper, (n_features,)).astype(float)
        except ValueError:
            raise ValueError(f"{name} must give one lower and one upper bound per feature ({n_features})") from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"{name} must be finite numbers")
    if np.any(lower >= upper):
        raise ValueError(f"{name}: every lower bound must be strictly below its upper bound")
    return lower, upper


def check_random_state(random_state: RandomStateLike) -> np.random.Generator:
    """Return a numpy Generator.

    ``None`` draws fresh entropy from the operating system (the only choice for a real
    release); an int or Generator gives reproducible draws, for tests and demos only.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")


def epsilon_decimal(value: float, digits: int = 9) -> Decimal:
    """An ε as a Decimal rounded *up* to ``digits`` decimals.

    The float's shortest decimal spelling is taken as meant, so 0.1 stays 0.1 and sums of
    such amounts are exact.
    """
    exact = Decimal(repr(float(value)))
    return exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_CEILING)


def round_up_epsilon(value: float, digits: int = 9) -> float:
    """Round an ε outward (up) so reported privacy loss is never understated.

    Rounding a decimal at least ``value`` to the nearest float cannot land below ``value``
    (itself a float), so the result is never smaller than the input.
    """
    return float(epsilon_decimal(value, digits))
