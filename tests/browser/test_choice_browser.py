"""The Train page in a real browser: let DP choose the model, read what the choice costs, train, see which was chosen."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def test_let_dp_choose_the_model_and_train_it(page):
    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Let DP choose the model").click()
    page.get_by_text("A quarter of ε compares two learners", exact=False).wait_for()
    wait_until_idle(page)
    screenshot(page, "train_choice_offered")
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Let DP choose the model (regressor) — ε", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("DP chose", exact=False).wait_for()
    wait_until_idle(page)
    screenshot(page, "train_choice_trained")
