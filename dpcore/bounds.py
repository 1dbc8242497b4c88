"""Bounds an owner does not know, estimated privately on a public grid of round numbers.

Owners rarely know public bounds for every number. Reading the minimum and maximum from the
data leaks the most extreme person's value; this module instead spends a small, stated ε on
DP quantiles of each column, each chosen among the points of a **public, fixed grid** that is
symmetric and logarithmic: 0 and ``±d.dd·10^k`` (three significant digits) from 10⁻⁴ to 10⁹,
so negatives (longitudes), tiny fractions, counts, prices and years all land on it
(:func:`number_grid`). A column whose header says it holds years (``year_built``, ``YrSold``)
uses the year grid instead: every tenth year from 1000 to 2200 (:func:`year_grid`). The chosen
bounds are then rounded outward to two significant digits.

Privacy argument
----------------
For values ``x_1 … x_n`` (missing ones left out, a per-record filter), grid point ``c`` has
``b(c) = #{x_i < c}`` values below it and ``a(c) = #{x_i ≤ c}`` at or below it; the rank
``q·n`` of quantile ``q`` lies in ``[b(c), a(c)]`` when ``c`` is the quantile, and the
utility is minus its distance from that interval, ``u(c) = −max(b(c) − q·n, q·n − a(c), 0)``.
Adding or removing one record moves ``b`` and ``a`` by at most 1 and ``q·n`` by ``q``, all in
the same direction, so ``|Δu| ≤ max(q, 1 − q) ≤ 1``. The exponential mechanism picks ``c``
with probability ∝ ``μ(c)·exp(ε·u(c)/2)`` for a base measure ``μ`` that depends on public
facts and earlier released draws only: ε-DP (McSherry & Talwar 2007).

A column's ε buys five such draws, in sequence: the median (:data:`MEDIAN_SHARE`, with ``μ``
the stretch of the signed log scale, asinh, each point stands for, 0 weighing a decade since
so many columns start there); the first and third quartile (:data:`QUARTILE_SHARE` each, on
either side of the released median, ``μ`` log-uniform in the distance from it, so a spread of
0.01 is as likely as one of 10); then the lower and upper bound, the :data:`LOWER_QUANTILE`
and :data:`UPPER_QUANTILE` (:data:`BOUND_SHARE` each, below the released first and above the
released third quartile, ``μ`` fading with the distance from them in units of the released
spread between them). The shares add up to 1: sequential, adaptive composition makes each
column ε-DP. Columns compose sequentially: ``m`` columns at ``ε`` each cost ``m·ε``, checked
against the ledger before the data are read and charged once, before anything is returned.
Rounding outward is post-processing. With a privacy-unit column each person keeps at most
``k`` rows and every draw runs at ``ε/k`` per row (group privacy, :mod:`dpcore.persons`).

The owner-only verdict (:func:`bounds_verdict`: the share of rows clipped and the width
against the data's true range) reads the raw data and is never released.

Defaults, and what they were chosen on
--------------------------------------
The cost is :data:`DEFAULT_BUDGET_SHARE` (10 %) of what is left of the dataset's ε, split
evenly over the columns, so a fresh default budget (ε = 1) never refuses it and nine tenths
stay for models and copies. The quantiles (0.5 %, 99.5 %), the shares (median 40 %, quartiles
20 % each, bounds 10 % each) and the bounds' prior (a Rayleigh bump two quartile spreads out)
were chosen on the California sample's columns at ε = 0.0083 per column (a tenth of ε = 1 over
its 12 numbers; 40 draws per column: 5.6 % of rows clipped on average and 11 % of the bounds
more than 20 times the true range wide; 3.7 % and 19 % with a d·e^(−d) prior, and with it
6.8 % and 25 % at shares 30/15/15/20/20) and on ``benchmarks/bounds_quality.py`` (years, long-tailed counts,
mostly-zero columns, negative coordinates, tiny fractions and prices at 1,500 and 20,000 rows).
From 20,000 rows at ε = 0.05 per column every draw of every kind clipped at most 3.3 % of rows
and was at most 7 times its true range wide; at ε = 0.01 the median draw of each kind still
fits (at most 1.3 % clipped, 2.5 times wide) but the worst of 20 clips nearly every row or is
10⁷ times too wide. At 1,500 rows, ε = 0.05 per column fits years, counts, prices and mostly-
zero columns in the median draw but not coordinates or tiny fractions, and ε = 0.01 fits only
the years. So a column needs roughly ``ε·n ≥ 500`` (n rows, :data:`ROWS_TIMES_EPSILON_FOR_FIT`): below it the page says so before
the click, the owner-only verdict shows which bounds clip or sprawl, and declared bounds are
better there. More extreme quantiles than 0.5 % gain nothing at these ε (the bound draws are
then led by the quartiles); less extreme ones clip a long tail for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _, short
from dpcore.persons import bound_contributions, check_unit_column, counting, per_row
from dpcore.schema import Schema, name_words
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

if TYPE_CHECKING:
    from dpcore.accountant import BudgetLedger

LOWER_QUANTILE = 0.005
UPPER_QUANTILE = 0.995
DEFAULT_BUDGET_SHARE = 0.10
#: A share of rows clipped above which the owner-only verdict warns.
CLIPPED_WARNING = 0.05
#: ε per column × rows below which bounds rarely fit (``benchmarks/bounds_quality.py``): the page says so.
ROWS_TIMES_EPSILON_FOR_FIT = 500
#: How a column's ε is split: its median (where the people are), each quartile (how spread out they
#: are), each bound; the four draws after the median look only where the earlier ones point.
MEDIAN_SHARE, QUARTILE_SHARE, BOUND_SHARE = 0.4, 0.2, 0.1
#: The smallest spread (asinh units; years) the priors around the median and quartiles tell apart.
NUMBER_SPREAD = 1e-3
YEAR_SPREAD = 10.0
#: How far beyond its quartile a bound is most likely, a priori, in units of the quartiles' spread
#: (the bound at 99.5 % of a normal or log-normal column is 1.4 spreads out, of a uniform one 0.5).
BOUND_REACH = 2.0
_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE = -4, 9  # the number grid runs over ±[10⁻⁴, 10⁹]
_YEAR_WORDS = frozenset({"year", "yr"})


def number_grid(significant_digits: int = 3) -> NDArray[np.float64]:
    """The public grid for numbers: 0 and ``±d.dd·10^k`` (``significant_digits``), 10⁻⁴ … 10⁹, sorted."""
    mantissas = np.arange(10 ** (significant_digits - 1), 10**significant_digits, dtype=float)
    shifts = np.arange(_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE) - (significant_digits - 1)
    # Integers over (or times) an exact power of ten: each point is the float nearest its decimal.
    scaled = np.where(shifts[:, None] < 0, mantissas[None, :] / 10.0 ** -np.minimum(shifts, 0)[:, None],
                      mantissas[None, :] * 10.0 ** np.maximum(shifts, 0)[:, None])
    positive = np.append(scaled.ravel(), 10.0**_LARGEST_MAGNITUDE)
    return np.concatenate([-positive[::-1], [0.0], positive])


_NUMBER_GRID = number_grid()
_ROUND_GRID = number_grid(2)


def year_grid() -> NDArray[np.float64]:
    """The public grid for years: every tenth year from 1000 to 2200."""
    return np.arange(1000.0, 2201.0, 10.0)


def is_year_column(name: str) -> bool:
    """True when the header says the column holds years (``year_built``, ``YrSold``, ``GarageYrBlt``).

    Read from the header only, which is public: "values between 1800 and 2100" would be read
    from the data. "years" (a duration, ``years_of_education``) does not count.
    """
    return any(word in _YEAR_WORDS for word in name_words(name))


def _log_base_measure(grid: NDArray[np.float64], years: bool) -> NDArray[np.float64]:
    """The log weight of each grid point: the stretch of the asinh scale it stands for; 0 weighs a decade."""
    if years:
        return np.zeros(grid.size)
    scaled = np.arcsinh(grid)
    middles = (scaled[1:] + scaled[:-1]) / 2.0
    cells = np.diff(np.concatenate(([scaled[0]], middles, [scaled[-1]])))
    weights = np.where(grid == 0.0, np.log(10.0), cells)
    return np.log(weights)


def quantile_scores(sorted_values: NDArray[np.float64], grid: NDArray[np.float64], quantile: float,
                    epsilon: float, log_base: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each grid point's log weight in the exponential mechanism: ``log μ(c) + ε·u(c)/2`` (module docstring)."""
    target = quantile * sorted_values.size
    below = np.searchsorted(sorted_values, grid, side="left")
    at_or_below = np.searchsorted(sorted_values, grid, side="right")
    distance = np.maximum(np.maximum(below - target, target - at_or_below), 0.0)
    return log_base - epsilon / 2.0 * distance


