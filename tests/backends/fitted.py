"""The test table's rows on both backends, for the tests that compare a Spark fit with a local one."""

from __future__ import annotations

from test_spark import spark_module
from test_tables import messy_schema

from dpcore.backends import tables
from dpcore.tables.design import Design


def both_rows(spark, files: str, target: str):  # noqa: ANN001, ANN201
    """``(domain, local rows, Spark rows)`` of the test table's ``files`` with ``target`` declared (Spark: three partitions)."""
    schema = messy_schema(target)
    local = tables.read_rows_local(files, schema)
    return Design.domain(schema), local, spark_module.SparkRows(spark_module.read_table(spark, files).repartition(3), schema)
