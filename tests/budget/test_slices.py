"""Owners and analysts: slices of a dataset's budget in the ledger (format 5), on SQLite and on PostgreSQL (issue 32).

An analyst's spend is checked against their slice and the total in the one check-and-charge; the
slices and the owner's spends compose into the total; revoking stops further spends and keeps what
was spent; grants and revocations are append-only lines of the history naming who made them; and
concurrent analysts in several processes never pass their slices or the total.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from contextlib import closing
from decimal import Decimal

import pytest

from dpcore.budget.accountant import ANALYST, OWNER, REPLACE_ONE, BudgetLedger, Charge
from dpcore.budget.datasets import Catalog
from dpcore.budget.ledger_db import FORMAT, connect
from dpcore.budget.signed_in import SignedIn
from dpcore.budget.slices import unowned
from dpcore.exceptions import BudgetExceededError

OWNER_ALICE = SignedIn("alice-7f3a", "alice@example.org")
BOB = SignedIn("bob-19c2", "Bob@Example.org", email_verified=True)
CAROL = SignedIn("carol-55d0", "carol@example.org", email_verified=True)
SLICE_REFUSAL = "ask the dataset's owner for a larger slice"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_path(request, tmp_path) -> str:
    """A fresh ledger: a SQLite file, then a schema of its own on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_server").fresh_ledger()


def _dataset(path, total=2.0, total_delta=1e-5) -> str:
    """A dataset created by Alice (its owner), with a total of ε = ``total``."""
    return Catalog(path, signed_in=OWNER_ALICE).create("clinic", total_epsilon=total, total_delta=total_delta).dataset_id


def _as(path, dataset_id, person) -> BudgetLedger:
    return BudgetLedger(dataset_id, path=path, signed_in=person)


