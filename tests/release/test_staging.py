"""Staging beside the destination (dpcore.release.staging): owner-only, and left-overs of a killed release removed."""

from __future__ import annotations

import stat

from release_testing import plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.budget.accountant import ADD_REMOVE
from dpcore.release.staging import staging


def test_staging_is_owner_only_and_removed_after_the_block(tmp_path):
    with staging(tmp_path, ".copy.", folder=True) as folder, staging(tmp_path, ".out.csv.", folder=False) as file:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(file.stat().st_mode) == 0o600
        (folder / "part-00000.csv").write_text("x\n")
    assert list(tmp_path.iterdir()) == []


def test_a_release_removes_what_a_killed_release_left_but_not_a_running_ones(tmp_path):
    source = tmp_path / "in.csv"
    small_frame(200).to_csv(source, index=False)
    stale_file = tmp_path / ".out.csv.k1ll3d_9.partial"
    stale_file.write_text("an uncharged copy")
    stale_folder = tmp_path / ".out.csv.abcdefgh.partial"
    stale_folder.mkdir()
    (stale_folder / "part-00000.csv").write_text("an uncharged copy")
    other = tmp_path / ".other.csv.abcdefgh.partial"  # another destination's: not this release's to judge
    other.write_text("x")
    with staging(tmp_path, ".out.csv.", folder=False) as running:
        R.release_csv(
            source, tmp_path / "out.csv", small_schema(), plan_with(smoker={"mechanism": "coin"}), random_state=1, unit=ADD_REMOVE
        )
        assert running.exists()  # held by a release still running
    assert not stale_file.exists() and not stale_folder.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.csv.abcdefgh.partial", "in.csv", "out.csv"]


def test_a_stored_copy_left_unnamed_by_a_killed_release_is_removed(tmp_path):
    from dpcore.budget.accountant import BudgetLedger

    book = BudgetLedger("staged", total_epsilon=5.0, path=tmp_path / "ledger.sqlite3")
    copies = tmp_path / "ledger.sqlite3-copies"
    copies.mkdir()
    (copies / ".copy-abcd1234.partial").write_bytes(b"an uncharged copy")
    R.release_table(small_frame(50), small_schema(), plan_with(smoker={"mechanism": "coin"}), ledger=book, random_state=2)
    names = [p.name for p in copies.iterdir()]
    assert len(names) == 1 and names[0].endswith(".parquet")
