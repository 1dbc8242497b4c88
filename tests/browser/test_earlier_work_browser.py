"""The app's plain address offers this browser's earlier work, and another browser sees none of it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import open_sample, screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def test_the_plain_address_offers_earlier_work_to_reopen(page, browser, server):
    open_sample(page, "Adult census income (sample)", "32,561 rows")
    first = page.url
    assert "workspace=" in first
    page.wait_for_function("document.cookie.includes('dpstudio_workspaces=')")
    page.goto(server)  # the plain address: a new workspace
    page.get_by_text("Declare the columns").wait_for()
    wait_until_idle(page)
    assert page.url != first
    page.get_by_text("Earlier work in this browser (1)").click()
    page.get_by_text("Adult census income (sample)", exact=False).first.wait_for()
    screenshot(page, "earlier_work_offered")
    page.get_by_role("button", name="Reopen").click()
    page.get_by_text("32,561 rows", exact=False).first.wait_for()
    page.wait_for_url(first)
    screenshot(page, "earlier_work_reopened")

    stranger = browser.new_context(viewport={"width": 1400, "height": 1200})
    try:
        other = stranger.new_page()
        other.goto(server)
        other.get_by_text("Declare the columns").wait_for()
        wait_until_idle(other)
        assert other.get_by_text("Earlier work in this browser", exact=False).count() == 0
    finally:
        stranger.close()
