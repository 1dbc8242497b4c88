"""Every page in English and in Vietnamese (issue 19): no exception, and the Vietnamese pages really are Vietnamese."""

from __future__ import annotations

import pytest

from dpcore.i18n import _, language, set_language
from dpstudio.support.language import CHOSEN_KEY, SWITCH_KEY

APP_FILE = "dpstudio/app.py"
PAGES = {
    "data": "1. Data",
    "privacy": "2. Privacy",
    "train": "3. Train",
    "compare": "4. Compare",
    "export": "5. Export",
    "groups": "6. Groups",
    "attack": "Attack",
}


@pytest.fixture
def open_in(tmp_path, monkeypatch):
    """Open the app on a page in a language, as a browser asking for that language would."""
    from conftest import APP, APP_TIMEOUT
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))

    def open_page(page: str, code: str):
        speak(code)
        at = AppTest.from_file(APP, default_timeout=APP_TIMEOUT)
        at.session_state[CHOSEN_KEY] = code
        at.run()
        if page != "data":
            at.switch_page(f"pages/{page}.py").run()
        return at

    yield open_page
    speak("en")


def speak(code: str) -> None:
    """AppTest formats widget options (``format_func``) in the test's own thread, so it must speak the session's language."""
    set_language(code)


@pytest.mark.parametrize("code", ["en", "vi"])
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs_in_both_languages(open_in, page, code):
    at = open_in(page, code)
    assert not at.exception, [e.value for e in at.exception]
    with language(code):
        expected = _(PAGES[page])
    assert at.title and at.title[0].value == expected


def test_a_vietnamese_session_reads_vietnamese_with_vietnamese_numbers(open_in):
    at = open_in("data", "vi")
    sidebar = " ".join(str(m.value) for m in at.sidebar.markdown) + " ".join(str(c.value) for c in at.sidebar.caption)
    assert "Ngân sách quyền riêng tư" in sidebar
    assert "20.640 dòng" in sidebar  # the bundled sample's 20,640 rows, written the Vietnamese way
    assert at.radio(key="data_source.vi").options == ["Một bảng mẫu có sẵn", "Tệp CSV của tôi", "Một cơ sở dữ liệu"]


def test_the_switch_changes_the_language_and_keeps_the_work(open_in):
    # (AppTest draws the app's sidebar on the first run only; later runs run the page alone.)
    at = open_in("data", "en")
    assert at.title[0].value == "1. Data"
    at.sidebar.radio(key=SWITCH_KEY).set_value("vi").run()
    speak("vi")
    assert not at.exception
    assert at.title[0].value == "1. Dữ liệu"
    at.radio(key="data_source.vi").set_value("My own CSV file").run()  # a later run remembers the language
    assert at.title[0].value == "1. Dữ liệu" and at.radio(key="data_source.vi").value == "My own CSV file"
    at.switch_page("pages/privacy.py").run()
    assert at.title[0].value == "2. Quyền riêng tư"


def test_an_engine_error_reaches_the_page_in_the_session_language(open_in):
    at = open_in("data", "vi")
    at.radio(key="data_source.vi").set_value("My own CSV file").run()
    at.file_uploader(key="upload").set_value(("empty.csv", b"", "text/csv")).run()
    errors = " ".join(str(e.value) for e in at.error)
    assert "Tệp trống" in errors and "Bảng và các khai báo hiện tại của bạn vẫn được giữ nguyên" in errors
