"""Supervised jobs, for the pools that run whole jobs (`serq sweep`'s
values, `--swarm`'s searches), over the one process pool (pool.py).

`Supervised(fn, n).imap_unordered(jobs)` runs `fn(job)` in n worker
processes (forked: `fn` and what it closes over are not pickled; jobs and
results are) and yields `(job, result)` as each ends; the pool's
supervision holds: a worker that dies or raises ends the iteration with
`WorkerFailed` naming it (`name(wid, job)`), its cause and the job it was
running, never a lost job nor a hang (`multiprocessing.Pool` replaces a
dead worker and waits forever for the job it held); past `deadline` and
the grace period a busy worker is `WorkerFailed(..., hung=...)`; `watch()`
may stop the wait; `close()` leaves no process behind.

`drain(seconds)` collects the results of the jobs still running (a caller
that has asked them to stop, as the swarm does, gets their statistics)."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator

from explorer.outcome import WorkerFailed
from explorer.runtime.pool import GRACE, Processes, die_with_parent, reap

__all__ = ["Supervised", "reap", "die_with_parent", "GRACE"]


class _Jobs:
    """A worker's object: runs the pool's function on a job."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def run(self, job: Any) -> Any:
        return self.fn(job)


class Supervised:
    """n worker processes running `fn`; `name(wid, job)` names a worker in
    a failure (default `worker <wid>`); `watch()`, called at every look at
    the workers, may raise to stop the wait (a memory bound)."""

    def __init__(self, fn: Callable[[Any], Any], n: int, *, name: Callable[[int, Any], str] | None = None,
                 deadline: float | None = None, time_limit: float | None = None,
                 watch: Callable[[], None] | None = None) -> None:
        self.pool = Processes(lambda wid: _Jobs(fn), n, name=name, deadline=deadline, time_limit=time_limit,
                              watch=watch)
        self.procs = self.pool.procs

    def imap_unordered(self, jobs: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """(job, fn(job)) for each job, as each ends; a job goes to the
        next idle worker."""
        pool, it = self.pool, iter(jobs)
        more = True
        while True:
            for w in pool.idle():
                job = next(it, _END) if more else _END
                if job is _END:
                    more = False
                    break
                pool.send(w, "run", job, tag=job)
            if not any(b is not None for b in pool.busy):
                return
            _, job, got = pool.next()
            yield job, got

    def drain(self, seconds: float) -> list[tuple[Any, Any]]:
        """The results of the jobs still running, those that end within
        `seconds`; a worker lost meanwhile is not waited for."""
        pool = self.pool
        out, end = [], time.perf_counter() + seconds
        saved, pool.deadline = pool.deadline, end - GRACE
        watch, pool.watch = pool.watch, None  # a limit met already: collect what the workers counted
        try:
            while any(b is not None for b in pool.busy):
                _, job, got = pool.next()
                out.append((job, got))
        except WorkerFailed:
            pass
        finally:
            pool.deadline, pool.watch = saved, watch
        return out

    def close(self) -> None:
        """Stop every worker; no process is left behind."""
        self.pool.close()

    def __enter__(self) -> "Supervised":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_END = object()
