"""Exact samplers of discrete Laplace and discrete Gaussian noise, with integer arithmetic only.

Floating-point noise leaks: the low bits of a float Laplace or Gaussian sample depend on the
true value (Mironov 2012), and an inverse-CDF sampler cuts its tails where its uniform runs
out of bits. The samplers here follow Canonne, Kamath & Steinke (2020, "The discrete Gaussian
for differential privacy", Algorithms 1–3): every decision is a comparison of a uniform
*integer* with an integer, so the law of each draw is exactly the stated pmf, tails included.

They are vectorised: each call samples a whole array, and the loops run over *rounds* of the
rejection samplers (every pending element draws once per round), never over elements. A
round's work shrinks geometrically: a million draws take a few hundred rounds, and small
arrays from a generator run several attempts side by side to take fewer (:func:`first_accepted`).

Randomness comes from an :class:`IntegerSource`: a numpy Generator (operating-system entropy
unless a test seeds it), or :class:`KeyedIntegers`, the AES-keyed stream of a copy's rows
(:mod:`dpcore.mechanisms.keyed`), where element ``i``'s ``k``-th integer is a keyed function of
(its row key, the stream, ``k``), so a row gets the same noise however the table is cut into
chunks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from dpcore.mechanisms import keyed

#: The rounding of a query to its grid adds at most 1/GRID_STEPS of its sensitivity in grid units.
GRID_STEPS = 4096
#: Keyed words made ahead for every row (the median discrete Laplace draw takes 10, 90 % take at most 25).
KEYED_WORDS_AHEAD = 16
#: A generator's samplers run attempts side by side while fewer elements than this are pending.
SIDE_BY_SIDE_BELOW = 2048
#: Above this many grid units of σ the Gaussian's exact arithmetic would leave int64: the grid is coarsened.
MAX_SIGMA_UNITS = 2**24
_MAX_SCALE_UNITS = 2**50
_UINT64_MAX = np.uint64(2**64 - 1)

Indices = NDArray[np.int64]


class IntegerSource(Protocol):
    """Uniform integers for the elements of one sampling call."""

    def below(self, elements: Indices, high: NDArray[np.int64] | int) -> NDArray[np.int64]:
        """One uniform integer in ``[0, high)`` for each of ``elements`` (``high`` ≤ 2^62, scalar or per element)."""
        ...

    def copies(self, pending: int, most: int) -> int:
        """How many attempts (or trials) to run side by side for each of ``pending`` elements, at most ``most``."""
        ...


class GeneratorIntegers:
    """Integers from a numpy Generator (exact: numpy's bounded integers reject, they do not scale a float)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def below(self, elements: Indices, high: NDArray[np.int64] | int) -> NDArray[np.int64]:
        return self.rng.integers(0, high, size=len(elements), dtype=np.int64)

    def copies(self, pending: int, most: int) -> int:
        # Few pending elements: rounds cost more than draws, so attempts go side by side; many: one each.
        return most if pending < SIDE_BY_SIDE_BELOW else 1


class KeyedIntegers:
    """Integers from the keyed stream: element ``i`` is row ``rows[i]``, its ``k``-th draw uses counter ``k``.

    Each draw takes one 64-bit keyed word ``w`` and returns ``w mod high`` when ``w`` falls below
    the largest multiple of ``high`` under 2^64, and draws again otherwise (probability at most
    ``high / 2^64``): exactly uniform, whatever ``high``. Elements of one call are distinct
    (:meth:`copies` is 1).
    """

    def __init__(self, key: bytes, rows: NDArray[np.uint64], stream: int) -> None:
        self.key, self.rows, self.stream = key, np.asarray(rows, dtype=np.uint64), int(stream)
        self.counters = np.zeros(len(self.rows), dtype=np.uint32)
        # Each row's first words in one AES call (most rows need no more); later words one round at a time.
        self.first_words = keyed.random_words(key, self.rows, self.stream, KEYED_WORDS_AHEAD)

    def copies(self, pending: int, most: int) -> int:
        # One, never from the batch's size: a row's draws must not depend on the rows drawn with it.
        return 1

    def below(self, elements: Indices, high: NDArray[np.int64] | int) -> NDArray[np.int64]:
        highs = np.broadcast_to(np.asarray(high, dtype=np.uint64), (len(elements),))
        values = np.empty(len(elements), dtype=np.uint64)
        pending = np.arange(len(elements))
        while pending.size:
            who = elements[pending]
            counters = self.counters[who]
            self.counters[who] += np.uint32(1)
            ahead = counters < KEYED_WORDS_AHEAD
            words = np.empty(len(who), dtype=np.uint64)
            words[ahead] = self.first_words[who[ahead], counters[ahead]]
            if not ahead.all():
                words[~ahead] = keyed.words_at(self.key, self.rows[who[~ahead]], self.stream, counters[~ahead])
            h = highs[pending]
            value = words % h
            # w lies in a whole block of h words [w − w mod h, +h) iff that block ends by 2^64.
            accepted = words - value <= _UINT64_MAX - h + np.uint64(1)
            values[pending[accepted]] = value[accepted]
            pending = pending[~accepted]
        return values.astype(np.int64)


# --- Bernoulli(exp(-γ)) for rational γ (CKS20 Algorithm 1) ---------------------------------


def _bernoulli_exp_fraction(
    source: IntegerSource, elements: Indices, num: NDArray[np.int64], den: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Bernoulli(exp(−num/den)) for 0 ≤ num ≤ den: the first failing trial ``K`` of Bernoulli(γ/k), k = 1, 2, …, is odd."""
    result = np.empty(len(elements), dtype=bool)
    trial = np.ones(len(elements), dtype=np.int64)
    pending = np.arange(len(elements))
    while pending.size:
        succeeded = source.below(elements[pending], den[pending] * trial[pending]) < num[pending]
        stopped = pending[~succeeded]
        result[stopped] = trial[stopped] % 2 == 1
        pending = pending[succeeded]
        trial[pending] += 1
    return result


def bernoulli_exp(
    source: IntegerSource, elements: Indices, num: NDArray[np.int64], den: NDArray[np.int64] | int
) -> NDArray[np.bool_]:
    """Exact Bernoulli(exp(−num/den)) for each element (``num`` ≥ 0, ``den`` > 0, integers).

    ``exp(−γ) = exp(−(γ − ⌊γ⌋)) · exp(−1)^⌊γ⌋``: one draw for the fraction, then up to ⌊γ⌋
    Bernoulli(exp(−1)) draws, stopping at the first failure.
    """
    num = np.asarray(num)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    whole, part = np.divmod(num, den)
    result = _bernoulli_exp_fraction(source, elements, part.astype(np.int64), den)
    used = np.zeros(len(elements), dtype=np.int64)
    pending = np.flatnonzero(result & (whole > 0))
    ones = np.ones(len(elements), dtype=np.int64)
    while pending.size:
        survived = _bernoulli_exp_fraction(source, elements[pending], ones[pending], ones[pending])
        result[pending[~survived]] = False
        used[pending] += 1
        pending = pending[survived & (used[pending] < whole[pending])]
    return result


# --- discrete Laplace (CKS20 Algorithm 2) and discrete Gaussian (Algorithm 3) ---------------


#: Attempts made side by side for each pending draw: fewer rounds, at the price of unused randomness.
ATTEMPTS = 4
#: Bernoulli(exp(−1)) trials made side by side for the geometric part of a discrete Laplace draw.
TRIALS = 8


def first_accepted(
    source: IntegerSource, elements: Indices, attempt: Callable[[Indices], tuple[NDArray[np.int64], NDArray[np.bool_]]]
) -> NDArray[np.int64]:
    """Run a rejection sampler until each element has a draw, up to :data:`ATTEMPTS` attempts side by side.

    ``attempt(repeated)`` makes one independent attempt per entry of ``repeated`` (each element
    repeated, adjacently) and says which were accepted; an element keeps its first accepted
    attempt in order, which is what running the attempts one after another would give.
    """
    out = np.empty(len(elements), dtype=np.int64)
    pending = np.arange(len(elements))
    while pending.size:
        copies = source.copies(len(pending), ATTEMPTS)
        values, accepted = attempt(np.repeat(elements[pending], copies))
        accepted = accepted.reshape(-1, copies)
        done = accepted.any(axis=1)
        first = np.argmax(accepted, axis=1)
        out[pending[done]] = values.reshape(-1, copies)[done, first[done]]
        pending = pending[~done]
    return out


def _geometric_exp_one(source: IntegerSource, elements: Indices) -> NDArray[np.int64]:
    """The number of Bernoulli(exp(−1)) successes before the first failure, per element (``P(V ≥ v) = e^−v``)."""
    count = np.zeros(len(elements), dtype=np.int64)
    running = np.arange(len(elements))
    while running.size:
        copies = source.copies(len(running), TRIALS)
        repeated = np.repeat(elements[running], copies)
        ones = np.ones(len(repeated), dtype=np.int64)
        trials = _bernoulli_exp_fraction(source, repeated, ones, ones).reshape(-1, copies)
        leading = np.where(trials.all(axis=1), copies, np.argmin(trials, axis=1))
        count[running] += leading
        running = running[leading == copies]
    return count


def discrete_laplace(source: IntegerSource, elements: Indices, scale: Fraction) -> NDArray[np.int64]:
    """One draw of the discrete Laplace law ``P(x) ∝ exp(−|x| / scale)`` on the integers per element.

    ``scale = t/s``: ``X = U + t·V`` with ``U`` uniform on ``[0, t)`` kept with probability
    ``exp(−U/t)`` and ``V`` geometric (Bernoulli(exp(−1)) successes) is geometric with
    ``P(X = x) ∝ exp(−x/t)``; ``⌊X/s⌋`` then has parameter ``exp(−s/t)``, and a random sign with
    the double zero rejected makes it two-sided.
    """
    t, s = scale.numerator, scale.denominator
    if not 0 < t <= _MAX_SCALE_UNITS or s > _MAX_SCALE_UNITS:
        raise ValueError(f"discrete Laplace scale out of range: {float(scale)!r}")

    def attempt(repeated: Indices) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        uniform = source.below(repeated, t)
        kept = bernoulli_exp(source, repeated, uniform, t)
        magnitude = (uniform + t * _geometric_exp_one(source, repeated)) // s
        negative = source.below(repeated, 2) == 1
        return np.where(negative, -magnitude, magnitude), kept & ~(negative & (magnitude == 0))

    return first_accepted(source, elements, attempt)


def discrete_gaussian(source: IntegerSource, elements: Indices, t: int, m: int) -> NDArray[np.int64]:
    """One draw of the discrete Gaussian ``P(x) ∝ exp(−x² / (2σ²))`` with ``σ² = t·m`` per element.

    Rejection from discrete Laplace of scale ``t`` (CKS20 Algorithm 3): a draw ``Y`` is kept
    with probability ``exp(−(|Y| − σ²/t)² / (2σ²)) = exp(−(|Y| − m)² / (2tm))``; any ``t`` > 0
    gives the exact law, and ``t ≈ σ`` keeps most draws. With ``σ² = t·m`` every quantity is an
    integer.
    """
    den = 2 * t * m

    def attempt(repeated: Indices) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        draw = discrete_laplace(source, repeated, Fraction(t))
        distance = np.abs(np.abs(draw) - m)
        safe = distance < 2**31
        kept = np.zeros(len(repeated), dtype=bool)
        kept[safe] = bernoulli_exp(source, repeated[safe], distance[safe] ** 2, den)
        if not safe.all():  # 2^31 units out (probability about e^-64): the square on Python integers
            squares = [int(d) ** 2 for d in distance[~safe]]
            # exp(-whole) for whole >= 2^62 is cut there: every one of 2^62 trials would have to succeed first.
            whole = np.array([min(q // den, 2**62) for q in squares], dtype=np.int64)
            part = np.array([q % den for q in squares], dtype=np.int64)
            far = repeated[~safe]
            fraction = _bernoulli_exp_fraction(source, far, part, np.full(len(part), den))
            kept[~safe] = fraction & bernoulli_exp(source, far, whole, 1)
        return draw, kept

    return first_accepted(source, elements, attempt)


# --- grids --------------------------------------------------------------------------------


def power_of_two_below(value: float) -> float:
    """The largest power of two ≤ ``value`` (> 0)."""
    mantissa, exponent = math.frexp(value)
    return math.ldexp(1.0, exponent - 1)


def to_grid(values: NDArray[np.float64], grid: float) -> NDArray[np.int64]:
    """``⌊values/grid + ½⌋``: monotone, so two values ``d`` grid steps apart land fewer than ``d + 1`` steps apart."""
    units = np.floor(values / grid + 0.5)
    if units.size and np.abs(units).max() >= 2**62:
        raise ValueError("a value is too large for its noise grid")
    return units.astype(np.int64)


@functools.lru_cache(maxsize=1024)
def laplace_plan(sensitivity: float, scale: float, size: int) -> tuple[float, Fraction]:
    """The grid and the discrete Laplace scale (in grid units) for an L1-``sensitivity`` query of ``size`` values.

    The grid is the largest power of two ≤ sensitivity / (4096·size). Rounding each value to it
    moves an L1 distance of Δ by less than one step per value, so the rounded query has L1
    sensitivity below ``Δ/grid + size`` steps, at most 1/4096 more than Δ; the noise scale in
    steps is that times ``scale/Δ`` (ε⁻¹), rounded up to a whole number.
    """
    grid = power_of_two_below(sensitivity / (GRID_STEPS * max(size, 1)))
    steps = Fraction(sensitivity) / Fraction(grid) + max(size, 1)
    # Δ/ε computed in floats can land one unit in the last place below the true scale: the next float up never does.
    return grid, Fraction(math.ceil(steps * Fraction(math.nextafter(scale, math.inf)) / Fraction(sensitivity)))


@functools.lru_cache(maxsize=1024)
def gaussian_plan(sensitivity: float, sigma: float, size: int) -> tuple[float, int, int]:
    """The grid and the discrete Gaussian's ``(t, m)`` (``σ² = t·m`` grid units²) for an L2-``sensitivity`` query.

    The grid is the largest power of two ≤ Δ₂/(4096·√size), or ≥ σ/2^24 when that is coarser
    (the exact arithmetic's range). Rounding moves an L2 distance by less than √size steps, so
    the rounded query's L2 sensitivity is below ``Δ₂/grid + ⌈√size⌉`` steps, and σ in steps is
    scaled from σ/Δ₂ and rounded up: the discrete Gaussian has the same zCDP bound
    ``ρ = Δ²/(2σ²)`` as the continuous one (CKS20, Theorem 14).
    """
    root = math.isqrt(max(size, 1) - 1) + 1  # ⌈√size⌉
    grid = power_of_two_below(max(sensitivity / (GRID_STEPS * root), sigma / MAX_SIGMA_UNITS))
    steps = Fraction(sensitivity) / Fraction(grid) + root
    variance = (steps * Fraction(sigma) / Fraction(sensitivity)) ** 2
    t = math.isqrt(math.floor(variance)) + 1
    m = math.ceil(variance / t)
    return grid, t, m


class NoisePool:
    """Draws made ahead, in batches, for a mechanism called many times on small arrays (DP-SGD's steps, a tree's levels).

    The noise of one law is i.i.d. and independent of every query, so drawing it before the
    queries are known changes nothing in the output's law; batching only amortises the
    rounds of the vectorised samplers. A batch doubles (from 1024 to 2^20 draws) each time
    a law's pool runs dry after its first call.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.source = GeneratorIntegers(rng)
        self._pools: dict[tuple[object, ...], tuple[NDArray[np.int64], int]] = {}

    def laplace(self, scale: Fraction, n: int) -> NDArray[np.int64]:
        return self._take(("laplace", scale), n, lambda k: discrete_laplace(self.source, np.arange(k), scale))

    def gaussian(self, t: int, m: int, n: int) -> NDArray[np.int64]:
        return self._take(("gaussian", t, m), n, lambda k: discrete_gaussian(self.source, np.arange(k), t, m))

    def _take(self, law: tuple[object, ...], n: int, sample: Callable[[int], NDArray[np.int64]]) -> NDArray[np.int64]:
        pool, batch = self._pools.get(law, (np.empty(0, dtype=np.int64), 0))
        if len(pool) < n:
            # The first call draws what it needs (many mechanisms are called once); later ones draw ahead.
            pool = np.concatenate([pool, sample(max(batch, n - len(pool)))])
            batch = min(max(2 * batch, 1024), 2**20)
        self._pools[law] = (pool[n:], batch)
        return pool[:n]
