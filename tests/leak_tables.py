"""The issue's neighbouring tables: 20 people aged 20–29, and the same with one more person aged 97 (privacy-tests.md row 23).

Read from the data, the age bound moves from 29 to 97 with certainty; declared, it stays put.
Shared by the tests of every artefact that can leave the owner's screen.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.tables.schema import ColumnSpec, Schema, suggest_schema

OLDEST = 97


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D (ages 20–29, twice over) and D′ = D plus one person aged 97."""
    ages = np.arange(20, 30).repeat(2)
    d = pd.DataFrame({"age": ages.astype(float), "income": 1000.0 + 50.0 * (ages - 20)})
    d_prime = pd.concat([d, pd.DataFrame({"age": [float(OLDEST)], "income": [1500.0]})], ignore_index=True)
    return d, d_prime


def read_from_data(frame: pd.DataFrame, target: str | None = "income") -> Schema:
    """The schema suggested from ``frame`` (its bounds read from the rows, flagged as such)."""
    schema = suggest_schema(frame)
    if target is not None:
        schema[target].role = "target"
    return schema


def declared(target: str | None = "income", source: str = "") -> Schema:
    """Public bounds, the same for every table."""
    return Schema(
        [
            ColumnSpec("age", lower=0.0, upper=120.0, source=source),
            ColumnSpec("income", role="target" if target == "income" else "feature", lower=0.0, upper=5000.0),
        ]
    )