def _choose(scores: NDArray[np.float64], rng: np.random.Generator) -> int:
    """The exponential mechanism's draw from log weights (Gumbel-max: exact, one vectorised pass)."""
    return int(np.argmax(scores + rng.gumbel(size=scores.shape)))


def _positions(grid: NDArray[np.float64], years: bool) -> NDArray[np.float64]:
    """Where each grid point sits on the scale spreads are measured in: years as they are, numbers in asinh."""
    return grid if years else np.arcsinh(grid)


def private_bounds(values: NDArray[np.float64], epsilon: float, rng: np.random.Generator, *, years: bool = False,
                   coarse: tuple[float, float] | None = None) -> tuple[float, float]:
    """``(lower, upper)`` of one column, ε-DP in four exponential-mechanism draws (module docstring).

    ``coarse``, public limits the owner vouches for, leaves out the grid points beyond them.
    """
    grid = year_grid() if years else _NUMBER_GRID
    log_base = _log_base_measure(grid, years)
    if coarse is not None:
        log_base = np.where((grid >= coarse[0]) & (grid <= coarse[1]), log_base, -np.inf)
        if np.isinf(log_base).all():
            raise DataError(_("The range you vouch for holds no point of the public grid: widen it."))
    sorted_values = np.sort(values[~np.isnan(values)])
    index = np.arange(grid.size)
    position = _positions(grid, years)
    smallest_gap = YEAR_SPREAD if years else NUMBER_SPREAD

    def scale_free(anchor: int) -> NDArray[np.float64]:
        """Log weights log-uniform in the distance from ``anchor``: a spread of 0.01 is as likely as one of 10."""
        return log_base - np.log(np.maximum(np.abs(position - position[anchor]), smallest_gap))

    def draw(quantile: float, share: float, log_weights: NDArray[np.float64]) -> int:
        return _choose(quantile_scores(sorted_values, grid, quantile, epsilon * share, log_weights), rng)

    middle = draw(0.5, MEDIAN_SHARE, log_base)
    first = draw(0.25, QUARTILE_SHARE, np.where(index <= middle, scale_free(middle), -np.inf))
    third = draw(0.75, QUARTILE_SHARE, np.where(index >= middle, scale_free(middle), -np.inf))
    spread = max(position[third] - position[first], smallest_gap)
    below = np.where(index <= first, log_base + _reach(position[first] - position, spread), -np.inf)
    low = draw(LOWER_QUANTILE, BOUND_SHARE, below)
    above = np.where((index >= third) & (index >= low), log_base + _reach(position - position[third], spread), -np.inf)
    high = draw(UPPER_QUANTILE, BOUND_SHARE, above)
    return _widened(grid, log_base, low, high)


