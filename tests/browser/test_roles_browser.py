"""The data room's two roles in two browsers (issue 32; privacy-tests.md row 24).

Alice, the owner, uploads a table with a planted sentinel (a unique number and a unique category
string), raises its budget to ε = 2, publishes a DP summary (ε = 0.2) and grants Bob, an analyst, a
slice of 0.5. Bob signs in in
a second browser context: he trains a model and makes a synthetic copy within his slice, is
refused past it, and never receives the sentinel — in any page's text, in anything the server
sends his browser (every websocket message: text, tables, chart specs, errors) or in any file he
downloads. Alice then sees Bob's spends, by e-mail, in her history and her slices' table.

The control: the same capture on Alice's side does see the sentinel (her Data page shows the rows),
so a capture that missed it would fail the test rather than pass it.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from mentions import mentions_of
from oidc_support import ANALYST_EMAIL, ANALYST_SUBJECT, SUBJECT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import (  # noqa: E402
    ARTIFACTS,
    grant_slice,
    raise_total,
    screenshot,
    sign_in,
    start_signed_in_server,
    stop_server,
    upload_census,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SENTINEL_NUMBER = 987653
SENTINEL_CATEGORY = "Qzxv-sentinel-7731"
ROWS = 2987  # the table's exact row count, not DP: never in the analyst's text either (and not a round figure the
# pages' own sentences use, like "3,000")


def _sentinel_forms() -> list[bytes]:
    """Every way the sentinel can travel: as text (plain, with separators) and as the bytes of an Arrow number."""
    texts = [SENTINEL_CATEGORY, str(SENTINEL_NUMBER), f"{SENTINEL_NUMBER:,}", f"{SENTINEL_NUMBER:,}".replace(",", ".")]
    texts.append(f"{SENTINEL_NUMBER:,}".replace(",", "\u202f"))
    numbers = [struct.pack("<q", SENTINEL_NUMBER), struct.pack("<d", float(SENTINEL_NUMBER)), struct.pack("<i", SENTINEL_NUMBER)]
    return [t.encode("utf-8") for t in texts] + numbers


def _holds_sentinel(data: bytes) -> list[bytes]:
    return [form for form in _sentinel_forms() if form in data]


def _unpacked(data: bytes) -> bytes:
    """A zip (the .skops model) as the bytes of its members; anything else as it is."""
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return b"".join(archive.read(name) for name in archive.namelist())
    return data


def _table_with_sentinel(tmp_path) -> Path:
    """Adult's first rows, the first of them carrying the sentinel age and native country (outside the declared domains)."""
    frame = pd.read_csv(REPO / "sample_data" / "adult.csv", nrows=ROWS)
    frame.loc[0, "age"] = SENTINEL_NUMBER
    frame.loc[0, "native-country"] = SENTINEL_CATEGORY
    path = tmp_path / "census.csv"
    frame.to_csv(path, index=False)
    return path


def _capture(page) -> list[bytes]:
    """Every websocket message the server sends ``page`` from now on (Streamlit's protobuf: text, Arrow tables, specs)."""
    frames: list[bytes] = []

    def on_socket(socket):
        socket.on("framereceived", lambda payload: frames.append(payload if isinstance(payload, bytes) else payload.encode()))

    page.on("websocket", on_socket)
    return frames


@pytest.fixture
def room(tmp_path, oidc_provider):
    process, url = start_signed_in_server(tmp_path, oidc_provider)
    yield url
    stop_server(process)


