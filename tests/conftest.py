"""Every test leaves no process behind: a worker pool, a partition or a
supervised fuzz job that outlives its test is a defect of the code under
test (every pool is supervised; docs/explorer.md), so the test that left it
fails, naming the processes, and they are killed so that the next test
starts clean.

The compiler makes its IR nodes without pydantic's validation
(serq.ir.trusted); in the tests every node it makes is checked against the
validated one, types and fields set included (serq.ir.CHECK_TRUSTED)."""

from __future__ import annotations

import multiprocessing
import time

import pytest

import serq.ir

serq.ir.CHECK_TRUSTED = True


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
