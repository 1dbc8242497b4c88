"""An analyst's Compare and Attack pages in a browser (issue 32): on their own synthetic copy, and the ceiling of their ε.

The owner's side is set up through the engine (a table with a planted sentinel, shared, a slice of
0.5 granted to Bob by e-mail), so only the analyst clicks: Compare first says to make a copy, Bob
makes one on Export, compares models on it (nothing more is charged), and reads on Attack what his
slice allows any attacker. Nothing the server sends his browser holds the sentinel.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from oidc_support import ANALYST_EMAIL, ANALYST_SUBJECT
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import screenshot, sign_in, start_signed_in_server, stop_server, wait_until_idle  # noqa: E402
from test_roles_browser import SENTINEL_CATEGORY, SENTINEL_NUMBER, _capture, _holds_sentinel  # noqa: E402

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


def _shared_table(ledger: Path) -> str:
    """Alice's table (1,500 rows of Adult, the sentinel in the first), shared, with a slice of ε = 0.5 for Bob."""
    from dpcore.budget.datasets import Catalog
    from dpcore.budget.signed_in import SignedIn
    from dpcore.tables.schema import Schema
    from dpstudio.support import workspace
    from dpstudio.support.state import Dataset

    frame = pd.read_csv(REPO / "sample_data" / "adult.csv", nrows=1500)
    frame.loc[0, "age"], frame.loc[0, "native-country"] = SENTINEL_NUMBER, SENTINEL_CATEGORY
    schema = Schema.from_json((REPO / "sample_data" / "adult.schema.json").read_text(encoding="utf-8"))
    alice = SignedIn("owner-of-census", "alice@example.org")
    catalog = Catalog(str(ledger), signed_in=alice)
    found = catalog.open_table(lambda: [frame], "census", total_epsilon=2.0)
    shared = Dataset("census.csv", frame, {"rows": len(frame), "columns": frame.shape[1]}, schema, schema, found)
    assert workspace.share(str(ledger), shared, owner=alice.subject)
    catalog.ledger(found.dataset).grant(ANALYST_EMAIL, 0.5, 1e-6)
    return found.dataset.dataset_id


def _bobs_spent(ledger: Path) -> float:
    from contextlib import closing

    from dpcore.budget.ledger_db import connect

    with closing(connect(ledger)) as conn:
        return sum(float(e) for (e,) in conn.execute("SELECT epsilon FROM spends WHERE email = ?", (ANALYST_EMAIL,)))


def test_an_analyst_compares_on_their_copy_for_free_and_reads_the_ceiling_of_their_slice(browser, tmp_path, oidc_provider):
    ledger = tmp_path / "ledger.sqlite3"
    _shared_table(ledger)
    process, url = start_signed_in_server(tmp_path, oidc_provider, ledger=str(ledger))
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    try:
        page = context.new_page()
        page.set_default_timeout(180_000)
        frames = _capture(page)
        page.goto(url)
        sign_in(page, ANALYST_SUBJECT)
        page.get_by_text("is shared with you as an analyst", exact=False).wait_for()
        wait_until_idle(page)
        assert page.get_by_role("link", name="6. Groups").count() == 0

        page.get_by_role("link", name="4. Compare").click()
        page.get_by_text("Make a copy on the Export page first", exact=False).wait_for()
        wait_until_idle(page)
        page.get_by_role("link", name="Make a synthetic copy").click()
        page.get_by_role("button", name="Make the synthetic copy").click()
        page.get_by_text("Synthetic copy made", exact=False).wait_for()
        wait_until_idle(page)
        after_copy = _bobs_spent(ledger)
        assert 0 < after_copy <= 0.5

        page.get_by_role("link", name="4. Compare").click()
        page.get_by_text("your synthetic copy", exact=False).first.wait_for()
        wait_until_idle(page)
        folds = page.get_by_label("Folds")
        folds.fill("2")
        folds.press("Enter")
        wait_until_idle(page)
        page.get_by_role("button", name="Run comparison").click()
        page.get_by_text("most accurate private model", exact=False).wait_for(timeout=300_000)
        page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
        wait_until_idle(page)
        assert page.get_by_text("owner's raw data", exact=False).count() == 0
        assert page.get_by_text("owner's eyes only", exact=False).count() == 0
        screenshot(page, "roles_analyst_compare")
        texts = [page.content()]
        assert _bobs_spent(ledger) == after_copy  # comparing on the copy charged nothing

        page.get_by_role("link", name="7. Attack").click()
        page.get_by_text("only the dataset's owner may run them", exact=False).wait_for()
        page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
        wait_until_idle(page)
        expect(page.get_by_text("62.2%")).to_have_count(1, timeout=120_000)  # e^0.5 / (1 + e^0.5): the best AUC at the slice's ε
        screenshot(page, "roles_analyst_attack")
        texts.append(page.content())

        leaks = {f"page {i}": _holds_sentinel(text.encode()) for i, text in enumerate(texts)}
        leaks["websocket"] = _holds_sentinel(b"".join(frames))
        assert not any(leaks.values()), {name: found for name, found in leaks.items() if found}
        assert json.dumps(texts).count("Run comparison") >= 1 and len(frames) > 20
    finally:
        context.close()
        stop_server(process)
