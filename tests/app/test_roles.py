"""An analyst's session through AppTest (issue 32): declarations only, training within the slice, owner-only pages
refused, a revocation felt on the next click, and eight analysts' sessions at once never passing a slice or the total.

Sign-in itself is tested against a real provider (tests/browser/test_sign_in_browser.py); here the gate
is replaced by one that names the person the test puts in the session, so many sessions run in one
process. The table carries a sentinel number and category outside its declared domains: no element of
an analyst's page may hold either.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from mentions import mentions_of

from dpcore.budget.accountant import ANALYST, BudgetLedger
from dpcore.budget.datasets import Catalog
from dpcore.budget.signed_in import SignedIn
from dpcore.budget.slices import unowned
from dpcore.release.summary import dp_summary
from dpcore.tables.schema import Schema
from dpstudio.support import workspace
from dpstudio.support.session import STATE_KEY
from dpstudio.support.state import Dataset

OWNER = SignedIn("alice-7f3a", "alice@example.org")
SENTINEL_NUMBER, SENTINEL_CATEGORY = 987653, "Qzxv-sentinel-7731"
ROWS = 1229  # the table's exact row count: not differentially private, so never on an analyst's page either
PERSON_KEY = "test_signed_in"
REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "dpstudio" / "app.py")
EVERY_ELEMENT = ("markdown", "caption", "text", "error", "warning", "info", "success", "exception", "metric", "dataframe")


def _table() -> tuple[pd.DataFrame, Schema]:
    frame = pd.DataFrame(
        {
            "age": [25, 40, 33, 51, 62, 29, 45, 38] * 154,
            "city": ["Hanoi", "Hue", "Hanoi", "Da Nang", "Hue", "Hanoi", "Da Nang", "Hue"] * 154,
            "bought": ["yes", "no", "no", "yes", "no", "yes", "no", "yes"] * 154,
        }
    ).iloc[:ROWS]
    frame.loc[0, "age"], frame.loc[0, "city"] = SENTINEL_NUMBER, SENTINEL_CATEGORY
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "age", "role": "feature", "kind": "numeric", "lower": 18, "upper": 100, "may_be_missing": False},
                {"name": "city", "role": "feature", "kind": "categorical", "categories": ["Hanoi", "Hue", "Da Nang"]},
                {"name": "bought", "role": "target", "kind": "categorical", "categories": ["yes", "no"]},
            ]
        }
    )
    return frame, schema


@pytest.fixture
def room(tmp_path, monkeypatch):
    """A ledger where Alice's table (total ε = 2.5) is shared, and a function opening a page as a signed-in person."""
    from streamlit.testing.v1 import AppTest

    import dpstudio.support.session as session_module
    import dpstudio.support.sign_in_view as sign_in_view

    path = str(tmp_path / "ledger.sqlite3")
    monkeypatch.setenv("DPSTUDIO_LEDGER", path)
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])  # as the app fixture does (tests/conftest.py)

    def gate():
        import streamlit as st

        subject, email = st.session_state[PERSON_KEY]
        return SignedIn(subject, email, email_verified=True)

    monkeypatch.setattr(sign_in_view, "gate", gate)
    monkeypatch.setattr(session_module, "gate", gate)
    frame, schema = _table()
    catalog = Catalog(path, signed_in=OWNER)
    found = catalog.open_table(lambda: [frame], "shop", total_epsilon=2.5)
    dataset = Dataset("shop.csv", frame, {"rows": len(frame), "columns": 3}, schema, schema, found)
    workspace.share(path, dataset, owner=OWNER.subject)
    owner = catalog.ledger(found.dataset)

    def open_as(person: SignedIn, page: str | None = None, checkout: bool = False):
        """``checkout``: opened as ``streamlit run app.py`` from the checkout, not as ``dpstudio``."""
        at = AppTest.from_file(str(REPO / "app.py") if checkout else APP, default_timeout=900)
        at.session_state[PERSON_KEY] = (person.subject, person.email)
        at.run()
        if page is not None:
            at.switch_page(f"{'dpstudio/' if checkout else ''}pages/{page}.py").run()
        return at

    return owner, open_as


