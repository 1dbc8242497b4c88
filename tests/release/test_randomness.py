"""Where a copy's noise comes from, and its row order (dpcore.release.randomness).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from release_testing import plan_with, small_frame, small_schema

from dpcore import release as R
from dpcore.release import streaming


def test_row_order_does_not_survive_into_the_copy(tmp_path, monkeypatch):
    """A file sorted by a sensitive column must not give each row's value away by its position."""
    n = 4000
    frame = pd.DataFrame({"id": "x", "smoker": np.where(np.arange(n) < n // 2, "no", "yes"), "colour": "red", "score": 1.0})
    plan = plan_with(smoker={"mechanism": "k-ary", "epsilon": 0.5})
    released = R.release_table(frame, small_schema(), plan, random_state=5).table["smoker"]
    first_half_yes = (released[: n // 2] == "yes").mean()
    second_half_yes = (released[n // 2 :] == "yes").mean()
    # In input order the halves would differ by p − q ≈ 0.24; shuffled they differ by sampling noise only.
    assert abs(first_half_yes - second_half_yes) < 0.06
    # The streaming release shuffles the same way, across several buckets.
    monkeypatch.setattr(streaming, "SHUFFLE_BUCKET_BYTES", 20_000)
    source = tmp_path / "sorted.csv"
    frame.to_csv(source, index=False)
    streamed = R.release_csv(source, tmp_path / "out.csv", small_schema(), plan, random_state=5, chunksize=700)
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, small_schema(), plan, random_state=5).csv
    assert streamed.per_record_epsilon == 0.5


def test_without_a_seed_copies_differ():
    frame, plan = small_frame(300), plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0})
    first = R.release_table(frame, small_schema(), plan)
    assert not first.seeded and not first.report["seeded"]
    assert first.csv != R.release_table(frame, small_schema(), plan).csv
    seeded = R.release_table(frame, small_schema(), plan, random_state=1)
    assert seeded.report["seeded"] and "TEST RELEASE" in seeded.markdown
