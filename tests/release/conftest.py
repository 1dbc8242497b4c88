"""The Spark session of the release's Spark tests (marked ``spark``; ``pytest -m "not spark"`` skips them).

``local[2,4]``: two cores, and up to four attempts per task, so a test can make a task's first
attempt fail and watch Spark retry it. A session already started by another conftest is reused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from dpcore.backends.spark import spark_session

    session = spark_session("local[2,4]", **{"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
