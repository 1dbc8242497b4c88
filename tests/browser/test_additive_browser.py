"""The Train page in a real browser: pick the DP additive model, read what it is, train it, see each column's pull."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import pick_model, screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def test_pick_the_additive_model_and_train_it(page):
    pick_model(page, "DP additive model (regressor)")
    page.get_by_text("One step function per column", exact=False).wait_for()
    screenshot(page, "train_additive_chosen")
    page.get_by_role("button", name="Train").click()
    page.get_by_text("DP additive model (regressor) — ε", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("Inside the model").wait_for()
    page.get_by_text("How much each feature moves the prediction", exact=False).wait_for()
    wait_until_idle(page)
    screenshot(page, "train_additive_trained")
