"""One local Spark session for every Spark test of the run (starting one takes seconds).

Tests that need it are marked ``spark`` (``pytest -m "not spark"`` skips them where there is no Java).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` session with the UI off and four shuffle partitions, stopped at the end of the run."""
    pytest.importorskip("pyspark")
    from dpcore.backends.spark import spark_session

    session = spark_session("local[2]", **{"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
