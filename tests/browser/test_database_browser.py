"""A table read from a database on the Data page: a named connection, a table from its list, declarations, a model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import REPO, schema_uploader, screenshot, start_server, stop_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path, monkeypatch):
    """The app, with a secrets file naming a SQLite file that holds 3,000 Adult rows and a ward code kept as text."""
    import sqlalchemy as sa

    from dpcore.tables.loading import read_csv_path

    frame, _info = read_csv_path(REPO / "sample_data" / "adult.csv")
    frame = frame.head(3000).assign(ward=lambda f: (10 * (1 + f.index % 4)).astype(str))
    frame = frame[["ward", *frame.columns.drop("ward")]]  # first, so its declaration is in the grid's first rows
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'clinic.sqlite'}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE visits (ward TEXT NOT NULL, note TEXT)"))
    frame.to_sql("census", engine, index=False, dtype={"ward": sa.Text()})
    engine.dispose()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[connections.clinic]\nurl = "sqlite:///{tmp_path / "clinic.sqlite"}"\n', encoding="utf-8")
    monkeypatch.setenv("DPSTUDIO_SECRETS", str(secrets))
    process, url = start_server(tmp_path)
    yield url
    stop_server(process)


def test_a_database_table_is_picked_declared_and_trained_on(page):
    page.get_by_text("A database").click()
    page.get_by_text("Read the table").wait_for()
    wait_until_idle(page)
    page.locator("[data-testid='stSelectbox']").filter(has=page.get_by_text("Table", exact=True)).click()
    page.get_by_role("option", name="census").click()
    page.get_by_role("button", name="Read the table").click()
    page.get_by_text("table 'census' of the database connection 'clinic'", exact=False).wait_for()
    page.get_by_text("3,000 rows", exact=False).first.wait_for()
    wait_until_idle(page)
    screenshot(page, "database_1_table_read")
    # The database says the ward code is text: a category, although its values look like numbers.
    grid = page.locator("[data-testid='stDataFrame']").filter(has_text="categories").first
    grid.get_by_text("10 | 20 | 30 | 40", exact=True).wait_for(state="attached")
    schema_uploader(page).set_input_files(str(REPO / "sample_data" / "adult.schema.json"))
    # Adult's declarations leave only the ward code read from the data (the sidebar counted all 16 before).
    expect(page.get_by_text("16 columns read from the data", exact=False)).to_have_count(0)
    page.get_by_text("1 column read from the data", exact=False).first.wait_for()
    page.get_by_role("link", name="3. Train").click()
    wait_until_idle(page)
    page.get_by_text("Training spends budget", exact=False).first.wait_for()
    page.get_by_role("button", name="Train").click()
    page.get_by_text("For comparison", exact=False).wait_for()
    screenshot(page, "database_2_trained")
    page.get_by_role("link", name="1. Data").click()
    page.get_by_text("table 'census' of the database connection 'clinic'", exact=False).wait_for()