def _everything(at) -> str:
    texts = []
    for kind in EVERY_ELEMENT:
        for element in getattr(at, kind, []):
            value = getattr(element, "value", None)
            texts.append(value.to_csv() if isinstance(value, pd.DataFrame) else str(value))
            texts.append(str(getattr(element, "label", "")))
    for element in [*at.sidebar.get("progress"), *at.get("arrow_vega_lite_chart"), *at.get("vega_lite_chart")]:
        texts.append(str(element.proto))
    return "\n".join(texts)


def _no_sentinel(at, rows: bool = True) -> None:
    """No sentinel on the page, nor (``rows``) the table's exact row count, plain or grouped.

    A copy's report states its noisy count of rows ("Rows: 1,241 (noisy count)"), a DP release that
    equals the exact count now and then by chance (a few runs in a hundred at its noise), so it is
    left out of the search.
    """
    everything = _everything(at)
    assert SENTINEL_CATEGORY not in everything
    assert not any(form in everything for form in (str(SENTINEL_NUMBER), f"{SENTINEL_NUMBER:,}", "987.653"))
    if rows:
        released = re.sub(r"Rows: [\d,.]+ \(noisy count\)", "", everything)
        found = mentions_of(ROWS, released)
        assert not found, found


def _train(at, epsilon: str) -> None:
    at.text_input(key="train_epsilon").set_value(epsilon).run()
    [b for b in at.button if b.label == "Train"][0].click().run()


