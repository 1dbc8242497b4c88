"""The empirical audit: its lower bound stays at or below a correct model's ε and rises above it for a broken one.

Seeded. The lower bound is a Clopper–Pearson bound: for a correct ε-DP model it exceeds ε with
probability at most 1 − confidence on a fresh seed, so the tests that expect no violation use
confidence 1 − 1e-6.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import CONTROLS, audit_model, audit_sentences, html_report
from dpcore.attacks.audit import audit_outputs, canary_record
from dpcore.attacks.statistics import largest_certifiable
from dpcore.exceptions import DataError
from dpcore.tables.design import Design
from dpcore.tables.schema import ColumnSpec, Schema

SURE = 1 - 1e-6


@pytest.fixture(scope="module")
def design() -> Design:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.random(500), "z": rng.choice(["a", "b"], 500), "y": rng.random(500) * 10})
    schema = Schema(
        [
            ColumnSpec("x", lower=0.0, upper=1.0),
            ColumnSpec("z", kind="categorical", categories=["a", "b"]),
            ColumnSpec("y", role="target", lower=0.0, upper=10.0),
        ]
    )
    return Design.from_table(frame, schema)


def test_a_correct_model_shows_no_violation_and_both_broken_controls_are_caught(design):
    result = audit_model(design, "dp_mean", 1.0, n_runs=150, n_rows=50, confidence=0.95, random_state=1)
    assert result.passed and result.model.lower_bound <= 1.0
    assert [run.label for run in result.controls] == ["broken: ε × 10", "broken: noise frozen"]
    for run in result.controls:
        assert result.caught(run), run  # the DP mean with 10× less noise, or the same noise every time, shows the record
    assert result.control_caught and result.conclusive
    sentences = audit_sentences(result)
    assert "within the claim" in sentences[0] and "could detect" in sentences[1]
    assert all("was caught" in s for s in sentences[2:])
    table = result.table()
    assert list(table["verdict"]) == ["no violation found", "caught: the audit sees the bug", "caught: the audit sees the bug"]


@pytest.mark.parametrize("model", ["dp_boosting_reg", "dp_tree"])
def test_the_bound_of_a_correct_model_stays_under_its_epsilon(design, model):
    result = audit_model(design, model, 0.5, n_runs=80, n_rows=40, controls=(), confidence=SURE, random_state=2)
    assert result.model.lower_bound <= 0.5 and not result.controls


def test_too_few_runs_to_exceed_the_claim_is_said(design):
    result = audit_model(design, "dp_mean", 5.0, n_runs=20, n_rows=30, controls=("frozen",), random_state=0)
    assert result.model.largest_certifiable == pytest.approx(largest_certifiable(20))
    assert largest_certifiable(20) < 5.0
    assert any("no audit can show more than" in note for note in result.notes)
    assert "not caught" in audit_sentences(result)[2]


class FakeClock:
    """A clock that moves only when read: every reading is ``step`` seconds after the one before."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_time_limit_cuts_the_runs_and_says_so(design):
    # Each pair of fits reads the clock once, so a 1-second step makes a pair cost 1 s whatever the machine's load.
    result = audit_model(
        design,
        "dp_mean",
        1.0,
        n_runs=500,
        n_rows=30,
        controls=("budget",),
        time_limit=200.0,
        random_state=0,
        clock=(clock := FakeClock(1.0)),
    )
    assert 10 <= result.model.n_runs < 500 and result.controls[0].n_runs == result.model.n_runs
    assert any("instead of 500" in note for note in result.notes)
    assert clock.now <= 200.0  # the injected clock's reading: the limit cut the runs, whatever the machine's load
    assert result.power == pytest.approx(largest_certifiable(result.model.n_runs))


def test_without_the_time_limit_every_run_is_made(design):
    result = audit_model(
        design, "dp_mean", 1.0, n_runs=20, n_rows=30, controls=("budget",), random_state=0, clock=FakeClock(1000.0)
    )
    assert result.model.n_runs == 20 and not any("instead of" in note for note in result.notes)


def test_a_pass_without_a_caught_control_is_too_small_to_tell(design):
    result = audit_model(design, "dp_mean", 5.0, n_runs=20, n_rows=30, controls=("budget",), random_state=0)
    assert result.passed and not result.conclusive
    assert list(result.table()["verdict"])[0] == "too small to tell: run the full audit"
    sentences = audit_sentences(result)
    assert "within the claim" not in " ".join(sentences)
    assert any("could detect" in s and "ε = " + f"{result.power:.2f}" in s for s in sentences)
    assert "too small to tell" in sentences[-1] and "Run the full audit" in sentences[-1]
    no_control = audit_model(design, "dp_mean", 1.0, n_runs=20, n_rows=30, controls=(), random_state=0)
    assert not no_control.conclusive and "too small to tell" in audit_sentences(no_control)[-1]


