"""Issue 28, item 1 on its public analog: bundled tables given a row-number column and a train/test marker.

Before identity went by people, the census table with row numbers and a split column made the
housing table with the same two columns "hold people of several datasets" (refused, no way past)
or attached it to the census. Now each opens as its own people, and a real refusal offers, in
place, a separate dataset with a reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import REPO, screenshot, table_uploader  # noqa: E402

pytestmark = pytest.mark.browser


def _keyed_file(tmp_path: Path, sample: str, rows: slice, name: str) -> Path:
    """A bundled table as tables from the wild come: a row number first and a train/test marker last."""
    from dpcore.tables.loading import read_csv_path

    frame, _ = read_csv_path(REPO / "sample_data" / sample)
    frame = frame.iloc[rows].reset_index(drop=True)
    frame.insert(0, "row", range(1, len(frame) + 1))
    frame["split"] = ["train" if i % 5 else "test" for i in range(len(frame))]
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _sidebar(page):
    return page.locator("[data-testid='stSidebar']")


def _upload(page, path: Path) -> None:
    table_uploader(page).set_input_files(str(path))


def test_tables_that_share_only_row_numbers_and_a_split_are_different_people(page, tmp_path):
    _upload(page, _keyed_file(tmp_path, "adult.csv", slice(0, 2000), "census.csv"))
    page.get_by_text("A new dataset 'census' was created", exact=False).wait_for()
    _sidebar(page).get_by_text("table census.csv", exact=False).wait_for()

    # The housing table with the same row numbers and split: its people are the bundled sample's, not the census's.
    _upload(page, _keyed_file(tmp_path, "california_housing.csv", slice(0, 2000), "houses.csv"))
    _sidebar(page).get_by_text("table houses.csv", exact=False).wait_for()
    shown = page.get_by_text("uses that dataset's budget", exact=False).first
    shown.wait_for()
    assert "California housing" in shown.inner_text() and "census" not in shown.inner_text()
    assert page.get_by_text("several datasets", exact=False).count() == 0
    screenshot(page, "identity_keyed_tables_apart")

    # A table that really holds people of two datasets is refused, with the way out in place.
    _upload(page, _keyed_file(tmp_path, "adult.csv", slice(2000, 4000), "census_2.csv"))
    page.get_by_text("A new dataset 'census_2' was created", exact=False).wait_for()
    _upload(page, _keyed_file(tmp_path, "adult.csv", slice(1000, 3000), "merged.csv"))
    page.get_by_text("holds people of several datasets", exact=False).wait_for()
    reason = page.get_by_label("Why are these different people?")
    reason.fill("a merged extract kept apart on purpose")
    reason.press("Enter")
    screenshot(page, "identity_refused_with_way_out")
    page.get_by_role("button", name="Make it a separate dataset").click()
    page.get_by_text("Recorded as a separate dataset 'merged'", exact=False).wait_for()
    _sidebar(page).get_by_text("table merged.csv", exact=False).wait_for()
    assert page.get_by_text("several datasets", exact=False).count() == 0
    screenshot(page, "identity_made_separate")


def test_a_table_re_exported_with_two_columns_rewritten_keeps_its_dataset(page, tmp_path):
    """Review B1: the census again with its income and country written as Adult's test file writes them ('>50K.')."""
    census = _keyed_file(tmp_path, "adult.csv", slice(0, 2000), "census.csv")
    _upload(page, census)
    page.get_by_text("A new dataset 'census' was created", exact=False).wait_for()
    _sidebar(page).get_by_text("table census.csv", exact=False).wait_for()

    import pandas as pd

    frame = pd.read_csv(census)
    for column in ("income", "native-country"):
        frame[column] = frame[column].astype(str) + "."
    reexported = tmp_path / "census_reexport.csv"
    frame.to_csv(reexported, index=False)
    _upload(page, reexported)
    _sidebar(page).get_by_text("table census_reexport.csv", exact=False).wait_for()
    shown = page.get_by_text("uses that dataset's budget", exact=False).first
    shown.wait_for()
    assert "'census'" in shown.inner_text()
    assert page.get_by_text("A new dataset 'census_reexport'", exact=False).count() == 0
    screenshot(page, "identity_edited_columns_same_dataset")
