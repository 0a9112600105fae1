"""Every test leaves no process behind: a worker pool, a partition or a
supervised fuzz job that outlives its test is a defect of the code under
test (every pool is supervised; docs/explorer.md), so the test that left it
fails, naming the processes, and they are killed so that the next test
starts clean.

The compiler makes its IR nodes without pydantic's validation
(serq.ir.trusted); in the tests every node it makes is checked against the
validated one, types and fields set included (serq.ir.CHECK_TRUSTED).

`-n auto` (pyproject's addopts) starts one worker more than the cores:
about a fifth of the suite's time is tests waiting (a server, a browser,
a worker's timer, a signal), which the extra worker fills. Before the
workers start, the controller loads every compiled function once
(`explorer.runtime.compiled.load()`), compiling them into numba's cache
when it is cold (a clean checkout: about 50 s of CPU), so that the
workers load them from the cache rather than each compiling the kernel
at once, which on two cores would hold up the tests that run a command
with a time limit."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

import serq.ir

serq.ir.CHECK_TRUSTED = True


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: the cores this process may run on, plus one."""
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """In the controller of a run with workers, before they start: every
    compiled function loaded (compiled into the cache if it is cold)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    import explorer.strategies.arrays.disk  # noqa: F401  (registers the disk mode's table)
    import serq.semantics.entries  # noqa: F401  (registers the kernel's table)
    from explorer.runtime import compiled

    compiled.load()


@pytest.fixture(autouse=True)
def no_process_left_behind():
    before = {p.pid for p in multiprocessing.active_children()}
    yield
    end = time.monotonic() + 5.0  # a pool being reaped has a moment to finish
    left = [p for p in multiprocessing.active_children() if p.pid not in before]
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = [p for p in multiprocessing.active_children() if p.pid not in before]
    if left:
        names = ", ".join(f"{p.name} (pid {p.pid})" for p in left)
        for p in left:
            p.kill()
            p.join(5)
        pytest.fail(f"the test left processes behind: {names}")
