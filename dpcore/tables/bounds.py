"""Bounds an owner does not know, estimated privately from a noisy histogram on public buckets.

Owners rarely know public bounds for every number. Reading the minimum and maximum from the
data leaks the most extreme person's value; this module instead spends a small, stated ε on one
noisy histogram of each column over **public, fixed buckets** that are symmetric and logarithmic:
the edges are 0 and ``±{1, 2, 5}·10^k`` from 10⁻⁴ to 10⁹ (:func:`bucket_edges`), so negatives
(longitudes), tiny fractions, counts, prices and years all land in them. A column whose header says
it holds years (``year_built``, ``YrSold``) uses quarter-centuries from 1000 to 2200 instead.
The bounds are the outer edges of the buckets that hold many people: every bucket whose noisy
count clears a threshold no empty bucket clears but once in a hundred columns
(:data:`SPRAWL_CHANCE`), or the fullest bucket when none does, then extended bucket by bucket
while the next one's noisy count shows people there (:data:`EXTEND_SCALES`), but never across 0.
The edges are round numbers already.

Privacy argument
----------------
Each value ``x_i`` (missing ones left out, a per-record filter; values beyond the outer edges
counted in the outer buckets) falls in exactly one bucket, and the buckets depend only on public
facts (the header, and a range the owner vouches for). Adding or removing one record changes one
count by 1: the histogram has L1 sensitivity 1, and two-sided geometric noise at scale ``1/ε``
(:class:`~dpcore.mechanisms.Geometric`, sampled exactly) makes it ε-DP (Ghosh, Roughgarden &
Sundararajan 2009). The threshold, the fullest bucket and the extension read the noisy counts
only: post-processing. Columns compose sequentially: ``m`` columns at ``ε`` each cost ``m·ε``,
checked against the ledger before the data are read and charged once, before anything is
returned. With a privacy-unit column each person keeps at most ``k`` rows and the noise runs at
``ε/k`` per row (group privacy, :mod:`dpcore.budget.persons`).

The owner-only verdict (:func:`bounds_verdict`: the share of rows clipped and the width
against the data's true range) reads the raw data and is never released.

Defaults, and what they were chosen on
--------------------------------------
The cost is :data:`DEFAULT_BUDGET_SHARE` (10 %) of what is left of the dataset's ε, split
evenly over the columns, so a fresh default budget (ε = 1) never refuses it and nine tenths
stay for models and copies. A histogram rather than quantiles because its buckets are disjoint:
each count gets the column's whole ε (parallel composition), while two exponential-mechanism
quantiles share it and see a quarter of the rows as signal. ``benchmarks/bounds_quality.py``
(years, long-tailed counts, a mostly-zero column, negative coordinates, tiny fractions and
prices, at 300, 1,500 and 20,000 rows; benchmarks/README.md §21) chose it: the quartiles widened
to fences, the previous design, were lost below ε·n ≈ 150 per column and sprawled to ±10⁹ (the
whole grid: nothing clipped, nothing learnt), while the histogram's median draw clips at most
6 % and is at most 15 times the true range wide from ε·n ≈ 60 (:data:`ROWS_TIMES_EPSILON_FOR_FIT`),
and its worst draw of twenty stays within a hundred times. At large ε·n the quartiles were
tighter on a narrow range far from zero (coordinates: 4 against 10 times the range), a price
paid for the buckets' width. The sprawl chance, the extension and the quarter-century year
buckets were tuned on the same columns; the extension lets an empty neighbour in with
probability ½·e^(−1.5) ≈ 11 %, which costs one bucket's width, never a sprawl.
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
from dpcore.mechanisms import Geometric
from dpcore.tables.schema import Schema, name_words
from dpcore.validation import RandomStateLike, check_epsilon, check_random_state

DEFAULT_BUDGET_SHARE = 0.10
#: A share of rows clipped above which the owner-only verdict warns.
CLIPPED_WARNING = 0.05
#: Bounds this many times wider than the values' range spread the rows over a sliver of [0, 1] (owner-only warning).
TOO_WIDE = 20
#: ε per column × rows below which bounds rarely fit (``benchmarks/bounds_quality.py``): the page says so.
ROWS_TIMES_EPSILON_FOR_FIT = 60
#: The chance that some empty bucket's noisy count clears the threshold and the bounds sprawl towards it.
SPRAWL_CHANCE = 0.01
#: A bucket next to the bounds joins them when its noisy count is at least this many noise scales.
EXTEND_SCALES = 1.5
_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE = -4, 9  # the buckets run over ±[10⁻⁴, 10⁹]
_YEARS_FROM, _YEARS_TO, _YEARS_PER_BUCKET = 1000.0, 2200.0, 25.0
_YEAR_WORDS = frozenset({"year", "yr"})


def bucket_edges(years: bool = False) -> NDArray[np.float64]:
    """The public bucket edges, sorted: 0 and ``±{1, 2, 5}·10^k`` over ±[10⁻⁴, 10⁹]; years: every 25 from 1000 to 2200."""
    if years:
        return np.arange(_YEARS_FROM, _YEARS_TO + 1.0, _YEARS_PER_BUCKET)
    powers = np.arange(_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE)
    # Integers over (or times) an exact power of ten: each edge is the float nearest its decimal.
    scaled = np.where(
        powers[:, None] < 0,
        np.array([1.0, 2.0, 5.0])[None, :] / 10.0 ** -np.minimum(powers, 0)[:, None],
        np.array([1.0, 2.0, 5.0])[None, :] * 10.0 ** np.maximum(powers, 0)[:, None],
    )
    positive = np.append(scaled.ravel(), 10.0**_LARGEST_MAGNITUDE)
    return np.concatenate([-positive[::-1], [0.0], positive])


def is_year_column(name: str) -> bool:
    """True when the header says the column holds years (``year_built``, ``YrSold``, ``GarageYrBlt``).

    Read from the header only, which is public: "values between 1800 and 2100" would be read
    from the data. "years" (a duration, ``years_of_education``) does not count.
    """
    return any(word in _YEAR_WORDS for word in name_words(name))


def bucket_counts(values: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.int64]:
    """How many values fall in each bucket ``[edges[i], edges[i+1])``; beyond the outer edges, in the outer buckets."""
    present = values[~np.isnan(values)]
    buckets = np.clip(np.searchsorted(edges, present, side="right") - 1, 0, edges.size - 2)
    return np.bincount(buckets, minlength=edges.size - 1).astype(np.int64)


def bounds_from_noisy_counts(noisy: NDArray[np.int64], edges: NDArray[np.float64], epsilon: float) -> tuple[float, float]:
    """Post-processing of the noisy histogram: the outer edges of the buckets that hold people (module docstring)."""
    scale = 1.0 / epsilon
    # An empty bucket's noise exceeds t with probability ½·exp(−t/scale): all of them stay below with 1 − SPRAWL_CHANCE.
    threshold = scale * np.log(noisy.size / (2.0 * SPRAWL_CHANCE))
    held = np.append(np.flatnonzero(noisy >= threshold), int(np.argmax(noisy)))
    low, high = int(held.min()), int(held.max())
    # The extension never crosses 0: so many columns start there that a sign needs a count that clears the threshold.
    while low > 0 and edges[low] != 0.0 and noisy[low - 1] >= EXTEND_SCALES * scale:
        low -= 1
    while high < noisy.size - 1 and edges[high + 1] != 0.0 and noisy[high + 1] >= EXTEND_SCALES * scale:
        high += 1
    return float(edges[low]), float(edges[high + 1])


def private_bounds(
    values: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    *,
    years: bool = False,
    coarse: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """``(lower, upper)`` of one column, ε-DP from one noisy histogram (module docstring).

    ``coarse``, public limits the owner vouches for, become the outer edges: buckets beyond
    them are left out and values beyond them counted in the outer buckets.
    """
    edges = bucket_edges(years)
    if coarse is not None:
        inside = edges[(edges > coarse[0]) & (edges < coarse[1])]
        edges = np.concatenate(([coarse[0]], inside, [coarse[1]]))
    noisy = Geometric(epsilon, 1, rng).randomise(bucket_counts(values, edges))
    return bounds_from_noisy_counts(noisy, edges, epsilon)


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
    returned. Columns whose header says "year" use quarter-century buckets; ``coarse`` (public
    limits the owner vouches for) narrows the number buckets. A ``random_state`` is for tests and
    demos only: it makes the noise replayable, and the ledger line says "demo seed". See the module
    docstring for the privacy argument.
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
        seeded=random_state is not None,  # a seed makes the noise replayable: a demo, as a seeded model is
        mechanism=(
            f"a geometric-noise histogram on public symmetric log buckets (years: quarter-centuries), "
            f"ε = {epsilon_per_column:g} per column"
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
