"""Exact samplers of discrete Laplace and discrete Gaussian noise: the drawn law is exactly the stated pmf.

Floating-point noise leaks: the low bits of a float Laplace or Gaussian sample depend on the
true value (Mironov 2012), and an inverse-CDF sampler cuts its tails where its uniform runs
out of bits. The samplers here decide every draw exactly, as comparisons of a uniform real
``S`` with a real threshold, in the manner of Canonne, Kamath & Steinke (2020, "The discrete
Gaussian for differential privacy", Algorithm 3 for the Gaussian):

* ``S`` is a lazy uniform: its first 63 bits are one random word, further words are drawn only
  when a comparison needs them, so every value of ``S`` has its exact probability.
* A threshold (``exp(−x)`` for a rational ``x``, or a ratio of two such) is first compared in
  float64, and that answer is kept only when ``S`` is farther from the float threshold than
  :data:`FLOAT_MARGIN` times its size (2^-44: about 250 times numpy's worst error for the few
  operations involved, each within a few units in the last place, 2^-52). Otherwise (about one
  draw in 2^18 at the largest scales) the threshold is bracketed with integer arithmetic at
  growing precision until the comparison is decided (:func:`exp_neg_bracket`). Either way the
  answer is the exact comparison's, so the law is exactly the pmf, tails included.

Discrete Laplace: a random sign and a geometric magnitude, the draw (−, 0) rejected (CKS20,
Algorithm 2's last step), or below scale 64, where that rejection is frequent, the difference
of two geometrics. The geometric of ratio ``a = exp(−1/b)`` is drawn by inversion,
``⌊−b·ln S⌋``, split into independent base-2^24 digits when ``b`` > 2^24 so that each digit's
float inversion keeps 2^-44 to spare (:func:`geometric_digits`). Discrete Gaussian: discrete
Laplace proposals of scale ``t`` kept with probability ``exp(−(|Y| − m)²/(2tm))`` (CKS20,
Algorithm 3 with ``σ² = t·m``). A draw takes one word per digit (one up to scale 2^24), and a
call a fixed handful of numpy operations however few its values (up to :data:`FEW` values, a
loop on Python numbers that makes the same decisions), so a mechanism's small calls stay cheap.

The smooth-sensitivity median needs the rounding ``round(b·Z)`` of a continuous noise, each
element with its own scale: :func:`rounded_laplace` (certified inversion of ``|Z| = −ln S``) and
:func:`rounded_heavy_tailed` (exact rejection, for ``Z ∝ 1/(1 + |z|^γ)``) draw exactly that law.

Randomness comes from a :class:`WordSource`: a numpy Generator's raw 64-bit words
(operating-system entropy unless a test seeds it), or :class:`KeyedWords`, the AES-keyed
stream of a copy's rows (:mod:`dpcore.mechanisms.keyed`), where element ``i``'s ``k``-th word
is a keyed function of (its row key, the stream, ``k``), so a row gets the same noise however
the table is cut into chunks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from dpcore.mechanisms import keyed

#: The rounding of a query to its grid adds at most 1/GRID_STEPS of its sensitivity in grid units.
GRID_STEPS = 4096
#: Keyed words made ahead for every row: one AES block, what a discrete Laplace draw up to scale 2^24 takes.
KEYED_WORDS_AHEAD = 2
#: A generator's samplers run attempts side by side while fewer elements than this are pending.
SIDE_BY_SIDE_BELOW = 256
#: Attempts made side by side for each pending draw when rejections are likely: fewer rounds, unused words.
ATTEMPTS = 3
#: Below this scale a discrete Laplace draw is a difference of two geometrics; above, a sign and one (rejecting −0).
SIGNED_FROM = 64
#: Calls with at most this many draws run one draw after another on Python numbers.
FEW = 32
#: Above this many grid units of σ the Gaussian's exact arithmetic would leave int64: the grid is coarsened.
MAX_SIGMA_UNITS = 2**24
#: A float comparison is trusted only this far (relative) from its threshold; else the exact one decides.
FLOAT_MARGIN = 2.0**-44
#: A geometric digit's float inversion is kept within this many units (its scale, or its range).
DIGIT_REACH = 2**24
_MAX_SCALE_UNITS = 2**50
_LOW_63 = np.uint64(2**63 - 1)
_LOW_63_INT = 2**63 - 1

Indices = NDArray[np.int64]


class WordSource(Protocol):
    """Uniform 64-bit words for the elements of one sampling call."""

    def words(self, elements: Indices, count: int) -> NDArray[np.uint64]:
        """``(len(elements), count)`` fresh uniform words, row ``i`` for element ``elements[i]``."""
        ...

    def copies(self, pending: int, most: int) -> int:
        """How many attempts to run side by side for each of ``pending`` elements, at most ``most``."""
        ...


class GeneratorWords:
    """Words from a numpy Generator's bit generator (its raw 64-bit outputs, uniform by construction)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.raw = rng.bit_generator.random_raw

    def words(self, elements: Indices, count: int) -> NDArray[np.uint64]:
        return self.raw(len(elements) * count).reshape(len(elements), count)

    def copies(self, pending: int, most: int) -> int:
        # Few pending elements: rounds cost more than words, so attempts go side by side; many: one each.
        return most if pending < SIDE_BY_SIDE_BELOW else 1


