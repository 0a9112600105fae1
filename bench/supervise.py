"""A supervised pool for fuzzing: worker processes, forked from a parent
that has already imported and compiled everything, each run many jobs
in-process, one at a time. The parent hands out one job at a time and
times it: a worker whose job runs past `hang` seconds is killed (SIGKILL,
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

# statuses of a job
DONE = "done"  # work(job) returned: the value
ERROR = "error"  # work(job) raised: "Type: message" and the traceback
HANG = "hang"  # killed after `hang` seconds: the seconds
DIED = "died"  # the worker ended during the job: how (signal or exit code)


def _serve(conn, work: Callable[[Any], Any], init: Callable[[], None] | None) -> None:
    os.setpgrp()  # a Ctrl-C on the terminal reaches the parent only, which stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
        self.done = 0

    def give(self, job) -> None:
        self.job, self.started = job, time.monotonic()
        self.conn.send(job)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


def _how(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


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
                        how = _how(w.proc.exitcode)
                        w.stop()
                        pool[i] = _Worker(ctx, work, init)
                        yield job, DIED, how
                        continue
                    busy[w.conn] = w
            if not busy:
                return
            now = time.monotonic()
            timeout = max(0.0, min(w.started + hang for w in busy.values()) - now)
            for conn in wait(list(busy), timeout):
                w = busy.pop(conn)
                job, w.job = w.job, None
                w.done += 1
                try:
                    status, value = conn.recv()
                except (EOFError, OSError):
                    w.proc.join()
                    status, value = DIED, _how(w.proc.exitcode)
                    w.stop()
                    pool[pool.index(w)] = _Worker(ctx, work, init)
                yield job, status, value
            now = time.monotonic()
            for conn, w in list(busy.items()):
                if now - w.started >= hang:
                    del busy[conn]
                    job, seconds = w.job, now - w.started
                    w.stop()
                    pool[pool.index(w)] = _Worker(ctx, work, init)
                    yield job, HANG, seconds
    finally:
        for w in pool:
            w.stop()
