"""A tiny table with a declared domain, shared by the synthetic-copy tests (small, so Private-PGM compiles fast)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.release import default_plan
from dpcore.tables.schema import ColumnSpec, Schema


def tiny_schema() -> Schema:
    return Schema(
        [
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False),
            ColumnSpec("age", kind="numeric", lower=0, upper=90, may_be_missing=False),
            ColumnSpec("sick", role="target", kind="categorical", categories=["no", "yes"], may_be_missing=False),
        ]
    )


def tiny_plan(schema: Schema | None = None):
    plan = default_plan(schema or tiny_schema())
    plan["age"].bins = 3
    return plan


def tiny_table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Smokers are older and sicker: strong pairwise relations the copy should keep."""
    rng = np.random.default_rng(seed)
    smoker = rng.random(n) < 0.3
    age = np.where(smoker, rng.uniform(40, 90, n), rng.uniform(0, 60, n))
    sick = rng.random(n) < np.where(smoker, 0.7, 0.1) + (age > 60) * 0.2
    return pd.DataFrame({"smoker": np.where(smoker, "yes", "no"), "age": age.round(1), "sick": np.where(sick, "yes", "no")})
