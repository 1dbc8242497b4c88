"""privacy-tests.md row 23 in a real browser: a group map or a model built on bounds read from the data stays on the screen.

A newcomer uploads a table without declaring anything, so both columns' bounds are read from the
rows (one person is 97, far above everyone else). The Groups page still draws the map for the
owner, but offers no map file and no card: the engine's one refusal sentence stands there, with
the Data page's one-click ways out. Declaring the bounds public (the owner's word) and finding the
groups again makes the map downloadable. The Train page does the same for the model file and card.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, schema_uploader, screenshot, table_uploader, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


def _customers(path: Path) -> None:
    """Two groups of customers by age and spend, and one customer aged 97, drawn with a seed."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(23)
    young = pd.DataFrame({"age": rng.normal(28, 3, 300).round(), "spend": rng.normal(200, 30, 300).round()})
    older = pd.DataFrame({"age": rng.normal(55, 4, 300).round(), "spend": rng.normal(600, 50, 300).round()})
    oldest = pd.DataFrame({"age": [97.0], "spend": [400.0]})
    pd.concat([young, older, oldest], ignore_index=True).to_csv(path, index=False)


def _found(page) -> None:
    page.get_by_role("button", name="Find groups", exact=True).click()
    page.get_by_text(re.compile(r"\d+ groups? — ε =|No groups found")).first.wait_for()
    wait_until_idle(page)


def test_a_map_over_bounds_read_from_the_data_is_refused_until_a_way_out_is_taken(page, tmp_path):
    path = tmp_path / "customers.csv"
    _customers(path)
    table_uploader(page).set_input_files(str(path))
    page.get_by_text("have bounds or categories read from your data", exact=False).wait_for()
    page.get_by_role("link", name="6. Groups").click()
    page.get_by_text("Cannot leave this screen", exact=False).first.wait_for()

    _found(page)
    refusal = page.get_by_text("Cannot leave this screen: the bounds or categories of 'age', 'spend'", exact=False)
    assert refusal.count() == 1 and "97" not in refusal.inner_text()
    assert page.get_by_role("button", name="Map (CSV)").count() == 0
    assert page.get_by_role("button", name="Map card (Markdown)").count() == 0
    refusal.scroll_into_view_if_needed()
    screenshot(page, "release_gate_map_refused")

    page.get_by_text("They are public knowledge").click()
    page.get_by_role("button", name="Declare them public").click()
    page.get_by_text("Cannot leave this screen", exact=False).first.wait_for(state="detached")
    _found(page)
    button = page.get_by_role("button", name="Map (CSV)")
    button.wait_for()
    button.scroll_into_view_if_needed()
    screenshot(page, "release_gate_map_released")
    with page.expect_download() as download:
        button.click()
    ARTIFACTS.mkdir(exist_ok=True)
    saved = ARTIFACTS / "release_gate_map.csv"
    download.value.save_as(str(saved))
    rows = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
    assert list(rows[0])[:4] == ["age_lower", "age_upper", "spend_lower", "spend_upper"]


def test_a_model_on_bounds_read_from_the_data_is_not_offered_until_trained_again_after_a_way_out(page, tmp_path):
    from dpcore.tables.schema import suggest_schema

    path = tmp_path / "customers.csv"
    _customers(path)
    schema = suggest_schema(__import__("pandas").read_csv(path))
    schema["spend"].role = "target"  # the bounds stay as read from the rows, flagged
    (tmp_path / "customers.schema.json").write_text(schema.to_json(), encoding="utf-8")
    table_uploader(page).set_input_files(str(path))
    page.get_by_text("have bounds or categories read from your data", exact=False).wait_for()
    schema_uploader(page).set_input_files(str(tmp_path / "customers.schema.json"))  # 'spend' is the target
    # The upload's run may not have started when the page first reads idle: wait for what the schema changes.
    page.get_by_text("the target is 'spend'", exact=False).wait_for()
    wait_until_idle(page)
    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Cannot leave this screen", exact=False).first.wait_for()

    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("trained with domains read from the data", exact=False).wait_for()
    wait_until_idle(page)
    refusal = page.get_by_text("Cannot leave this screen: the bounds or categories of 'age', 'spend'", exact=False)
    assert refusal.count() == 1 and "97" not in refusal.inner_text()
    assert page.get_by_role("button", name="Download the fitted model (.skops)").count() == 0
    assert page.get_by_role("button", name="Download the model card (Markdown)").count() == 0
    refusal.scroll_into_view_if_needed()
    screenshot(page, "release_gate_model_refused")

    page.get_by_text("They are public knowledge").click()
    page.get_by_role("button", name="Declare them public").click()
    page.get_by_text("train the model again", exact=False).wait_for()
    page.get_by_role("button", name="Train", exact=True).click()
    button = page.get_by_role("button", name="Download the fitted model (.skops)")
    button.wait_for()
    button.scroll_into_view_if_needed()
    screenshot(page, "release_gate_model_released")