def test_the_creator_owns_a_granted_analyst_analyses_and_anyone_else_is_neither(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    owner.grant("bob@example.org", 0.5)
    assert owner.role() == OWNER
    assert _as(ledger_path, dataset, BOB).role() == ANALYST  # granted by e-mail, matched whatever its case
    assert _as(ledger_path, dataset, CAROL).role() is None
    assert BudgetLedger(dataset, path=ledger_path).role() == OWNER  # without sign-in: the one machine's user


def test_an_analyst_spends_within_the_slice_and_is_refused_past_it_with_the_way_out(ledger_path):
    dataset = _dataset(ledger_path)
    _as(ledger_path, dataset, OWNER_ALICE).grant("bob@example.org", 0.5)
    bob = _as(ledger_path, dataset, BOB)
    assert bob.remaining == pytest.approx(0.5)
    with bob.charging(Charge("Train DP tree", 0.3)):
        pass
    assert bob.remaining == pytest.approx(0.2)
    with pytest.raises(BudgetExceededError) as refused:
        with bob.charging(Charge("Train DP tree", 0.3, action="Training", undone="trained")):
            raise AssertionError("the work must not run")
    assert SLICE_REFUSAL in str(refused.value) and "at most ε = 0.2" in str(refused.value)
    assert "Nothing was trained or charged" in str(refused.value)
    (spent,) = bob.spends()
    assert (spent.subject, spent.email) == (BOB.subject, BOB.email)
    (granted,) = bob.slices()
    assert granted.spent == Decimal("0.3") and granted.left == Decimal("0.2")


def test_slices_and_the_owners_spends_compose_into_the_total(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    owner.grant("bob@example.org", 0.5)
    owner.grant(CAROL.subject, 1.0)  # by subject
    assert owner.remaining == pytest.approx(0.5)  # 2 less the two slices' reservations
    with pytest.raises(BudgetExceededError, match="Analysts' slices hold ε = 1.5"):
        owner.spend("owner's count", 0.6)
    owner.spend("owner's count", 0.5)
    with pytest.raises(BudgetExceededError, match="does not fit: what no spend or other slice holds is ε = 0,"):
        owner.grant("dan@example.org", 0.1)
    with pytest.raises(BudgetExceededError, match="Revoke a slice first"):
        owner.set_total(1.0)
    _as(ledger_path, dataset, CAROL).spend("Carol's count", 1.0)
    _as(ledger_path, dataset, BOB).spend("Bob's count", 0.5)
    assert owner.spent == pytest.approx(2.0) and owner.remaining == 0


def test_a_revoked_slice_spends_nothing_more_keeps_what_it_spent_and_returns_the_rest(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    granted = owner.grant("bob@example.org", 0.5)
    bob = _as(ledger_path, dataset, BOB)
    bob.spend("Bob's count", 0.2)
    owner.revoke(granted.grant_id, reason="project over")
    with pytest.raises(BudgetExceededError, match="has revoked your slice.*Ask the owner for a new slice"):
        bob.spend("Bob's count", 0.01)
    assert bob.role() is None and bob.remaining == 0
    assert owner.spent == pytest.approx(0.2) and owner.remaining == pytest.approx(1.8)
    with pytest.raises(BudgetExceededError, match="not a live slice"):
        owner.revoke(granted.grant_id)
    again = owner.grant("bob@example.org", 0.1)  # a change is a revocation and a new grant
    assert bob.remaining == pytest.approx(0.1) and again.spent == 0


def test_on_a_dataset_created_without_sign_in_everyone_owns_it_but_its_analysts(ledger_path):
    BudgetLedger("shared", total_epsilon=2.0, path=ledger_path)  # the app on one machine, before sign-in
    owner = _as(ledger_path, "shared", OWNER_ALICE)
    granted = owner.grant("bob@example.org", 0.5)
    bob = _as(ledger_path, "shared", BOB)
    assert owner.role() == OWNER and _as(ledger_path, "shared", CAROL).role() == OWNER and bob.role() == ANALYST
    with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
        bob.grant("mallory@example.org", 0.5)
    with pytest.raises(BudgetExceededError, match=SLICE_REFUSAL):
        bob.spend("Bob's count", 0.6)
    owner.revoke(granted.grant_id)
    assert bob.role() is None


def test_only_the_owner_grants_or_revokes_and_nobody_grants_to_themselves_or_twice(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    granted = owner.grant("bob@example.org", 0.5)
    for stranger in (BOB, CAROL):
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            _as(ledger_path, dataset, stranger).grant("mallory@example.org", 0.5)
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            _as(ledger_path, dataset, stranger).revoke(granted.grant_id)
    with pytest.raises(BudgetExceededError, match="already holds a slice"):
        owner.grant("BOB@example.org", 0.1)
    with pytest.raises(BudgetExceededError, match="your own spends need no slice"):
        owner.grant(OWNER_ALICE.email, 0.1)
    with pytest.raises(ValueError, match="name the analyst"):
        owner.grant("  ", 0.1)


def test_a_unit_change_that_would_leave_live_slices_without_room_is_refused(ledger_path):
    dataset = _dataset(ledger_path, total=2.0)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    owner.grant("bob@example.org", 1.0)
    owner.spend("owner's model", 0.6)  # 1.2 in the replace-one unit, and the slice still holds 1.0
    with pytest.raises(BudgetExceededError, match="In the new unit"):
        owner.set_unit(REPLACE_ONE, confirm=True)


def test_a_slice_is_in_the_datasets_unit_and_caps_delta_too(ledger_path):
    dataset = _dataset(ledger_path, total=4.0, total_delta=1e-5)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    owner.set_unit(REPLACE_ONE)
    owner.grant("bob@example.org", 1.0, delta=1e-6)
    bob = _as(ledger_path, dataset, BOB)
    with pytest.raises(BudgetExceededError, match=SLICE_REFUSAL):
        bob.spend("add/remove model", 0.6)  # 1.2 in the replace-one unit
    bob.spend("add/remove model", 0.5)
    assert bob.remaining == 0
    with pytest.raises(BudgetExceededError, match=SLICE_REFUSAL):
        bob.spend("a δ too many", 0.0001, relation=REPLACE_ONE, delta=2e-6)


def test_grants_and_revocations_are_in_the_history_with_who_made_them_and_cannot_be_rewritten(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    granted = owner.grant("bob@example.org", 0.5)
    _as(ledger_path, dataset, BOB).spend("Train DP tree", 0.25)
    owner.revoke(granted.grant_id, reason="project over")
    history = owner.history()
    assert history["event"].tolist() == ["total set", "slice granted", "slice claimed", "spend", "slice revoked"]
    granted_line, claimed_line, spend_line, revoked_line = (history.iloc[i] for i in (1, 2, 3, 4))
    assert claimed_line["by (e-mail)"] == BOB.email  # the e-mail grant is Bob's subject's from his first spend
    assert granted_line["what"] == "to bob@example.org" and granted_line["ε in the dataset's unit"] == 0.5
    assert granted_line["by (e-mail)"] == revoked_line["by (e-mail)"] == OWNER_ALICE.email
    assert spend_line["by (e-mail)"] == BOB.email and "project over" in revoked_line["what"]
    with closing(connect(ledger_path)) as conn:
        for statement in ("UPDATE grants SET epsilon = '9'", "DELETE FROM revocations"):
            with pytest.raises(Exception, match="append-only"):
                conn.execute(statement)


def test_a_fourth_format_ledger_is_upgraded_in_place_to_slices(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    BudgetLedger("d", total_epsilon=1.0, path=path, signed_in=OWNER_ALICE).spend("before slices", 0.25)
    conn = sqlite3.connect(path)
    for table in ("grants", "revocations"):
        for action in ("update", "delete"):
            conn.execute(f"DROP TRIGGER {table}_no_{action}")
        conn.execute(f"DROP TABLE {table}")
    conn.execute("ALTER TABLE spends DROP COLUMN grant_id")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()

    owner = BudgetLedger("d", path=path, signed_in=OWNER_ALICE)
    owner.grant("bob@example.org", 0.5)
    BudgetLedger("d", path=path, signed_in=BOB).spend("Bob's count", 0.25)
    assert owner.spent == pytest.approx(0.5) and owner.remaining == pytest.approx(0.25)
    with closing(connect(path)) as upgraded:
        assert upgraded.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 5
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            upgraded.execute("DELETE FROM grants")


def test_a_fourth_format_server_ledger_is_upgraded_to_slices(postgres_server):
    import psycopg

    url = postgres_server.fresh_ledger()
    BudgetLedger("d", total_epsilon=1.0, path=url, signed_in=OWNER_ALICE).spend("before slices", 0.25)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE grants, revocations")
        conn.execute("ALTER TABLE spends DROP COLUMN grant_id")
        conn.execute("UPDATE ledger_format SET format = 4")
    owner = BudgetLedger("d", path=url, signed_in=OWNER_ALICE)
    owner.grant("bob@example.org", 0.5)
    BudgetLedger("d", path=url, signed_in=BOB).spend("Bob's count", 0.25)
    assert [s.analyst for s in owner.slices()] == ["bob@example.org"] and owner.slices()[0].spent == Decimal("0.25")
    with closing(connect(url)) as upgraded, pytest.raises(psycopg.Error, match="append-only"):
        upgraded.execute("UPDATE grants SET epsilon = '9'")


# --- concurrent analysts across processes ------------------------------------------------------

PROCESSES, ANALYSTS_PER_PROCESS, ATTEMPTS = 4, 2, 6
SLICE, CHARGE = 0.25, 0.06  # 0.25 / 0.06 leaves 0.01: four charges fit in a slice, the fifth is refused


def _analysts_charging(path, dataset, process, barrier, results):
    """One app process: two analysts' sessions (threads), each charging more than their slice holds, plus the owner."""
    outcomes = []
    lock = threading.Lock()
    start = threading.Barrier(ANALYSTS_PER_PROCESS + 1)

    def session(person):
        ledger = BudgetLedger(dataset, path=path, signed_in=person)
        start.wait()
        for attempt in range(ATTEMPTS):
            try:
                with ledger.charging(Charge(f"{person.subject} charge {attempt}", CHARGE)):
                    pass
                outcome = (person.subject, "ok")
            except BudgetExceededError as refusal:
                outcome = (person.subject, str(refusal))
            with lock:
                outcomes.append(outcome)

    people = [
        SignedIn(f"analyst-{process}-{i}", f"a{process}{i}@example.org", email_verified=True) for i in range(ANALYSTS_PER_PROCESS)
    ]
    people.append(OWNER_ALICE)
    barrier.wait()
    threads = [threading.Thread(target=session, args=(person,)) for person in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    results.put(outcomes)


def test_eight_analysts_in_four_processes_never_pass_their_slices_or_the_total(ledger_path):
    """Eight analysts with a slice of 0.25 each (2 of 2.5) and the owner (0.5 unreserved) charge at once."""
    dataset = _dataset(ledger_path, total=2.5)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    for process in range(PROCESSES):
        for i in range(ANALYSTS_PER_PROCESS):
            owner.grant(f"analyst-{process}-{i}", SLICE)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    processes = [
        context.Process(target=_analysts_charging, args=(ledger_path, dataset, p, barrier, results)) for p in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    outcomes = [outcome for _ in processes for outcome in results.get(timeout=180)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    analysts = [o for o in outcomes if o[0] != OWNER_ALICE.subject]
    assert sum(o[1] == "ok" for o in analysts) == 8 * 4  # exactly what fits in each slice, in any interleaving
    assert all(SLICE_REFUSAL in o[1] for o in analysts if o[1] != "ok")
    with closing(connect(ledger_path)) as conn:
        rows = conn.execute("SELECT subject, epsilon FROM spends WHERE dataset_id = ?", (dataset,)).fetchall()
    by_person: dict[str, Decimal] = {}
    for subject, epsilon in rows:
        by_person[subject] = by_person.get(subject, Decimal(0)) + Decimal(epsilon)
    assert all(spent <= Decimal(str(SLICE)) for who, spent in by_person.items() if who != OWNER_ALICE.subject)
    assert by_person[OWNER_ALICE.subject] <= Decimal("0.5")
    assert sum(by_person.values()) <= Decimal("2.5")


def test_the_catalog_lists_the_datasets_a_person_holds_a_live_slice_of(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    granted = owner.grant("bob@example.org", 0.5)
    catalog = Catalog(ledger_path)
    assert [d.dataset_id for d in catalog.granted_to(BOB)] == [dataset]
    assert catalog.granted_to(CAROL) == [] and catalog.granted_to(None) == []
    owner.revoke(granted.grant_id)
    assert catalog.granted_to(BOB) == []


def test_only_the_owner_sets_the_total_or_the_unit_or_writes_the_history(ledger_path):
    dataset = _dataset(ledger_path)
    _as(ledger_path, dataset, OWNER_ALICE).grant("bob@example.org", 0.5)
    bob, carol = _as(ledger_path, dataset, BOB), _as(ledger_path, dataset, CAROL)
    bob.spend("Bob's count", 0.5)  # his slice is spent: nothing is held back any more
    for person in (bob, carol):
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            person.set_total(50, confirm_raise=True)
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            person.set_unit(REPLACE_ONE, confirm=True)
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            person.record_event("rewritten", "by someone else")
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            person.grant("mallory@example.org", 0.1)
        with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
            person.revoke(1)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    assert owner.total == pytest.approx(2.0) and owner.unit != REPLACE_ONE
    owner.set_total(3.0, confirm_raise=True)
    owner.set_unit(REPLACE_ONE, confirm=True)
    assert owner.total == pytest.approx(3.0) and owner.unit == REPLACE_ONE


def test_a_signed_in_person_with_no_role_spends_nothing_and_is_told_to_ask_for_a_slice(ledger_path):
    dataset = _dataset(ledger_path)
    carol = _as(ledger_path, dataset, CAROL)
    assert carol.role() is None
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner for a slice") as refused:
        with carol.charging(Charge("Train DP tree", 0.1, action="Training", undone="trained")):
            raise AssertionError("the work must not run")
    assert "Nothing was trained or charged" in str(refused.value)
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner for a slice"):
        carol.spend_parallel("Carol's groups", [0.1, 0.1])
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner for a slice"):
        carol.count_people_as("one row per person")
    assert _as(ledger_path, dataset, OWNER_ALICE).spent == 0


def test_without_sign_in_everyone_still_owns_the_one_machines_dataset(ledger_path):
    ledger = BudgetLedger("local", 2.0, ledger_path)
    ledger.spend("count", 0.5)
    ledger.set_total(3.0, confirm_raise=True)
    ledger.set_unit(REPLACE_ONE, confirm=True)
    ledger.record_event("note", "kept")
    assert ledger.total == pytest.approx(3.0) and ledger.role() == OWNER


def test_an_unverified_email_matches_no_grant(ledger_path):
    dataset = _dataset(ledger_path)
    _as(ledger_path, dataset, OWNER_ALICE).grant("bob@example.org", 0.5)
    unverified = _as(ledger_path, dataset, SignedIn("bob-19c2", "bob@example.org"))
    assert unverified.role() is None and unverified.my_slice() is None
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner for a slice"):
        unverified.spend("Bob's count", 0.1)
    assert _as(ledger_path, dataset, BOB).role() == ANALYST


def test_a_grant_by_email_is_bound_to_the_subject_that_first_spends_under_it(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    owner.grant("bob@example.org", 0.5)
    _as(ledger_path, dataset, BOB).spend("Bob's count", 0.1)
    (granted,) = owner.slices()
    assert granted.claimed_by == BOB.subject
    # The address changes hands: its next holder, verified or not, inherits nothing.
    recycled = _as(ledger_path, dataset, SignedIn("dave-0a1b", "bob@example.org", email_verified=True))
    assert recycled.role() is None
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner for a slice"):
        recycled.spend("Dave's count", 0.1)
    assert _as(ledger_path, dataset, BOB).role() == ANALYST and _as(ledger_path, dataset, BOB).remaining == pytest.approx(0.4)
    assert owner.history()["event"].tolist().count("slice claimed") == 1
    # One live slice per person: neither their e-mail nor the subject that claimed it gets a second.
    for again in ("BOB@example.org", BOB.subject):
        with pytest.raises(BudgetExceededError, match="already holds a slice"):
            owner.grant(again, 0.1)


def test_a_subject_from_another_provider_is_another_person(ledger_path):
    alice = SignedIn("https://id.example|alice-7f3a", "alice@example.org", email_verified=True)
    mallory = SignedIn("https://other.example|alice-7f3a", "mallory@example.net", email_verified=True)
    dataset = Catalog(ledger_path, signed_in=alice).create("clinic", total_epsilon=2.0).dataset_id
    assert _as(ledger_path, dataset, alice).role() == OWNER
    assert _as(ledger_path, dataset, mallory).role() is None
    with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
        _as(ledger_path, dataset, mallory).grant("mallory@example.net", 1.0)


def test_a_person_granted_twice_before_using_either_spends_under_neither_until_one_is_revoked(ledger_path):
    dataset = _dataset(ledger_path)
    owner = _as(ledger_path, dataset, OWNER_ALICE)
    by_email = owner.grant("bob@example.org", 0.5)
    owner.grant(BOB.subject, 0.5)  # nobody can tell yet that the address and the subject are one person
    bob = _as(ledger_path, dataset, BOB)
    with pytest.raises(BudgetExceededError, match="ask the dataset's owner to revoke one"):
        bob.spend("Bob's count", 0.1)
    owner.revoke(by_email.grant_id)
    bob.spend("Bob's count", 0.1)
    assert bob.remaining == pytest.approx(0.4)


def test_a_dataset_created_before_sign_in_is_claimed_once_by_a_person_the_server_names_and_the_claim_is_history(
    ledger_path,
):
    BudgetLedger("before", total_epsilon=2.0, path=ledger_path)  # the app on one machine, before sign-in
    alice, carol = _as(ledger_path, "before", OWNER_ALICE), _as(ledger_path, "before", CAROL)
    granted = alice.grant("bob@example.org", 0.5)  # while it is everyone's, anyone signed in acts as its owner
    assert unowned(alice) and alice.role() == OWNER and carol.role() == OWNER
    allowed = ["carol@example.org", "someone|else"]
    with pytest.raises(BudgetExceededError, match="does not name you"):
        alice.claim_ownership(allowed)  # not on the server's list
    with pytest.raises(BudgetExceededError, match="does not name you"):
        _as(ledger_path, "before", SignedIn("x", "carol@example.org")).claim_ownership(allowed)  # e-mail not verified
    with pytest.raises(BudgetExceededError, match="does not name you"):
        BudgetLedger("before", path=ledger_path).claim_ownership(allowed)  # nobody signed in
    with pytest.raises(ValueError):
        alice.record_event("owner claimed", "a way round the check")  # the line is written by the claim only
    assert unowned(alice)

    carol.claim_ownership(allowed)
    assert not unowned(carol) and carol.role() == OWNER
    assert alice.role() is None and _as(ledger_path, "before", BOB).role() == ANALYST  # Bob's slice stays live
    with pytest.raises(BudgetExceededError, match="Only the dataset's owner"):
        alice.revoke(granted.grant_id)
    with pytest.raises(BudgetExceededError, match="already has an owner"):
        carol.claim_ownership(allowed)
    history = carol.history()
    claimed = history[history["event"] == "owner claimed"]
    assert len(claimed) == 1 and claimed["by"].iloc[0] == CAROL.subject
    with pytest.raises(BudgetExceededError, match="already has an owner"):  # a dataset created signed in is its creator's
        _as(ledger_path, _dataset(ledger_path), CAROL).claim_ownership(allowed)
    # Without sign-in the one machine's user still owns every dataset.
    assert BudgetLedger("before", path=ledger_path).role() == OWNER
