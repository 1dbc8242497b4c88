"""Honest time left for long work: measure the first units of real work, then extrapolate per unit.

How the estimate works
----------------------
Long work is a sequence of **stages**, each a count of **units** that cost about the same: the
pairs of columns a synthetic copy counts, the iterations of its model fit, the models an attack
fits, the columns it guesses back (a column weighted by its number of values). A stage's seconds
per unit is *measured*: the time its finished units took, divided by how many finished, updated
after every unit. A stage not yet begun has no measurement of its own; it may carry a **prior**
(seconds per unit measured on an earlier run of the same kind of work on this machine, or, for
a synthetic copy's model, on a reference 2-core machine until this one has timed its own). The time
left is the sum, over the current and later stages, of units left × seconds per unit.

While any stage still to run has neither a measurement nor a prior, the time left is None and
the bar says "measuring…": a figure is shown only once every part of it was measured. (The old
bars extrapolated from the share of the bar done, or from the first 5 % of the bar, and were off
by a factor of 10 when the first stage was cheap and a later one dear.)

The share done is elapsed / (elapsed + time left) once the time left is known, else the share of
units done. ``clock`` is injectable (default :func:`time.monotonic`), so tests drive a fake clock
and never assert on wall-clock time.

Examples
--------
>>> now = [0.0]  # a fake clock, moved by hand
>>> work = TimeLeft([("fits", 4)], clock=lambda: now[0])
>>> work.seconds_left() is None  # nothing measured yet: "measuring…"
True
>>> now[0] = 1.0
>>> work.tick("first fit")
>>> work.seconds_left()  # one fit took 1 s, three are left
3.0
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from dpcore.data_home import default_ledger_path
from dpcore.i18n import _, integer

#: ``progress(share_done, seconds_left, what)``: ``seconds_left`` is None until every stage left was measured.
Progress = Callable[[float, "float | None", str], None]
Clock = Callable[[], float]
COSTS_ENV = "DPSTUDIO_COSTS"


@dataclass
class Stage:
    """``units`` of one kind of work; ``prior``: seconds per unit measured on an earlier run (or on a reference machine), if any."""

    name: str
    units: float
    prior: float | None = None
    done: float = 0.0
    seconds: float = 0.0

    def per_unit(self) -> float | None:
        return self.seconds / self.done if self.done > 0 else self.prior


class TimeLeft:
    """Counts units of work stage by stage and says the time left once it is measured (see the module)."""

    def __init__(
        self,
        stages: Sequence[tuple[str, float]] | Sequence[Stage],
        progress: Progress | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.stages = [s if isinstance(s, Stage) else Stage(s[0], max(float(s[1]), 0.0)) for s in stages]
        self.progress = progress
        self.clock = clock or time.monotonic  # looked up here, so a test can forbid the machine's clock
        self.started = self.last = self.clock()
        self.current = 0
        self.shown = 0.0
        self.said = ""
        self._saying = threading.RLock()  # the work's thread and a heartbeat (beating) read and change the stages
        #: True while the work's size is still to be decided from what is being measured: no time left is said.
        self.sizing = False

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def done(self) -> float:
        return sum(s.done for s in self.stages)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def begin(self, name: str, what: str | None = None) -> None:
        """Move on to stage ``name``: time from now on is that stage's (earlier stages are closed)."""
        with self._saying:
            self.current = next(i for i, s in enumerate(self.stages) if s.name == name)
            self.last = self.clock()
            if what is not None:
                self.say(what)

    def expand(self, name: str, stages: Sequence[Stage]) -> None:
        """Stage ``name``, a placeholder not yet begun (its cost unknown), is the ``stages`` now known (a copy inside a preview)."""
        with self._saying:
            at = next(i for i, s in enumerate(self.stages) if s.name == name)
            self.stages[at : at + 1] = list(stages)

    def resize(self, name: str, units: float) -> None:
        """Stage ``name`` turns out to have ``units`` units (more or fewer than first planned)."""
        with self._saying:
            stage = self.stage(name)
            stage.units = max(float(units), stage.done)

    def tick(self, what: str, units: float = 1.0) -> None:
        """``units`` more units of the current stage are finished; their time is measured since the last tick."""
        with self._saying:
            now = self.clock()
            stage = self.stages[self.current]
            stage.done += units
            stage.seconds += now - self.last
            stage.units = max(stage.units, stage.done)
            self.last = now
            self.say(what)

    def per_unit(self) -> float | None:
        """Measured seconds per unit of the current stage (None before its first unit finishes)."""
        stage = self.stages[self.current]
        return stage.seconds / stage.done if stage.done > 0 else None

    def seconds_left(self) -> float | None:
        """Units left × measured (or remembered) seconds per unit, over the stages left; None while one is unmeasured."""
        if self.sizing:
            return None
        left = 0.0
        for stage in self.stages[self.current :]:
            remaining = max(stage.units - stage.done, 0.0)
            if remaining == 0:
                continue
            each = stage.per_unit()
            if each is None:
                return None
            left += remaining * each
        current = self.stages[self.current]
        under_way = self.clock() - self.last
        if current.done > 0 and current.units > current.done:  # the unit under way has already run for a while
            left = max(left - min(under_way, current.seconds / current.done), 0.0)
        elif current.done == 0 and current.units > 0 and current.prior is not None:
            # A stage that says nothing until it ends (a model's set-up, while it compiles): its predicted cost runs
            # down with the clock, and stops at 0 when it runs over (the later stages' time is all that is said).
            left = max(left - min(under_way, current.units * current.prior), 0.0)
        return left

    def share_done(self, seconds_left: float | None) -> float:
        if seconds_left is not None:
            elapsed = self.elapsed
            return elapsed / (elapsed + seconds_left) if elapsed + seconds_left > 0 else 1.0
        total = sum(s.units for s in self.stages)
        return self.done / total if total > 0 else 1.0

    def say(self, what: str) -> None:
        if self.progress is None:
            return
        with self._saying:
            self.said = what
            left = self.seconds_left()
            # The bar never moves back when a later stage turns out dearer than measured: the time left says so instead.
            self.shown = min(max(self.share_done(left), self.shown), 1.0)
            self.progress(self.shown, left, what)

    @contextmanager
    def beating(self, every: float = 1.0) -> Iterator[None]:
        """Say the time left again every ``every`` seconds while the block runs, from a thread of its own.

        For work that says nothing for a long while (a model compiled before its first step): the figure
        runs down instead of standing still. The ``progress`` callback is then also called from that thread.
        """
        if self.progress is None:
            yield
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(every):
                try:
                    self.say(self.said)
                except Exception:  # noqa: BLE001 (a bar that cannot be drawn: the work goes on, its next report says it)
                    return

        heart = threading.Thread(target=beat, name="time left", daemon=True)
        heart.start()
        try:
            yield
        finally:
            stop.set()
            heart.join()


