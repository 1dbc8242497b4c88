"""The Groups page in a real browser: the map is drawn, a cell shows its noisy count on hover, the map downloads."""

from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, screenshot  # noqa: E402

pytestmark = pytest.mark.browser


def test_groups_page_draws_the_map_and_downloads_it(page):
    page.get_by_role("link", name="6. Groups").click()
    page.get_by_role("button", name="Find groups", exact=True).click()
    page.get_by_text(re.compile(r"\d+ groups? — ε =")).wait_for(timeout=120_000)
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for()
    chart.scroll_into_view_if_needed()
    canvas = chart.locator("canvas, svg").first
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 300
    # Southern California's coast, where the densest group is: hovering a cell shows its noisy count.
    tooltip = page.locator("#vg-tooltip-element")
    for fx, fy in ((0.55, 0.75), (0.4, 0.55), (0.6, 0.8)):
        page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
        try:
            tooltip.get_by_text("noisy count", exact=False).wait_for(timeout=2_000)
            break
        except PlaywrightTimeout:
            continue
    assert "noisy count" in tooltip.inner_text()
    screenshot(page, "groups_page")
    ARTIFACTS.mkdir(exist_ok=True)
    with page.expect_download() as download:
        page.get_by_role("button", name="Map (CSV)").click()
    path = ARTIFACTS / "group_map.csv"
    download.value.save_as(str(path))
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert list(rows[0]) == ["longitude_lower", "longitude_upper", "latitude_lower", "latitude_upper", "noisy_count", "cluster"]
    assert any(int(r["cluster"]) >= 0 for r in rows) and len(rows) >= 16
    page.get_by_text("Your rows in their groups", exact=False).wait_for()
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 2