class KeyedWords:
    """Words from the keyed stream: element ``i`` is row ``rows[i]``, its ``k``-th word is the row's word ``k``.

    Elements of one call are distinct (:meth:`copies` is 1), and a row's words are used in an
    order that depends on its own words only, so its draws do not depend on the rows drawn with it.
    """

    def __init__(self, key: bytes, rows: NDArray[np.uint64], stream: int) -> None:
        self.key, self.rows, self.stream = key, np.asarray(rows, dtype=np.uint64), int(stream)
        self.counters = np.zeros(len(self.rows), dtype=np.uint32)
        # Each row's first words in one AES call (most rows need no more); later words as they are asked for.
        self.first_words = keyed.random_words(key, self.rows, self.stream, KEYED_WORDS_AHEAD)

    def copies(self, pending: int, most: int) -> int:
        # One, never from the batch's size: a row's draws must not depend on the rows drawn with it.
        return 1

    def words(self, elements: Indices, count: int) -> NDArray[np.uint64]:
        counters = (self.counters[elements][:, None] + np.arange(count, dtype=np.uint32)).astype(np.uint32, copy=False)
        self.counters[elements] += np.uint32(count)
        who = np.broadcast_to(elements[:, None], counters.shape)
        ahead = counters < KEYED_WORDS_AHEAD
        if ahead.all():
            return self.first_words[who, counters]
        out = np.empty(counters.shape, dtype=np.uint64)
        out[ahead] = self.first_words[who[ahead], counters[ahead]]
        out[~ahead] = keyed.words_at(self.key, self.rows[who[~ahead]], self.stream, counters[~ahead])
        return out


# --- exact comparisons ----------------------------------------------------------------------


