"""Shared fixtures for the dpcore test suite.

The statistical helpers (the neighbouring-dataset privacy-loss estimator and the chi-square
helper) live in ``tests/privacy_testing.py`` so the model tests can import them too::

    from privacy_testing import neighbouring_privacy_loss, assert_within_epsilon

(``tests/`` is on ``sys.path`` because this conftest sits there without an ``__init__.py``;
the name ``tests`` itself is taken by a package that diffprivlib installs.)

Every statistical test in this suite is seeded, so it passes or fails deterministically;
each states the false-alarm rate it would have on a fresh seed (``ALPHA`` = 1e-6).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
from oidc_support import oidc_provider, oidc_provider_expired  # noqa: F401  (OpenID Connect providers on localhost)
from postgres_support import postgres_server  # noqa: F401  (a session's throw-away PostgreSQL server)
from privacy_testing import (  # noqa: F401  (re-exported for tests that prefer conftest)
    ALPHA,
    assert_exceeds_epsilon,
    assert_within_epsilon,
    chi_square_pvalue,
    discretise,
    estimate_privacy_loss,
    neighbouring_privacy_loss,
)

from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DATA = REPO / "sample_data"
SENTINEL = "SENTINEL-9731"


@pytest.fixture(scope="session")
def sentinel() -> str:
    """A value planted in test data that must never show up in any message."""
    return SENTINEL


@pytest.fixture(scope="session")
def _california():
    frame, info = read_csv_path(SAMPLE_DATA / "california_housing.csv")
    return frame, info


@pytest.fixture
def california_frame(_california):
    """The messy California Housing sample (207 missing total_bedrooms, a text column); a fresh copy."""
    return _california[0].copy()


@pytest.fixture(scope="session")
def california_info(_california) -> dict:
    return dict(_california[1])


@pytest.fixture
def california_schema():
    """The declared (public) schema of the California Housing sample; a fresh copy."""
    return load_schema(SAMPLE_DATA / "california_housing.schema.json")


@pytest.fixture(scope="session")
def _adult():
    return read_csv_path(SAMPLE_DATA / "adult.csv")[0]


@pytest.fixture
def adult_frame(_adult):
    """The Adult census sample (32,561 rows); a fresh copy."""
    return _adult.copy()


@pytest.fixture
def adult_part(tmp_path, adult_frame) -> Path:
    """The first 4,000 rows of the Adult sample as a CSV file (the command-line tests' table)."""
    path = tmp_path / "adult.csv"
    adult_frame.head(4000).to_csv(path, index=False)
    return path


@pytest.fixture
def adult_schema():
    """The declared (public) schema of the Adult sample; a fresh copy."""
    return load_schema(SAMPLE_DATA / "adult.schema.json")


@pytest.fixture
def ledger_path(tmp_path) -> Path:
    """A fresh SQLite ledger file for one test."""
    return tmp_path / "ledger.sqlite3"


# --- app tests (Streamlit's AppTest) ----------------------------------------------------------

APP = str(REPO / "dpstudio" / "app.py")
#: How long one AppTest script run may take. Generous on purpose: the limit is wall-clock time, a
#: run takes seconds on a quiet machine and several times that while both cores are busy.
APP_TIMEOUT = 900


#: pytest's own main module, as the process started.
_PYTESTS_MAIN = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def _pytests_main_module(monkeypatch):
    """Every test starts and ends with pytest's ``__main__``: an AppTest installs the app script there and leaves
    it, and a later test's spawned process would then run the app on start-up and die before its work (a full
    run waited 15 minutes for eight such processes). Here for every test, whichever helper opened the app."""
    monkeypatch.setitem(sys.modules, "__main__", _PYTESTS_MAIN)


@pytest.fixture(scope="session", autouse=True)
def _scan_streamlit_components_once():
    """Every new AppTest scans all installed packages' metadata for Streamlit components; the answer never changes within a run."""
    if "streamlit" in sys.modules:  # a process that collected app tests
        from streamlit.components.v2 import manifest_scanner

        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture
def app(tmp_path, monkeypatch):
    """Open the app (optionally on a page) in a fresh AppTest session with its own ledger file."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))

    def open_page(page: str | None = None):
        at = AppTest.from_file(APP, default_timeout=APP_TIMEOUT).run()
        if page is not None:
            at.switch_page(f"pages/{page}.py").run()
        return at

    return open_page


# --- browser tests (Playwright driving Debian's Chromium) ---------------------------------------


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module; each test opens its own context (cookies, storage, downloads) on its own server.

    Not one per test process: Playwright's event loop would then run beside every later test of the process,
    and a test that runs one of its own (the sign-in token tests, through Authlib) would fail.
    """
    sys.path.insert(0, str(REPO / "tests" / "browser"))
    from browser_support import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: the README's test command installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def server(tmp_path):
    from browser_support import start_server, stop_server

    process, url = start_server(tmp_path)
    yield url
    stop_server(process)


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 2400}, accept_downloads=True)
    page = context.new_page()
    # Every wait follows the page's state, so a generous limit costs nothing when the machine is
    # quiet and keeps a busy machine (a chart drawn on a loaded core) from failing the run.
    page.set_default_timeout(180_000)
    page.goto(server)
    page.get_by_text("Declare the columns").wait_for()
    yield page
    context.close()


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every test marked ``spark`` (``pytest -m "not spark"`` skips them where there is no Java).

    ``local[2,4]``: two cores, and up to four attempts per task, so a test can make a task's first
    attempt fail and watch Spark retry it; four shuffle partitions; stopped at the end of the run.
    """
    pytest.importorskip("pyspark")
    from dpcore.backends.spark import spark_session

    session = spark_session("local[2,4]", **{"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


# --- running in parallel (pytest-xdist) -------------------------------------------------------


def pytest_collection_modifyitems(config, items):
    """Browser and Spark tests are slow; every Spark test runs on one worker, so a parallel run starts one Spark session.

    The slowest kinds run first (browser, then the app's pages, then other slow tests; modules
    kept together): workers take the next test as they finish, so a long test started last
    would keep one worker busy while the other waits.
    """
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
        if item.get_closest_marker("spark") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)

    def weight(item) -> int:
        if item.get_closest_marker("browser"):
            return 0
        if "/tests/app/" in str(item.path):
            return 1
        return 2

    items.sort(key=weight)
