"""AIM on the Export page in a real browser: the bundled Adult sample, AIM chosen with the columns the buyer will study
declared, the copy made, compared and downloaded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, open_sample, screenshot, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser
LONG = 1_200_000  # ms: AIM's rounds each refit Private-PGM (compiling it), and the machine is shared


def test_choose_aim_for_adult_make_the_copy_compare_it_and_download_it(page):
    open_sample(page, "Adult census income (sample)", "32,561 rows")
    page.get_by_role("link", name="5. Export").click()
    page.get_by_text("Synthetic copy: invented rows", exact=False).click()
    page.get_by_text("AIM (adaptive)", exact=False).click()
    page.get_by_text("the only noise AIM adds", exact=False).wait_for()  # AIM adds Gaussian noise: no choice to make
    page.get_by_text("The synthetic copy is simulated with AIM", exact=False).wait_for()  # the free preview follows
    wait_until_idle(page)
    studied = page.get_by_role("combobox", name="Columns the buyer will study together (optional)")
    for column in ("age", "education"):
        studied.click()
        page.get_by_role("option", name=column, exact=True).click()
        wait_until_idle(page)
    studied.press("Escape")  # the list stays open over the page's button until closed
    page.get_by_role("option", name="workclass", exact=True).wait_for(state="hidden")
    page.get_by_text("AIM will favour 2 relations among the 2 columns chosen", exact=False).wait_for()
    screenshot(page, "export_aim_chosen")
    page.get_by_role("button", name="Make the synthetic copy").click()
    page.get_by_text("Round 1:", exact=False).first.wait_for(timeout=LONG)  # the rounds show with their time left
    page.get_by_text("Synthetic copy made", exact=False).wait_for(timeout=LONG)
    ARTIFACTS.mkdir(exist_ok=True)
    paths = []
    for button, name in (("Synthetic table (CSV)", "aim_synthetic.csv"), ("Privacy report (JSON)", "aim_report.json")):
        with page.expect_download() as download:
            page.get_by_role("button", name=button).click()
        download.value.save_as(str(ARTIFACTS / name))
        paths.append(ARTIFACTS / name)
    report = json.loads(paths[1].read_text(encoding="utf-8"))
    assert report["method"].startswith("AIM") and not report["seeded"] and report["noise"] == "gaussian"
    assert report["selection"]["workload"] == [["age", "education"], ["age", "education", "income"]]
    header = paths[0].read_text(encoding="utf-8").splitlines()[0].split(",")
    assert len(header) == len(report["columns"])
    spent = page.locator("[data-testid='stSidebar']").get_by_text("ε spent", exact=False).first.inner_text()
    assert "ε spent 0 of" not in spent
    screenshot(page, "export_aim_copy")
    # The owner's free look at the copy beside the table: a column's shares, then every pair's error.
    page.get_by_text("Average distance from your table", exact=False).wait_for()
    wait_until_idle(page)
    page.locator("[data-testid='stVegaLiteChart']").last.scroll_into_view_if_needed()
    screenshot(page, "export_aim_beside_the_table")
