"""Stopping a search from outside: SIGINT (Ctrl-C) and SIGTERM.

Both arrive as `Interrupted` (a KeyboardInterrupt), raised in the main
thread between two Python bytecodes. The engines catch it around their main
loop, where every counter they report is updated one statement at a time,
and return the verdict "interrupted" with the statistics so far (never a
pass). Compiled code is not interrupted: a chunk being expanded, or a step
in the kernel, finishes first, and the signal takes effect when it returns.

Worker processes ignore SIGINT (a Ctrl-C on a terminal reaches the whole
process group): the coordinator alone decides to stop, then stops them."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Interrupted", "signal_name", "interrupt_of", "interrupts", "worker_signals"]


class Interrupted(KeyboardInterrupt):
    """A stop asked for by a signal; `signame` says which."""

    def __init__(self, signame: str = "SIGINT") -> None:
        super().__init__(signame)
        self.signame = signame


def signal_name(exc: BaseException) -> str:
    """SIGINT for a plain KeyboardInterrupt (Python's own Ctrl-C handler)."""
    return getattr(exc, "signame", "SIGINT")


def interrupt_of(e: BaseException) -> KeyboardInterrupt:
    """The interrupt behind `e`, caught as `except (KeyboardInterrupt,
    SystemError)`: `e` itself, or the signal whose handler ran while a
    compiled function was returning its result (CPython then raises
    `SystemError: ... returned a result with an exception set`, the
    interrupt as its cause). Any other SystemError is raised again."""
    if isinstance(e, KeyboardInterrupt):
        return e
    if isinstance(e.__cause__, KeyboardInterrupt):
        return e.__cause__
    raise e


def _raise(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


@contextmanager
def interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Interrupted` while inside (the main thread
    only: signal handlers cannot be installed elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def worker_signals() -> None:
    """In a worker process: SIGINT ignored (the coordinator stops the
    workers), SIGTERM the default (the coordinator's last resort); killed
    with the coordinator, even one killed by SIGKILL (runtime/pool.py)."""
    from explorer.runtime.pool import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