#: ``listener(done, total)``, set while one fit is watched (:func:`watching_rounds`); None: no one listens.
_ROUND_LISTENER: ContextVar[Callable[[int, int], None] | None] = ContextVar("dpstudio_round_listener", default=None)


def round_done(done: int, total: int) -> None:
    """A model that fits in rounds (boosting rounds, trees, optimiser steps) says ``done`` of ``total`` are finished.

    Costs one lookup when no one is watching. A model that calls it sets ``reports_rounds = True``
    on its class, so that :class:`RoundsTimeLeft` is used for it rather than a guess made beforehand.
    """
    listener = _ROUND_LISTENER.get()
    if listener is not None:
        listener(done, total)


@contextmanager
def watching_rounds(listener: Callable[[int, int], None]) -> Iterator[None]:
    """Within the block (in this thread), every :func:`round_done` reaches ``listener``."""
    token = _ROUND_LISTENER.set(listener)
    try:
        yield
    finally:
        _ROUND_LISTENER.reset(token)


class RoundsTimeLeft:
    """The time left of one fit, measured on its own rounds: rounds left × measured seconds per round.

    The first report closes the fit's set-up (reading the data, its preliminaries), which is not a
    round and is not measured as one; the rounds after it are. Until a round after the first has
    finished, the time left is None ("measuring…"). Called from the fit's thread, read from the
    page's: a lock keeps the two apart. ``clock`` is injectable for tests.

    Examples
    --------
    >>> now = [0.0]
    >>> rounds = RoundsTimeLeft(clock=lambda: now[0])
    >>> now[0] = 5.0; rounds(1, 11)  # set-up and the first round: not a measure of a round
    >>> rounds.seconds_left() is None
    True
    >>> now[0] = 6.0; rounds(3, 11)  # two rounds in 1 s
    >>> rounds.seconds_left()  # eight rounds left at 0.5 s
    4.0
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or time.monotonic
        self.work: TimeLeft | None = None
        self.first = 0
        self.lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self.lock:
            if self.work is None:
                self.first = done
                self.work = TimeLeft([("rounds", total - done)], clock=self.clock)
                return
            self.work.resize("rounds", total - self.first)
            finished = done - self.first - self.work.done
            if finished > 0:
                self.work.tick("round", finished)

    def seconds_left(self) -> float | None:
        with self.lock:
            if self.work is None or self.work.per_unit() is None:
                return None
            return self.work.seconds_left()


def time_left_text(seconds_left: float | None) -> str:
    """ "about N s left" (or minutes), or "measuring the time left…" before anything was measured."""
    if seconds_left is None:
        return _("measuring the time left…")
    if seconds_left >= 90:
        return _("about {minutes} min left").format(minutes=integer(round(seconds_left / 60)))
    return _("about {seconds} s left").format(seconds=integer(max(round(seconds_left), 1)))


def remember_stages(work: TimeLeft, costs: CostMemory | None, kind: str, names: Sequence[str]) -> None:
    """Keep ``work``'s measured seconds per unit of the stages ``names`` in ``costs``, under ``kind``, for the next
    estimate of the same kind of work (:meth:`CostMemory.recall_stage`); a stage that did no unit is not kept."""
    if costs is None:
        return
    for name in names:
        stage = work.stage(name)
        if stage.done > 0:
            costs.remember(f"{kind}: {name} per unit", stage.seconds / stage.done)


def with_remembered_priors(stages: list[Stage], costs: CostMemory | None, kind: str, names: Sequence[str]) -> list[Stage]:
    """``stages``, those named in ``names`` with the prior ``costs`` kept for ``kind`` (:func:`remember_stages`) when it
    kept one, in place of the reference machine's."""
    for stage in stages:
        remembered = costs.recall_stage(kind, stage) if costs is not None and stage.name in names else None
        stage.prior = remembered if remembered is not None else stage.prior
    return stages


