"""A supervised pool of worker processes, for the pools that run whole
jobs (`serq sweep`'s values, `--swarm`'s searches), and `reap`, which every
process pool of the explorer closes with.

`Supervised(fn, n).imap_unordered(jobs)` runs `fn(job)` in n worker
processes (forked: `fn` and what it closes over are not pickled; jobs and
results are) and yields `(job, result)` as each ends. While it waits it
watches every worker's pipe *and* its process, in polls of 0.2 s (a signal
is seen meanwhile), so

- a worker that dies (SIGKILL, the kernel's OOM killer, a crash in
  compiled code) or raises ends the iteration with `WorkerFailed` naming
  it, its cause and the job it was running: never a lost job, never a hang
  (`multiprocessing.Pool` replaces a dead worker and waits forever for the
  job it held);
- past `deadline` (perf_counter seconds) and a grace period, a worker still
  busy is `WorkerFailed(..., hung=...)`: the caller reports the time limit;
- `close()` stops every worker: idle ones at once, busy ones terminated,
  then killed (`reap`): no process is left behind.

`drain(seconds)` collects the results of the jobs still running (a caller
that has asked them to stop, as the swarm does, gets their statistics)."""

from __future__ import annotations

import multiprocessing
import time
import traceback
from multiprocessing.connection import wait as wait_any
from typing import Any, Callable, Iterable, Iterator

from explorer.runtime.interrupt import worker_signals
from explorer.outcome import WorkerFailed, exit_cause, poll_worker

__all__ = ["Supervised", "reap", "await_answer", "lost", "die_with_parent", "GRACE"]

GRACE = 2.0  # seconds a worker may overrun the deadline before it counts as hung
_POLL = 0.2  # seconds between two looks at the workers (and at the clock)


