"""The app on a team's PostgreSQL ledger: a model trained in the browser is charged there, and the Privacy page shows it.

The pages do not know which database keeps the ledger: the same clicks as on the SQLite file,
with ``DPSTUDIO_LEDGER`` a ``postgresql://`` URL of the session's throw-away server.
"""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import screenshot, start_server, stop_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def ledger_url(postgres_server) -> str:
    return postgres_server.fresh_ledger()


@pytest.fixture
def server(tmp_path, ledger_url):
    process, url = start_server(tmp_path, ledger=ledger_url)
    yield url
    stop_server(process)


def test_a_model_trained_on_a_server_ledger_is_charged_there_and_shown_in_the_history(page, ledger_url):
    from dpcore.budget.ledger_db import connect

    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Training spends budget", exact=False).wait_for()
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Inside the model").wait_for()
    with closing(connect(ledger_url)) as conn:
        (label, epsilon), *more = conn.execute("SELECT label, epsilon FROM spends").fetchall()
    assert not more and float(epsilon) > 0

    page.get_by_role("link", name="2. Privacy").click()
    page.get_by_text("The dataset's history").first.wait_for()
    wait_until_idle(page)
    page.get_by_text(f"(ε = {float(epsilon):g}", exact=False).first.wait_for()
    history = page.locator("[data-testid='stDataFrame']").filter(has_text="spend").first
    history.get_by_text(label, exact=False).first.wait_for(state="attached")
    screenshot(page, "privacy_page_server_ledger")
