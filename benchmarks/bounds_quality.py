"""Bulk "estimate privately": how well do the bounds fit, per kind of column? (issue 28, item 2)

Six kinds of column a real table holds, drawn with a seed (public shapes, nothing read from a
private table): **years** (1872–2010, most after 1950), **counts with a long tail** (log-normal,
median ≈ 1,200), **mostly-zero** (99.5 % zeros, the rest 100–800, as a pool area), **negative
coordinates** (longitudes −124 … −114), **tiny fractions** (Beta(1, 30)) and **prices** (log-
normal, median ≈ 180,000). Each at 1,500 and 20,000 rows.

*Before* is the previous estimator (5 % / 95 % exponential-mechanism quantiles on the asinh
scale of a coarse range [0, 10⁶], rounded out to ``±{1, 2, 5}·10^k``) at its page default of
ε = 0.1 per column; *after* is :func:`dpcore.tables.bounds.private_bounds` at the ε per column the
page now asks: 10 % of a fresh budget ε = 1 split over a 10-column table (0.01) and over a
2-column choice (0.05); *before* is also run at 0.01 for a like-for-like row.

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
def _before_grid() -> np.ndarray:
    powers = 10.0 ** np.arange(-3, 13)
    positive = np.unique((np.array([1.0, 2.0, 5.0])[None, :] * powers[:, None]).ravel())
    return np.concatenate([-positive[::-1], [0.0], positive])


def _before_quantile(values: np.ndarray, q: float, epsilon: float, rng: np.random.Generator) -> float:
    low, high = np.arcsinh([0.0, 1e6])
    scaled = np.sort(np.clip(np.arcsinh(values), low, high))
    edges = np.concatenate(([low], scaled, [high]))
    with np.errstate(divide="ignore"):
        scores = np.log(np.diff(edges)) - epsilon / 2 * np.abs(np.arange(scaled.size + 1) - q * scaled.size)
    i = int(np.argmax(scores + rng.gumbel(size=scores.shape)))
    return float(np.sinh(edges[i] + rng.random() * (edges[i + 1] - edges[i])))


def before_bounds(values: np.ndarray, epsilon: float, rng: np.random.Generator) -> tuple[float, float]:
    a, b = sorted((_before_quantile(values, 0.05, epsilon / 2, rng), _before_quantile(values, 0.95, epsilon / 2, rng)))
    grid = _before_grid()
    low = grid[max(int(np.searchsorted(grid, a, side="right")) - 1, 0)]
    high = grid[min(int(np.searchsorted(grid, b, side="left")), grid.size - 1)]
    return float(low), float(max(high, low + 1e-3))


def quality(values: np.ndarray, bounds: tuple[float, float]) -> tuple[float, float]:
    lower, upper = bounds
    clipped = float(np.mean((values < lower) | (values > upper)))
    return clipped, (upper - lower) / (float(values.max() - values.min()) or 1.0)


def main() -> None:
    rows = []
    runs = [("before", 0.1), ("before", 0.01), ("after", 0.01), ("after", 0.05)]
    for n in (1_500, 20_000):
        data = columns(n, np.random.default_rng(n))
        for kind, (values, years) in data.items():
            for name, epsilon in runs:
                rng = np.random.default_rng(0)
                found = [
                    before_bounds(values, epsilon, rng) if name == "before" else private_bounds(values, epsilon, rng, years=years)
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
    shown = table.copy()
    for column in ("clipped (median)", "clipped (worst)"):
        shown[column] = shown[column].map(lambda v: f"{v:.1%}")
    for column in ("width ÷ range (median)", "width ÷ range (worst)"):
        shown[column] = shown[column].map(lambda v: f"{v:.3g}")
    markdown = shown.to_markdown(index=False)
    (RESULTS / "bounds_quality.md").write_text(markdown + "\n", encoding="utf-8")
    print(markdown)


if __name__ == "__main__":
    main()