def reap(procs: Iterable[Any], wait: float = 1.0) -> None:
    """Join each process (up to `wait` seconds in all for those that stop by
    themselves); one still alive is terminated, then killed."""
    procs = list(procs)
    end = time.perf_counter() + wait
    for p in procs:
        p.join(max(0.0, end - time.perf_counter()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join()


def die_with_parent() -> None:
    """In a worker process: be killed (SIGKILL) when the process that
    started it ends, even by SIGKILL (Linux's PR_SET_PDEATHSIG), so that a
    coordinator killed leaves no worker behind; where there is no such
    call, a worker ends when it next finds its pipe closed."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it ended before the call
        os._exit(1)


def lost(proc: Any, wid: int) -> WorkerFailed:
    """The failure of a worker process whose pipe broke: how it ended."""
    proc.join(1.0)
    return WorkerFailed(wid, exit_cause(proc.exitcode))


def await_answer(conn: Any, proc: Any, wid: int, deadline: float | None = None,
                 time_limit: float | None = None) -> None:
    """Return once `conn` (worker wid's pipe) has an answer, or `proc`
    has ended (reading the pipe then says how); past `deadline` and the
    grace period, WorkerFailed (hung). Polls: a signal that comes
    meanwhile names the worker waited for (`interrupted`)."""
    t0 = time.perf_counter()
    while not poll_worker(conn, wid, t0, _POLL):
        if not proc.is_alive():
            return
        now = time.perf_counter()
        if deadline is not None and now >= deadline + GRACE:
            raise WorkerFailed(wid, f"had not answered for {now - t0:.1f} s when the time limit "
                                    f"({time_limit} s) came", hung=("time_limit", time_limit))


def last_line(tb: str) -> str:
    lines = [x.strip() for x in tb.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "an error"


def _main(conn, fn: Callable[[Any], Any]) -> None:
    worker_signals()
    try:
        while True:
            item = conn.recv()
            if item is None:
                return
            try:
                conn.send(("ok", fn(item)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    except (EOFError, OSError, KeyboardInterrupt):
        return


class Supervised:
    """n worker processes running `fn`; `name(wid, job)` names a worker in
    a failure (default `worker <wid>`); `watch()`, called at every look at
    the workers, may raise to stop the wait (a memory bound)."""

    def __init__(self, fn: Callable[[Any], Any], n: int, *, name: Callable[[int, Any], str] | None = None,
                 deadline: float | None = None, time_limit: float | None = None,
                 watch: Callable[[], None] | None = None) -> None:
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.name = name or (lambda wid, job: f"worker {wid}")
        self.deadline, self.time_limit, self.watch = deadline, time_limit, watch
        self.conns, self.procs = [], []
        self.busy: list[tuple[Any, float] | None] = [None] * n  # per worker: (its job, since when)
        self.gone: set[int] = set()  # workers lost (dead, raised, hung)
        try:
            for w in range(n):
                a, b = ctx.Pipe()
                p = ctx.Process(target=_main, args=(b, fn), name=f"serq-worker-{w}", daemon=True)
                p.start()
                b.close()
                self.conns.append(a)
                self.procs.append(p)
        except BaseException:
            self.close()
            raise

    def _fail(self, w: int, cause: str, **kw) -> WorkerFailed:
        """The failure of worker w, which is given up: no longer waited for."""
        job = self.busy[w][0] if self.busy[w] else None
        self.busy[w] = None
        self.gone.add(w)
        return WorkerFailed(w, cause, name=self.name(w, job), **kw)

    def _lost(self, w: int) -> WorkerFailed:
        self.procs[w].join(1.0)
        return self._fail(w, exit_cause(self.procs[w].exitcode))

    def _give(self, w: int, job: Any) -> None:
        self.busy[w] = (job, time.perf_counter())
        try:
            self.conns[w].send(job)
        except (OSError, ValueError):
            raise self._lost(w) from None

    def _next(self) -> tuple[Any, Any]:
        """The next (job, result) of a busy worker; WorkerFailed for the
        first worker found dead, raising or hung."""
        by = {c: w for w, c in enumerate(self.conns) if w not in self.gone}
        by.update({p.sentinel: w for w, p in enumerate(self.procs) if w not in self.gone})
        while True:
            ready = wait_any(list(by), _POLL)
            if self.watch is not None:
                self.watch()
            for obj in ready:  # answers first: a worker that answered, then ended, is not lost
                w = by[obj]
                if obj is self.conns[w]:
                    try:
                        status, payload = self.conns[w].recv()
                    except (EOFError, OSError):
                        raise self._lost(w) from None
                    if status == "error":
                        raise self._fail(w, "raised " + last_line(payload), detail=payload)
                    job, self.busy[w] = self.busy[w][0], None
                    return job, payload
            for obj in ready:
                w = by[obj]
                if obj is self.procs[w].sentinel and not self.conns[w].poll():
                    raise self._lost(w)
            now = time.perf_counter()
            if self.deadline is not None and now >= self.deadline + GRACE:
                w, (job, since) = min(((w, b) for w, b in enumerate(self.busy) if b), key=lambda x: x[1][1],
                                      default=(None, (None, now)))
                if w is not None:
                    raise self._fail(w, f"had not answered for {now - since:.1f} s when the time limit "
                                        f"({self.time_limit} s) came", hung=("time_limit", self.time_limit))

    def imap_unordered(self, jobs: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """(job, fn(job)) for each job, as each ends; a job goes to the
        next idle worker."""
        it = iter(jobs)
        more = True
        while True:
            for w in range(len(self.procs)):
                if more and self.busy[w] is None and w not in self.gone:
                    job = next(it, _END)
                    if job is _END:
                        more = False
                    else:
                        self._give(w, job)
            if not any(self.busy):
                return
            yield self._next()

    def drain(self, seconds: float) -> list[tuple[Any, Any]]:
        """The results of the jobs still running, those that end within
        `seconds`; a worker lost meanwhile is not waited for."""
        out, end = [], time.perf_counter() + seconds
        saved, self.deadline = self.deadline, end - GRACE
        watch, self.watch = self.watch, None  # a limit met already: collect what the workers counted
        try:
            while any(self.busy):
                out.append(self._next())
        except WorkerFailed:
            pass
        finally:
            self.deadline, self.watch = saved, watch
        return out

    def close(self) -> None:
        """Stop every worker; no process is left behind."""
        for w, (c, b) in enumerate(zip(self.conns, self.busy)):
            if b is None and w not in self.gone:
                try:
                    c.send(None)
                except (OSError, ValueError):
                    pass
        reap(self.procs, wait=0.5)
        for c in self.conns:
            c.close()

    def __enter__(self) -> "Supervised":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_END = object()
