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
