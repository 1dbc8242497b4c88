"""Bounds an owner does not know, estimated privately on a public grid of round numbers.

Owners rarely know public bounds for every number. Reading the minimum and maximum from the
data leaks the most extreme person's value; this module instead spends a small, stated ε on
two DP quantiles of each column, its quartiles, each chosen among the points of a **public,
fixed grid** that is symmetric and logarithmic: 0 and ``±d.dd·10^k`` (three significant digits)
from 10⁻⁴ to 10⁹, so negatives (longitudes), tiny fractions, counts, prices and years all land
on it (:func:`number_grid`). A column whose header says it holds years (``year_built``,
``YrSold``) uses the year grid instead: every year from 1000 to 2200 (:func:`year_grid`). The
bounds are the quartiles widened to fences :data:`FENCE` spreads beyond them on the signed log
scale (asinh; years as they are), rounded outward to two significant digits (years: to the decade).

Privacy argument
----------------
For values ``x_1 … x_n`` (missing ones left out, a per-record filter), grid point ``c`` has
``b(c) = #{x_i < c}`` values below it and ``a(c) = #{x_i ≤ c}`` at or below it; the rank
``q·n`` of quantile ``q`` lies in ``[b(c), a(c)]`` when ``c`` is the quantile, and the
utility is minus its distance from that interval, ``u(c) = −max(b(c) − q·n, q·n − a(c), 0)``.
Adding or removing one record moves ``b`` and ``a`` by at most 1 and ``q·n`` by ``q``, all in
the same direction, so ``|Δu| ≤ max(q, 1 − q) ≤ 1``. The exponential mechanism picks ``c``
with probability ∝ ``μ(c)·exp(ε·u(c)/2)`` for a public base measure ``μ`` (each point weighs the
stretch of the asinh scale it stands for, and 0 weighs as much as a decade, since so many
columns start there): ε-DP (McSherry & Talwar 2007). The first quartile takes half of a
column's ε; the third quartile, chosen among grid points at or above the released first
(adaptive: the candidates depend only on a released value), the other half. The fences and
the rounding are post-processing. Columns compose sequentially: ``m`` columns at ``ε`` each
cost ``m·ε``, checked against the ledger before the data are read and charged once, before
anything is returned. With a privacy-unit column each person keeps at most ``k`` rows and
both draws run at ``ε/k`` per row (group privacy, :mod:`dpcore.budget.persons`).

The owner-only verdict (:func:`bounds_verdict`: the share of rows clipped and the width
against the data's true range) reads the raw data and is never released.

Defaults, and what they were chosen on
--------------------------------------
The cost is :data:`DEFAULT_BUDGET_SHARE` (10 %) of what is left of the dataset's ε, split
evenly over the columns, so a fresh default budget (ε = 1) never refuses it and nine tenths
stay for models and copies. Quartiles and fences, rather than extreme quantiles, because at
the ε per column such a share gives (0.005–0.05) an extreme quantile cannot be told from the
empty grid beyond the data, while a quartile has a quarter of the rows on its far side. Chosen
on the California sample's columns at ε = 0.0083 per column (a tenth of ε = 1 over its 12
numbers; 40 draws per column): 0.9 % of rows clipped on average, none of the draws clipping
more than 10 %, 7 % of the bounds more than 20 times the true range wide; the 0.5 %/99.5 %
quantiles drawn after the median and quartiles (five draws) clipped 5.6 % on average, 13 % of
the draws more than 10 %, and 11 % were more than 20 times too wide. ``benchmarks/bounds_quality.py``
measures years, long-tailed counts, mostly-zero columns, negative coordinates, tiny fractions
and prices at 1,500 and 20,000 rows (benchmarks/README.md §21): the median draw fits at
ε·n = 200 (20,000 rows at 0.01 per column; the worst of 20 can still sprawl) and at 300 (1,500
rows at 0.2, while tuning), and is lost at 75. Small tables need more: a column needs roughly ``ε·n ≥ 150`` (n rows, :data:`ROWS_TIMES_EPSILON_FOR_FIT`) for bounds that
fit; below it the page says so before the click, the owner-only verdict shows which bounds clip
or sprawl, and declared bounds are better there.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.budget.accountant import BudgetLedger, Charge
from dpcore.budget.persons import bound_contributions, check_unit_column, per_row
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, short
from dpcore.tables.schema import Schema, name_words
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

DEFAULT_BUDGET_SHARE = 0.10
#: A share of rows clipped above which the owner-only verdict warns.
CLIPPED_WARNING = 0.05
#: ε per column × rows below which bounds rarely fit (``benchmarks/bounds_quality.py``): the page says so.
ROWS_TIMES_EPSILON_FOR_FIT = 150
#: How far beyond its quartiles a bound is put, in quartile spreads on the signed log scale (Tukey's
#: fences are 1.5 spreads out on a plain scale; the 99.5 % point of a normal or log-normal column
#: is 1.4 spreads beyond its quartile, of a uniform one 0.5).
FENCE = 2.0
_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE = -4, 9  # the number grid runs over ±[10⁻⁴, 10⁹]
_YEAR_WORDS = frozenset({"year", "yr"})


def number_grid(significant_digits: int = 3) -> NDArray[np.float64]:
    """The public grid for numbers: 0 and ``±d.dd·10^k`` (``significant_digits``), 10⁻⁴ … 10⁹, sorted."""
    mantissas = np.arange(10 ** (significant_digits - 1), 10**significant_digits, dtype=float)
    shifts = np.arange(_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE) - (significant_digits - 1)
    # Integers over (or times) an exact power of ten: each point is the float nearest its decimal.
    scaled = np.where(
        shifts[:, None] < 0,
        mantissas[None, :] / 10.0 ** -np.minimum(shifts, 0)[:, None],
        mantissas[None, :] * 10.0 ** np.maximum(shifts, 0)[:, None],
    )
    positive = np.append(scaled.ravel(), 10.0**_LARGEST_MAGNITUDE)
    return np.concatenate([-positive[::-1], [0.0], positive])


_NUMBER_GRID = number_grid()
_ROUND_GRID = number_grid(2)


def year_grid() -> NDArray[np.float64]:
    """The public grid for years: every year from 1000 to 2200."""
    return np.arange(1000.0, 2201.0)


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


def quantile_scores(
    sorted_values: NDArray[np.float64], grid: NDArray[np.float64], quantile: float, epsilon: float, log_base: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each grid point's log weight in the exponential mechanism: ``log μ(c) + ε·u(c)/2`` (module docstring)."""
    target = quantile * sorted_values.size
    below = np.searchsorted(sorted_values, grid, side="left")
    at_or_below = np.searchsorted(sorted_values, grid, side="right")
    distance = np.maximum(np.maximum(below - target, target - at_or_below), 0.0)
    return log_base - epsilon / 2.0 * distance


