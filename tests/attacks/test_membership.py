"""Membership inference: the attack is not a toy, it respects what DP allows, and its statistics are calibrated.

Every test is seeded. Where a figure is compared with chance or with a ceiling, the tolerance is
a stated number of standard errors (``Z`` = 5, a two-sided false-alarm rate below 1e-6 on a
fresh seed) or a Clopper–Pearson bound at confidence 1 − 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import AttackSettings, attack_membership, membership_sentences
from dpcore.attacks.membership import MIN_ROWS, lira_scores
from dpcore.attacks.statistics import (
    advantage_ceiling,
    auc_ceiling,
    empirical_epsilon,
    epsilon_lower_bound,
    roc,
    roc_auc,
    tpr_at,
    tpr_ceiling,
)
from dpcore.exceptions import DataError
from dpcore.tables.design import Design
from dpcore.tables.schema import ColumnSpec, Schema

Z = 5.0
SURE = 1 - 1e-6
SETTINGS = AttackSettings(max_rows=None, n_references=4, time_limit=120.0, confidence=SURE)


def noise_table(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Features and a label that have nothing to do with each other: only memorising can fit it."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"x{i}": rng.random(n) for i in range(4)})
    frame["label"] = rng.choice(["no", "yes"], n)
    frame["value"] = rng.random(n) * 10
    columns = [ColumnSpec(f"x{i}", lower=0.0, upper=1.0) for i in range(4)]
    return frame, Schema(
        [
            *columns,
            ColumnSpec("label", role="target", kind="categorical", categories=["no", "yes"]),
            ColumnSpec("value", role="ignore"),
        ]
    )


def regression_schema(schema: Schema) -> Schema:
    schema["label"].role = "ignore"
    schema["value"].role, schema["value"].lower, schema["value"].upper = "target", 0.0, 10.0
    return schema


@pytest.fixture(scope="module")
def noise_design() -> Design:
    frame, schema = noise_table()
    return Design.from_table(frame, schema)


def test_an_overfitted_non_private_classifier_is_spotted_far_above_chance(noise_design):
    result = attack_membership(noise_design, "dp_boosting_clf", 1.0, baseline="sk_tree_clf", settings=SETTINGS, random_state=1)
    tree = result.models[0]
    assert not tree.private and tree.n_references == 4
    # A fully grown tree on random labels: members have zero loss; half the non-members are guessed
    # wrong with certainty, the other half right by luck (then they look exactly like members).
    for curve in tree.curves:
        assert curve.auc - 0.5 > max(Z * curve.auc_error, 0.2), (curve.attack, curve.auc)


def test_an_overfitted_non_private_regressor_is_spotted_at_a_low_false_alarm_rate():
    frame, schema = noise_table(2000, seed=2)
    design = Design.from_table(frame, regression_schema(schema))
    result = attack_membership(design, "dp_boosting_reg", 1.0, baseline="sk_tree_reg", settings=SETTINGS, random_state=1)
    tree = result.models[0]
    for curve in tree.curves:  # a member's random target is fitted exactly, a non-member's almost never
        assert curve.auc - 0.5 > max(Z * curve.auc_error, 0.4), (curve.attack, curve.auc)
        assert curve.tpr_at_low_fpr > 0.01 + Z * curve.tpr_error + 0.5, (curve.attack, curve.tpr_at_low_fpr)
    sentences = membership_sentences(result)
    assert sentences[0].startswith("Without DP (scikit-learn decision tree), the attacker spotted")


def test_a_constant_model_gives_the_attacker_a_coin_toss():
    frame, schema = noise_table(3000, seed=3)
    design = Design.from_table(frame, regression_schema(schema))
    # The DP mean at a huge ε predicts the members' mean for everyone: a constant model.
    result = attack_membership(design, "dp_mean", 1e6, settings=SETTINGS, random_state=2)
    for curve in result.models[0].curves:
        assert abs(curve.auc - 0.5) <= Z * curve.auc_error / 1.96, (curve.attack, curve.auc)
        assert abs(curve.tpr_at_low_fpr - 0.01) <= Z * curve.tpr_error / 1.96 + 0.005, (curve.attack, curve.tpr_at_low_fpr)


@pytest.mark.parametrize("model", ["dp_boosting_clf", "dp_gaussian_nb"])
def test_a_dp_model_stays_under_its_ceiling(noise_design, model):
    epsilon = 1.0
    result = attack_membership(noise_design, model, epsilon, settings=SETTINGS, random_state=4)
    dp = result.models[0]
    for curve in dp.curves:
        assert curve.epsilon_lower <= epsilon
        assert curve.auc - Z * curve.auc_error / 1.96 <= auc_ceiling(epsilon)
        assert curve.tpr_at_low_fpr - Z * curve.tpr_error / 1.96 <= float(tpr_ceiling(0.01, epsilon))
    # At ε = 1 a DP model may leak up to the ceiling; the page must say it stayed within it, never that it passed it.
    first = membership_sentences(result)[0]
    assert "no better than chance" in first or "within what ε = 1 allows" in first
    assert "MORE than" not in first


def test_members_are_drawn_person_by_person_when_the_table_names_a_privacy_unit():
    frame, schema = noise_table(1200, seed=5)
    frame["person"] = np.repeat(np.arange(400), 3).astype(str)
    schema.columns.append(ColumnSpec("person", role="identifier", kind="categorical"))
    schema.privacy_unit, schema.rows_per_person = "person", 2
    design = Design.from_table(frame, schema, random_state=0)
    persons = design.groups
    assert persons is not None and len(persons) == len(design.y) == 800  # at most 2 rows of each of 400 people
    assert np.all(np.bincount(persons) <= 2)
    result = attack_membership(design, "dp_boosting_clf", 1.0, settings=SETTINGS, random_state=0)
    assert result.unit == "person" and result.n_members + result.n_non_members == 400
    assert any("person by person" in note for note in result.notes)
    assert "of the people at a 1 % false-alarm rate" in " ".join(membership_sentences(result))


def test_the_time_limit_leaves_lira_out_and_says_so(noise_design):
    result = attack_membership(
        noise_design,
        "dp_boosting_clf",
        1.0,
        baseline="sk_tree_clf",
        random_state=0,
        settings=AttackSettings(max_rows=500, n_references=8, time_limit=1e-6),
    )
    assert all(m.n_references == 0 and m.curve("LiRA") is None for m in result.models)
    assert any("LiRA was left out" in note for note in result.notes)
    assert sum(result.table()["attack"] == "loss threshold") == 2


def test_progress_reports_share_and_time_left(noise_design):
    seen = []
    attack_membership(
        noise_design,
        "dp_gaussian_nb",
        1.0,
        baseline="sk_gaussian_nb",
        random_state=0,
        settings=AttackSettings(max_rows=600, n_references=4, time_limit=60.0),
        progress=lambda share, left, what: seen.append((share, left, what)),
    )
    # Two pilot fits measure the cost per row (no time left is said before them), then 2 targets and 8 reference models.
    assert len(seen) == 12 and seen[-1][0] == pytest.approx(1.0) and seen[-1][1] == pytest.approx(0.0)
    assert [left is None for _, left, _ in seen[:2]] == [True, True] and "measured one fit" in seen[0][2]
    assert all(left is not None and left >= 0 for _, left, _ in seen[2:])
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))


def test_too_few_rows_is_a_sentence():
    frame, schema = noise_table(30)
    design = Design.from_table(frame, schema)
    with pytest.raises(DataError, match="too few rows"):
        attack_membership(design, "dp_boosting_clf", 1.0, settings=AttackSettings(max_rows=15), random_state=0)


def test_the_result_tables_and_curves_hold_every_model_and_the_ceiling(noise_design):
    result = attack_membership(
        noise_design,
        "dp_boosting_clf",
        2.0,
        baseline="sk_tree_clf",
        random_state=0,
        settings=AttackSettings(max_rows=800, n_references=4, time_limit=60.0),
    )
    table = result.table()
    assert list(table["attack"]) == ["loss threshold", "LiRA"] * 2
    assert table["AUC ceiling"].iloc[2] == pytest.approx(auc_ceiling(2.0))
    curves = result.curves_frame()
    assert {"attack", "ceiling", "chance"} == set(curves["kind"])
    assert curves["tpr"].between(0, 1).all() and curves["fpr"].between(0, 1).all()


# --- the statistics ----------------------------------------------------------------------------


def test_roc_auc_and_low_fpr_reading():
    fpr, tpr = roc([5, 4, 3, 2, 1, 0], [True, True, False, True, False, False])
    assert roc_auc(fpr, tpr) == pytest.approx(8 / 9)
    assert tpr_at(fpr, tpr, 0.0) == pytest.approx(2 / 3)
    ties_fpr, ties_tpr = roc(np.zeros(10), np.arange(10) < 5)  # a score that says nothing: the diagonal
    assert roc_auc(ties_fpr, ties_tpr) == pytest.approx(0.5) and tpr_at(ties_fpr, ties_tpr, 0.01) == pytest.approx(0.01)


def test_the_ceilings_match_their_closed_forms():
    for epsilon in (0.5, 1.0, 4.0):
        grid = np.linspace(0, 1, 200_001)
        assert auc_ceiling(epsilon) == pytest.approx(np.trapezoid(tpr_ceiling(grid, epsilon), grid), abs=1e-6)
        assert advantage_ceiling(epsilon) == pytest.approx(np.max(tpr_ceiling(grid, epsilon) - grid), abs=1e-4)
        assert advantage_ceiling(epsilon) == pytest.approx((math.exp(epsilon) - 1) / (math.exp(epsilon) + 1))
    assert float(tpr_ceiling(0.01, 1.0, 1e-5)) == pytest.approx(math.e * 0.01 + 1e-5)


def test_the_empirical_epsilon_of_randomized_response_is_below_its_epsilon_and_not_far():
    """Membership bits told by randomized response at ε = 1 are exactly 1-DP: the bound must not exceed 1, and sees most of it."""
    rng = np.random.default_rng(7)
    members = rng.random(40_000) < 0.5
    told = np.where(rng.random(members.size) < math.e / (1 + math.e), members, ~members).astype(float)
    bound = empirical_epsilon(told, members, confidence=SURE, random_state=rng)
    assert 0.8 < bound <= 1.0


def test_lira_gives_no_signal_when_the_target_is_like_every_reference():
    rng = np.random.default_rng(0)
    references = np.tile(rng.normal(size=50), (4, 1))
    inside = np.array([[True] * 50, [False] * 50, [True] * 50, [False] * 50])
    assert np.allclose(lira_scores(references[0], references, inside), 0.0)


def test_the_lower_bound_grows_with_separation_and_is_zero_without_it():
    assert float(epsilon_lower_bound(50, 100, 50, 100)) == 0.0
    assert 0 < float(epsilon_lower_bound(60, 100, 20, 100)) < float(epsilon_lower_bound(90, 100, 5, 100))


def test_a_dear_model_is_attacked_on_fewer_rows_and_the_result_says_why(noise_design):
    readings = iter(np.arange(0.0, 1e6, 5.0))  # every reading of the clock is 5 s after the last: each pilot fit costs 5 s
    result = attack_membership(
        noise_design,
        "dp_gaussian_nb",
        1.0,
        random_state=0,
        settings=AttackSettings(max_rows=2000, n_references=4, time_limit=30.0),
        clock=lambda: float(next(readings)),
    )
    assert result.n_members + result.n_non_members == MIN_ROWS
    assert any("would not finish within its time limit of 30 s" in note for note in result.notes)
