"""Where a copy's noise comes from, and its row order (dpcore.release.randomness).

Statistical tests are seeded and calibrated: α = 1e-6 per check (see release_testing.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
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


def test_a_rows_draws_do_not_depend_on_its_batch():
    """Keyed draws: randomising rows in any batches (as chunks or Spark tasks cut them) gives each row the same values."""
    from dpcore.release.randomness import Draws, order_words, positions
    from dpcore.release.table import prepare, release_chunk

    frame = small_frame(1000)
    frame.loc[3, "colour"] = None
    plan = plan_with(
        smoker={"mechanism": "coin"},
        colour={"mechanism": "k-ary", "epsilon": 0.5},
        score={"mechanism": "laplace", "epsilon": 1.0},
    )
    treatments = prepare(small_schema(), plan).treatments
    draws = Draws.of(11)
    rows = positions(0, len(frame))
    whole, flags = release_chunk(frame, rows, treatments, draws.key)
    assert flags[:, 1].sum() == 1 and not flags[:, 0].any()  # the missing colour
    cuts = [0, 1, 250, 251, 999, 1000]
    batches = [
        release_chunk(frame.iloc[a:b].reset_index(drop=True), rows[a:b], treatments, draws.key)[0]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]
    assert pa.concat_tables(batches).equals(whole)
    shuffled = np.random.default_rng(0).permutation(len(frame))
    backwards = release_chunk(frame.iloc[shuffled].reset_index(drop=True), rows[shuffled], treatments, draws.key)[0]
    assert backwards.equals(whole.take(pa.array(shuffled)))
    assert np.array_equal(order_words(draws.key, rows[500:]), order_words(draws.key, rows)[500:])
    assert not pa.concat_tables(batches).equals(release_chunk(frame, rows, treatments, Draws.of(12).key)[0])


def test_keyed_laplace_noise_has_the_mechanisms_law():
    """Exact discrete Laplace steps from the keyed stream: the pmf of scale b on the value's grid (chi-square, α = 1e-6)."""
    from exact_testing import assert_discrete_laplace

    from dpcore.mechanisms import Laplace, exact

    rows = np.arange(200_000, dtype=np.uint64)
    laplace = Laplace(1.0, 2.0)
    noise = laplace.randomise_keyed(np.zeros(len(rows)), b"k" * 16, rows, 7)
    grid, scale = exact.laplace_plan(2.0, 1.0, 1)
    assert np.array_equal(noise / grid, np.round(noise / grid))
    assert_discrete_laplace(np.round(noise / grid).astype(np.int64), scale)
    # A row's noise is its own: the same rows drawn in another chunk get the same noise.
    assert np.array_equal(laplace.randomise_keyed(np.zeros(1000), b"k" * 16, rows[5000:6000], 7), noise[5000:6000])
    assert np.array_equal(laplace.randomise_keyed(np.zeros(5), b"k" * 16, rows[5000:5005], 7), noise[5000:5005])
    assert abs(np.mean(noise)) < 5 * 2.0 * np.sqrt(2 / len(noise))
