"""Shared tables and plans of the release tests (``tests/release`` is on ``sys.path``, like ``tests/``).

Statistical tests are seeded and calibrated: each states its false-alarm rate α under a
correct implementation (normal or chi-square tails), never a single draw with an ad-hoc
tolerance. With α = 1e-6 per check the release tests raise a false alarm less than once in
ten thousand runs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dpcore import release as R
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import ColumnSpec, Schema, load_schema

ALPHA = 1e-6
Z = stats.norm.isf(ALPHA / 2)  # two-sided normal quantile for α = 1e-6 (≈ 4.89)
ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "sample_data" / "adult.csv"
ADULT_SCHEMA = ROOT / "sample_data" / "adult.schema.json"
COLOURS = ["red", "green", "blue", "black", "white"]


def small_schema(**extra) -> Schema:
    """An identifier, a two-category, a five-category and a numeric column (plus ``extra`` specs)."""
    columns = [
        ColumnSpec("id", role="identifier", kind="categorical"),
        ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
        ColumnSpec("colour", kind="categorical", categories=COLOURS),
        ColumnSpec("score", kind="numeric", lower=0, upper=100),
    ]
    return Schema(columns + list(extra.values()))


def small_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` random rows of :func:`small_schema`'s columns."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": [f"P{i:07d}" for i in range(n)],
            "smoker": np.where(rng.random(n) < 0.3, "yes", "no"),
            "colour": np.array(COLOURS)[rng.integers(0, len(COLOURS), n)],
            "score": np.round(rng.uniform(0, 100, n), 1),
        }
    )


def plan_with(**mechanisms) -> R.ReleasePlan:
    """A plan that drops ``id`` and treats each named column as given (``colour={"mechanism": "k-ary", ...}``)."""
    plan = R.ReleasePlan([R.ColumnPlan("id")])
    for name, spec in mechanisms.items():
        plan.columns.append(R.ColumnPlan(name, **spec))
    return plan


@cache
def adult_table():
    """The bundled Adult sample and its schema, read once (shared: do not modify)."""
    frame, _ = read_csv_path(ADULT)
    return frame, load_schema(ADULT_SCHEMA)