@functools.lru_cache(maxsize=256)  # a bounded digit's search brackets the same exp(−size·rate) each step
def exp_neg_bracket(x: Fraction, bits: int) -> tuple[int, int]:
    """Integers ``lo ≤ 2^bits·exp(−x) ≤ hi`` with ``hi − lo`` a few units, for a rational ``x`` ≥ 0.

    ``exp(−x) = exp(−x/2^h)^(2^h)`` with ``x/2^h ≤ 1``; for ``y ≤ 1`` the series of ``exp(−y)``
    alternates with shrinking terms, so its partial sums bracket it. Every product is rounded
    outwards, with ``h + 24`` guard bits for the squarings.
    """
    if x <= 0:
        return 1 << bits, 1 << bits
    if x > bits + 1:  # exp(−x) < 2^-bits
        return 0, 1
    halvings = max(0, x.numerator.bit_length() - x.denominator.bit_length() + 1)
    precision = bits + halvings + 24
    y = x / (1 << halvings)
    numerator, denominator = y.numerator, y.denominator
    lo = hi = term_lo = term_hi = 1 << precision
    k = 0
    while term_hi > 1:
        k += 1
        term_lo = term_lo * numerator // (denominator * k)
        term_hi = -(-term_hi * numerator // (denominator * k))
        if k % 2:
            lo, hi = lo - term_hi, hi - term_lo
        else:
            lo, hi = lo + term_lo, hi + term_hi
    lo, hi = lo - 1, hi + 1  # the series' remainder is below its last term, at most one unit
    for _ in range(halvings):
        lo, hi = (lo * lo) >> precision, -(-(hi * hi) >> precision)
    shift = precision - bits
    return max(lo >> shift, 0), -(-hi >> shift)


class LazyUniform:
    """A uniform real ``S`` in [0, 1) of which the first 63 bits are known; more are drawn from the source as needed."""

    def __init__(self, source: WordSource, element: int, top: int) -> None:
        self.source, self.element, self.value, self.bits = source, element, top, 63

    def below(self, threshold: Callable[[int], tuple[int, int]]) -> bool:
        """``S < θ``, where ``threshold(p)`` brackets ``2^p·θ`` by integers: exact, with more bits of ``S`` until decided."""
        while True:
            precision = self.bits + 8
            lo, hi = threshold(precision)
            # S lies in [value, value + 1)·2^-bits.
            if (self.value + 1) << precision <= lo << self.bits:
                return True
            if self.value << precision >= hi << self.bits:
                return False
            self.refine()

    def refine(self) -> None:
        """Draw 64 more bits of ``S``."""
        word = int(self.source.words(np.array([self.element], dtype=np.int64), 1)[0, 0])
        self.value, self.bits = (self.value << 64) | word, self.bits + 64


def _ratio_bracket(numerator: tuple[int, int], denominator: tuple[int, int], one: int, bits: int) -> tuple[int, int]:
    """Bracket ``2^bits·(1 − a)/(1 − c)`` from brackets of ``one·a`` and ``one·c`` (0 ≤ a ≤ c < 1)."""
    (a_lo, a_hi), (c_lo, c_hi) = numerator, denominator
    return ((one - a_hi) << bits) // (one - c_lo), -(-((one - a_lo) << bits) // (one - c_hi))


def _search_largest(at_least: Callable[[int], bool], low: float, high: float) -> int:
    """The largest ``d`` ≥ 0 with ``at_least(d)`` (true at 0, monotone), searched from the float guess [low, high]."""
    lo = int(low) if math.isfinite(low) and low > 0 else 0
    if not at_least(lo):
        lo = 0
    hi = int(high) + 1 if math.isfinite(high) and high + 1 > lo else lo + 1
    while at_least(hi):  # the guess was short: gallop
        lo, hi = hi, 2 * hi + 1
    while hi - lo > 1:
        middle = (lo + hi) // 2
        if at_least(middle):
            lo = middle
        else:
            hi = middle
    return lo


# --- geometric digits, discrete Laplace and discrete Gaussian ---------------------------------


@dataclass(frozen=True)
class Digit:
    """One digit ``D`` of a geometric draw: ``P(D = d) ∝ exp(−d·rate)`` on ``[0, size)`` (or all d ≥ 0 if no size)."""

    weight: int
    size: int | None
    rate: Fraction
    rate_float: float
    #: ``1 − exp(−size·rate)``: the inverse CDF of a bounded digit is ``−log1p(−S·spread)/rate``.
    spread: float
    #: What the float inversion's error is measured against: its scale ``1/rate``, or its range.
    reach: float

    def at_least(self, uniform: LazyUniform, d: int) -> bool:
        """``D ≥ d`` for the digit drawn by inversion at ``uniform``, decided exactly."""
        if d <= 0:
            return True
        if self.size is None:  # P(D ≥ d) = exp(−d·rate): D ≥ d iff S < exp(−d·rate)
            return uniform.below(lambda bits: exp_neg_bracket(d * self.rate, bits))
        if d >= self.size:
            return False
        size = self.size

        def threshold(bits: int) -> tuple[int, int]:  # D ≥ d iff S ≥ (1 − exp(−d·rate)) / (1 − exp(−size·rate))
            guard = bits + 64
            return _ratio_bracket(
                exp_neg_bracket(d * self.rate, guard), exp_neg_bracket(size * self.rate, guard), 1 << guard, bits
            )

        return not uniform.below(threshold)


@functools.lru_cache(maxsize=1024)
def geometric_digits(scale: Fraction) -> tuple[Digit, ...]:
    """The digits of a geometric ``G`` with ``P(G = g) ∝ exp(−g/scale)``, lowest first: ``G = Σ weight·D``.

    With ``B = 2^24``, digit ``j < J`` has weight ``B^j`` and ``P(D = d) ∝ exp(−d·B^j/scale)`` on
    ``[0, B)``, and the top one has weight ``B^J`` and is geometric of ratio ``exp(−B^J/scale)``:
    the mixed-radix expansion of ``g`` is a bijection and ``exp(−g/scale)`` factorises over the
    digits, so independent digits give exactly ``G``'s law. ``J`` is the fewest that leave the
    top digit a scale of at most ``B``, so every digit's float inversion spans at most about
    ``44·B`` units, and a bounded digit's ``size·rate`` is below 1.
    """
    if not 0 < scale <= _MAX_SCALE_UNITS or scale.denominator > _MAX_SCALE_UNITS:
        raise ValueError(f"discrete Laplace scale out of range: {float(scale)!r}")
    levels = 0
    while scale > Fraction(DIGIT_REACH) ** (levels + 1):
        levels += 1
    digits = []
    for level in range(levels + 1):
        weight = DIGIT_REACH**level
        rate = weight / scale
        if level < levels:
            digits.append(
                Digit(weight, DIGIT_REACH, rate, float(rate), -math.expm1(-float(rate * DIGIT_REACH)), float(DIGIT_REACH))
            )
        else:
            digits.append(Digit(weight, None, rate, float(rate), 1.0, float(1 / rate)))
    return tuple(digits)


def _digit_draws(source: WordSource, who: Indices, digit: Digit, top: NDArray[np.uint64]) -> NDArray[np.int64]:
    """One draw of ``digit`` per element by inversion at ``S = top·2^-63 + …``: float where it is sure, else exact."""
    top_float = top.astype(np.float64)
    uniform = top_float * 2.0**-63
    with np.errstate(divide="ignore", invalid="ignore"):
        if digit.size is None:
            # D = ⌊−ln S / rate⌋; S's unknown bits below 2^-63 move it by at most reach/top.
            position = np.log(uniform)
            position *= -1 / digit.rate_float
            margin = np.divide(digit.reach, top_float, out=top_float)
            margin += FLOAT_MARGIN * digit.reach
        else:
            position = np.log1p(np.multiply(uniform, -digit.spread, out=uniform))
            position *= -1 / digit.rate_float
            margin = np.full_like(position, FLOAT_MARGIN * digit.reach)
        margin += FLOAT_MARGIN * position
        low = np.floor(position - margin)
        high = np.floor(np.add(position, margin, out=position))
        unsure = np.flatnonzero(high != low)  # NaN too: S is 0 to 63 bits
    exact_draws = [
        _search_largest(functools.partial(digit.at_least, LazyUniform(source, int(who[i]), int(top[i]))), low[i], high[i])
        for i in unsure
    ]
    low[unsure] = exact_draws
    return low.astype(np.int64)


def _digit_draw(source: WordSource, element: int, digit: Digit, top: int) -> int:
    """:func:`_digit_draws` for one element, on Python floats (the same decisions, so the same draw)."""
    uniform = top * 2.0**-63
    if digit.size is None:
        position = -math.log(uniform) / digit.rate_float if top else math.inf
        margin = FLOAT_MARGIN * (position + digit.reach) + (digit.reach / top if top else math.inf)
    else:
        position = -math.log1p(-uniform * digit.spread) / digit.rate_float
        margin = FLOAT_MARGIN * (position + digit.reach)
    low, high = position - margin, position + margin
    if math.isfinite(low) and math.isfinite(high) and math.floor(low) == math.floor(high):
        return math.floor(low)
    at_least = functools.partial(digit.at_least, LazyUniform(source, element, top))
    return _search_largest(at_least, math.floor(low) if math.isfinite(low) else low, high)


def first_accepted(
    source: WordSource,
    elements: Indices,
    attempt: Callable[[Indices], tuple[NDArray[np.int64], NDArray[np.bool_]]],
    most: int,
) -> NDArray[np.int64]:
    """Run a rejection sampler until each element has a draw, up to ``most`` attempts side by side.

    ``attempt(repeated)`` makes one independent attempt per entry of ``repeated`` (each element
    repeated, adjacently) and says which were accepted; an element keeps its first accepted
    attempt in order, which is what running the attempts one after another would give.
    """
    out = np.empty(len(elements), dtype=np.int64)
    pending = np.arange(len(elements))
    if source.copies(len(pending), most) == 1:  # many draws: a first round of one attempt each, most often the last
        values, accepted = attempt(elements)
        if accepted.all():
            return values
        out[accepted] = values[accepted]
        pending = pending[~accepted]
    while pending.size:
        copies = source.copies(len(pending), most)
        values, accepted = attempt(np.repeat(elements[pending], copies) if copies > 1 else elements[pending])
        if copies == 1:
            out[pending[accepted]] = values[accepted]
            pending = pending[~accepted]
            continue
        accepted = accepted.reshape(-1, copies)
        done = accepted.any(axis=1)
        first = np.argmax(accepted, axis=1)
        out[pending[done]] = values.reshape(-1, copies)[done, first[done]]
        pending = pending[~done]
    return out


def _geometric_draws(source: WordSource, who: Indices, digits: tuple[Digit, ...], words: NDArray[np.uint64]) -> NDArray[np.int64]:
    """One geometric ``P(G = g) ∝ exp(−g/scale)`` per element, digit ``j`` from the low 63 bits of ``words[:, j]``."""
    draws: NDArray[np.int64] | None = None
    for column, digit in enumerate(digits):
        digit_draws = _digit_draws(source, who, digit, words[:, column] & _LOW_63)
        if digit.weight > 1:
            digit_draws *= digit.weight
        draws = digit_draws if draws is None else draws + digit_draws
    assert draws is not None
    return draws


def _geometric_draw(source: WordSource, element: int, digits: tuple[Digit, ...], words: list[int]) -> int:
    """:func:`_geometric_draws` for one element on Python numbers (the same decisions, so the same draw)."""
    draw = _digit_draw(source, element, digits[0], words[0] & _LOW_63_INT)
    for column in range(1, len(digits)):
        draw += digits[column].weight * _digit_draw(source, element, digits[column], words[column] & _LOW_63_INT)
    return draw


def _signed_draws(
    source: WordSource, who: Indices, digits: tuple[Digit, ...], words: NDArray[np.uint64]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Discrete Laplace attempts from ``words[:, :len(digits)]``: a sign (top bit of the first) and a geometric magnitude.

    Returns the signed draws and which are kept: the pair (negative, 0) is rejected, which
    leaves ``P(x) ∝ exp(−|x|/scale)`` (CKS20, Algorithm 2's last step).
    """
    draws = _geometric_draws(source, who, digits, words)
    negative = words[:, 0] > _LOW_63
    kept = ~(negative & (draws == 0))
    return np.negative(draws, out=draws, where=negative), kept


def _signed_draw(source: WordSource, element: int, digits: tuple[Digit, ...], words: list[int]) -> int | None:
    """:func:`_signed_draws` for one element on Python numbers: its draw, or None if rejected."""
    magnitude = _geometric_draw(source, element, digits, words)
    if words[0] >> 63:
        return -magnitude if magnitude else None
    return magnitude


def _few_draws(
    source: WordSource, elements: Indices, width: int, draw: Callable[[int, list[int]], int | None], most: int
) -> NDArray[np.int64]:
    """A rejection sampler for a few elements, one after another: ``draw(element, words)`` is one attempt (None: rejected).

    Every round draws the words of up to ``most`` attempts for each pending element in one
    call (:meth:`WordSource.copies`: one for keyed words, whose rows use them as in the
    vectorised samplers, so keyed draws do not depend on the path).
    """
    out = [0] * len(elements)
    rows = elements.tolist()
    pending = list(range(len(rows)))
    while pending:
        copies = source.copies(len(pending), most)
        rejected = []
        words = source.words(elements if len(pending) == len(rows) else elements[pending], width * copies).tolist()
        for i, row_words in zip(pending, words, strict=True):
            for copy in range(copies):
                value = draw(rows[i], row_words[copy * width : (copy + 1) * width])
                if value is not None:
                    out[i] = value
                    break
            else:
                rejected.append(i)
        pending = rejected
    return np.array(out, dtype=np.int64)


def discrete_laplace(source: WordSource, elements: Indices, scale: Fraction) -> NDArray[np.int64]:
    """One draw of the discrete Laplace law ``P(x) ∝ exp(−|x| / scale)`` on the integers per element.

    A sign and a geometric magnitude ``P(G = g) ∝ exp(−g/scale)`` (:func:`geometric_digits`),
    one word per digit; the pair (negative, 0) is rejected and drawn again (CKS20, Algorithm 2).
    Below scale :data:`SIGNED_FROM`, where that rejection is frequent, the difference of two
    independent geometrics instead (two words per digit, no rejection).
    """
    digits = geometric_digits(scale)
    width = len(digits)
    if scale < SIGNED_FROM:
        return _geometric_differences(source, elements, digits)
    if len(elements) <= FEW:
        return _few_draws(source, elements, width, lambda element, words: _signed_draw(source, element, digits, words), 1)

    def attempt(repeated: Indices) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        return _signed_draws(source, repeated, digits, source.words(repeated, width))

    return first_accepted(source, elements, attempt, 1)


def _geometric_differences(source: WordSource, elements: Indices, digits: tuple[Digit, ...]) -> NDArray[np.int64]:
    """Discrete Laplace as ``G₁ − G₂``, two independent geometrics of ratio ``a``: ``P(k) = (1−a)/(1+a)·a^|k|``, no rejection."""
    width = len(digits)
    if len(elements) <= FEW:

        def difference(element: int, words: list[int]) -> int:
            return _geometric_draw(source, element, digits, words[:width]) - _geometric_draw(
                source, element, digits, words[width:]
            )

        return _few_draws(source, elements, 2 * width, difference, 1)
    words = source.words(elements, 2 * width)
    return _geometric_draws(source, elements, digits, words[:, :width]) - _geometric_draws(
        source, elements, digits, words[:, width:]
    )


def _below_exp_neg_one(source: WordSource, element: int, top: int, distance: int, den: int) -> bool:
    """:func:`_below_exp_neg` for one element, on Python floats (the same decisions)."""
    exponent = distance * distance / den
    threshold = math.exp(-exponent)
    uniform = top * 2.0**-63
    if abs(uniform - threshold) > FLOAT_MARGIN * (threshold * (exponent + 1) + 2.0**-16):
        return uniform < threshold
    square = Fraction(distance * distance, den)
    return LazyUniform(source, element, top).below(functools.partial(exp_neg_bracket, square))


def _below_exp_neg(
    source: WordSource, who: Indices, top: NDArray[np.uint64], distance: NDArray[np.int64], den: int
) -> NDArray[np.bool_]:
    """``S < exp(−distance²/den)`` per element, ``S = top·2^-63 + …``: float where it is sure, else exact."""
    exponent = distance.astype(np.float64) ** 2 / den
    threshold = np.exp(-exponent)
    uniform = top.astype(np.float64) * 2.0**-63
    # The threshold's float error is a few units of e·(x + 1) in 2^-52; S's unknown bits add under 2^-63.
    margin = FLOAT_MARGIN * (threshold * (exponent + 1) + 2.0**-16)
    below = uniform < threshold
    for i in np.flatnonzero(np.abs(uniform - threshold) <= margin):
        square = Fraction(int(distance[i]) ** 2, den)
        below[i] = LazyUniform(source, int(who[i]), int(top[i])).below(functools.partial(exp_neg_bracket, square))
    return below


def bernoulli_exp_neg(source: WordSource, exponents: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Exactly Bernoulli(exp(−x)) for each float ``x`` ≥ 0 (each an exact dyadic rational; ``inf`` gives False).

    A uniform ``S`` of 63 known bits is compared with ``exp(−x)`` in float64 where a
    :data:`FLOAT_MARGIN` proves the answer, and otherwise with integer brackets of ``exp(−x)``
    (:func:`exp_neg_bracket`) and as many more bits of ``S`` as it takes: the law is exactly
    Bernoulli(exp(−x)), as the exponential mechanism's exact sampler needs.
    """
    exponents = np.asarray(exponents, dtype=np.float64).ravel()
    top = source.words(np.arange(exponents.size, dtype=np.int64), 1)[:, 0] & _LOW_63
    with np.errstate(invalid="ignore", under="ignore"):
        threshold = np.exp(-exponents)  # exp(−inf) is 0: never below
        gap = top.astype(np.float64) * 2.0**-63 - threshold
        margin = FLOAT_MARGIN * (threshold * (exponents + 1) + 2.0**-16)  # NaN at inf: no doubt there
    below = gap < 0
    for i in np.flatnonzero(np.abs(gap) <= margin):
        bracket = functools.partial(exp_neg_bracket, Fraction(float(exponents[i])))
        below[i] = LazyUniform(source, int(i), int(top[i])).below(bracket)
    return below


def bernoulli_exp_neg_one(raw: Callable[[], int], exponent: float, source: WordSource) -> bool:
    """:func:`bernoulli_exp_neg` for one exponent on Python numbers (the same decision), ``raw()`` a 64-bit word."""
    if exponent == math.inf:
        return False
    top = raw() & _LOW_63_INT
    threshold = math.exp(-exponent)
    gap = top * 2.0**-63 - threshold
    if abs(gap) > FLOAT_MARGIN * (threshold * (exponent + 1) + 2.0**-16):
        return gap < 0
    return LazyUniform(source, 0, top).below(functools.partial(exp_neg_bracket, Fraction(exponent)))


def discrete_gaussian(source: WordSource, elements: Indices, t: int, m: int) -> NDArray[np.int64]:
    """One draw of the discrete Gaussian ``P(x) ∝ exp(−x² / (2σ²))`` with ``σ² = t·m`` per element.

    Rejection from discrete Laplace of scale ``t`` (CKS20 Algorithm 3): an attempt draws a
    discrete Laplace ``Y`` and keeps it with probability ``exp(−(|Y| − σ²/t)² / (2σ²)) =
    exp(−(|Y| − m)² / (2tm))``, decided by one more lazy uniform; an attempt whose ``Y`` is the
    rejected (negative, 0) is dropped whole, which leaves ``Y``'s law as it is. Any ``t`` > 0
    gives the exact law, and ``t ≈ σ`` keeps most attempts. Each attempt takes one word per
    digit and one for the decision.
    """
    digits = geometric_digits(Fraction(t))
    width, den = len(digits), 2 * t * m

    def one(element: int, words: list[int]) -> int | None:
        draw = _signed_draw(source, element, digits, words)
        # Decided even for a rejected draw (as 0), as the vectorised path does: a keyed row uses its words alike.
        kept = _below_exp_neg_one(source, element, words[width] & _LOW_63_INT, abs(abs(draw or 0) - m), den)
        return draw if kept and draw is not None else None

    if len(elements) <= FEW:
        return _few_draws(source, elements, width + 1, one, 2)

    def attempt(repeated: Indices) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        words = source.words(repeated, width + 1)
        draws, kept = _signed_draws(source, repeated, digits, words)
        kept &= _below_exp_neg(source, repeated, words[:, width] & _LOW_63, np.abs(np.abs(draws) - m), den)
        return draws, kept

    return first_accepted(source, elements, attempt, ATTEMPTS)


#: :func:`rounded_heavy_tailed` keeps its float acceptance only this far (absolute) from the boundary.
HEAVY_TAILED_MARGIN = 2.0**-40
#: Attempts of :func:`rounded_heavy_tailed` run side by side for each of a few pending draws (each is kept with chance 0.37).
HEAVY_TAILED_ATTEMPTS = 4
#: The largest scale, in grid units, of :func:`rounded_laplace` (its float inversion keeps 2^-44 to spare below it).
MAX_ROUNDED_SCALE = 2.0**40


def rounded_laplace(source: WordSource, scales: NDArray[np.float64]) -> NDArray[np.int64]:
    """``round(b·Z)`` for a standard Laplace ``Z`` and each element's scale ``b``: exactly that law, one word a draw.

    ``Z = ±E`` with a fair sign and ``E = −ln S`` exponential (``S`` uniform), and ``|round(b·Z)|
    ≥ j`` iff ``E ≥ (j − ½)/b`` for ``j ≥ 1``: the magnitude is the largest ``j`` with
    ``S < exp(−(j − ½)/b)`` (0 if none), so ``P(0) = 1 − exp(−1/(2b))`` and ``P(±j) =
    ½·(exp(−(j − ½)/b) − exp(−(j + ½)/b))``. It is found by float inversion ``⌊b·E + ½⌋`` and
    kept where both of its comparisons clear :data:`FLOAT_MARGIN`; otherwise (about one draw in
    2^37) the comparisons are made exactly (:class:`LazyUniform`, :func:`exp_neg_bracket`) on the
    float ``b``'s exact rational. Unlike :func:`discrete_laplace`, each element has its own scale.
    """
    scales = np.asarray(scales, dtype=np.float64).ravel()
    if scales.size and not (scales.min() > 0 and scales.max() <= MAX_ROUNDED_SCALE):  # NaN fails too
        raise ValueError("a rounded Laplace scale is not positive, or too large for exact sampling")
    words = source.words(np.arange(scales.size, dtype=np.int64), 1)[:, 0]
    top = words & _LOW_63
    uniform = top.astype(np.float64) * 2.0**-63
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        magnitude = np.floor(-np.log(uniform) * scales + 0.5)  # inf when the first 63 bits are all 0
        inner, outer = (magnitude - 0.5) / scales, (magnitude + 0.5) / scales
        inner_threshold, outer_threshold = np.exp(-inner), np.exp(-outer)
        sure_above = uniform - outer_threshold > FLOAT_MARGIN * (outer_threshold * (outer + 1) + 2.0**-16)
        sure_below = (magnitude < 1) | (inner_threshold - uniform > FLOAT_MARGIN * (inner_threshold * (inner + 1) + 2.0**-16))
    doubtful = ~(sure_above & sure_below)
    magnitude[doubtful] = 0
    draws = magnitude.astype(np.int64)
    for i in np.flatnonzero(doubtful):
        draws[i] = _rounded_laplace_magnitude(source, int(i), int(top[i]), float(scales[i]))
    return np.negative(draws, out=draws, where=words > _LOW_63)


def _rounded_laplace_magnitude(source: WordSource, element: int, top: int, scale: float) -> int:
    """:func:`rounded_laplace`'s magnitude decided exactly: the largest ``j`` with ``S < exp(−(j − ½)/b)``."""
    uniform = LazyUniform(source, element, top)
    rate = 1 / Fraction(scale)

    def at_least(j: int) -> bool:
        return j <= 0 or uniform.below(functools.partial(exp_neg_bracket, (j - Fraction(1, 2)) * rate))

    guess = -math.log(top * 2.0**-63) * scale if top else math.inf
    return _search_largest(at_least, guess - 1, guess + 1)


def rounded_heavy_tailed(source: WordSource, scales: NDArray[np.float64], gamma: int, cap: int) -> NDArray[np.int64]:
    """``round(b·Z)``, its magnitude capped at ``cap``, for ``Z`` of density ``∝ 1/(1 + |z|^γ)`` (whole ``γ`` ≥ 2): exactly.

    Rejection from a uniform ``S``: ``W = (1 − S)/S`` has density ``1/(1 + w)²`` on ``[0, ∞)``,
    and is kept with probability ``(1 + W)²/(M·(1 + W^γ)) = S^(γ−2)/(M·(S^γ + (1 − S)^γ))``,
    which is at most 1 for ``M`` = 3 at ``γ = 4`` and ``M`` = 4 for every ``γ`` ≥ 2 (since
    ``(1 + w)² ≤ 2(1 + w²) ≤ 4(1 + w^γ)``): a kept ``W`` has density ``∝ 1/(1 + w^γ)``, the law
    of ``|Z|``. Keeping it is ``M·V·(S^γ + (1 − S)^γ) < S^(γ−2)`` for a second uniform ``V``, a
    polynomial; the magnitude is the largest ``j`` with ``W ≥ (j − ½)/b``, i.e. ``S ≤ 2b/(2b +
    2j − 1)``, a rational threshold; the sign is a fair bit. Each decision is made in float64
    where a margin far above its rounding error proves it, else exactly: the polynomial on the
    intervals that hold ``S`` and ``V`` (integer arithmetic, more bits of both until decided),
    the threshold by :class:`LazyUniform`. Capping at ``cap`` (beyond a release's clip) keeps the
    integers small. About 2.7 attempts a draw at ``γ = 4``.
    """
    scales = np.asarray(scales, dtype=np.float64).ravel()
    if scales.size and not (scales.min() > 0 and scales.max() <= MAX_ROUNDED_SCALE):
        raise ValueError("a rounded heavy-tailed scale is not positive, or too large for exact sampling")
    if gamma < 2 or int(gamma) != gamma:
        raise ValueError("exact heavy-tailed noise needs a whole gamma of at least 2")
    bound = 3 if gamma == 4 else 4
    out = np.zeros(scales.size, dtype=np.int64)
    pending = np.arange(scales.size, dtype=np.int64)
    while pending.size:
        # Few pending: several attempts each side by side (fewer rounds), the first kept one used.
        copies = source.copies(pending.size, HEAVY_TAILED_ATTEMPTS)
        attempts = np.repeat(pending, copies)
        words = source.words(attempts, 2)
        top_s, top_v = words[:, 0] & _LOW_63, words[:, 1] & _LOW_63
        s, v = top_s.astype(np.float64) * 2.0**-63, top_v.astype(np.float64) * 2.0**-63
        # Terms at most 4 in size: float error under 2^-49, and the unknown bits of S and V move it under 2^-44.
        gap = s ** (gamma - 2) - bound * v * (s**gamma + (1.0 - s) ** gamma)
        kept = gap > HEAVY_TAILED_MARGIN
        refined: dict[int, LazyUniform] = {}
        for i in np.flatnonzero(~(np.abs(gap) > HEAVY_TAILED_MARGIN)):
            element = int(attempts[i])
            uniform_s, uniform_v = LazyUniform(source, element, int(top_s[i])), LazyUniform(source, element, int(top_v[i]))
            if _heavy_tailed_kept(uniform_s, uniform_v, gamma, bound):
                kept[i], refined[int(i)] = True, uniform_s
        by_element = kept.reshape(-1, copies)
        done = by_element.any(axis=1)
        chosen = np.flatnonzero(done) * copies + by_element.argmax(axis=1)[done]
        magnitudes = _heavy_tailed_magnitudes(source, attempts[chosen], top_s[chosen], scales[attempts[chosen]], cap)
        for attempt, uniform_s in refined.items():  # its S has more bits drawn already: the magnitude must read the same S
            position = int(np.searchsorted(chosen, attempt))  # chosen is increasing
            if position < chosen.size and chosen[position] == attempt:
                magnitudes[position] = _heavy_tailed_magnitude(uniform_s, float(scales[attempts[attempt]]), cap)
        out[attempts[chosen]] = np.where(words[chosen, 1] > _LOW_63, -magnitudes, magnitudes)
        pending = pending[~done]
    return out


def _heavy_tailed_kept(uniform_s: LazyUniform, uniform_v: LazyUniform, gamma: int, bound: int) -> bool:
    """``M·V·(S^γ + (1 − S)^γ) < S^(γ−2)`` decided exactly on the intervals holding ``S`` and ``V``."""
    while True:
        one_s, one_v = 1 << uniform_s.bits, 1 << uniform_v.bits
        s_lo, v_lo = uniform_s.value, uniform_v.value
        s_hi, v_hi = s_lo + 1, v_lo + 1
        # Both sides times one_s^γ·one_v: S^γ and (1 − S)^γ are monotone, so the interval ends bound them.
        least_left = bound * v_lo * (s_lo**gamma + (one_s - s_hi) ** gamma)
        most_left = bound * v_hi * (s_hi**gamma + (one_s - s_lo) ** gamma)
        least_right, most_right = s_lo ** (gamma - 2) * one_s**2 * one_v, s_hi ** (gamma - 2) * one_s**2 * one_v
        if most_left < least_right:
            return True
        if least_left >= most_right:
            return False
        uniform_s.refine()
        uniform_v.refine()


def _heavy_tailed_threshold(scale: Fraction, j: int) -> Callable[[int], tuple[int, int]]:
    """Brackets of ``2^bits·2b/(2b + 2j − 1)``: ``W ≥ (j − ½)/b`` iff ``S`` is at most this."""
    numerator, denominator = 2 * scale, 2 * scale + 2 * j - 1

    def bracket(bits: int) -> tuple[int, int]:
        lo = (numerator.numerator * denominator.denominator << bits) // (numerator.denominator * denominator.numerator)
        return lo, lo + 1

    return bracket


def _heavy_tailed_magnitude(uniform_s: LazyUniform, scale: float, cap: int) -> int:
    """The largest ``j`` ≤ ``cap`` with ``S < 2b/(2b + 2j − 1)``, decided exactly (``S`` = a threshold has probability 0)."""
    exact_scale = Fraction(scale)

    def at_least(j: int) -> bool:
        return j <= 0 or (j <= cap and uniform_s.below(_heavy_tailed_threshold(exact_scale, j)))

    s = uniform_s.value / (1 << uniform_s.bits)
    guess = min(scale * (1.0 - s) / s, float(cap)) if s > 0 else float(cap)
    return _search_largest(at_least, guess - 1, guess + 1)


def _heavy_tailed_magnitudes(
    source: WordSource, who: Indices, top_s: NDArray[np.uint64], scales: NDArray[np.float64], cap: int
) -> NDArray[np.int64]:
    """:func:`_heavy_tailed_magnitude` for many elements: float inversion ``⌊b·W + ½⌋``, exact where in doubt."""
    s = top_s.astype(np.float64) * 2.0**-63
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        magnitude = np.minimum(np.floor(scales * (1.0 - s) / s + 0.5), cap)  # S = 0 (63 zero bits): inf, then cap
        inner = 2 * scales / (2 * scales + 2 * magnitude - 1)
        outer = 2 * scales / (2 * scales + 2 * magnitude + 1)
    # The thresholds' float error is a few units in 2^-52 of their size; S's unknown bits are under 2^-63.
    sure_below = (magnitude < 1) | (inner - s > FLOAT_MARGIN * inner + 2.0**-60)
    sure_above = (magnitude >= cap) | (s - outer > FLOAT_MARGIN * outer + 2.0**-60)
    doubtful = ~(sure_below & sure_above)
    magnitude[doubtful] = 0
    draws = magnitude.astype(np.int64)
    for i in np.flatnonzero(doubtful):
        draws[i] = _heavy_tailed_magnitude(LazyUniform(source, int(who[i]), int(top_s[i])), float(scales[i]), cap)
    return draws


# --- grids --------------------------------------------------------------------------------


def power_of_two_below(value: float) -> float:
    """The largest power of two ≤ ``value`` (positive and finite; a grid must be a normal float)."""
    if not (value >= np.finfo(np.float64).tiny and math.isfinite(value)):
        raise ValueError(f"no noise grid for a sensitivity this small or large: {value!r}")
    mantissa, exponent = math.frexp(value)
    return math.ldexp(1.0, exponent - 1)


def to_grid(values: NDArray[np.float64], grid: float) -> NDArray[np.int64]:
    """``values/grid`` rounded to the nearest integer (ties to even); ``ValueError`` for one too large or not finite.

    ``values/grid`` is exact (a power-of-two grid), and ``rint`` rounds it once, monotonically
    and by at most ½: two values ``d`` grid steps apart land at most ``d + 1`` steps apart. (A
    float ``⌊x + ½⌋`` would round the sum first, and above 2^52 move a value by a whole step.)
    """
    units = np.rint(values / grid)
    if units.size and not np.abs(units).max() < 2**62:  # NaN fails too
        raise ValueError("a value is too large for its noise grid, or not a finite number")
    return units.astype(np.int64)


@functools.lru_cache(maxsize=1024)
def laplace_plan(sensitivity: float, epsilon: float, size: int) -> tuple[float, Fraction]:
    """The grid and the discrete Laplace scale (in grid units) for an L1-``sensitivity`` query of ``size`` values at ε.

    The grid is the largest power of two ≤ Δ/(4096·size). Rounding each value to it moves an
    L1 distance of Δ by at most one step per value, so the rounded query has L1 sensitivity at
    most ``Δ/grid + size`` steps, at most 1/4096 more than Δ; the noise scale in steps is that
    divided by ε, computed on the exact rationals of the floats Δ and ε (a float quotient Δ/ε
    can land one unit in the last place below the true one) and rounded up to a whole number.
    """
    size = max(size, 1)
    grid = power_of_two_below(sensitivity / (GRID_STEPS * size))
    steps = Fraction(sensitivity) / Fraction(grid) + size
    return grid, Fraction(math.ceil(steps / Fraction(epsilon)))


@functools.lru_cache(maxsize=1024)
def gaussian_plan(sensitivity: float, rho: float, size: int) -> tuple[float, int, int]:
    """The grid and the discrete Gaussian's ``(t, m)`` (``σ² = t·m`` grid units²) for an L2-``sensitivity`` query at ρ.

    The grid is the largest power of two ≤ Δ₂/(4096·√size), or ≥ σ/2^24 when that is coarser
    (the exact arithmetic's range). Rounding moves an L2 distance by at most √size steps, so the
    rounded query's L2 sensitivity is at most ``s = Δ₂/grid + ⌈√size⌉`` steps, and ``t·m`` is the
    exact rational ``s²/(2ρ)`` rounded up: the discrete Gaussian is then ρ-zCDP, as
    ``ρ = s²/(2σ²)`` (CKS20, Theorem 14), the same bound as the continuous one's.
    """
    root = math.isqrt(max(size, 1) - 1) + 1  # ⌈√size⌉
    sigma = sensitivity / math.sqrt(2.0 * rho)  # only to choose the grid
    grid = power_of_two_below(max(sensitivity / (GRID_STEPS * root), sigma / MAX_SIGMA_UNITS))
    steps = Fraction(sensitivity) / Fraction(grid) + root
    variance = steps**2 / (2 * Fraction(rho))
    t = math.isqrt(math.floor(variance)) + 1
    m = math.ceil(variance / t)
    return grid, t, m
