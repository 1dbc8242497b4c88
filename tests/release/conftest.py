"""Fixtures of the release tests."""

from __future__ import annotations

import pytest
from release_testing import ADULT, ADULT_SCHEMA

from dpcore.loading import read_csv_path
from dpcore.schema import load_schema


@pytest.fixture(scope="session")
def adult():
    """The bundled Adult sample and its schema (do not modify: shared by the whole session)."""
    frame, _ = read_csv_path(ADULT)
    return frame, load_schema(ADULT_SCHEMA)
