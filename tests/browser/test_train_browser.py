"""Train on a two-class table: the boosting rounds say which first level the exponential mechanism picked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import open_sample, screenshot  # noqa: E402

pytestmark = pytest.mark.browser


def test_boosting_on_adult_shows_its_picked_first_levels(page):
    open_sample(page, "Adult census income (sample)", "32,561 rows")
    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Training spends budget", exact=False).wait_for()
    # The model the table's size suggests, and why, before anything is picked.
    page.get_by_text("Suggested for this table's size (32,561 rows", exact=False).wait_for()
    screenshot(page, "train_adult_suggestion")
    page.get_by_role("button", name="Train").click()
    # While it trains, the bar says the time elapsed and, once its first rounds are measured, the time left. A quiet
    # machine may finish the fit before the browser sees the bar: then there is nothing to look at.
    bar = page.get_by_text("Training DP boosted trees (classifier): ", exact=False)
    bar.or_(page.get_by_text("Inside the model")).first.wait_for(timeout=120_000)
    shown = bar.all_inner_texts()  # read at once, without waiting: the bar goes when the fit ends
    if shown:
        assert "measuring the time left" in shown[0] or " s left" in shown[0]
        screenshot(page, "train_adult_time_left")
    page.get_by_text("Inside the model").wait_for(timeout=120_000)
    page.get_by_text("DP boosted trees (classifier) — ε", exact=False).wait_for()  # the task's default model
    page.get_by_text("first split may be picked", exact=False).wait_for()
    rounds = page.locator("[data-testid='stDataFrame']").filter(has_text="splits").first
    # The grid draws on a canvas; its cells' text lives in the grid's accessible (hidden) table.
    rounds.get_by_text("picked: ", exact=False).first.wait_for(state="attached")
    screenshot(page, "train_adult_picks")
