"""AppTest fixtures: each test gets its own ledger file and a fresh app session."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))

    def open_page(page: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120).run()
        if page is not None:
            at.switch_page(f"pages/{page}.py").run()
        return at

    return open_page
