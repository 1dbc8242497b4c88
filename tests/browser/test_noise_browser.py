"""Issue 28 item 4 in a real browser: one click no longer spends the budget on noise.

The public analog of the issue's table: 150 rows of the bundled California sample with its schema,
uploaded (the same people as the sample, so its fresh budget of ε = 1 in this test's ledger). Its default randomized copy is mostly noise for every column,
as the issue's 69-column copy was; a small remaining budget is then reached by a model the owner
pays for, and the Groups page is opened at that budget, where the issue saw a 'group 1' drawn in
noise under a red "The budget is spent" line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import REPO, schema_uploader, screenshot, table_uploader, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser
ROWS = 150  # few rows: at ε = 0.025 the map's cells hold fewer rows than the noise floor (213.7)


def _spent(page) -> float:
    line = page.locator("[data-testid='stSidebar']").get_by_text("ε spent", exact=False).first.inner_text()
    return float(line.split("ε spent ")[1].split(" of")[0])


def _upload_small_california(page, tmp_path: Path) -> None:
    table, schema = tmp_path / "homes.csv", tmp_path / "homes.schema.json"
    pd.read_csv(REPO / "sample_data" / "california_housing.csv").sample(ROWS, random_state=7).to_csv(table, index=False)
    schema.write_bytes((REPO / "sample_data" / "california_housing.schema.json").read_bytes())
    # The table first, then its schema, each waited for by what the server says of it: a schema dropped
    # first shows its name at once, before its rerun, and a table dropped during that rerun was once lost.
    table_uploader(page).set_input_files(str(table))
    # Its rows are the sample's people, so it spends that dataset's budget (fresh in this test's own ledger).
    page.get_by_text("This table shares about", exact=False).wait_for()
    wait_until_idle(page)
    schema_uploader(page).set_input_files(str(schema))  # applies to the table in use
    page.get_by_text("The schema is complete", exact=False).wait_for()
    wait_until_idle(page)


def test_a_mostly_noise_copy_needs_the_word_and_a_small_budget_draws_no_map_of_noise(page, tmp_path):
    _upload_small_california(page, tmp_path)

    # The default copy spends half of what is left, says it is mostly noise, and waits for the typed word.
    page.get_by_role("link", name="5. Export").click()
    release = page.get_by_role("button", name="Release the copy")
    release.wait_for()
    verdict = page.get_by_text(re.compile(r"That is \d+ of its \d+ randomised columns"))
    verdict.wait_for()
    assert "synthetic copy instead" in verdict.inner_text()
    expect(release).to_be_disabled()
    confirmation = page.get_by_label("To release it anyway", exact=False)
    confirmation.scroll_into_view_if_needed()  # the app scrolls inside its own pane: show the word and the button
    screenshot(page, "noise_1_export_asks_for_the_word")
    confirmation.fill("yes")
    confirmation.press("Enter")
    expect(release).to_be_disabled()
    confirmation.fill("noise")
    confirmation.press("Enter")
    expect(release).to_be_enabled()
    release.click()
    page.get_by_text("Released: ε =", exact=False).wait_for(timeout=120_000)
    assert 0.4 <= _spent(page) <= 0.5  # half of the fresh budget, the noisy row count included

    # A model the owner pays for leaves ε = 0.05.
    page.get_by_role("link", name="3. Train").click()
    typed = page.get_by_label("ε to spend on this model")
    typed.fill("0.45")
    typed.press("Enter")
    page.get_by_role("button", name="Train").click()
    page.get_by_text("For comparison", exact=False).wait_for(timeout=120_000)
    assert _spent(page) == pytest.approx(0.95, abs=0.005)

    # Groups: the small budget is said once, above the controls; the offered ε is half of what is left.
    page.get_by_role("link", name="6. Groups").click()
    little = page.get_by_text("Only ε = 0.05 is left of this dataset's budget", exact=False)
    little.wait_for()
    columns = page.get_by_text("Columns to find groups in", exact=False).first
    columns.wait_for()
    expect(little).to_have_count(1)
    assert little.bounding_box()["y"] < columns.bounding_box()["y"]
    epsilon = page.get_by_label("ε to spend on the map")
    assert epsilon.input_value() == "0.025"
    page.get_by_text("Reproducible demo seed (the map must not be released)").click()
    page.get_by_role("button", name="Find groups", exact=True).click()
    page.get_by_text("No groups found at ε = 0.025", exact=False).wait_for(timeout=120_000)
    page.get_by_text("0 groups — ε = 0.025 spent", exact=False).wait_for()
    expect(page.get_by_text("No groups found at ε = 0.025", exact=False)).to_have_count(1)
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 0  # no map of noise drawn as if it were groups
    screenshot(page, "noise_2_groups_no_map_of_noise")

    # Spending the rest: "The budget is spent" is said once, at the top, before the controls.
    epsilon.fill("0.025")
    epsilon.press("Enter")
    page.get_by_role("button", name="Find groups", exact=True).click()
    spent = page.get_by_text("The budget is spent", exact=False)
    spent.wait_for(timeout=120_000)
    expect(page.get_by_role("button", name="Find groups", exact=True)).to_be_disabled()
    expect(spent).to_have_count(1)
    expect(page.get_by_text("No groups found at ε = 0.025", exact=False)).to_have_count(1)  # once the rerun's stale copy is gone
    assert spent.bounding_box()["y"] < columns.bounding_box()["y"]
    screenshot(page, "noise_3_spent_said_once")
