"""A breadth-first walk of every reachable state for analyses that look at
states and transitions themselves (a measure over all behaviours, not a
verdict), given as a successor function rather than a model: the one
search (``explorer.check``, sequential BFS) with a visitor
(explorer/visitor.py), its limits and its handling of interrupts, and no
property checks.

    end = walk(initial, successors, on_state=..., max_states=..., deadline=...)

`successors(state)` yields (action, next state, info); `on_state(state)` is
called once per distinct state, `on_edge(state, action, nxt, info)` once
per transition, before `on_state(nxt)` when nxt is new. `key(state)`
identifies states (default: the state itself, which must be hashable):
states are told apart by their keys, exactly (as `Exact` numbers them). The
walk returns a `WalkEnd`: `reason` None when every reachable state was
visited, else "max_states", "time_limit" or the signal's name (SIGINT,
SIGTERM), and the number of states stored (a walk cut by max_states
does not show the transition into the state that did not fit). A
MemoryError is raised."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from explorer.model import FINGERPRINT
from explorer.runtime.verdict import BOUND, INTERRUPTED
from explorer.visitor import Visitor, visit

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
    model = _Successors(list(initial), successors, key or (lambda s: s))
    left = None if deadline is None else max(0.0, deadline - time.perf_counter())
    r = visit(model, _Calls(on_state, on_edge), max_states=max_states, time_limit=left)
    reason = r.bound_reason if r.verdict in (BOUND, INTERRUPTED) else None
    if reason == "memory":
        raise MemoryError("the walk's states do not fit in memory")
    limit = {"max_states": max_states, "time_limit": time_limit}.get(reason)
    return WalkEnd(reason, r.stats.distinct, limit)


class _Successors:
    """The model a walk searches: an action is a (action, next state, info)
    of `successors`, a state's identity the number of its key."""

    capabilities = frozenset({FINGERPRINT})

    def __init__(self, initial: list, successors: Callable, key: Callable) -> None:
        self.initial, self.actions, self.key = initial, successors, key
        self.ids: dict = {}

    def initial_states(self):
        return self.initial

    def step(self, state, action):
        return action[1]

    def fingerprint(self, state) -> int:
        k = self.key(state)
        n = self.ids.get(k)
        if n is None:
            n = self.ids[k] = len(self.ids) + 1
        return n

    def is_progress(self, state, action, nxt) -> bool:
        return True


class _Calls(Visitor):
    """The walk's callbacks in the walk's order: a transition, then its
    target when new (the search stores the target first: its on_state
    waits for the edge). The action is the (action, next state, info)."""

    def __init__(self, on_state, on_edge) -> None:
        self.state_fn, self.edge_fn = on_state, on_edge
        self.waiting = None  # a new target whose edge is next

    def on_state(self, state, fp, parent, ai, depth):
        if parent is None:
            if self.state_fn is not None:
                self.state_fn(state)
        else:
            self.waiting = state

    def on_edge(self, state, fp, ai, action, nxt, nfp, events):
        if self.edge_fn is not None:
            self.edge_fn(state, action[0], nxt, action[2])
        if self.waiting is not None:
            target, self.waiting = self.waiting, None
            if self.state_fn is not None:
                self.state_fn(target)
