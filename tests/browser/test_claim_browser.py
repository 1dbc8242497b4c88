"""A dataset created before sign-in, on a server that now signs people in (issue 32): it says it has no owner, and the
person the server names claims it on the Privacy page, a line of its history."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from oidc_support import EMAIL, SUBJECT
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import screenshot, sign_in, start_signed_in_server, stop_server, table_uploader, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


def test_the_person_the_server_names_claims_a_dataset_made_before_sign_in(browser, tmp_path, oidc_provider, monkeypatch):
    from dpcore.budget.accountant import OWNER, BudgetLedger
    from dpcore.budget.datasets import Catalog
    from dpcore.budget.signed_in import SignedIn
    from dpcore.budget.slices import unowned

    ledger = tmp_path / "ledger.sqlite3"
    table = tmp_path / "census.csv"
    pd.read_csv(REPO / "sample_data" / "adult.csv", nrows=800).to_csv(table, index=False)
    before = Catalog(str(ledger)).open_table(lambda: [pd.read_csv(table)], "census").dataset.dataset_id  # no sign-in yet
    monkeypatch.setenv("DPSTUDIO_CLAIMERS", f"{EMAIL}, somebody@example.org")
    process, url = start_signed_in_server(tmp_path, oidc_provider, ledger=str(ledger))
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    try:
        page = context.new_page()
        page.set_default_timeout(180_000)
        page.goto(url)
        sign_in(page, SUBJECT)
        page.get_by_text("Signed in as", exact=False).wait_for()
        wait_until_idle(page)
        table_uploader(page).set_input_files(str(table))
        page.get_by_text("so it uses that dataset's budget", exact=False).wait_for()
        wait_until_idle(page)
        assert page.get_by_text("No owner yet", exact=False).count() == 1  # the sidebar says so on every page

        page.get_by_role("link", name="2. Privacy").click()
        page.get_by_text("so it has no owner", exact=False).wait_for()
        wait_until_idle(page)
        screenshot(page, "claim_before")
        page.get_by_role("button", name="Claim this dataset as its owner").click()
        page.get_by_text("Analysts and their slices").wait_for()
        wait_until_idle(page)
        expect(page.get_by_text("so it has no owner", exact=False)).to_have_count(0, timeout=120_000)
        expect(page.get_by_role("button", name="Claim this dataset as its owner")).to_have_count(0, timeout=120_000)
        history = page.locator("[data-testid='stDataFrame']").filter(has_text="owner claimed").first
        history.get_by_text(EMAIL).first.wait_for(state="attached")
        history.scroll_into_view_if_needed()
        screenshot(page, "claim_after")
    finally:
        context.close()
        stop_server(process)
    history = BudgetLedger(before, path=str(ledger)).history()
    (claimer,) = history.loc[history["event"] == "owner claimed", "by"]
    assert claimer.endswith(f"|{SUBJECT}")  # the provider's issuer and subject: who signed in, for good
    alice = BudgetLedger(before, path=str(ledger), signed_in=SignedIn(claimer, EMAIL, email_verified=True))
    assert not unowned(alice) and alice.role() == OWNER
    assert BudgetLedger(before, path=str(ledger), signed_in=SignedIn("x|someone-else", "x@example.org")).role() is None
