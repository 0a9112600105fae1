"""What the benchmark scripts time by: the best of several runs."""

from __future__ import annotations

import time


def best(fn, repeat: int):
    """(fn's last result, its best wall time in seconds over `repeat` runs)."""
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return out, t