def test_the_canary_is_an_outlier_or_an_unused_row(design):
    rng = np.random.default_rng(0)
    rows = np.arange(10)
    x, label, described = canary_record(design, rows, "outlier", rng)
    assert np.array_equal(x, design.bounds[1]) and label in (0.0, 10.0) and "edge of every declared range" in described
    x, label, described = canary_record(design, rows, "row", rng)
    matches = np.flatnonzero((design.X == x).all(axis=1) & (design.y == label))
    assert matches.size and not np.isin(matches, rows).all() and "row of your table" in described


def test_bad_arguments(design):
    with pytest.raises(ValueError, match="controls"):
        audit_model(design, "dp_mean", 1.0, controls=("fast",))
    with pytest.raises(ValueError, match="n_runs"):
        audit_model(design, "dp_mean", 1.0, n_runs=3)
    with pytest.raises(ValueError, match="canary"):
        audit_model(design, "dp_mean", 1.0, n_runs=10, canary="someone")
    assert set(CONTROLS) == {"budget", "frozen", "mean"}


def test_a_model_that_cannot_be_fitted_is_a_sentence(design):
    with pytest.raises(DataError, match="could not be trained"):
        audit_model(design, "dp_boosting_clf", 1.0, n_runs=10, controls=())  # a classifier on a numeric target


def test_the_summary_holds_the_audit(design):
    result = audit_model(design, "dp_mean", 1.0, n_runs=30, n_rows=20, random_state=0)
    page = html_report(table_name="t", audit=result)
    assert "Does the model keep its promise?" in page and "broken: noise frozen" in page


@pytest.mark.parametrize(("model", "n_rows"), [("dp_tree", 40), ("dp_extra_trees_reg", 40), ("dp_forest", 250)])
def test_the_frozen_control_is_caught_for_models_whose_randomness_is_mostly_structure(design, model, n_rows):
    # One seed reused on every fit with 10 × ε: the model is a fixed function of its data, and the event chosen on
    # the pilot (the prediction at the record, or the predictions at it and at rows of the sample) separates the two
    # fixed points unless they coincide. The partitioned forest grows 25 one-leaf trees on disjoint parts: on 40 rows
    # (under 2 a part) the canary's leaf was often clipped to the same bound with and without it, float noise or exact
    # (8 seeds: 5 caught with float noise, 7 with exact); on 250 rows, 24 of 24 and 22 of 24.
    result = audit_model(design, model, 1.0, n_runs=40, n_rows=n_rows, controls=("frozen",), random_state=3)
    (frozen,) = result.controls
    assert frozen.model_epsilon == 10.0 and result.caught(frozen), frozen


class CostlyFits:
    """A clock that moves only inside a fit: ``seconds × ε`` a fit, so a control given 10 × ε costs ten times the model's."""

    def __init__(self, seconds: float) -> None:
        self.now, self.seconds = 0.0, seconds

    def __call__(self) -> float:
        return self.now


def test_the_variants_take_turns_and_the_time_left_is_right_to_the_end(design, monkeypatch):
    from dpcore.attacks import audit

    clock, seen = CostlyFits(0.1), []
    real_fit = audit.fit_or_explain

    def fit(spec, context, *args, **kwargs):
        clock.now += clock.seconds * context.epsilon
        return real_fit(spec, context, *args, **kwargs)

    monkeypatch.setattr(audit, "fit_or_explain", fit)
    result = audit_model(
        design,
        "dp_mean",
        1.0,
        n_runs=20,
        n_rows=30,
        controls=("budget",),
        random_state=0,
        clock=clock,
        progress=lambda share, left, what: seen.append((clock.now, left)),
    )
    end = clock.now
    figures = [(at, left) for at, left in seen if left is not None]
    assert [left for _at, left in seen[:4]] == [None] * 4  # "measuring…" until a typical round is done
    assert len(figures) > 40
    # A round (a pair of each variant, the control's ten times dearer) costs alike, and each pair is ticked as its
    # measured share of a round: the time left is exact to the last pair.
    for at, left in figures:
        assert left == pytest.approx(end - at, abs=1e-9)
    assert result.model.n_runs == result.controls[0].n_runs == 20


def test_a_time_limited_audit_is_sized_on_every_variants_cost_and_keeps_its_limit(design, monkeypatch):
    from dpcore.attacks import audit

    clock = CostlyFits(0.1)
    real_fit = audit.fit_or_explain

    def fit(spec, context, *args, **kwargs):
        clock.now += clock.seconds * context.epsilon
        return real_fit(spec, context, *args, **kwargs)

    monkeypatch.setattr(audit, "fit_or_explain", fit)
    result = audit_model(
        design, "dp_mean", 1.0, n_runs=500, n_rows=30, controls=("budget",), time_limit=60.0, random_state=0, clock=clock
    )
    # A round (a pair of the model at 0.2 s and of the control at 2 s) costs 2.2 s: 60 s hold about 60 / 2.2 / 1.25 ≈ 21
    # runs each with their pilots (planned on nine tenths of the time).
    assert 15 <= result.model.n_runs == result.controls[0].n_runs <= 25
    assert clock.now <= 60.0
    assert [note for note in result.notes if "instead of 500" in note] == [
        f"{result.model.n_runs} runs on each table instead of 500, for the model and each broken control, to stay within "
        "the time limit."
    ]