def _reach(distance: NDArray[np.float64], spread: float) -> NDArray[np.float64]:
    """Log prior of a bound ``distance`` beyond its quartile: ∝ ``d·e^(−d²/2)`` in units of :data:`BOUND_REACH` spreads.

    Most likely that far out, since at a small ε a bound drawn too close clips many people;
    fading fast beyond it (a Rayleigh tail), so where the data cannot tell, the bound does not
    sprawl. ``d`` below 0.1 counts as 0.1: the quartile itself stays possible (a mostly-zero
    column's lower bound is 0).
    """
    scaled = np.maximum(distance / (BOUND_REACH * spread), 0.1)
    return np.log(scaled) - scaled**2 / 2.0


def _widened(grid: NDArray[np.float64], log_base: NDArray[np.float64], low: int, high: int) -> tuple[float, float]:
    """The chosen points rounded outward to two significant digits, within the allowed grid (post-processing)."""
    allowed = grid[np.isfinite(log_base)]
    round_grid = _ROUND_GRID
    lower = round_grid[max(int(np.searchsorted(round_grid, grid[low], side="right")) - 1, 0)]
    upper = round_grid[min(int(np.searchsorted(round_grid, grid[high], side="left")), round_grid.size - 1)]
    lower, upper = max(float(lower), float(allowed[0])), min(float(upper), float(allowed[-1]))
    if upper <= lower:  # one point chosen twice: the next round number up
        upper = float(round_grid[min(int(np.searchsorted(round_grid, lower, side="right")), round_grid.size - 1)])
    return lower, upper


def epsilon_per_column(available: float, n_columns: int, share: float = DEFAULT_BUDGET_SHARE) -> float:
    """``share`` of the ε still ``available``, split evenly over ``n_columns``, rounded down to 3 significant digits."""
    if not 0.0 < share <= 1.0:
        raise ValueError("share must be in (0, 1]")
    if n_columns < 1:
        raise ValueError("n_columns must be at least 1")
    budget = max(available, 0.0) * share
    each = round(budget / n_columns, 12)  # 0.3 / 3 is 0.09999…: not a reason to round down to 0.0999
    if each <= 0.0:
        return 0.0
    digits = 2 - int(np.floor(np.log10(each)))
    rounded = float(np.floor(each * 10.0**digits) / 10.0**digits)
    if rounded * n_columns > budget * (1 + 1e-9):  # rounding to 12 digits went up past the budget
        rounded = float((np.floor(each * 10.0**digits) - 1) / 10.0**digits)
    return rounded


