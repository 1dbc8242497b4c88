"""Published figures we reproduce and compare against (facts from the papers, in tidy form)."""

from __future__ import annotations

import pandas as pd

PAPER_A_EPSILONS = (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64)

# Paper A (DP regression tree and forest), Table 3: MAE (sd) on min-max-normalised California
# Housing, unshuffled 10-fold cross-validation. Columns as in shared/spec/reproduction.md.
PAPER_A_TABLE3 = {
    "sk_tree_reg": [
        (0.1378, 0.031),
        (0.1361, 0.0273),
        (0.1342, 0.0265),
        (0.136, 0.0275),
        (0.1329, 0.0252),
        (0.1327, 0.0264),
        (0.1358, 0.031),
        (0.1317, 0.0246),
        (0.1343, 0.0262),
    ],
    "dp_mean": [(0.1915, 0.0309)] + [(0.1916, 0.0309)] * 8,
    "sk_partitioned_forest": [
        (0.1185, 0.0188),
        (0.1185, 0.0188),
        (0.1202, 0.0185),
        (0.1185, 0.0183),
        (0.1191, 0.0178),
        (0.1192, 0.0189),
        (0.1185, 0.0195),
        (0.1178, 0.0192),
        (0.1178, 0.0188),
    ],
    "dp_tree": [
        (0.497, 0.0525),
        (0.4708, 0.0537),
        (0.4485, 0.0341),
        (0.4222, 0.0193),
        (0.365, 0.0285),
        (0.3022, 0.0233),
        (0.2249, 0.0191),
        (0.1652, 0.0118),
        (0.1437, 0.0225),
    ],
    "dp_forest": [
        (0.2244, 0.0465),
        (0.2169, 0.0364),
        (0.2073, 0.0384),
        (0.1764, 0.0229),
        (0.1615, 0.0292),
        (0.1402, 0.0223),
        (0.1343, 0.025),
        (0.1284, 0.0233),
        (0.1226, 0.0218),
    ],
    "dp_tree_median": [
        (0.3097, 0.0426),
        (0.3275, 0.0405),
        (0.322, 0.0329),
        (0.3179, 0.0228),
        (0.314, 0.0306),
        (0.2993, 0.0184),
        (0.2866, 0.0213),
        (0.2422, 0.0242),
        (0.1701, 0.0205),
    ],
    "dp_forest_median": [
        (0.2186, 0.0423),
        (0.2219, 0.0369),
        (0.2177, 0.0235),
        (0.215, 0.0308),
        (0.2075, 0.0288),
        (0.1858, 0.0286),
        (0.1492, 0.0299),
        (0.1219, 0.0348),
        (0.1151, 0.031),
    ],
}

# The StatLib file's target range, which paper A's min-max normalisation divided by.
CALIFORNIA_TARGET_RANGE = (14_999.0, 500_001.0)


def paper_a_table() -> pd.DataFrame:
    """Paper A's Table 3 as tidy rows: model, epsilon, mae, sd (normalised units)."""
    rows = [
        {"model": model, "epsilon": eps, "mae": mae, "sd": sd}
        for model, cells in PAPER_A_TABLE3.items()
        for eps, (mae, sd) in zip(PAPER_A_EPSILONS, cells)
    ]
    return pd.DataFrame(rows)
