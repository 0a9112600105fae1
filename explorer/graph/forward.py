"""The point of no return by forward searches from a trace's own states,
for instances whose whole graph is past the bound of ``stored.py``.

``no_return`` (``analysis.py``) needs every reachable state. Here only the
states reachable from the trace are visited: for each state of the trace,
from the last towards the first, a depth-first search asks whether some
continuation completes (reaches a done state without passing a state that
violates a property; a violating state is not expanded). Completable
states form a prefix of the trace, so the first state found completable,
k, ends the scan: step k + 1 is the point of no return (``none`` when k is
the last state, ``initial`` when no state of the trace completes).

A search that finds no completion has visited every state reachable from
its start: all of them are doomed, and the searches from earlier states
stop at them. The total work is therefore the states reachable from the
first doomed state of the trace, plus one search that finds a completion:
small when the doom comes early in a large instance, where the whole graph
is out of reach. ``max_states`` bounds the states visited by all the
searches together, ``time_limit`` their seconds; a search cut by either
leaves the answer ``unknown``, with the step from which no continuation
completes when the later states were decided.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from explorer.graph.analysis import NoReturn
from explorer.fingerprint import state_fingerprint
from explorer.runtime.limits import LimitReached, Limits
from explorer.runtime.memory import MemoryGuard

__all__ = ["forward_no_return"]


def forward_no_return(model: Any, states: Sequence[Any], *, max_states: int | None = None,
                      time_limit: float | None = None, memory_limit: int | None = None) -> NoReturn:
    """The point of no return of the trace whose states are ``states``
    (state 0 first), found by forward searches (``method`` "forward",
    ``searched``: the states visited)."""
    limits = Limits(time_limit, MemoryGuard(memory_limit), time.perf_counter())
    doomed: set[int] = set()
    count = [0]
    first_doomed = None
    try:
        for k in range(len(states) - 1, -1, -1):
            if _completes(model, states[k], doomed, count, max_states, limits):
                break
            first_doomed = k
        else:
            return NoReturn("initial", 0, method="forward", searched=count[0])
    except (LimitReached, MemoryError) as e:
        return NoReturn("unknown", None, reason=getattr(e, "reason", "memory"), method="forward",
                        searched=count[0], doomed_from=first_doomed)
    if first_doomed is None:
        return NoReturn("none", None, method="forward", searched=count[0])
    return NoReturn("step", first_doomed, method="forward", searched=count[0])


def _violates(m: Any, state: Any) -> bool:
    """A state that ends a behaviour without completing it (``bad`` in stored.py)."""
    return bool(m.invariants(state))


def _good_end(m: Any, state: Any) -> bool:
    return bool(m.is_done(state)) and not _violates(m, state)


def _completes(m: Any, start: Any, doomed: set[int], count: list[int], max_states: int | None,
               limits: Limits) -> bool:
    """Whether some continuation of ``start`` completes; when none does,
    every state visited joins ``doomed``. Raises LimitReached (or
    MemoryError) at a bound."""
    fp0 = state_fingerprint(m, start)
    if fp0 in doomed:
        return False
    if _good_end(m, start):
        return True
    seen = {fp0}
    stack = [start]
    while stack:
        limits.check()
        state = stack.pop()
        if _violates(m, state):
            continue  # a violation ends the behaviour: nothing completes through it
        for action in m.actions(state):
            nxt = m.step(state, action)
            if nxt is None:
                continue
            fp = state_fingerprint(m, nxt)
            if fp in seen or fp in doomed:
                continue
            if max_states is not None and count[0] >= max_states:
                raise LimitReached("max_states", max_states)
            count[0] += 1
            if _good_end(m, nxt):
                return True
            seen.add(fp)
            stack.append(nxt)
    doomed.update(seen)
    return False
