"""Simulated time in words: seconds with six decimals, or, below a
millisecond, microseconds or nanoseconds (a bare number in the language
is nanoseconds: `every 2` is 2 ns, which six decimals of a second would
print as 0)."""

from __future__ import annotations

NS = 1_000_000_000


def duration_text(ns: int | float) -> str:
    """12.500000 s; 0.001500 s; 250 ns; 3.5 µs; 0.000000 s for zero."""
    if ns == 0 or abs(ns) >= 1_000_000:
        return f"{ns / NS:.6f} s"
    if abs(ns) >= 1_000:
        return f"{ns / 1_000:g} µs"
    return f"{ns:g} ns"


# When no stage has a cost every iteration takes one tick (serq.lang.lint,
# W506): the simulator's times then count iterations, and say so.
ITERATION = "iteration"


def time_unit(program) -> str:
    """`iteration` when no stage has a cost, else `ns`: the unit of every
    time of a run's report (the JSON's `time_unit`)."""
    from serq.lang.lint import costless

    return ITERATION if costless(program) else "ns"


def span_text(ticks: int | float, unit: str) -> str:
    """A simulated time in words, in the run's unit."""
    if unit == ITERATION:
        return f"{ticks:g} iteration{'' if ticks == 1 else 's'}"
    return duration_text(ticks)


def cell_text(v: int | float | None, unit: str) -> str:
    """A time in a table: milliseconds with three decimals, or iterations."""
    if v is None:
        return "-"
    if unit == ITERATION:
        return str(v) if isinstance(v, int) else f"{v:.1f}"
    return f"{v / 1e6:.3f}"


def cell_unit(unit: str) -> str:
    return "iterations" if unit == ITERATION else "ms"
