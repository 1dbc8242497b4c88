"""Progress of a long attack: what share is done, and about how many seconds are left."""

from __future__ import annotations

import time
from collections.abc import Callable

#: ``progress(share_done, seconds_left, what)``: ``seconds_left`` is None until it can be estimated.
Progress = Callable[[float, "float | None", str], None]


class Clock:
    """Counts units of work (fits) and estimates the time left from the average so far.

    >>> clock = Clock(4)
    >>> clock.tick("first fit")
    >>> clock.done
    1
    """

    def __init__(self, total: float, progress: Progress | None = None) -> None:
        self.total = max(float(total), 1.0)
        self.progress = progress
        self.done = 0
        self.started = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def per_unit(self) -> float | None:
        return self.elapsed / self.done if self.done else None

    def add(self, units: float) -> None:
        """More (or, negative, less) work than first planned."""
        self.total = max(self.total + units, float(self.done), 1.0)

    def tick(self, what: str, units: int = 1) -> None:
        self.done += units
        self.say(what)

    def say(self, what: str) -> None:
        if self.progress is None:
            return
        each = self.per_unit()
        left = None if each is None else max(self.total - self.done, 0.0) * each
        self.progress(min(self.done / self.total, 1.0), left, what)
