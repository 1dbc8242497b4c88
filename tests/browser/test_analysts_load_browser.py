"""Issue 32's load test in real browsers: eight analysts, signed in at once, spend one dataset and never pass their slices.

Alice, the owner, signs in, uploads 400 rows of the Adult sample, raises its total to ε = 2 and
grants eight analysts a slice of ε = 0.2 each (1.6 of the 2: the first grant on her Privacy page,
which also shares the table with analysts, the other seven through the engine, as her — the grant
form itself is clicked through in test_roles_browser.py). Each analyst signs in through the
OpenID Connect provider with a subject and a verified e-mail of their own, in a browser context of
their own, and opens the Train page in two tabs (two app sessions). Then all sixteen Train buttons
are pressed together: the first four analysts at ε = 0.1 in each tab (both fit, exactly the
slice), the other four at ε = 0.15 (one fits; the other tab is refused, by the ledger when the two
runs overlap, or by the page if the first spend landed before the second run read the slice).
The ledger then holds exactly those twelve spends, no slice spent past its ε, and the total
never passed; every refused tab shows the sentence naming the way out (ask the owner).
"""

from __future__ import annotations

import sys
import time
from contextlib import closing
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from oidc_support import EMAIL, SUBJECT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import (  # noqa: E402
    grant_slice,
    raise_total,
    screenshot,
    start_signed_in_server,
    stop_server,
    upload_census,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ANALYSTS = [(f"analyst-{i}-load", f"analyst{i}@example.org") for i in range(8)]
TOTAL, SLICE = Decimal("2"), Decimal("0.2")
#: The ε each analyst types in both tabs: twice 0.1 fills the slice exactly; 0.15 fits once.
ASKED = [Decimal("0.1")] * 4 + [Decimal("0.15")] * 4
REFUSAL = "ask the dataset's owner for a larger slice"
TRAINED = "Download the model card (Markdown)"


@pytest.fixture
def room(tmp_path, oidc_provider):
    for subject, email in ANALYSTS:
        oidc_provider.add_person(subject, email)
    process, url = start_signed_in_server(tmp_path, oidc_provider)
    yield url
    stop_server(process)


def _sign_in_all(browser, url: str, subjects: list[str]) -> list:
    """One browser context per person, signed in through the provider's form: each step taken in every page before
    the next is waited for, so the server answers them together."""
    pages = []
    for _subject in subjects:
        page = browser.new_context(viewport={"width": 1400, "height": 1800}, accept_downloads=True).new_page()
        page.set_default_timeout(180_000)
        page.goto(url)
        pages.append(page)
    for page in pages:
        page.get_by_role("button", name="Sign in").click()
    for page, subject in zip(pages, subjects, strict=True):
        page.get_by_placeholder("sub").fill(subject)
        page.get_by_role("button", name="Authorize").click()
    for page in pages:
        page.get_by_text("Signed in as", exact=False).wait_for()
        wait_until_idle(page)
    return pages


def _owner_shares_the_table(browser, url, tmp_path):
    """Alice uploads 400 rows and their schema, raises the total to ε = 2 and grants the first analyst 0.2 on her page."""
    (page,) = _sign_in_all(browser, url, [SUBJECT])
    table = tmp_path / "census.csv"
    pd.read_csv(REPO / "sample_data" / "adult.csv", nrows=400).to_csv(table, index=False)
    upload_census(page, table)
    raise_total(page, str(TOTAL))
    grant_slice(page, ANALYSTS[0][1], str(SLICE))
    return page


def _owners_ledger(tmp_path):
    """The ledger as Alice, signed in, on the dataset she granted a slice of (her own sample is another dataset)."""
    from dpcore.budget.accountant import BudgetLedger
    from dpcore.budget.ledger_db import connect
    from dpcore.budget.signed_in import SignedIn

    path = tmp_path / "ledger.sqlite3"
    with closing(connect(path)) as conn:
        dataset_id, subject = conn.execute("SELECT dataset_id, subject FROM grants").fetchone()
    assert subject.endswith(f"|{SUBJECT}")
    return BudgetLedger(dataset_id, path=path, signed_in=SignedIn(subject, EMAIL, email_verified=True))


def _on_train_page(page, asked: Decimal) -> None:
    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Left of your slice", exact=False).wait_for()
    wait_until_idle(page)
    epsilon = page.get_by_label("ε to spend on this model")
    if epsilon.input_value() != str(asked):  # the page offers half of what is left: 0.1 of a fresh slice
        epsilon.fill(str(asked))
        epsilon.press("Enter")
        wait_until_idle(page)
    assert epsilon.input_value() == str(asked)


def _refused(page):
    """A refusal's last words: the ledger's ("was") or the page's, when the other tab's spend landed first ("will be")."""
    return page.get_by_text("Nothing was trained or charged", exact=False).or_(
        page.get_by_text("Nothing will be trained or charged", exact=False)
    )


def _shows_model(page) -> bool:
    return page.get_by_text(TRAINED).count() > 0


def _pairs(tabs) -> list[list]:
    """Each analyst's two tabs."""
    return [[page for page, _asked in tabs[i : i + 2]] for i in range(0, len(tabs), 2)]


def _wait_until(condition, page, seconds: float = 180) -> None:
    """Poll the pages until ``condition`` holds (their state, re-read every quarter second), failing after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the pages never came to show what the ledger charged"
        page.wait_for_timeout(250)


def test_eight_analysts_in_browsers_spending_at_once_never_pass_their_slices_or_the_total(browser, room, tmp_path):
    owner = _owner_shares_the_table(browser, room, tmp_path)
    ledger = _owners_ledger(tmp_path)
    for _subject, email in ANALYSTS[1:]:
        ledger.grant(email, float(SLICE))

    first_tabs = _sign_in_all(browser, room, [subject for subject, _email in ANALYSTS])
    second_tabs = [page.context.new_page() for page in first_tabs]  # the same person's sign-in, a second app session
    for page in second_tabs:
        page.set_default_timeout(180_000)
        page.goto(room)
    tabs = [(page, ASKED[i]) for i, pair in enumerate(zip(first_tabs, second_tabs, strict=True)) for page in pair]
    for page, _asked in tabs:
        page.get_by_text("is shared with you as an analyst", exact=False).wait_for()
    for page, asked in tabs:
        _on_train_page(page, asked)

    # All sixteen at once: every click is fired before any result is waited for.
    buttons = [page.get_by_role("button", name="Train", exact=True) for page, _asked in tabs]
    for button in buttons:
        button.click()
    for page, _asked in tabs:
        page.get_by_text(TRAINED).or_(_refused(page)).first.wait_for()
        wait_until_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.get_by_text("could not be trained", exact=False).count() == 0

    # The ledger is the record of what was charged; every page must come to show exactly that. A page read at one
    # moment can mislead: after a training the page reruns, drawing "Nothing will be trained or charged" (too little
    # is left for a second 0.15) before the model, and between the two runs Streamlit reports the script as stopped.
    from dpcore.budget.ledger_db import connect

    with closing(connect(ledger.path)) as conn:
        spends = conn.execute(
            "SELECT email, epsilon, grant_id FROM spends WHERE dataset_id = ? ORDER BY id", (ledger.dataset_id,)
        ).fetchall()
    assert all(grant is not None for _email, _eps, grant in spends)
    charged = [sum(email == analyst for email, _eps, _grant in spends) for _subject, analyst in ANALYSTS]
    for pair, count in zip(_pairs(tabs), charged, strict=True):
        _wait_until(lambda pair=pair, count=count: sum(_shows_model(page) for page in pair) == count, pair[0])
    outcomes = ["trained" if _shows_model(page) else "refused" for page, _asked in tabs]
    for (page, _asked), outcome in zip(tabs, outcomes, strict=True):
        assert outcome == "trained" or _refused(page).count() > 0  # a refused tab says so, in a sentence

    # What must hold whatever the order the charges land in: no slice and no total passed.
    per_analyst = [outcomes[2 * i : 2 * i + 2] for i in range(len(ANALYSTS))]
    assert all(
        tab_outcomes.count("trained") <= (2 if asked == Decimal("0.1") else 1) for tab_outcomes, asked in zip(per_analyst, ASKED)
    )
    refused_page = next((page for (page, _asked), outcome in zip(tabs, outcomes, strict=True) if outcome == "refused"), None)
    assert refused_page is not None  # the analysts asking 0.15 twice of 0.2 cannot all train twice
    refused_page.get_by_text(REFUSAL, exact=False).first.scroll_into_view_if_needed()
    screenshot(refused_page, "load_analyst_refused")

    # The ledger: each spend under its analyst's slice, none past it, the total never passed on the way.
    running = Decimal(0)
    for _email, epsilon, _grant in spends:
        running += Decimal(str(epsilon))
        assert running <= TOTAL
    spent = {email: sum(Decimal(str(eps)) for e, eps, _g in spends if e == email) for _subject, email in ANALYSTS}
    assert spent == {
        email: tab_outcomes.count("trained") * asked for (_s, email), asked, tab_outcomes in zip(ANALYSTS, ASKED, per_analyst)
    }
    slices = {s.analyst: s for s in ledger.slices()}
    assert all(slices[email].spent <= slices[email].epsilon == SLICE for _subject, email in ANALYSTS)
    assert ledger.spent <= float(TOTAL)

    # Alice's page: each slice's spent and left, and her history's download names every analyst's spends.
    owner.reload()
    owner.get_by_text("The dataset's history").first.wait_for()
    wait_until_idle(owner)
    owner.locator("[data-testid='stDataFrame']").filter(has_text="granted (UTC)").scroll_into_view_if_needed()
    screenshot(owner, "load_owner_history")
    with owner.expect_download() as download:
        owner.get_by_role("button", name="Download the history (CSV)").click()
    history = pd.read_csv(download.value.path())
    spends_by = history.loc[history["event"] == "spend", "by (e-mail)"].value_counts().to_dict()
    assert spends_by == {email: 2 if asked == Decimal("0.1") else 1 for (_s, email), asked in zip(ANALYSTS, ASKED)}
    for page in [owner, *first_tabs]:
        page.context.close()
