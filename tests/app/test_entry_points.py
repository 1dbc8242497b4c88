"""The checkout's top-level ``app.py`` (``streamlit run app.py``) opens the same app as ``dpstudio``."""

from __future__ import annotations

import tomllib

from conftest import APP_TIMEOUT, REPO


def test_streamlit_run_app_py_opens_every_page(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APP_TIMEOUT).run()
    assert not at.exception
    assert "Declare the columns" in [subheader.value for subheader in at.subheader]
    at.switch_page("dpstudio/pages/train.py").run()
    assert not at.exception and [title.value for title in at.title] == ["3. Train"]


def test_the_checkout_runs_with_the_settings_dpstudio_passes():
    checkout = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    packaged = tomllib.loads((REPO / "dpstudio" / "streamlit.toml").read_text(encoding="utf-8"))
    assert checkout == packaged and checkout["server"]["enableXsrfProtection"] is True
