"""The Train page in a real browser: pick DP-SGD, see it labelled approximate DP, choose δ, train, see what it spent.

The passes are left to the model (``epochs="auto"``): the settings show an empty box, the spending sentence
the passes it chose.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import pick_model, screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def test_pick_dp_sgd_see_it_is_approximate_and_train_it(page):
    pick_model(page, "DP-SGD linear regression (approximate DP)")
    page.get_by_text("Approximate DP: this model promises ε only up to a small probability δ", exact=False).wait_for()
    delta = page.get_by_role("textbox", name="δ to spend on this model (approximate DP)")
    delta.wait_for()
    assert delta.input_value() == "1e-06"  # a tenth of the dataset's δ
    page.get_by_text("Model settings").click()
    epochs = page.get_by_role("spinbutton", name="epochs")
    epochs.wait_for()
    assert epochs.input_value() == "" and epochs.get_attribute("placeholder") == "automatic"  # chosen from ε
    page.get_by_role("spinbutton", name="hidden_units").wait_for()  # the expander has finished opening
    wait_until_idle(page)
    screenshot(page, "train_dpsgd_chosen")
    page.get_by_role("button", name="Train").click()
    page.get_by_text("δ = 1e-06 spent", exact=False).first.wait_for(timeout=120_000)
    # The spending sentence shows under the heading and again in the (closed) model card: .first is the page's.
    page.get_by_text("steps of gradient descent", exact=False).first.wait_for()
    page.get_by_text("passes over the rows, chosen from ε and the noisy row count", exact=False).first.wait_for()
    page.get_by_text(
        "A Rényi-DP bound that holds for that noise", exact=False
    ).first.wait_for()  # the accounting for the discrete noise drawn
    page.get_by_text("Inside the model").wait_for()
    wait_until_idle(page)
    screenshot(page, "train_dpsgd_trained")
    heading = page.get_by_text("δ = 1e-06 spent", exact=False).first.inner_text()
    assert "(approximate DP)" in heading
    assert delta.input_value() == "1e-06"  # nine tenths of the δ are left for other approximate models
