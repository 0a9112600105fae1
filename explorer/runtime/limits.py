"""The time and memory limits inside one expansion. A model's expansion of
one state (every drawn value of every action) can outgrow its buffers many
times over; between two attempts the model calls `Limits.check()`, which
raises `LimitReached` once the deadline has passed or the memory bound is
exceeded, and the engine ends with the verdict "bound" and its statistics
so far. Compiled code is never cut short: one attempt's work is bounded by
the buffers it fills, which grow geometrically, so the limit holds within
about the time the expansion had already taken."""

from __future__ import annotations

import time
from contextlib import contextmanager

from explorer.runtime.memory import MemoryGuard, mib, rss
from explorer.model import LIMITS, has

__all__ = ["Limits", "LimitReached", "limits_on"]


class LimitReached(Exception):
    def __init__(self, reason: str, value) -> None:
        super().__init__(f"{reason}={value}")
        self.reason, self.value = reason, value


class Limits:
    def __init__(self, time_limit: float | None, memory: MemoryGuard | None = None, t0: float | None = None) -> None:
        t0 = time.perf_counter() if t0 is None else t0
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else t0 + time_limit
        self.memory = memory

    def room(self, nbytes: int) -> None:
        """Before allocating nbytes of buffers: LimitReached if they would
        take the process past the memory bound (a buffer is written whole,
        so it is resident at once), then `check`."""
        limit = None if self.memory is None else self.memory.limit
        if limit is not None and rss() + nbytes > limit:
            raise LimitReached("memory", mib(limit))
        self.check()

    def check(self) -> None:
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            raise LimitReached("time_limit", self.time_limit)
        if self.memory is not None and self.memory.over():
            raise LimitReached("memory", mib(self.memory.limit))


@contextmanager
def limits_on(model, limits: Limits):
    """The model checks `limits` inside its expansions meanwhile (a model
    without `set_limits` has no such expansions)."""
    if has(model, LIMITS):
        model.set_limits(limits)
    try:
        yield
    finally:
        if has(model, LIMITS):
            model.set_limits(None)
