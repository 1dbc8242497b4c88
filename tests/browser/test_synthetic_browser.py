"""The Export page's synthetic copy in a real browser: choose it, run the free preview, make the copy, download it.

A small uploaded table (three declared columns) keeps Private-PGM's first compilation short on a shared machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, schema_uploader, screenshot, table_uploader, wait_until_idle  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "synthetic"))
from synthetic_testing import tiny_schema, tiny_table  # noqa: E402

pytestmark = pytest.mark.browser
LONG = 900_000  # ms: Private-PGM compiles on first use, and the machine is shared


def test_choose_the_synthetic_copy_preview_both_then_download_it(page, tmp_path):
    table, schema = tmp_path / "clinic.csv", tmp_path / "clinic.schema.json"
    tiny_table(3000).to_csv(table, index=False)
    schema.write_text(tiny_schema().to_json(), encoding="utf-8")
    # The table first, then its schema, each waited for by what the server says of it (a schema dropped first
    # shows its name before its rerun, and a table dropped during that rerun can be lost).
    table_uploader(page).set_input_files(str(table))
    page.get_by_text("A new dataset 'clinic' was created", exact=False).wait_for()
    wait_until_idle(page)
    schema_uploader(page).set_input_files(str(schema))  # applies to the table in use
    page.get_by_text("The schema is complete", exact=False).wait_for()
    wait_until_idle(page)
    page.get_by_role("link", name="5. Export").click()
    page.get_by_text("Synthetic copy: invented rows", exact=False).click()
    page.get_by_role("button", name="Run the utility preview").click()
    page.get_by_text("Owner-only simulation", exact=False).first.wait_for(timeout=LONG)
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    assert "ε spent 0 of" in page.locator("[data-testid='stSidebar']").get_by_text("ε spent", exact=False).first.inner_text()
    screenshot(page, "export_synthetic_preview")

    page.get_by_role("button", name="Make the synthetic copy").click()
    page.get_by_text("Synthetic copy made", exact=False).wait_for(timeout=LONG)
    ARTIFACTS.mkdir(exist_ok=True)
    paths = []
    for button, name in (("Synthetic table (CSV)", "synthetic.csv"), ("Privacy report (JSON)", "synthetic_report.json")):
        with page.expect_download() as download:
            page.get_by_role("button", name=button).click()
        download.value.save_as(str(ARTIFACTS / name))
        paths.append(ARTIFACTS / name)
    header = paths[0].read_text(encoding="utf-8").splitlines()[0].split(",")
    report = json.loads(paths[1].read_text(encoding="utf-8"))
    assert report["kind"] == "synthetic" and not report["seeded"]
    assert header == ["smoker", "age", "sick"] and len(header) == len(report["columns"])
    spent = page.locator("[data-testid='stSidebar']").get_by_text("ε spent", exact=False).first.inner_text()
    assert "ε spent 0 of" not in spent
    screenshot(page, "export_synthetic_copy")
    # The owner's free look at the copy beside the table: a column's shares, then every pair's error.
    page.get_by_text("Average distance from your table", exact=False).wait_for()
    wait_until_idle(page)
    charts = page.locator("[data-testid='stVegaLiteChart']").count()
    selector = page.locator("[data-testid='stSelectbox']").filter(has_text="Column to compare")
    selector.click()
    page.get_by_role("option", name="age").click()
    expect(page.get_by_role("combobox", name="Column to compare")).to_have_value("age")
    wait_until_idle(page)
    assert page.locator("[data-testid='stVegaLiteChart']").count() == charts  # the same two charts, for 'age' now
    page.locator("[data-testid='stVegaLiteChart']").last.scroll_into_view_if_needed()  # the pairs' map, at the foot
    screenshot(page, "export_synthetic_beside_the_table")
    # A second copy: while its bar runs, the first copy is no longer offered (its file is not the copy being made).
    # The page swaps them within a moment of the click, so the wait is for that state, polled by the page itself.
    # The same settings again: the button waits for the owner's word that a new release, charged again, is wanted.
    page.get_by_text("downloading it again costs nothing", exact=False).wait_for()
    assert page.get_by_role("button", name="Make the synthetic copy").is_disabled()
    screenshot(page, "export_synthetic_made_once")
    page.get_by_text("Make a fresh copy (a new release, charged to the budget again)").click()
    wait_until_idle(page)
    page.get_by_role("button", name="Make the synthetic copy").click()
    page.wait_for_function(
        "() => !!document.querySelector(\"[data-testid='stProgress']\")"
        " && !document.querySelector(\"[data-testid='stDownloadButton']\")",
        timeout=LONG,
    )
    screenshot(page, "export_synthetic_second_copy_under_way")
    page.get_by_text("Synthetic copy made", exact=False).wait_for(timeout=LONG)
    page.get_by_text("Average distance from your table", exact=False).wait_for()
