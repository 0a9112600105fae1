"""The time and memory limits inside one expansion. A model's expansion of
one state (every drawn value of every action) can outgrow its buffers many
times over; between two attempts the model calls `Limits.check()`, which
raises `LimitReached` once the deadline has passed or the memory bound is
exceeded, and the engine ends with the verdict "bound" and its statistics
so far. Compiled code is never cut short: one attempt's work is bounded by
the buffers it fills, which grow geometrically, so the limit holds within
about the time the expansion had already taken.

A model being built is cut by the same limits: `explorer.check` builds it
inside `building(limits)`, and a model's long loops in Python (a workload
of a million sessions, its initial state) call `tick()` now and then, which
raises `LimitReached` past them; the door then gives the verdict "bound"
before any state is explored. A signal arrives there as anywhere in Python
code (`interrupt.py`)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from explorer.runtime.memory import MemoryGuard, mib, rss
from explorer.model import LIMITS, has

__all__ = ["Limits", "LimitReached", "limits_on", "building", "tick"]


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


_BUILDING: list = []  # (limits, pid) of the model being built in this process (`building`)


@contextmanager
def building(limits: Limits):
    """`tick()` checks `limits` meanwhile, in this process only (a worker
    forked meanwhile builds its own model, under its coordinator's watch)."""
    _BUILDING.append((limits, os.getpid()))
    try:
        yield
    finally:
        _BUILDING.pop()


def tick() -> None:
    """Inside a model's long loop while it is built (`building`):
    LimitReached once its limits are past; nothing otherwise. Cheap enough
    for every few thousand iterations (a clock reading; /proc at most every
    0.2 s)."""
    if _BUILDING:
        limits, pid = _BUILDING[-1]
        if pid == os.getpid():
            limits.check()