class CostMemory:
    """Seconds per unit of work measured on earlier runs on this machine: priors for stages that cannot be measured first.

    Some work reports nothing until it is done (Private-PGM compiles its model before its first
    iteration), so no unit of it can be measured in advance. Its cost per unit from the last runs
    is the only honest figure; the first run on a machine says "measuring…" instead. The memory
    holds timings only — seconds per unit of a named kind of work, averaged over runs — never
    anything about a table. A file that cannot be read or written is ignored (it only costs the
    estimate).

    Parameters
    ----------
    path : path, optional
        A JSON file; default ``$DPSTUDIO_COSTS``, else ``costs.json`` beside the ledger.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = os.environ.get(COSTS_ENV) or default_ledger_path().with_name("costs.json")
        self.path = Path(path)

    def _read(self) -> dict[str, float]:
        try:
            held = json.loads(self.path.read_text(encoding="utf-8"))
            return {str(k): float(v) for k, v in held.items() if float(v) > 0} if isinstance(held, dict) else {}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def recall(self, kind: str) -> float | None:
        """Seconds per unit of ``kind`` on earlier runs (None: never measured here)."""
        return self._read().get(kind)

    def recall_stage(self, kind: str, stage: Stage) -> float | None:
        """What :func:`remember_stages` kept for ``stage`` of ``kind`` (None: nothing yet)."""
        return self.recall(f"{kind}: {stage.name} per unit")

    def remember(self, kind: str, seconds_per_unit: float) -> None:
        """Average a new measurement in (half the weight to the newest run: the machine's load changes)."""
        if not seconds_per_unit > 0:
            return
        held = self._read()
        held[kind] = seconds_per_unit if kind not in held else 0.5 * (held[kind] + seconds_per_unit)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            spare = self.path.with_suffix(".tmp")
            spare.write_text(json.dumps(held, indent=1), encoding="utf-8")
            spare.replace(self.path)
        except OSError:
            pass