@pytest.mark.slow
def test_the_dp_mean_control_is_caught_cheaply_but_never_makes_a_pass_conclusive_alone(design):
    # 40 rows: the record moves the mean by about 2.5 noise scales, so 40 runs see it for 2 seeds of 6, 150 for each of 4 seeds tried.
    result = audit_model(design, "dp_boosting_reg", 1.0, n_runs=150, n_rows=40, controls=("mean",), random_state=3)
    [mean] = result.controls
    assert not mean.of_model and mean.label == "broken DP mean: ε × 10" and "not your model" in mean.description
    assert mean.n_runs == result.model.n_runs == 150
    assert result.caught(mean)  # a 10-fold noise cut in one number: 150 runs each way see it
    assert result.control_caught and not result.conclusive  # it tested the audit's size, not the model's statistic
    sentences = audit_sentences(result)
    assert "(an outlier" in sentences[0] or "a made-up person" in sentences[0]  # the canary, not the control, is named
    assert "The DP mean given 10 × ε — not your model — was caught" in sentences[2]
    assert "too small to tell" in sentences[-1]


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "model"), [("adult", "dp_boosting_clf"), ("california_housing", "dp_boosting_reg")])
def test_the_attack_pages_quick_audit_catches_its_ten_fold_controls_on_the_bundled_tables(sample, model):
    """Issue 30: the quick setting, sized on a machine where a round of fits takes what it takes on a quiet one."""
    from pathlib import Path

    from dpcore.tables.loading import read_csv_path
    from dpcore.tables.schema import load_schema
    from dpstudio.support.attack_view import AUDIT, BROKEN_FACTOR

    folder = Path(__file__).resolve().parents[2] / "sample_data"
    frame, schema = read_csv_path(folder / f"{sample}.csv")[0], load_schema(folder / f"{sample}.schema.json")
    runs, seconds = AUDIT["quick"]

    class QuietMachine:  # a clock read costs 5 ms: about 0.1 s a round of four pairs, as a quiet machine measures it
        now = 0.0

        def __call__(self) -> float:
            self.now += 0.005
            return self.now

    result = audit_model(
        Design.from_table(frame, schema),
        model,
        1.0,
        n_runs=runs,
        controls=("budget", "frozen", "mean"),
        broken_factor=BROKEN_FACTOR,
        time_limit=seconds,
        clock=QuietMachine(),
        random_state=30,
    )
    assert result.passed and result.model.n_runs == runs
    by_label = {run.label: run for run in result.controls}
    assert result.caught(by_label["broken: noise frozen"]) and result.conclusive
    assert result.caught(by_label["broken DP mean: ε × 10"])


def test_a_dp_mean_control_not_caught_says_the_audit_is_too_small_even_for_the_simplest_mechanism(design):
    result = audit_model(design, "dp_mean", 5.0, n_runs=20, n_rows=30, controls=("mean",), random_state=0)
    assert not result.caught(result.controls[0])  # 20 runs can prove at most ε ≈ 1.7, below the claimed 5
    sentences = audit_sentences(result)
    assert "The DP mean given 10 × ε — not your model — was not caught with 20 runs" in sentences[2]
    assert "cannot see such a bug even in the simplest mechanism" in sentences[2]


def test_audit_outputs_stays_under_a_laplace_shifts_epsilon_and_catches_it_with_ten_times_less_noise():
    # A shift of 1 under Laplace noise of scale 1/ε is exactly ε-DP: the bound must not pass ε, and must pass it
    # when the noise is cut ten-fold (the planted control), at the same size.
    rng = np.random.default_rng(5)
    runs = 2000
    fair = audit_outputs(1.0 + rng.laplace(0.0, 1.0, runs), rng.laplace(0.0, 1.0, runs), confidence=SURE, random_state=1)
    assert fair.lower <= 1.0 <= fair.upper and fair.n_test == runs // 2
    broken = audit_outputs(1.0 + rng.laplace(0.0, 0.1, runs), rng.laplace(0.0, 0.1, runs), random_state=1)
    assert broken.lower > 1.0 and broken.lower <= broken.estimate <= broken.upper
    assert broken.largest_certifiable == pytest.approx(largest_certifiable(runs // 2))


def test_audit_outputs_reads_several_outputs_a_run_and_separates_fixed_points_completely():
    with_record = np.tile([1.0, 0.5, 0.5], (40, 1))
    without_record = np.tile([0.0, 0.5, 0.5], (40, 1))
    found = audit_outputs(with_record, without_record, random_state=0)
    assert (found.hits_with, found.hits_without) in ((20, 0), (0, 20))
    assert found.lower == pytest.approx(largest_certifiable(20)) and found.upper == float("inf")
    with pytest.raises(ValueError, match="as many runs"):
        audit_outputs(with_record, without_record[:10])