def _sign_in(browser, url: str, subject: str):
    context = browser.new_context(viewport={"width": 1400, "height": 2000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(180_000)
    frames = _capture(page)
    page.goto(url)
    sign_in(page, subject)
    page.get_by_text("Signed in as", exact=False).wait_for()
    wait_until_idle(page)
    return context, page, frames


def _download(page, button: str, name: str) -> bytes:
    with page.expect_download() as download:
        page.get_by_role("button", name=button).click()
    ARTIFACTS.mkdir(exist_ok=True)
    download.value.save_as(str(ARTIFACTS / name))
    return (ARTIFACTS / name).read_bytes()


def _owner_shares_the_table(browser, url, tmp_path):
    """Alice uploads the table and its schema, raises the total to ε = 2 and grants Bob 0.5."""
    context, page, frames = _sign_in(browser, url, SUBJECT)
    upload_census(page, _table_with_sentinel(tmp_path))
    raise_total(page, "2")

    summary = page.get_by_label("ε of the summary")
    summary.fill("0.2")
    summary.press("Enter")
    wait_until_idle(page)
    page.get_by_role("button", name="Publish the summary").click()
    page.get_by_text("Published at ε = 0.2", exact=False).wait_for()
    wait_until_idle(page)

    grant_slice(page, ANALYST_EMAIL, "0.5").scroll_into_view_if_needed()
    screenshot(page, "roles_owner_granted")
    return context, page, frames


def test_an_analyst_learns_within_the_slice_and_never_receives_the_sentinel(browser, room, tmp_path):
    owner_context, owner, owner_frames = _owner_shares_the_table(browser, room, tmp_path)
    # The control: what the capture sees on the owner's side holds the sentinel (her Data page showed the rows).
    assert _holds_sentinel(b"".join(owner_frames)), "the capture must be able to see the sentinel"

    context, page, frames = _sign_in(browser, room, ANALYST_SUBJECT)
    page.get_by_text("is shared with you as an analyst", exact=False).wait_for()
    declarations = page.locator("[data-testid='stDataFrame']").first
    declarations.get_by_text("workclass").first.wait_for(state="attached")
    page.get_by_text("Every count below is noisy", exact=False).wait_for()
    page.locator("[data-testid='stVegaLiteChart']").nth(9).wait_for()  # ten charts of the summary, at least
    wait_until_idle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_text("Your slice").wait_for()
    assert sidebar.get_by_text("rows ×", exact=False).count() == 0
    assert page.get_by_role("link", name="6. Groups").count() == 0  # Compare and Attack: on DP outputs only
    screenshot(page, "roles_analyst_data")
    texts = [page.content()]

    # Train within the slice: the page offers half of it (ε = 0.25).
    page.get_by_role("link", name="3. Train").click()
    page.get_by_text("Left of your slice", exact=False).wait_for()
    wait_until_idle(page)
    assert page.get_by_text("Reproducible demo seed").count() == 0
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("Download the model card (Markdown)").wait_for()
    wait_until_idle(page)
    assert page.get_by_text("Inside the model").count() == 0 and page.get_by_text("Confusion matrix").count() == 0
    screenshot(page, "roles_analyst_trained")
    downloads = {
        "card": _download(page, "Download the model card (Markdown)", "roles_model_card.md"),
        "model": _unpacked(_download(page, "Download the fitted model (.skops)", "roles_model.skops")),
    }
    texts.append(page.content())

    # Past the slice: ε = 0.5 when 0.25 is left is refused, in a sentence naming the owner.
    epsilon = page.get_by_label("ε to spend on this model")
    epsilon.fill("0.5")
    epsilon.press("Enter")
    refusal = page.get_by_text("ask the dataset's owner for a larger slice", exact=False).first
    refusal.wait_for()
    wait_until_idle(page)
    assert page.get_by_role("button", name="Train", exact=True).is_disabled()
    screenshot(page, "roles_analyst_refused")
    texts.append(page.content())

    # A synthetic copy within what is left.
    page.get_by_role("link", name="5. Export").click()
    page.get_by_role("button", name="Make the synthetic copy").click()
    page.get_by_text("Synthetic copy made", exact=False).wait_for()
    wait_until_idle(page)
    screenshot(page, "roles_analyst_copy")
    downloads["copy"] = _download(page, "Synthetic table (CSV)", "roles_synthetic.csv")
    downloads["report"] = _download(page, "Privacy report (JSON)", "roles_synthetic_report.json")
    downloads["report.md"] = _download(page, "Privacy report (Markdown)", "roles_synthetic_report.md")
    texts.append(page.content())

    page.get_by_role("link", name="2. Privacy").click()
    page.get_by_text("Your spends").wait_for()
    wait_until_idle(page)
    screenshot(page, "roles_analyst_privacy")
    texts.append(page.content())

    # Reached by their address: Groups is not among the analyst's pages (the Data page opens instead); Compare and
    # Attack show their analyst's versions.
    for address, sentence in (
        ("compare", "synthetic copy"),
        ("groups", "is shared with you as an analyst"),
        ("attack", "only the dataset's owner may run them"),
    ):
        page.goto(f"{room}/{address}")
        page.get_by_text("Signed in as", exact=False).wait_for()
        page.get_by_text(sentence, exact=False).first.wait_for()
        wait_until_idle(page)
        assert page.get_by_role("heading", name="6. Groups").count() == 0
        texts.append(page.content())

    # The exact row count, in any text the analyst reads: unless the owner's noisy count landed on it (rarely).
    (published,) = tmp_path.glob("**/shared/*/summary.json")
    if json.loads(published.read_text(encoding="utf-8"))["rows"] != ROWS:
        readable = [*texts, *(downloads[name].decode("utf-8") for name in ("card", "report", "report.md"))]
        assert not [(i, found) for i, text in enumerate(readable) for found in mentions_of(ROWS, text)]

    leaks = {name: _holds_sentinel(data) for name, data in downloads.items()}
    leaks |= {f"page {i}": _holds_sentinel(text.encode()) for i, text in enumerate(texts)}
    leaks["websocket"] = _holds_sentinel(b"".join(frames))
    assert not any(leaks.values()), {name: found for name, found in leaks.items() if found}
    assert len(frames) > 20  # the capture saw the analyst's whole session

    # The owner sees Bob's spends, by e-mail, in the slices' table and the history.
    owner.reload()
    owner.get_by_text("The dataset's history").first.wait_for()
    wait_until_idle(owner)
    history = owner.locator("[data-testid='stDataFrame']").filter(has_text="spend").first
    history.get_by_text(ANALYST_EMAIL).first.wait_for(state="attached")
    history.scroll_into_view_if_needed()
    screenshot(owner, "roles_owner_history")
    exported = _download(owner, "Download the history (CSV)", "roles_history.csv").decode("utf-8")
    assert exported.count(ANALYST_EMAIL) == 4  # the grant's line, its claim by Bob's first spend, and the two spends
    from contextlib import closing

    from dpcore.budget.ledger_db import connect

    with closing(connect(tmp_path / "ledger.sqlite3")) as conn:
        spends = conn.execute("SELECT email, epsilon, grant_id FROM spends WHERE email = ?", (ANALYST_EMAIL,)).fetchall()
    assert len(spends) == 2 and all(grant is not None for _e, _eps, grant in spends)
    assert sum(float(eps) for _e, eps, _g in spends) <= 0.5
    context.close()
    owner_context.close()
