"""What "the same model" means in the backend tests."""

from __future__ import annotations

import pickle

from test_spark import spark_module
from test_tables import messy_schema

from dpcore.backends import tables
from dpcore.design import Design


def fitted_state(model) -> bytes:  # noqa: ANN001
    """Every attribute a fit sets (names ending in ``_``), pickled: equal bytes, the same model."""
    return pickle.dumps({name: value for name, value in sorted(vars(model).items()) if name.endswith("_")})


def both_rows(spark, files: str, target: str):  # noqa: ANN001, ANN201
    """``(domain, local rows, Spark rows)`` of the test table's ``files`` with ``target`` declared (Spark: three partitions)."""
    schema = messy_schema(target)
    local = tables.read_rows_local(files, schema)
    return Design.domain(schema), local, spark_module.SparkRows(spark_module.read_table(spark, files).repartition(3), schema)