def _choose(scores: NDArray[np.float64], rng: np.random.Generator) -> int:
    """The exponential mechanism's draw from log weights (Gumbel-max: exact, one vectorised pass)."""
    return int(np.argmax(scores + rng.gumbel(size=scores.shape)))


def private_bounds(
    values: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    *,
    years: bool = False,
    coarse: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """``(lower, upper)`` of one column, ε-DP in two exponential-mechanism draws (module docstring).

    ``coarse``, public limits the owner vouches for, leaves out the grid points beyond them.
    """
    grid = year_grid() if years else _NUMBER_GRID
    log_base = _log_base_measure(grid, years)
    if coarse is not None:
        log_base = np.where((grid >= coarse[0]) & (grid <= coarse[1]), log_base, -np.inf)
        if np.isinf(log_base).all():
            raise DataError(_("The range you vouch for holds no point of the public grid: widen it."))
    sorted_values = np.sort(values[~np.isnan(values)])
    first = _choose(quantile_scores(sorted_values, grid, 0.25, epsilon / 2.0, log_base), rng)
    above_first = np.where(np.arange(grid.size) >= first, log_base, -np.inf)
    third = _choose(quantile_scores(sorted_values, grid, 0.75, epsilon / 2.0, above_first), rng)
    # Post-processing from here on: fences FENCE spreads beyond the released quartiles.
    position = grid if years else np.arcsinh(grid)
    spread = position[third] - position[first]
    lower, upper = position[first] - FENCE * spread, position[third] + FENCE * spread
    if not years:
        lower, upper = np.sinh(lower), np.sinh(upper)
    allowed = np.flatnonzero(np.isfinite(log_base))
    low = int(np.clip(np.searchsorted(grid, lower, side="right") - 1, allowed[0], allowed[-1]))
    high = int(np.clip(np.searchsorted(grid, upper, side="left"), allowed[0], allowed[-1]))
    return _widened(grid, log_base, low, high, years)


def _widened(
    grid: NDArray[np.float64], log_base: NDArray[np.float64], low: int, high: int, years: bool = False
) -> tuple[float, float]:
    """The chosen points rounded outward to two significant digits (years: to the decade), within the allowed grid."""
    allowed = grid[np.isfinite(log_base)]
    round_grid = grid[::10] if years else _ROUND_GRID
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


def estimate_bounds(
    frame: pd.DataFrame,
    schema: Schema,
    columns: Iterable[str],
    epsilon_per_column: float,
    ledger: BudgetLedger,
    coarse: tuple[float, float] | None = None,
    random_state: RandomStateLike = None,
) -> dict[str, tuple[float, float]]:
    """DP bounds for numeric ``columns``, charged to ``ledger`` (a :class:`~dpcore.budget.accountant.BudgetLedger`).

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
    k = schema.rows_per_person if schema.privacy_unit is not None else 1
    charge = Charge(
        f"Estimate the bounds of {len(columns)} column(s) privately",
        epsilon_per_column * len(columns),
        privacy_unit=schema.privacy_unit,
        rows_per_person=k,
        mechanism=(
            f"exponential-mechanism quartiles on a public symmetric log grid (years: every year), widened "
            f"{FENCE:g} spreads out, ε = {epsilon_per_column:g} per column"
        ),
        released="bounds of " + ", ".join(columns),
        action=N_("Estimating these bounds"),
        undone=N_("estimated"),
        alternative=N_("Or declare the bounds yourself."),
    )
    with ledger.charging(charge):
        rng = check_random_state(random_state)
        if schema.privacy_unit is not None:
            check_unit_column(frame, schema.privacy_unit)
            frame = frame[bound_contributions(frame[schema.privacy_unit], k, rng)]
        column_epsilon = per_row(epsilon_per_column, 0.0, k)[0]
        found = {}
        for name in columns:  # a loop over columns; each column's work is vectorised
            values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
            found[name] = private_bounds(
                values, column_epsilon, rng, years=is_year_column(name), coarse=None if is_year_column(name) else coarse
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
        rows.append(
            {
                "column": name,
                "lower": lower,
                "upper": upper,
                "clipped below": below,
                "clipped above": above,
                "width ÷ true range": (upper - lower) / true_range,
                "warning": below + above > CLIPPED_WARNING,
            }
        )
    return pd.DataFrame(
        rows, columns=["column", "lower", "upper", "clipped below", "clipped above", "width ÷ true range", "warning"]
    )
