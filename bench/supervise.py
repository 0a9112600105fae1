"""A supervised pool for fuzzing: worker processes, forked from a parent
that has already imported and compiled everything, each run many jobs
in-process, one at a time. The parent hands out one job at a time and
times it: a worker whose job runs past `hang` seconds of CPU (read from
/proc, so that a machine loaded by others makes no false hangs; of wall
clock where there is no /proc), or is stuck for 4 x `hang` seconds of wall
clock without computing, is killed (SIGKILL,
which nothing inside the worker, not even a stuck compiled call, can
delay) and replaced, and its job is reported as a hang; a worker that dies
(a signal, an abort, `os._exit`) is replaced and its job reported as such.
Nothing is lost and nothing waits forever."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait
from typing import Any

from explorer.outcome import exit_cause
from explorer.runtime.pool import die_with_parent

# statuses of a job
DONE = "done"  # work(job) returned: the value
ERROR = "error"  # work(job) raised: "Type: message" and the traceback
HANG = "hang"  # killed after `hang` seconds of CPU or 4 x `hang` of wall clock: (wall, CPU seconds)
DIED = "died"  # the worker ended during the job: how (signal or exit code)


def _serve(conn, work: Callable[[Any], Any], init: Callable[[], None] | None) -> None:
    die_with_parent()
    os.setpgrp()  # a Ctrl-C on the terminal reaches the parent only, which stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: a SIGTERM ends the worker
    if init is not None:
        init()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        if job is None:
            break
        try:
            reply = (DONE, work(job))
        except BaseException as e:  # noqa: BLE001 - whatever escapes is reported, the worker goes on
            reply = (ERROR, (f"{type(e).__name__}: {e}"[:300], traceback.format_exc()))
        conn.send(reply)
    conn.close()
    os._exit(0)  # no atexit handlers inherited from the parent


class _Worker:
    def __init__(self, ctx, work, init) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, work, init), daemon=True)
        self.proc.start()
        child.close()
        self.job: Any = None
        self.started = 0.0
        self.cpu0: float | None = None
        self.done = 0

    def give(self, job) -> None:
        self.job, self.started, self.cpu0 = job, time.monotonic(), _cpu(self.proc.pid)
        self.conn.send(job)

    def spent(self, now: float, hang: float) -> tuple[float, float | None] | None:
        """(wall, CPU seconds) the job has cost when it is a hang, else None:
        `hang` seconds of CPU (so that a machine loaded by others makes no
        hangs of slow jobs), or 4 x `hang` seconds of wall clock (a job stuck
        without computing)."""
        wall = now - self.started
        cpu = _cpu(self.proc.pid) if self.cpu0 is not None else None
        used = wall if cpu is None else cpu - self.cpu0
        return (wall, None if cpu is None else used) if used >= hang or wall >= 4 * hang else None

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu(pid: int) -> float | None:
    """Seconds of CPU process `pid` has used (user + system), from /proc;
    None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def supervise(jobs: Iterable, work: Callable[[Any], Any], *, workers: int = 2, hang: float = 10.0,
              init: Callable[[], None] | None = None, recycle: int = 2000) -> Iterator[tuple[Any, str, Any]]:
    """Run work(job) for every job in `workers` forked processes; yields
    (job, status, value) as jobs end, in the order they end. A worker is
    replaced after `recycle` jobs (bounding what a leak can grow to). Closing
    the generator (or an exception in the caller, Ctrl-C) kills every
    worker: none is left behind."""
    ctx = multiprocessing.get_context("fork")
    pending = iter(jobs)
    pool = [_Worker(ctx, work, init) for _ in range(max(1, workers))]
    busy: dict[Any, _Worker] = {}  # conn -> worker with a job
    exhausted = False
    try:
        while True:
            for i, w in enumerate(pool):
                if w.job is None and not exhausted:
                    if w.done >= recycle:
                        w.stop()
                        w = pool[i] = _Worker(ctx, work, init)
                    try:
                        job = next(pending)
                    except StopIteration:
                        exhausted = True
                        break
                    try:
                        w.give(job)
                    except OSError:  # the worker died idle (in `init`)
                        w.proc.join()
                        how = exit_cause(w.proc.exitcode)
                        w.stop()
                        pool[i] = _Worker(ctx, work, init)
                        yield job, DIED, how
                        continue
                    busy[w.conn] = w
            if not busy:
                return
            # wake up at the first moment a job can have become a hang (it cannot use CPU faster than the clock)
            now = time.monotonic()
            timeout = max(0.0, min(w.started + hang for w in busy.values()) - now)
            for conn in wait(list(busy), timeout or hang / 10):
                w = busy.pop(conn)
                job, w.job = w.job, None
                w.done += 1
                try:
                    status, value = conn.recv()
                except (EOFError, OSError):
                    w.proc.join()
                    status, value = DIED, exit_cause(w.proc.exitcode)
                    w.stop()
                    pool[pool.index(w)] = _Worker(ctx, work, init)
                yield job, status, value
            now = time.monotonic()
            for conn, w in list(busy.items()):
                seconds = w.spent(now, hang)
                if seconds is not None:
                    del busy[conn]
                    job = w.job
                    w.stop()
                    pool[pool.index(w)] = _Worker(ctx, work, init)
                    yield job, HANG, seconds
    finally:
        for w in pool:
            w.stop()
