"""How often a group map shows a group where the table has no row, under the old and the new noise floor (issue 28).

A cell is dense when its noisy count reaches the larger of MinPts (5) and the noise floor. The old
floor, ``ln(cells / 2) / ε``, let about one empty cell per grid through; the new one,
``ln(cells / 0.1) / ε`` (:func:`dpcore.models.clustering.noise_floor`), one grid in twenty. Both are
applied to the same noisy histograms (the map's defaults: automatic resolution, Laplace noise,
corner neighbours) of California's longitude × latitude, the whole sample and 150 rows of it, over
200 seeds per ε. A group is spurious when every one of its cells is empty in the real table.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/noise_floor.py`` (about a minute).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import ndimage

from dpcore.models.clustering import AUTO_SHARE, DPGridDensityClustering

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "california_housing.csv"
BOUNDS = (np.array([-124.5, 32.5]), np.array([-114.0, 42.0]))  # the schema's declared bounds
FLOORS = {"old": lambda cells, eps: math.log(cells / 2) / eps, "new": lambda cells, eps: math.log(cells / 0.1) / eps}


def rates(points: np.ndarray, epsilon: float, seeds: int = 200) -> dict[str, tuple[float, float]]:
    """Per floor: the share of maps with any group, and with a group made of empty cells only."""
    found = {name: np.zeros((seeds, 2), dtype=bool) for name in FLOORS}
    for seed in range(seeds):
        model = DPGridDensityClustering(epsilon=epsilon, bounds=BOUNDS, random_state=seed).fit(points)
        truth = np.histogram2d(points[:, 0], points[:, 1], bins=model.edges_)[0]
        histogram_epsilon = epsilon * (1 - AUTO_SHARE)
        for name, floor in FLOORS.items():
            dense = model.noisy_counts_ >= max(5.0, floor(model.noisy_counts_.size, histogram_epsilon))
            labels, groups = ndimage.label(dense, structure=np.ones((3, 3)))
            rows = ndimage.sum(truth, labels, index=np.arange(1, groups + 1)) if groups else np.array([])
            found[name][seed] = groups > 0, bool((rows == 0).any())
    return {name: tuple(flags.mean(axis=0)) for name, flags in found.items()}


def main() -> None:
    frame = pd.read_csv(SAMPLE)
    cases = [(150, 0.025), (150, 0.1), (len(frame), 0.025), (len(frame), 0.1), (len(frame), 1.0)]
    print("| rows | ε | maps with a group: old floor | new floor | maps with a group in empty cells only: old | new |")
    print("|---:|---:|---:|---:|---:|---:|")
    for rows, epsilon in cases:
        part = frame if rows == len(frame) else frame.sample(rows, random_state=7)
        result = rates(part[["longitude", "latitude"]].to_numpy(), epsilon)
        print(
            f"| {rows:,} | {epsilon:g} | {result['old'][0]:.2f} | {result['new'][0]:.2f} | {result['old'][1]:.2f} | "
            f"{result['new'][1]:.2f} |"
        )


if __name__ == "__main__":
    main()
