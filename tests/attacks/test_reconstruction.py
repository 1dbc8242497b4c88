"""Reconstruction from the randomized copy: the copy keeps the true value as often as e^ε/(e^ε+k−1) says, and a
well-informed attacker gains no more from it than ε allows.

Seeded; rates are compared with a tolerance of ``Z`` = 5 binomial standard errors (two-sided
false-alarm rate below 1e-6 on a fresh seed).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import attack_reconstruction, html_report, reconstruction_sentences
from dpcore.attacks.reconstruction import copy_ceiling
from dpcore.exceptions import DataError
from dpcore.release import ColumnPlan, ReleasePlan
from dpcore.tables.schema import ColumnSpec, Schema

Z = 5.0
SENTINEL = "SENTINEL-2291"


def table(n: int = 4000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A colour, a shade that always follows from it, an unrelated size, and one undeclared value."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "grey"], n, p=[0.4, 0.3, 0.2, 0.1])
    shade = np.where(np.isin(colour, ["red", "blue"]), "dark", "light")
    frame = pd.DataFrame({"id": np.arange(n).astype(str), "colour": colour, "shade": shade, "size": rng.random(n) * 100})
    frame.loc[3, "colour"] = SENTINEL  # not a declared category: randomised as a random one, never measured
    schema = Schema(
        [
            ColumnSpec("id", role="identifier", kind="categorical"),
            ColumnSpec("colour", kind="categorical", categories=["red", "green", "blue", "grey"], may_be_missing=False),
            ColumnSpec("shade", kind="categorical", categories=["dark", "light"], may_be_missing=False),
            ColumnSpec("size", lower=0.0, upper=100.0, may_be_missing=False),
        ]
    )
    return frame, schema


def within(rate: float, expected: float, n: int) -> bool:
    return abs(rate - expected) <= Z * math.sqrt(expected * (1 - expected) / n)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_the_copy_keeps_the_true_value_as_often_as_the_guarantee_says(epsilon):
    frame, schema = table()
    result = attack_reconstruction(frame, schema, epsilon=epsilon, max_rows=None, prior_rounds=0, random_state=1)
    by_column = {c.column: c for c in result.columns}
    assert set(by_column) == {"colour", "shade", "size"}
    for c in result.columns:
        expected = keep_probability(c.epsilon, c.k)
        assert c.guarantee == pytest.approx(expected)
        assert within(c.copy_only, expected, c.n), (c.column, c.copy_only, expected)
        assert not c.exceeds_ceiling, c
    assert by_column["colour"].n == len(frame) - 1  # the undeclared value is not measured
    assert by_column["shade"].mechanism == "coin" or by_column["shade"].epsilon == epsilon


def keep_probability(epsilon: float, k: int) -> float:
    """``e^ε/(e^ε + k − 1)``, written out here independently of the mechanism."""
    return math.exp(epsilon) / (math.exp(epsilon) + k - 1)


def test_an_attacker_who_knows_the_rest_gains_at_most_what_epsilon_allows():
    frame, schema = table(6000, seed=2)
    result = attack_reconstruction(frame, schema, epsilon=1.0, max_rows=None, prior_rounds=10, random_state=3)
    shade = next(c for c in result.columns if c.column == "shade")
    assert shade.prior_only > 0.95  # the colour gives the shade away: the copy adds nothing to that
    size = next(c for c in result.columns if c.column == "size")
    assert size.prior_only < 0.25 and size.with_copy > size.prior_only  # nothing else tells the size: the copy helps
    for c in result.columns:
        assert c.with_copy <= c.ceiling + Z * math.sqrt(0.25 / c.n)
        assert c.blank_copy <= c.prior_only + Z * math.sqrt(0.25 / c.n)  # a blank copy adds nothing to what it knew
    assert "helped no more than ε allows" in " ".join(reconstruction_sentences(result))


def test_the_ceiling_is_never_below_the_guarantee_for_a_blind_guess():
    for k in (2, 5, 42):
        for epsilon in (0.1, 1.0, 5.0):
            assert copy_ceiling(1 / k, epsilon) >= keep_probability(epsilon, k) - 1e-12
            assert copy_ceiling(1.0, epsilon) == 1.0


def test_the_ceiling_of_an_approximate_release_adds_what_delta_allows():
    """A mechanism that is exactly ε-DP but for a δ chance of printing the value: its guess reaches the δ-ceiling."""
    prior, epsilon, delta = 0.2, 0.5, 0.01
    assert copy_ceiling(prior, 0.0, delta) == pytest.approx(prior + delta)
    assert copy_ceiling(prior, epsilon, delta) == pytest.approx(min(math.exp(epsilon) * prior + delta, 1.0))
    assert copy_ceiling(0.9, epsilon, delta) == pytest.approx(1 - math.exp(-epsilon) * (0.1 - delta))
    assert all(copy_ceiling(p, e, delta) >= copy_ceiling(p, e) for p in (0.01, 0.5, 0.99) for e in (0.1, 1.0))


def test_a_given_plan_is_attacked_column_by_column_and_laplace_columns_are_skipped():
    frame, schema = table(1000)
    plan = ReleasePlan([ColumnPlan("colour", "k-ary", epsilon=2.0), ColumnPlan("size", "laplace", epsilon=1.0)])
    result = attack_reconstruction(frame, schema, plan, prior_rounds=5, random_state=0)
    assert [c.column for c in result.columns] == ["colour"] and result.columns[0].epsilon == 2.0
    assert any("Laplace" in note for note in result.notes)


def test_nothing_to_attack_is_a_sentence():
    frame, schema = table(200)
    with pytest.raises(DataError, match="no column by randomized response"):
        attack_reconstruction(frame, schema, ReleasePlan([ColumnPlan("size", "laplace", epsilon=1.0)]))


def test_no_cell_value_reaches_the_sentences_or_the_summary():
    frame, schema = table(800)
    result = attack_reconstruction(frame, schema, prior_rounds=5, random_state=0)
    text = " ".join(reconstruction_sentences(result)) + html_report(table_name="t", reconstruction=result)
    assert SENTINEL not in text and "Owner's eyes only" in text


def test_columns_that_would_not_finish_in_the_time_limit_are_left_out_and_named():
    frame, schema = table(1000)
    readings = iter(np.arange(0.0, 1e6, 100.0))  # every reading of the clock is 100 s after the last: one column costs 100 s
    result = attack_reconstruction(
        frame, schema, prior_rounds=2, time_limit=50.0, random_state=0, clock=lambda: float(next(readings))
    )
    assert [c.column for c in result.columns] == ["colour"]  # the first column is always attacked: it measures the cost
    assert any("1 of 3 columns were attacked" in note and "'shade', 'size'" in note for note in result.notes)
    whole = attack_reconstruction(frame, schema, prior_rounds=2, random_state=0)
    assert len(whole.columns) == 3 and not any("were attacked" in note for note in whole.notes)
