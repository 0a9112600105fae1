"""Expansion of frontier chunks by worker processes for the array engine,
on the one process pool (runtime/pool.py).

The model's `array_expand` (the kernel, most of a run's cost) runs in N
worker processes, each with its own model built from the ModelFactory; the
calling process keeps the one fingerprint table and walks each chunk's
successors in order, so a run with workers gives the sequential array
engine's verdict, counts and trace exactly. Chunks travel as raw array
bytes over the pipes (the pool sends arrays out of band), a few ahead of
the one being walked.

A worker that dies, raises or hangs ends the run with the pool's
`WorkerFailed` (its id and cause); a worker's model that cannot go on
with rows raises `ArrayFallback` here as there. The others are stopped
and reaped (no process is left behind)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np

from explorer.model import ArrayFallback
from explorer.outcome import WorkerFailed
from explorer.runtime.pool import Processes
from explorer.strategies.arrays.narrow import narrow as _narrow

__all__ = ["Expanders", "WorkerFailed"]  # WorkerFailed: from outcome.py


class _Expander:
    """A worker's object: its own model, expanding chunks."""

    def __init__(self, factory: Any) -> None:
        self.m = factory()

    def expand(self, rows: np.ndarray):
        succ, parent, action, fps, flags = self.m.array_expand(rows.astype(np.int64, copy=False))
        return _narrow(succ), parent, action, fps, flags  # fewer bytes through the pipe


class Expanders:
    """`expand(chunks)`: the successors of each chunk, in order, computed by
    the workers (each chunk to the next worker in turn, one chunk in
    flight per worker)."""

    def __init__(self, factory: Any, n: int, time_limit: float | None = None, t0: float | None = None) -> None:
        t0 = time.perf_counter() if t0 is None else t0  # when the time limit began
        deadline = None if time_limit is None else t0 + time_limit
        self.pool = Processes(lambda wid: _Expander(factory), n, deadline=deadline, time_limit=time_limit,
                              passes=(ArrayFallback,))

    def expand(self, chunks):
        """Yields (meta, successors) for each (meta, rows), in order. Chunk i goes
        to worker i mod N; the next one is sent as soon as a worker's result
        is in."""
        pool = self.pool
        it = iter(chunks)
        pending: deque = deque()
        for wid in range(len(pool)):
            item = next(it, None)
            if item is None:
                break
            pool.send(wid, "expand", item[1])
            pending.append((wid, item[0]))
        while pending:
            wid, meta = pending.popleft()
            res = pool.recv(wid)
            nxt = next(it, None)
            if nxt is not None:
                pool.send(wid, "expand", nxt[1])
                pending.append((wid, nxt[0]))
            yield meta, res

    def close(self) -> None:
        self.pool.close()
