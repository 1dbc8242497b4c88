"""The time left is measured, never guessed: None until every stage left has a measured cost, then units × cost."""

from __future__ import annotations

import types

import pytest

from dpcore import progress
from dpcore.progress import Stage, TimeLeft, time_left_text


@pytest.fixture(autouse=True)
def _no_machine_clock(monkeypatch):
    """Every time left here comes from a FakeClock: reading the machine's clock fails the test instead of timing it."""

    def forbidden() -> float:
        raise AssertionError("a progress test read the machine's clock; pass clock=FakeClock()")

    monkeypatch.setattr(progress, "time", types.SimpleNamespace(monotonic=forbidden))


class FakeClock:
    """Time moved by hand: every test here drives TimeLeft through it and none reads the machine's clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def left_on_fake_clock(work) -> float | None:
    """The estimate a TimeLeft or RoundsTimeLeft gives, in the FakeClock's units (the machine's clock is forbidden)."""
    return work.seconds_left()


def test_nothing_is_said_before_the_first_unit_then_units_left_times_the_measured_cost():
    clock, seen = FakeClock(), []
    work = TimeLeft([("pairs", 10), ("fit", 4)], lambda share, left, what: seen.append((share, left, what)), clock)
    assert left_on_fake_clock(work) is None  # nothing measured yet
    clock.now = 2.0
    work.tick("pair 1")
    assert seen[-1][1] is None  # the fit is not measured yet: "measuring…"
    for _unused in range(9):
        clock.now += 2.0
        work.tick("pair")
    work.begin("fit")
    clock.now += 5.0
    work.tick("iteration 1")
    assert seen[-1][1] == pytest.approx(15.0)  # three iterations left at 5 s each
    assert seen[-1][0] == pytest.approx(10 / 14)  # the units done (10 of 14) before the fit was measured; never back


def test_a_prior_from_an_earlier_run_fills_a_stage_not_yet_begun_and_the_measurement_replaces_it():
    clock = FakeClock()
    work = TimeLeft([Stage("pairs", 2), Stage("fit", 10, prior=1.0)], clock=clock)
    clock.now = 3.0
    work.tick("pair")
    assert left_on_fake_clock(work) == pytest.approx(3.0 + 10.0)  # one pair measured at 3, the fit's prior 10
    work.tick("pair")
    work.begin("fit")
    clock.now += 4.0
    work.tick("iteration")
    assert left_on_fake_clock(work) == pytest.approx(9 * 4.0)  # the measurement (4) replaced the prior


def test_the_bar_never_moves_back_and_resizing_changes_the_time_left():
    clock, seen = FakeClock(), []
    work = TimeLeft([("fits", 4)], lambda share, left, what: seen.append(share), clock)
    clock.now = 1.0
    work.tick("fit")
    clock.now = 10.0
    work.tick("a slow fit")
    assert seen[1] >= seen[0]
    work.resize("fits", 2)
    assert left_on_fake_clock(work) == 0.0


def test_the_words():
    assert time_left_text(None) == "measuring the time left…"
    assert time_left_text(12.4) == "about 12 s left" and time_left_text(0.2) == "about 1 s left"
    assert time_left_text(600) == "about 10 min left"


def test_a_fit_in_rounds_is_measured_on_its_own_rounds_after_its_set_up():
    from dpcore.progress import RoundsTimeLeft, round_done, watching_rounds

    clock = FakeClock()
    rounds = RoundsTimeLeft(clock)
    round_done(1, 10)  # no one watching: nothing happens
    with watching_rounds(rounds):
        clock.now = 30.0  # a long set-up, then the first round: neither is a round's cost
        round_done(1, 21)
        assert left_on_fake_clock(rounds) is None
        clock.now = 32.0
        round_done(3, 21)
        assert left_on_fake_clock(rounds) == pytest.approx(18 * 1.0)
        clock.now = 32.5  # half a round under way already
        assert left_on_fake_clock(rounds) == pytest.approx(17.5)
        for done in range(4, 22):
            clock.now += 3.0  # the rounds turn dearer: the estimate follows the measured average
            round_done(done, 21)
    round_done(5, 10)  # after the block: no longer heard
    assert left_on_fake_clock(rounds) == 0.0


def test_a_model_that_reports_rounds_is_fitted_once_and_says_measuring_before_its_rounds():
    import numpy as np

    from dpcore.progress import round_done
    from dpcore.training import fit_with_progress

    clock, fits, seen = FakeClock(), [], []

    class InRounds:
        reports_rounds = True

        def fit(self, X, y):
            fits.append(len(y))
            for done in range(1, 6):
                clock.now += 1.0
                round_done(done, 5)
            return self

    fit_with_progress(InRounds, np.zeros((100, 2)), np.zeros(100), lambda elapsed, left: seen.append(left), clock=clock)
    assert fits == [100]  # no throw-away fits: the estimate is the fit's own
    assert seen[0] is None


def test_the_dp_boosting_models_say_their_rounds():
    import numpy as np

    from dpcore.models.boosting import DPBoostingRegressor
    from dpcore.progress import watching_rounds

    heard = []
    X = np.random.default_rng(0).random((200, 2))
    model = DPBoostingRegressor(epsilon=1.0, n_rounds=7, bounds=([0, 0], [1, 1]), target_bounds=(0, 2), random_state=0)
    assert model.reports_rounds
    with watching_rounds(lambda done, total: heard.append((done, total))):
        model.fit(X, X.sum(axis=1))
    assert heard == [(done, 7) for done in range(1, 8)]


def test_a_stage_that_says_nothing_until_it_ends_runs_down_with_the_clock_and_stops_at_the_stages_after_it():
    clock = FakeClock()
    work = TimeLeft([Stage("set-up", 4, prior=2.0), Stage("drawing", 1, prior=3.0)], clock=clock)
    assert left_on_fake_clock(work) == pytest.approx(8.0 + 3.0)
    clock.now = 5.0  # compiling: no tick yet
    assert left_on_fake_clock(work) == pytest.approx(3.0 + 3.0)
    clock.now = 30.0  # longer than predicted: what is left of it is not said, the drawing still is
    assert left_on_fake_clock(work) == pytest.approx(3.0)


def test_a_heartbeat_says_the_time_left_again_from_its_own_thread_while_the_block_runs():
    import threading

    clock, said, beat = FakeClock(), [], threading.Event()

    def progress_seen(share, left, what):
        said.append((threading.current_thread().name, left, what))
        if threading.current_thread().name == "time left":
            beat.set()

    work = TimeLeft([Stage("set-up", 1, prior=10.0)], progress_seen, clock)
    work.say("Setting up…")
    clock.now = 4.0  # before the heartbeat starts, so its every figure is at 4 s
    with work.beating(every=0.001):
        assert beat.wait(timeout=60)  # an event, not a sleep: the beat's own thread said it
    assert ("time left", pytest.approx(6.0), "Setting up…") in said
    after = len(said)
    clock.now = 5.0
    assert len(said) == after  # the heartbeat stopped with the block
    assert not [t for t in threading.enumerate() if t.name == "time left"]
