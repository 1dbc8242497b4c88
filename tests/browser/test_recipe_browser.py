"""A recipe saved in the browser and made again next quarter: `dpcore run` on the changed table charges each release once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import ARTIFACTS, REPO, release_copy, schema_uploader, screenshot, start_server, stop_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def database(tmp_path):
    """A SQLite file holding 3,000 Adult rows as the table 'census', and a secrets file naming it 'clinic'."""
    import sqlalchemy as sa

    from dpcore.tables.loading import read_csv_path

    frame, _info = read_csv_path(REPO / "sample_data" / "adult.csv")
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'clinic.sqlite'}")
    frame.head(3000).to_sql("census", engine, index=False)
    engine.dispose()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[connections.clinic]\nurl = "sqlite:///{tmp_path / "clinic.sqlite"}"\n', encoding="utf-8")
    return {"file": tmp_path / "clinic.sqlite", "secrets": secrets}


@pytest.fixture
def server(tmp_path, database, monkeypatch):
    monkeypatch.setenv("DPSTUDIO_SECRETS", str(database["secrets"]))
    process, url = start_server(tmp_path)
    yield url
    stop_server(process)


def _change_a_few_rows(path: Path) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(sa.text('UPDATE census SET "hours-per-week" = 41 WHERE rowid <= 5'))
    engine.dispose()


def test_a_recipe_saved_in_the_browser_makes_the_releases_again_on_a_changed_table(page, database, tmp_path, capsys):
    from dpcore.budget.datasets import Catalog
    from dpcore.cli import EXIT_BUDGET, EXIT_OK, main
    from dpcore.recipes import load_recipe

    # Data: the connection's table, declared by the bundled schema.
    page.get_by_text("A database").click()
    page.get_by_text("Read the table").wait_for()
    wait_until_idle(page)
    page.locator("[data-testid='stSelectbox']").filter(has=page.get_by_text("Table", exact=True)).click()
    page.get_by_role("option", name="census").click()
    page.get_by_role("button", name="Read the table").click()
    page.get_by_text("table 'census' of the database connection 'clinic'", exact=False).wait_for()
    wait_until_idle(page)
    schema_uploader(page).set_input_files(str(REPO / "sample_data" / "adult.schema.json"))
    page.get_by_text("The schema is complete", exact=False).first.wait_for()
    # Train twice (the second model at ε = 0.1), then release a randomized copy.
    page.get_by_role("link", name="3. Train").click()
    wait_until_idle(page)
    page.get_by_role("button", name="Train").click()
    page.get_by_text("For comparison", exact=False).wait_for()
    typed = page.get_by_label("ε to spend on this model")
    typed.fill("0.1")
    typed.press("Enter")
    wait_until_idle(page)
    page.get_by_role("button", name="Train").click()
    # The first model's result is still on the page: wait for the second's own heading, or leaving the page would
    # cut its training short.
    page.get_by_text("— ε = 0.1 spent", exact=False).wait_for()
    wait_until_idle(page)
    page.get_by_role("link", name="5. Export").click()
    release_copy(page)
    page.get_by_text("Released: ε =", exact=False).wait_for()
    # Privacy: save what this session did as a recipe.
    page.get_by_role("link", name="2. Privacy").click()
    page.get_by_text("It makes 2 model(s), 1 copy(ies) and 0 group map(s) again.").wait_for()
    with page.expect_download() as download:
        page.get_by_role("button", name="Save as recipe (YAML)").click()
    ARTIFACTS.mkdir(exist_ok=True)
    recipe_file = ARTIFACTS / "census.recipe.yaml"
    download.value.save_as(str(recipe_file))
    text = recipe_file.read_text(encoding="utf-8")
    recipe = load_recipe(recipe_file)
    assert recipe.source.connection == "clinic" and recipe.source.table == "census"
    assert "sqlite:" not in text and "seed:" not in text  # the connection's name, never its URL; no seed
    assert [m.model for m in recipe.models] == ["dp_boosting_clf"] * 2 and recipe.models[1].epsilon == 0.1
    assert [c.kind for c in recipe.copies] == ["randomized"]  # every release of the session, in order

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    ledger = catalog.ledger(catalog.find("census"))
    made = [(s.epsilon, s.mechanism) for s in ledger.spends()]
    assert len(made) == 3

    # Next quarter: a few rows changed. What is left of ε = 1 does not pay for them again: refused, nothing spent.
    _change_a_few_rows(database["file"])
    run = ["run", str(recipe_file), "--ledger", str(tmp_path / "ledger.sqlite3"), "--secrets", str(database["secrets"])]
    run += ["--output-dir", str(tmp_path / "next_quarter")]
    assert main(run) == EXIT_BUDGET
    assert "Nothing was made or charged" in capsys.readouterr().err and len(ledger.spends()) == 3
    # The way out it names: a deliberate raise; then each release is made again and charged once.
    assert main([*run, "--raise-budget", "3"]) == EXIT_OK, capsys.readouterr().err
    assert [(s.epsilon, s.mechanism) for s in ledger.spends()] == made + made
    assert (tmp_path / "next_quarter" / "copy1_randomized.csv").exists()

    page.reload()
    page.get_by_text("Recipe runs").wait_for()
    # The run's line is an st.text; the history grid above holds a hidden copy of the same words.
    page.locator("[data-testid='stText']", has_text="recipe: census releases; 3 releases planned").wait_for()
    page.get_by_role("button", name="Save as recipe (YAML)").wait_for()
    page.get_by_role("button", name="Download the history (CSV)").wait_for()
    page.get_by_text("It makes 2 model(s), 1 copy(ies) and 0 group map(s) again.").wait_for()  # kept through the reload
    wait_until_idle(page)
    page.get_by_role("button", name="Save as recipe (YAML)").scroll_into_view_if_needed()
    screenshot(page, "recipe_privacy_page_runs")
