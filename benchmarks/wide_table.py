"""A public analog of a 76-column table from the wild, built from bundled Adult.

The owner's table that prompted issue #28 had 76 columns: a few numeric measurements with long
tails, many categorical codes, and derived copies of both (the same quantity in other units, a
recoded category). This builds the same shape from ``sample_data/adult.csv`` (32,561 rows):
Adult's 15 columns, then 61 derived ones, cycling over its 13 features — a numeric feature plus
Gaussian noise of a tenth of its declared range (clipped to the declared bounds), or a categorical
feature with a fifth of its values replaced by a random declared category. Every bound and
category is declared (copied from the Adult schema), so no domain is read from the data.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from benchmarks._common import ROOT, adult_schema
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import Schema

WIDTH = 76


def wide_adult(width: int = WIDTH, rows: int | None = None, seed: int = 2026) -> tuple[pd.DataFrame, Schema]:
    """Adult widened to ``width`` columns with noisy numeric and recoded categorical copies (see the module)."""
    rng = np.random.default_rng(seed)
    frame, _unused = read_csv_path(ROOT / "sample_data" / "adult.csv")
    if rows is not None:
        frame = frame.iloc[:rows].reset_index(drop=True)
    schema = adult_schema()
    features = [spec for spec in schema.columns if spec.role == "feature"]
    specs = list(schema.columns)
    derived: dict[str, pd.Series] = {}
    for j in range(width - len(specs)):
        base = features[j % len(features)]
        spec = copy.deepcopy(base)
        spec.name = f"{base.name}_v{j // len(features) + 1}"
        spec.source = f"derived from {base.name} (benchmark analog of a wide table)"
        column = frame[base.name]
        if base.kind == "numeric":
            values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
            spread = 0.1 * (float(base.upper) - float(base.lower))
            derived[spec.name] = pd.Series(np.clip(values + rng.normal(0, spread, len(values)), base.lower, base.upper))
        else:
            values = column.astype(object).to_numpy().copy()
            swap = rng.random(len(values)) < 0.2
            values[swap] = rng.choice(np.asarray(base.categories, dtype=object), int(swap.sum()))
            derived[spec.name] = pd.Series(values)
        specs.append(spec)
    wide = pd.concat([frame, pd.DataFrame(derived)], axis=1)
    return wide, Schema(specs, schema.privacy_unit, schema.rows_per_person)