def test_an_analyst_sees_declarations_trains_within_the_slice_and_is_stopped_by_a_revocation(room):
    owner, open_as = room
    bob = SignedIn("bob-19c2", "bob@example.org")
    granted = owner.grant(bob.email, 0.5)
    frame, schema = _table()
    summary = dp_summary(frame, schema, 0.2, owner)
    workspace.save_summary(owner.path, owner.dataset_id, summary)
    exact = summary.rows == ROWS  # the noise may land on the true count (rarely): then it is on the page, as the DP count

    at = open_as(bob)
    assert at.session_state[STATE_KEY].role == ANALYST and not at.exception
    assert any("shared with you as an analyst" in m.value for m in at.markdown)
    assert len([*at.get("arrow_vega_lite_chart"), *at.get("vega_lite_chart")]) == 3  # the summary's charts: age, city, bought
    _no_sentinel(at, rows=not exact)
    for page in ("privacy", "compare", "groups", "attack", "export"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        _no_sentinel(at, rows=not exact)
        if page == "groups":
            assert any("only the dataset's owner may see" in i.value for i in at.info)

    at.switch_page("pages/train.py").run()
    _train(at, "0.3")
    assert not at.exception
    assert any("ε = 0.3 spent" in h.value for h in at.subheader), [h.value for h in at.subheader]
    _no_sentinel(at, rows=not exact)
    assert BudgetLedger(owner.dataset_id, path=owner.path, signed_in=bob).remaining == pytest.approx(0.2)
    # The same ε again is now past the slice: refused in a sentence naming the owner, the button disabled.
    assert any("ask the dataset's owner for a larger slice" in e.value for e in at.error)
    assert all(b.disabled for b in at.button if b.label == "Train")

    owner.revoke(granted.grant_id)
    at.switch_page("pages/data.py").run()
    assert any("revoked by its owner" in w.value for w in at.warning)
    assert not any("shared with you" in m.value for m in at.markdown)


def test_a_person_without_a_slice_opens_their_own_work_not_the_shared_table(room):
    owner, open_as = room
    at = open_as(SignedIn("carol-55d0", "carol@example.org"))
    state = at.session_state[STATE_KEY]
    assert state.role != ANALYST and state.dataset.dataset_id != owner.dataset_id


def test_a_stranger_gets_a_sample_of_their_own_not_the_owners_dataset_its_history_or_its_controls(room):
    owner, open_as = room
    alices = open_as(OWNER).session_state[STATE_KEY]
    alices_sample = BudgetLedger(alices.dataset.dataset_id, path=owner.path, signed_in=OWNER)
    alices_sample.grant("bob@example.org", 0.5)
    carol = SignedIn("carol-55d0", "carol@example.org")
    at = open_as(carol, "privacy")
    state = at.session_state[STATE_KEY]
    assert not at.exception
    assert state.dataset.dataset_id != alices.dataset.dataset_id
    assert state.role == BudgetLedger(state.dataset.dataset_id, path=owner.path, signed_in=carol).role() == "owner"
    assert "alice@example.org" not in _everything(at) and "bob@example.org" not in _everything(at)
    # Carol's own sample is hers on every later visit, and Alice's stays Alice's.
    assert open_as(carol).session_state[STATE_KEY].dataset.dataset_id == state.dataset.dataset_id
    assert open_as(OWNER).session_state[STATE_KEY].dataset.dataset_id == alices.dataset.dataset_id


def test_a_session_whose_dataset_is_not_the_persons_is_closed_on_the_next_run(room):
    owner, open_as = room
    carol = SignedIn("carol-55d0", "carol@example.org")
    at = open_as(carol, "privacy")
    state = at.session_state[STATE_KEY]
    state.dataset = workspace.load_shared(owner.path, owner.dataset_id, state.catalog())  # Alice's table, somehow
    at.switch_page("pages/privacy.py").run()
    assert any("belongs to a dataset someone else owns" in w.value for w in at.warning)
    assert at.session_state[STATE_KEY].dataset.dataset_id != owner.dataset_id
    assert "alice@example.org" not in _everything(at)


def test_only_the_owner_changes_what_the_analysts_work_from(room):
    import json

    from dpstudio.support.session import remember
    from dpstudio.support.state import StudioState

    owner, open_as = room
    carol = SignedIn("carol-55d0", "carol@example.org", email_verified=True)
    shared = workspace.shared_folder(owner.path, owner.dataset_id) / "workspace.json"
    before = shared.read_text(encoding="utf-8")
    # Carol's session somehow holds Alice's shared table and saves widened declarations: nothing is shared.
    state = StudioState(ledger_path=owner.path, signed_in=carol, workspace=workspace.new_token())
    state.dataset = workspace.load_shared(owner.path, owner.dataset_id, state.catalog())
    state.dataset.schema["age"].lower, state.dataset.schema["age"].upper = -1e9, 1e9
    remember(state)
    assert not workspace.share(owner.path, state.dataset, owner=carol.subject)
    assert shared.read_text(encoding="utf-8") == before
    # Files naming someone else as who shared them are not loaded by an analyst's session.
    meta = json.loads(before)
    shared.write_text(json.dumps({**meta, "owner": carol.subject}), encoding="utf-8")
    assert workspace.load_shared(owner.path, owner.dataset_id, state.catalog()) is None
    shared.write_text(before, encoding="utf-8")
    assert workspace.load_shared(owner.path, owner.dataset_id, state.catalog()) is not None


def test_an_analysts_train_page_suggests_by_the_published_noisy_count_or_not_at_all(room):
    owner, open_as = room
    owner.grant("bob@example.org", 0.5)
    at = open_as(SignedIn("bob-19c2", "bob@example.org"), "train")
    assert not at.exception and not any("Suggested for this table's size" in c.value for c in at.caption)
    _no_sentinel(at)
    frame, schema = _table()
    workspace.save_summary(owner.path, owner.dataset_id, replace(dp_summary(frame, schema, 0.2, owner), rows=1300))
    at.switch_page("pages/train.py").run()
    assert any("Suggested for this table's size (1,300 rows" in c.value for c in at.caption)
    _no_sentinel(at)


def test_an_analyst_reads_one_fixed_sentence_when_the_owners_table_does_not_fit_its_declarations(room):
    owner, open_as = room
    frame, schema = _table()
    frame["age"] = frame["age"].astype(str)
    frame.loc[7, "age"] = "unknown"  # text in a column declared numeric: the engine's sentence says so
    catalog = Catalog(owner.path, signed_in=OWNER)
    found = catalog.open_table(lambda: [frame], "shop with text", separate=True, reason="a test")
    workspace.share(
        owner.path, Dataset("shop.csv", frame, {"rows": len(frame), "columns": 3}, schema, schema, found), owner=OWNER.subject
    )
    catalog.ledger(found.dataset).grant("bob@example.org", 1.0, 1e-6)
    at = open_as(SignedIn("bob-19c2", "bob@example.org"), "train")
    assert at.session_state[STATE_KEY].dataset.dataset_id == found.dataset.dataset_id
    _train(at, "0.1")
    assert [e.value for e in at.error] == ["The owner's table does not fit its declarations; ask the owner."]
    _no_sentinel(at)
    at.switch_page("pages/export.py").run()
    [b for b in at.button if b.label.startswith("Make the synthetic copy")][0].click().run()
    assert not at.error and not at.exception  # the copy reads values outside the declarations as missing
    _no_sentinel(at)


def test_every_complaint_about_the_table_is_one_sentence_for_an_analyst_and_as_it_was_for_the_owner():
    from dpcore.exceptions import BudgetExceededError, DataError
    from dpstudio.support.roles import refusal
    from dpstudio.support.state import StudioState

    told = DataError("Fewer than 50 rows have a usable target")
    budget = BudgetExceededError("Ask the dataset's owner for a larger slice.")
    analyst, owners = StudioState(role=ANALYST), StudioState()
    assert refusal(analyst, told) == "The owner's table does not fit its declarations; ask the owner."
    assert refusal(analyst, budget) == str(budget) and refusal(owners, told) == str(told)


def test_the_shared_table_is_deleted_when_the_last_live_slice_is_revoked(room):
    from dpstudio.support.slices_view import revoke_slice
    from dpstudio.support.state import StudioState

    owner, _open_as = room
    first, second = owner.grant("bob@example.org", 0.5), owner.grant("carol@example.org", 0.5)
    state = StudioState(ledger_path=owner.path, signed_in=OWNER)
    state.dataset = workspace.load_shared(owner.path, owner.dataset_id, state.catalog())
    table = workspace.shared_folder(owner.path, owner.dataset_id) / "table.parquet"
    revoke_slice(state, owner, first.grant_id)
    assert table.exists()  # Carol still works from it
    revoke_slice(state, owner, second.grant_id)
    assert not table.exists() and workspace.load_shared(owner.path, owner.dataset_id, state.catalog()) is None


SESSIONS, ATTEMPTS, SLICE = 8, 3, 0.25


def _gate_from_session():
    """The sign-in gate's stand-in: the person the test put in the session."""
    import streamlit as st

    subject, email = st.session_state[PERSON_KEY]
    return SignedIn(subject, email, email_verified=True)


def _analysts_session(path, subject, email, barrier, results):
    """One app process serving one analyst's session: three trainings at ε = 0.1, started with the others'.

    An error in the process is sent as its outcome, with its traceback: the test then fails at once and says
    why, instead of waiting out the queue's limit for a result that never comes.
    """
    import traceback

    try:
        results.put(_trainings(path, subject, email, barrier))
    except BaseException:
        barrier.abort()  # the others must not wait for this one at the start line
        results.put([(subject, "crashed: " + traceback.format_exc())])


def _trainings(path, subject, email, barrier):
    import os

    from streamlit.testing.v1 import AppTest

    import dpstudio.support.session as session_module
    import dpstudio.support.sign_in_view as sign_in_view

    os.environ["DPSTUDIO_LEDGER"] = path
    sign_in_view.gate = session_module.gate = _gate_from_session
    at = AppTest.from_file(APP, default_timeout=900)
    at.session_state[PERSON_KEY] = (subject, email)
    at.run()
    at.switch_page("pages/train.py").run()
    outcomes = []
    barrier.wait()
    for _attempt in range(ATTEMPTS):
        at.text_input(key="train_epsilon").set_value("0.1").run()
        buttons = [b for b in at.button if b.label == "Train" and not b.disabled]
        outcome = "refused"
        if buttons:
            before = at.session_state[STATE_KEY].trained
            buttons[0].click().run()
            trained = at.session_state[STATE_KEY].trained
            outcome = "ok" if trained is not None and trained is not before else "error: " + " ".join(e.value for e in at.error)
        outcomes.append((subject, outcome))
    return outcomes


@pytest.mark.slow
def test_eight_analysts_sessions_in_eight_processes_never_pass_their_slices_or_the_total(room):
    """Eight analysts (0.25 each of 2.5), each in an app process of their own, train three times at ε = 0.1 at once.

    AppTest runs one session per process safely (its script compiler is not for threads), so each
    session is a process, as on a team server with several app processes sharing the ledger.
    """
    import multiprocessing

    owner, _open_as = room
    analysts = [SignedIn(f"analyst-{i}", f"analyst{i}@example.org") for i in range(SESSIONS)]
    for analyst in analysts:
        owner.grant(analyst.email, SLICE)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(SESSIONS), context.Queue()
    processes = [
        context.Process(target=_analysts_session, args=(owner.path, a.subject, a.email, barrier, results)) for a in analysts
    ]
    for process in processes:
        process.start()
    outcomes = [outcome for _ in processes for outcome in results.get(timeout=900)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert len(outcomes) == SESSIONS * ATTEMPTS
    # 0.1 + 0.1 fit in a slice of 0.25; the third is refused by the page before the ledger is asked.
    assert sorted(outcome for _who, outcome in outcomes) == ["ok"] * SESSIONS * 2 + ["refused"] * SESSIONS, outcomes
    spent: dict[str, Decimal] = {}
    for line in owner.spends():
        spent[line.subject] = spent.get(line.subject, Decimal(0)) + Decimal(str(line.epsilon))
    assert set(spent) == {a.subject for a in analysts}
    assert all(amount <= Decimal(str(SLICE)) for amount in spent.values())
    assert sum(spent.values()) <= Decimal("2.5") and owner.spent == pytest.approx(1.6)


def test_an_analyst_with_little_left_is_told_to_ask_the_owner_not_to_raise_the_total(room):
    owner, open_as = room
    owner.grant("bob@example.org", 0.03, 1e-6)
    at = open_as(SignedIn("bob-19c2", "bob@example.org", email_verified=True), "train")
    warnings = [str(w.value) for w in at.warning]
    assert any("left of your slice" in w and "Ask the dataset's owner for a larger slice" in w for w in warnings)
    assert not any("Privacy page" in w for w in warnings)


def test_an_analyst_without_a_copy_is_linked_to_the_export_page_from_either_entry_point(room):
    owner, open_as = room
    owner.grant("bob@example.org", 0.5, 1e-6)
    at = open_as(SignedIn("bob-19c2", "bob@example.org", email_verified=True), "compare", checkout=True)
    assert not at.exception and any("Make a copy on the Export page first" in m.value for m in at.markdown)


def test_an_analyst_compares_models_on_their_own_copy_free_and_never_on_the_rows(room, monkeypatch):
    """Compare trains and tests on the analyst's synthetic copy (post-processing: no charge), never on the owner's rows."""
    from dpstudio.support import comparing
    from dpstudio.support.comparing import SweepSettings

    owner, open_as = room
    owner.grant("bob@example.org", 0.5, 1e-6)
    bob = SignedIn("bob-19c2", "bob@example.org", email_verified=True)
    at = open_as(bob, "compare")
    assert not at.exception
    assert any("Make a copy on the Export page first" in m.value for m in at.markdown)
    assert not at.get("arrow_vega_lite_chart") and not at.get("vega_lite_chart")
    _no_sentinel(at)

    at.switch_page("pages/export.py").run()
    [b for b in at.button if b.label.startswith("Make the synthetic copy")][0].click().run()
    assert not at.exception and not at.error
    bobs = BudgetLedger(owner.dataset_id, path=owner.path, signed_in=bob)
    after_copy = bobs.my_slice().spent
    assert after_copy > 0

    tables = []
    real_from_table = comparing.Design.from_table

    def watched(frame, *args, **kwargs):
        tables.append(frame)
        return real_from_table(frame, *args, **kwargs)

    monkeypatch.setattr(comparing.Design, "from_table", watched)
    state = at.session_state[STATE_KEY]
    state.compare_settings = SweepSettings(("dp_gaussian_nb", "sk_gaussian_nb"), (0.5, 4.0), n_folds=2)
    state.compare_pending = True
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("measured on **your synthetic copy**" in i.value for i in at.info)
    assert not any("One-click experiments" in h.value for h in at.subheader)  # a preset would swap the table
    summary = [d.value for d in at.dataframe]
    assert summary and len(summary[-1]) == 3  # two ε of the DP model and the non-private one, all on the copy
    everything = _everything(at)
    assert "Trained and tested on your synthetic copy" in everything and "owner's raw data" not in everything.lower()
    _no_sentinel(at)
    # Every table the sweep fitted on was the copy: not the owner's frame, never the sentinel, never its exact length.
    assert tables and all(t is not state.dataset.frame for t in tables)
    assert all(SENTINEL_CATEGORY not in set(t["city"].astype(str)) and SENTINEL_NUMBER not in set(t["age"]) for t in tables)
    assert bobs.my_slice().spent == after_copy  # comparing on the copy is post-processing: nothing charged
    assert not state.best_model  # the Train page's suggestion speaks of the owner's own comparisons


def test_an_analysts_attack_page_shows_what_their_slice_allows_and_runs_nothing_on_the_rows(room):
    owner, open_as = room
    owner.grant("bob@example.org", 0.5, 1e-6)
    at = open_as(SignedIn("bob-19c2", "bob@example.org"), "attack")
    assert not at.exception
    assert any("only the dataset's owner may run them" in i.value for i in at.info)
    assert any("(ε = 0.5, δ = 1e-06)-differentially private" in m.value for m in at.markdown)
    assert [m.value for m in at.metric][0] == "62.2%"  # e^0.5 / (1 + e^0.5), a bound of ε alone
    assert not any(b.label in ("Attack the model", "Audit the model") for b in at.button)
    _no_sentinel(at)
    bob = SignedIn("bob-19c2", "bob@example.org", email_verified=True)
    assert BudgetLedger(owner.dataset_id, path=owner.path, signed_in=bob).my_slice().spent == 0


def test_a_dataset_made_before_sign_in_says_it_has_no_owner_and_only_a_person_the_server_names_claims_it(room, monkeypatch):
    owner, open_as = room
    monkeypatch.setenv("DPSTUDIO_CLAIMERS", " carol@example.org , someone|else")
    frame, schema = _table()
    before = Catalog(owner.path).open_table(lambda: [frame.iloc[:600]], "from before sign-in", separate=True, reason="a test")
    workspace.share(owner.path, Dataset("old.csv", frame.iloc[:600], {"rows": 600, "columns": 3}, schema, schema, before))

    def open_unowned(person: SignedIn):
        at = open_as(person, "privacy")
        state = at.session_state[STATE_KEY]
        state.dataset = workspace.load_shared(owner.path, before.dataset.dataset_id, state.catalog())
        return at.switch_page("pages/privacy.py").run()

    alice = open_unowned(OWNER)
    assert not alice.exception
    assert any("created before sign-in was turned on, so it has no owner" in w.value for w in alice.warning)
    assert any("does not name you" in c.value for c in alice.caption)
    assert not any(b.label == "Claim this dataset as its owner" for b in alice.button)

    carol = SignedIn("carol-55d0", "carol@example.org", email_verified=True)
    at = open_unowned(carol)
    [b for b in at.button if b.label == "Claim this dataset as its owner"][0].click().run()
    assert not at.exception and not any("has no owner" in w.value for w in at.warning)
    claimed = BudgetLedger(before.dataset.dataset_id, path=owner.path, signed_in=carol)
    assert claimed.role() == "owner" and not unowned(claimed)
    assert "owner claimed" in set(claimed.history()["event"])
    # Alice's session, which held the dataset while it was everyone's, is closed on its next run.
    alice.switch_page("pages/privacy.py").run()
    assert any("belongs to a dataset someone else owns" in w.value for w in alice.warning)
