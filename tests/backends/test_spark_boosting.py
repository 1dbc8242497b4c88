"""Boosting and Gaussian Naive Bayes fitted on a Spark table are the models fitted on the same rows locally."""

from __future__ import annotations

import numpy as np
import pytest
from fitted import both_rows, fitted_state
from test_spark import table  # noqa: F401  (the module's table fixture)

from dpcore.models import DPBoostingClassifier, DPBoostingRegressor, DPGaussianNB

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("kind", "target"), [("parquet", "income"), ("csv", "label")])
def test_a_seeded_fit_on_spark_is_the_local_fit(spark, table, kind, target):  # noqa: F811
    """Rounds recompute each record's score on the executors; in memory the scores are carried: same bytes."""
    domain, local, rows = both_rows(spark, table[kind], target)
    if target == "income":
        makers = [lambda: DPBoostingRegressor(epsilon=2.0, n_rounds=4, bounds=domain.bounds,
                                              target_bounds=domain.target_bounds, random_state=7)]
    else:
        makers = [
            lambda: DPBoostingClassifier(epsilon=2.0, n_rounds=4, bounds=domain.bounds, classes=domain.classes, random_state=7),
            lambda: DPGaussianNB(epsilon=2.0, bounds=domain.bounds, classes=domain.classes, random_state=7),
        ]
    for make in makers:
        on_spark, on_one_machine = make().fit_rows(rows), make().fit_rows(local)
        assert fitted_state(on_spark) == fitted_state(on_one_machine)
        assert np.array_equal(on_spark.predict(local.X[:50]), on_one_machine.predict(local.X[:50]))
