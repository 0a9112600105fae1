"""A level loop's clock and counters, shared by the array engine
(`engine.py`) and its disk mode (`disk.py`)."""

from __future__ import annotations

import time

import numpy as np

from explorer.outcome import WorkerFailed, bounded, failed, interrupted
from explorer.result import Result, Stats
from explorer.runtime.interrupt import interrupt_of
from explorer.runtime.limits import LimitReached
from explorer.runtime.memory import _trim, mib
from explorer.settings import Settings

TRIM_EVERY = 64  # chunks between two hand-backs of freed heap memory
STOPS = (KeyboardInterrupt, SystemError, MemoryError, LimitReached, WorkerFailed)  # what `Watch.stopped` ends

__all__ = ["STOPS", "TRIM_EVERY", "NS", "S_CUT", "S_GEN", "S_MAXD", "S_N", "S_NEW", "S_NP", "S_OVF", "S_ROW0", "S_SUB", "Watch"]

# the level loops' counters in S (S_ROW0: the non-progress edges before the row being walked; S_OVF: counts in the overflow)
S_N, S_GEN, S_MAXD, S_NP, S_CUT, S_NEW, S_SUB, S_ROW0, S_OVF = range(9)
NS = S_OVF + 1  # counters in S


class Watch:
    """A level loop's clock and counters (the array engine's and the disk
    mode's): the statistics at a point (`final`), and the checks made
    before each chunk (`chunk`): the time limit, the memory bound, the
    progress report."""

    def __init__(self, s: Settings, memory, S: np.ndarray) -> None:
        self.s, self.memory, self.S = s, memory, S
        self.stats = Stats(strategy="bfs")
        self.t0 = s.clock()  # the check's start: building the model counted (explorer/check.py)
        self.next_report = self.t0 + s.progress_interval
        self.chunks = 0  # chunks walked

    def final(self, pending: int) -> Stats:
        stats, S = self.stats, self.S
        stats.generated, stats.distinct, stats.max_depth = int(S[S_GEN]), int(S[S_N]), int(S[S_MAXD])
        stats.queue, stats.elapsed = pending, time.perf_counter() - self.t0
        return stats

    def chunk(self, queue_now: int) -> Result | None:
        """The run's end (bounded) if a limit is reached before the next
        chunk, with queue_now states left; else None, a progress report
        given when due."""
        s, now = self.s, time.perf_counter()
        if s.time_limit is not None and now - self.t0 >= s.time_limit:
            return bounded(self.final(queue_now), "time_limit", s.time_limit)
        if self.memory.over():
            return bounded(self.final(queue_now), "memory", mib(self.memory.limit))
        if s.progress is not None and now >= self.next_report:
            self.next_report = now + s.progress_interval
            s.progress(self.final(queue_now).snapshot())
        return None

    def chunk_done(self, cut: np.ndarray, cuts: list, arena, upto: int) -> None:
        """After a chunk's walk: the successors the depth bound cut kept
        (S[S_CUT] of them in cut), the level's rows up to upto handed back
        to the arena, memory trimmed every TRIM_EVERY chunks."""
        if self.S[S_CUT]:
            cuts.append(cut[: int(self.S[S_CUT])].copy())
        arena.consumed(upto)
        self.chunks += 1
        if self.chunks % TRIM_EVERY == 0:
            _trim()

    def stopped(self, e: BaseException, queue_now: int) -> Result:
        """The run's end by an exception out of the level loop, with
        queue_now states left: SIGINT/SIGTERM (S holds the counts of every
        state walked so far), the tables that could not grow (what was
        stored so far), a limit reached inside one expansion
        (explorer/runtime/limits.py), a worker that died, raised or hung."""
        if isinstance(e, (KeyboardInterrupt, SystemError)):
            return interrupted(self.final(queue_now), interrupt_of(e))
        if isinstance(e, MemoryError):
            return bounded(self.final(queue_now), "memory", "MemoryError")
        if isinstance(e, LimitReached):
            return bounded(self.final(queue_now), e.reason, e.value)
        assert isinstance(e, WorkerFailed)
        return failed(self.final(queue_now), e)
