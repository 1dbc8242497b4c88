"""A seeded model fitted on a Spark table is the model fitted on the same rows locally, byte for byte.

Boosting's rounds recompute each record's score on the executors while in memory the scores are
carried: the same bytes all the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from fitted import both_rows
from same_model import fitted_state
from test_spark import table  # noqa: F401  (the module's table fixture)

from dpcore.models import (
    DPBoostingClassifier,
    DPBoostingRegressor,
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPGaussianNB,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
)

pytestmark = pytest.mark.spark


def _models(target, domain):  # noqa: ANN001, ANN202
    """Every family that fits from rows, seeded: regression on the numeric target, classification on the labels."""
    if target == "income":
        common = {"epsilon": 2.0, "bounds": domain.bounds, "target_bounds": domain.target_bounds, "random_state": 7}
        return [
            lambda: DPRegressionTree(max_depth=3, **common),
            lambda: DPPartitionedForest(n_estimators=3, max_depth=3, leaf="median", **common),
            lambda: DPExtraTreesRegressor(n_estimators=3, max_depth=3, sampling="subsample", range_share=0.1, **common),
            lambda: DPBoostingRegressor(n_rounds=4, **common),
        ]
    common = {"epsilon": 2.0, "bounds": domain.bounds, "classes": domain.classes, "random_state": 7}
    return [
        lambda: DPRandomForestClassifier(n_estimators=3, max_depth=3, **common),
        lambda: DPExtraTreesClassifier(n_estimators=3, max_depth=3, **common),
        lambda: DPBoostingClassifier(n_rounds=4, **common),
        lambda: DPGaussianNB(**common),
    ]


@pytest.mark.parametrize(("kind", "target"), [("parquet", "income"), ("csv", "label")])
def test_a_seeded_fit_on_spark_is_the_local_fit(spark, table, kind, target):  # noqa: F811
    domain, local, rows = both_rows(spark, table[kind], target)
    for model in _models(target, domain):
        on_spark, on_one_machine = model().fit_rows(rows), model().fit_rows(local)
        assert fitted_state(on_spark) == fitted_state(on_one_machine), type(on_spark).__name__
        X = local.X[:50]
        assert np.array_equal(on_spark.predict(X), on_one_machine.predict(X))