def estimate_bounds(frame: pd.DataFrame, schema: Schema, columns: Iterable[str], epsilon_per_column: float, ledger: BudgetLedger,
                    coarse: tuple[float, float] | None = None,
                    random_state: RandomStateLike = None) -> dict[str, tuple[float, float]]:
    """DP bounds for numeric ``columns``, charged to ``ledger`` (a :class:`~dpcore.accountant.BudgetLedger`).

    Returns ``{column: (lower, upper)}``; the caller puts them into the schema as public
    declarations (:func:`apply_bounds`). The whole cost (``len(columns) × epsilon_per_column``)
    is checked against the ledger before the data are read and charged once, after the
    estimates are drawn and before they are returned; if the ledger refuses, nothing is
    returned. Columns whose header says "year" use :func:`year_grid`; ``coarse`` (public limits
    the owner vouches for) narrows the number grid. See the module docstring for the privacy
    argument.
    """
    check_epsilon(epsilon_per_column, "epsilon_per_column")
    if coarse is not None:
        coarse = (float(coarse[0]), float(coarse[1]))
        if not (np.isfinite(coarse).all() and coarse[0] < coarse[1]):
            raise DataError(_("The coarse range needs a lower limit below its upper limit."))
    columns = list(columns)
    if not columns:
        raise DataError(_("Choose at least one numeric column whose bounds should be estimated."))
    for name in columns:
        if name not in frame.columns or schema[name].kind != "numeric":
            raise DataError(_("Column '{column}' is not a numeric column of this table.").format(column=name))
    people = counting(schema.privacy_unit, schema.rows_per_person)
    ledger.count_people_as(people)
    total = epsilon_per_column * len(columns)
    if not ledger.can_spend(total):
        raise BudgetExceededError(_(
            "Estimating these bounds at ε = {epsilon} does not fit in what is left of this dataset's budget (at most "
            "ε = {left}). Choose a smaller share, or declare the bounds yourself. Nothing was estimated or charged."
        ).format(epsilon=short(total), left=short(ledger.available())))
    rng = check_random_state(random_state)
    k = 1
    if schema.privacy_unit is not None:
        check_unit_column(frame, schema.privacy_unit)
        k = schema.rows_per_person
        frame = frame[bound_contributions(frame[schema.privacy_unit], k, rng)]
    column_epsilon = per_row(epsilon_per_column, 0.0, k)[0]
    found = {}
    for name in columns:  # a loop over columns; each column's work is vectorised
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        found[name] = private_bounds(values, column_epsilon, rng, years=is_year_column(name),
                                     coarse=None if is_year_column(name) else coarse)
    ledger.spend(
        f"Estimate the bounds of {len(columns)} column(s) privately" + (f", per person counting up to {k} rows each" if k > 1 else ""),
        total,
        mechanism=(f"exponential-mechanism quantiles ({LOWER_QUANTILE:.0%}, {UPPER_QUANTILE:.0%}) on a public symmetric log "
                   f"grid (years: every tenth year), ε = {epsilon_per_column:g} per column"),
        released="bounds of " + ", ".join(columns),
        counting=people,
    )
    return found


def apply_bounds(schema: Schema, bounds: dict[str, tuple[float, float]], epsilon_per_column: float) -> None:
    """Write privately estimated bounds into the schema as declarations (no longer read from the data)."""
    for name, (lower, upper) in bounds.items():
        spec = schema[name]
        spec.lower, spec.upper, spec.bounds_from_data = lower, upper, False
        spec.source = _("estimated privately (ε = {epsilon})").format(epsilon=short(epsilon_per_column))


def bounds_verdict(frame: pd.DataFrame, bounds: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Owner's eyes only: per column, the share of rows clipped below and above, and width ÷ true range.

    Read from the raw data, so never released: it tells the owner whether a bound estimated
    privately fits (a large share clipped means declare a wider bound; a width many times the
    true range means a small table or a small ε). The true range of a constant column counts as 1.
    """
    rows = []
    for name, (lower, upper) in bounds.items():
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if values.size:
            below, above = float(np.mean(values < lower)), float(np.mean(values > upper))
            true_range = float(values.max() - values.min()) or 1.0
        else:
            below, above, true_range = 0.0, 0.0, 1.0
        rows.append({"column": name, "lower": lower, "upper": upper, "clipped below": below, "clipped above": above,
                     "width ÷ true range": (upper - lower) / true_range,
                     "warning": below + above > CLIPPED_WARNING})
    return pd.DataFrame(rows, columns=["column", "lower", "upper", "clipped below", "clipped above", "width ÷ true range",
                                       "warning"])
