"""Bulk "estimate privately": how well do the bounds fit, per kind of column? (issue 28, item 2)

Six kinds of column a real table holds, drawn with a seed (public shapes, nothing read from a
private table): **years** (1872–2010, most after 1950), **counts with a long tail** (log-normal,
median ≈ 1,200), **mostly-zero** (99.5 % zeros, the rest 100–800, as a pool area), **negative
coordinates** (longitudes −124 … −114), **tiny fractions** (Beta(1, 30)) and **prices** (log-
normal, median ≈ 180,000). Each at 300, 1,500 and 20,000 rows.

*Before* is the previous estimator (the quartiles by the exponential mechanism on a public
symmetric log grid of three significant digits, ±10⁻⁴ … 10⁹, years on a grid of years, widened
to fences two quartile spreads out and rounded outward); *after* is
:func:`dpcore.tables.bounds.private_bounds` (one geometric-noise histogram on public ±{1, 2, 5}·10^k
buckets, years in quarter-centuries; the edges of the buckets that hold people). Both at the ε
per column the page asks: 10 % of a fresh budget ε = 1 split over a 10-column table (0.01) and
over a 2-column choice (0.05), and at 0.2 (a small table's owner spending more).

Per column kind: the share of rows clipped (below + above) and the width of the bounds ÷ the
column's true range (1 is perfect; 1,000 means a model sees the people in a thousandth of its
range), the median and the worst over 20 draws.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bounds_quality.py`` (about half a minute)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.tables.bounds import private_bounds

RESULTS = Path(__file__).resolve().parent / "results"
DRAWS = 20


def columns(n: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, bool]]:
    """``{kind: (values, header says year)}``."""
    mostly_zero = np.where(rng.random(n) < 0.995, 0.0, rng.integers(100, 800, n))
    return {
        "years": (np.clip(np.round(2010 - rng.gamma(1.5, 25, n)), 1872, 2010), True),
        "counts, long tail": (np.round(rng.lognormal(7.1, 0.8, n)), False),
        "mostly zero": (mostly_zero.astype(float), False),
        "negative coordinates": (np.round(rng.uniform(-124.3, -114.3, n), 2), False),
        "tiny fractions": (rng.beta(1, 30, n), False),
        "prices": (np.round(rng.lognormal(12.1, 0.4, n), -2), False),
    }


# --- the previous estimator, kept here so one run compares both ---------------------------------
def _before_grid(years: bool, digits: int = 3) -> np.ndarray:
    if years:
        return np.arange(1000.0, 2201.0)
    mantissas = np.arange(10 ** (digits - 1), 10**digits, dtype=float)
    scaled = (mantissas[None, :] * 10.0 ** (np.arange(-4, 9) - (digits - 1))[:, None]).ravel()
    positive = np.append(scaled, 1e9)
    return np.concatenate([-positive[::-1], [0.0], positive])


def _before_draw(values: np.ndarray, grid: np.ndarray, log_base: np.ndarray, q: float, epsilon: float, rng) -> int:
    target = q * values.size
    below, at_or_below = np.searchsorted(values, grid, side="left"), np.searchsorted(values, grid, side="right")
    scores = log_base - epsilon / 2 * np.maximum(np.maximum(below - target, target - at_or_below), 0.0)
    return int(np.argmax(scores + rng.gumbel(size=scores.shape)))


def before_bounds(values: np.ndarray, epsilon: float, rng: np.random.Generator, years: bool) -> tuple[float, float]:
    grid = _before_grid(years)
    if years:
        log_base = np.zeros(grid.size)
    else:
        scaled = np.arcsinh(grid)
        middles = (scaled[1:] + scaled[:-1]) / 2
        log_base = np.log(np.where(grid == 0, np.log(10.0), np.diff(np.concatenate(([scaled[0]], middles, [scaled[-1]])))))
    ordered = np.sort(values[~np.isnan(values)])
    first = _before_draw(ordered, grid, log_base, 0.25, epsilon / 2, rng)
    above = np.where(np.arange(grid.size) >= first, log_base, -np.inf)
    third = _before_draw(ordered, grid, above, 0.75, epsilon / 2, rng)
    position = grid if years else np.arcsinh(grid)
    spread = position[third] - position[first]
    lower, upper = position[first] - 2 * spread, position[third] + 2 * spread
    if not years:
        lower, upper = np.sinh(lower), np.sinh(upper)
    rounded = grid[::10] if years else _before_grid(False, 2)
    low = rounded[max(int(np.searchsorted(rounded, max(lower, grid[0]), side="right")) - 1, 0)]
    high = rounded[min(int(np.searchsorted(rounded, min(upper, grid[-1]), side="left")), rounded.size - 1)]
    return float(low), float(max(high, low + 1e-4))


def quality(values: np.ndarray, bounds: tuple[float, float]) -> tuple[float, float]:
    lower, upper = bounds
    clipped = float(np.mean((values < lower) | (values > upper)))
    return clipped, (upper - lower) / (float(values.max() - values.min()) or 1.0)


def main() -> None:
    rows = []
    runs = [("before", 0.01), ("after", 0.01), ("before", 0.05), ("after", 0.05), ("before", 0.2), ("after", 0.2)]
    for n in (300, 1_500, 20_000):
        data = columns(n, np.random.default_rng(n))
        for kind, (values, years) in data.items():
            for name, epsilon in runs:
                rng = np.random.default_rng(0)
                found = [
                    before_bounds(values, epsilon, rng, years)
                    if name == "before"
                    else private_bounds(values, epsilon, rng, years=years)
                    for _ in range(DRAWS)
                ]
                measured = np.array([quality(values, b) for b in found])
                median_bounds = (np.median([b[0] for b in found]), np.median([b[1] for b in found]))
                rows.append(
                    {
                        "rows": n,
                        "column": kind,
                        "estimator": name,
                        "ε per column": epsilon,
                        "median bounds": f"[{median_bounds[0]:.4g}, {median_bounds[1]:.4g}]",
                        "clipped (median)": np.median(measured[:, 0]),
                        "clipped (worst)": measured[:, 0].max(),
                        "width ÷ range (median)": np.median(measured[:, 1]),
                        "width ÷ range (worst)": measured[:, 1].max(),
                    }
                )
    table = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "bounds_quality.csv", index=False)
    cells = table.assign(
        cell=[
            f"{r['clipped (median)']:.1%} / {r['width ÷ range (median)']:.3g} (worst {r['clipped (worst)']:.0%} / "
            f"{r['width ÷ range (worst)']:.3g})"
            for _, r in table.iterrows()
        ],
        run=[f"{r['estimator']} ε={r['ε per column']:g}" for _, r in table.iterrows()],
    )
    wide = cells.pivot(index=["rows", "column"], columns="run", values="cell")
    wide = wide[[f"{name} ε={epsilon:g}" for name, epsilon in runs]].reset_index()
    wide["rows"] = wide["rows"].map(lambda n: f"{n:,}")
    wide["column"] = pd.Categorical(wide["column"], categories=list(columns(10, np.random.default_rng(0))), ordered=True)
    markdown = wide.sort_values(
        ["rows", "column"], key=lambda c: c.str.replace(",", "").astype(int) if c.name == "rows" else c
    ).to_markdown(index=False)
    (RESULTS / "bounds_quality.md").write_text(markdown + "\n", encoding="utf-8")
    print(markdown)


if __name__ == "__main__":
    main()
