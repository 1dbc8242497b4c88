"""The Train page in a real browser: train the multiplicative-weights experts in streaming form and see their weights."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import pick_model, screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def _budget_line(page) -> str:
    return page.locator("[data-testid='stSidebar']").get_by_text("ε spent", exact=False).first.inner_text()


def test_train_the_experts_and_see_their_weights_move(page):
    pick_model(page, "DP experts by multiplicative weights (regressor)")
    page.get_by_text("Spends ε once, in parallel", exact=False).wait_for()
    page.get_by_text("Model settings").click()
    form = page.locator("[data-testid='stSelectbox']").filter(has=page.get_by_text("form", exact=True))
    form.wait_for()
    wait_until_idle(page)  # opening the expander reruns the page; a list opened before that closes again
    try:
        for attempt in range(3):
            form.click()
            try:
                page.get_by_role("option", name="streaming").click(timeout=5_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
    finally:
        screenshot(page, "train_experts_settings")
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Each expert learned from its own part", exact=False).wait_for(timeout=120_000)
    chart = page.locator("[data-testid='stVegaLiteChart']").last
    chart.scroll_into_view_if_needed()
    chart.locator("canvas, svg").first.wait_for()
    wait_until_idle(page)
    screenshot(page, "train_experts_weights")
    box = chart.locator("canvas, svg").first.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100
    assert "spent 0.25" in _budget_line(page) or "spent 0,25" in _budget_line(page), _budget_line(page)  # the suggested ε
