"""Issue 28, item 2, in a real browser: bulk "estimate privately" on a table with years, codes and negative numbers.

The table is a public analog of the one in the issue: the bundled California sample (negative
longitudes, long-tailed counts, prices) plus a construction year, a year of sale, a mostly-zero
pool area and a zero-padded building code, drawn with a seed by the test itself.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, REPO, screenshot, table_uploader  # noqa: E402

pytestmark = pytest.mark.browser


def _houses(path: Path) -> None:
    import numpy as np

    from dpcore.tables.loading import read_csv_path

    frame, _ = read_csv_path(REPO / "sample_data" / "california_housing.csv")
    rng = np.random.default_rng(28)
    n = len(frame)
    frame["year_built"] = np.clip(np.round(2010 - rng.gamma(1.5, 25, n)), 1872, 2010).astype(int)
    frame["yr_sold"] = rng.integers(2006, 2011, n)
    frame["pool_area"] = np.where(rng.random(n) < 0.995, 0, rng.integers(100, 800, n))
    frame["building_code"] = rng.choice(["020", "030", "060", "090", "120", "190"], n)
    frame.to_csv(path, index=False)


def test_bulk_estimate_gives_bounds_that_fit_years_codes_and_negative_numbers(page, tmp_path):
    path = tmp_path / "houses.csv"
    _houses(path)
    table_uploader(page).set_input_files(str(path))
    page.get_by_text("have bounds or categories read from your data", exact=False).wait_for()

    # The cost is stated before the click, and fits a fresh default budget (ε = 1): 10 % of it over 12 numbers,
    # rounded down to 0.00833 each (12 × 0.00833 = 0.09996).
    button = page.get_by_role("button", name=re.compile(r"Estimate privately \(spends ε = 0\.09996: 10% of the 1 left"))
    button.wait_for()
    assert "0.00833 per column" in button.inner_text()
    screenshot(page, "bounds_before_estimate")
    button.click()
    page.get_by_text("How well the estimated bounds fit — owner's eyes only").wait_for()
    assert page.get_by_text("does not fit in what is left", exact=False).count() == 0
    page.locator("[data-testid='stSidebar']").get_by_text("ε spent 0.09996 of", exact=False).wait_for()
    page.get_by_text("How well the estimated bounds fit").scroll_into_view_if_needed()
    screenshot(page, "bounds_estimated_fit")

    with page.expect_download() as download:
        page.get_by_role("button", name="Save this schema (JSON)").click()
    ARTIFACTS.mkdir(exist_ok=True)
    saved = ARTIFACTS / "bounds_schema.json"
    download.value.save_as(str(saved))
    columns = {c["name"]: c for c in json.loads(saved.read_text(encoding="utf-8"))["columns"]}

    code = columns["building_code"]  # zero-padded digits are a category, not the numbers 20 … 190
    assert code["kind"] == "categorical" and "020" in code["categories"]
    numeric = [name for name, c in columns.items() if c["kind"] == "numeric"]
    assert len(numeric) == 12 and not any(columns[name]["bounds_from_data"] for name in numeric)
    for name in ("year_built", "yr_sold"):  # quarter-centuries between 1000 and 2200, never [100, 100 000]
        lower, upper = columns[name]["lower"], columns[name]["upper"]
        assert 1000 <= lower < upper <= 2200 and lower % 25 == 0 and upper % 25 == 0, name
    # A mostly-zero column starts at 0, not at 100 000; or just below 0, the 1 time in 100 (SPRAWL_CHANCE) that an
    # empty bucket's noise clears the threshold and the bounds reach it (a run gave -0.002).
    assert columns["pool_area"]["lower"] <= 0 < columns["pool_area"]["upper"]
    assert "estimated privately (ε = 0.00833)" in columns["longitude"]["source"]

    # The same file opened again in a new session (a new workspace): the bounds paid for are there, not paid again.
    again = page.context.new_page()
    again.set_default_timeout(180_000)
    again.goto(page.url.split("?")[0])
    again.get_by_text("Declare the columns").wait_for()
    table_uploader(again).set_input_files(str(path))
    again.get_by_text("Your earlier declarations of this dataset were used for", exact=False).wait_for()
    again.locator("[data-testid='stSidebar']").get_by_text("ε spent 0.09996 of", exact=False).wait_for()
    assert again.get_by_role("button", name=re.compile(r"Estimate privately")).count() == 0  # nothing left to estimate
    screenshot(again, "bounds_carried_to_the_same_file")
