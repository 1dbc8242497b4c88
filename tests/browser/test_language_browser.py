"""DP Studio in Vietnamese in a real browser: the sidebar switch, the browser's own language, Vietnamese numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import screenshot  # noqa: E402

pytestmark = pytest.mark.browser


def _sidebar(page):
    return page.locator("[data-testid='stSidebar']")


def test_switching_to_vietnamese_translates_the_page_and_its_numbers(page):
    """An English browser: the switch turns the headings, the sentences and the numbers Vietnamese, and back."""
    assert page.get_by_role("heading", name="1. Data").is_visible()
    _sidebar(page).get_by_text("Tiếng Việt").click()
    page.get_by_role("heading", name="1. Dữ liệu").wait_for()
    page.get_by_text("Khai báo các cột").first.wait_for()
    # The bundled sample has 20,640 rows: a Vietnamese page writes 20.640.
    assert _sidebar(page).get_by_text("20.640 dòng", exact=False).first.is_visible()
    assert _sidebar(page).get_by_text("Ngân sách quyền riêng tư").first.is_visible()
    screenshot(page, "language_data_page_vietnamese")

    _sidebar(page).get_by_role("link", name="2. Quyền riêng tư").click()
    page.get_by_role("heading", name="2. Quyền riêng tư").wait_for()
    page.get_by_text("Cam kết của chúng tôi", exact=False).first.wait_for()
    screenshot(page, "language_privacy_page_vietnamese")

    _sidebar(page).get_by_text("English").click()
    page.get_by_role("heading", name="2. Privacy").wait_for()


def test_a_vietnamese_browser_opens_the_app_in_vietnamese(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1600}, locale="vi-VN")
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(server)
        page.get_by_role("heading", name="1. Dữ liệu").wait_for()
        page.get_by_text("Không, mỗi người một dòng").wait_for()
        _sidebar(page).get_by_text("Đã tiêu ε 0 trên 1", exact=False).first.wait_for()
        assert _sidebar(page).get_by_text("20.640 dòng", exact=False).first.is_visible()
        screenshot(page, "language_vietnamese_browser")
    finally:
        context.close()
