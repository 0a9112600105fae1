"""A breadth-first walk of every reachable state for analyses that look at
states and transitions themselves (a measure over all behaviours, not a
verdict): the engine's own limits and its handling of interrupts, with a
visitor instead of property checks.

    end = walk(initial, successors, on_state=..., max_states=..., deadline=...)

`successors(state)` yields (action, next state, info); `on_state(state)` is
called once per distinct state, `on_edge(state, action, nxt, info)` once
per transition. `key(state)` identifies states (default: the state itself,
which must be hashable). The walk returns a `WalkEnd`: `reason` None when
every reachable state was visited, else "max_states", "time_limit" or the
signal's name (SIGINT, SIGTERM), and the number of states stored."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from explorer.runtime.interrupt import interrupt_of, signal_name

__all__ = ["WalkEnd", "walk"]


@dataclass
class WalkEnd:
    reason: str | None  # None: complete
    states: int
    limit: Any = None  # the limit's value when reason is a limit

    @property
    def complete(self) -> bool:
        return self.reason is None


def walk(initial: Iterable[Any], successors: Callable[[Any], Iterable[tuple]], *,
         on_state: Callable[[Any], None] | None = None,
         on_edge: Callable[[Any, Any, Any, Any], None] | None = None,
         key: Callable[[Any], Any] | None = None, max_states: int | None = None,
         deadline: float | None = None, time_limit: float | None = None) -> WalkEnd:
    """`deadline`: a time.perf_counter() value to stop at (`time_limit` is
    what is reported then); checked before each expansion."""
    key = key or (lambda s: s)
    seen: set = set()
    todo: deque = deque()
    try:
        def visit(s) -> bool:
            """Store `s` if new; False when the state limit stops the walk."""
            k = key(s)
            if k in seen:
                return True
            if max_states is not None and len(seen) >= max_states:
                return False
            seen.add(k)
            todo.append(s)
            if on_state is not None:
                on_state(s)
            return True

        for s in initial:
            if not visit(s):
                return WalkEnd("max_states", len(seen), max_states)
        while todo:
            if deadline is not None and time.perf_counter() >= deadline:
                return WalkEnd("time_limit", len(seen), time_limit)
            st = todo.popleft()
            for action, nxt, info in successors(st):
                if on_edge is not None:
                    on_edge(st, action, nxt, info)
                if not visit(nxt):
                    return WalkEnd("max_states", len(seen), max_states)
        return WalkEnd(None, len(seen))
    except (KeyboardInterrupt, SystemError) as e:  # SIGINT/SIGTERM: what was visited so far
        return WalkEnd(signal_name(interrupt_of(e)), len(seen))
