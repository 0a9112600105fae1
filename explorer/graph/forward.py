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

Each search is the one search (``explorer.check``, sequential DFS) from
the trace's state, with a visitor (explorer/visitor.py) over the model
seen ``Unchecked``: it counts the states against the budget, prunes a
doomed or violating state, and stops the search at the first state that
completes. A search that completes may visit other states than a
depth-first search that takes the last successor first would: the
answer is the same, the count of states visited may differ.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from explorer.fingerprint import state_fingerprint
from explorer.graph.analysis import NoReturn
from explorer.runtime.interrupt import Interrupted
from explorer.runtime.verdict import INTERRUPTED, PASS
from explorer.visitor import PRUNE, STOP, Visitor, visit

__all__ = ["forward_no_return"]


def forward_no_return(model: Any, states: Sequence[Any], *, max_states: int | None = None,
                      time_limit: float | None = None, memory_limit: int | None = None) -> NoReturn:
    """The point of no return of the trace whose states are ``states``
    (state 0 first), found by forward searches (``method`` "forward",
    ``searched``: the states visited). A signal during the searches is
    raised again (Interrupted)."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    doomed: set[int] = set()
    budget = _Budget(max_states)
    first_doomed = None
    for k in range(len(states) - 1, -1, -1):
        found = _completes(model, states[k], doomed, budget, deadline, memory_limit)
        if found is None:
            return NoReturn("unknown", None, reason=budget.cut, method="forward", searched=budget.count,
                            doomed_from=first_doomed)
        if found:
            break
        first_doomed = k
    else:
        return NoReturn("initial", 0, method="forward", searched=budget.count)
    if first_doomed is None:
        return NoReturn("none", None, method="forward", searched=budget.count)
    return NoReturn("step", first_doomed, method="forward", searched=budget.count)


class _Budget:
    """The states visited by all the searches together, and what cut them."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.count, self.cut = limit, 0, None


def _violates(m: Any, state: Any) -> bool:
    """A state that ends a behaviour without completing it (``bad`` in stored.py)."""
    return bool(m.invariants(state))


def _completes(m: Any, start: Any, doomed: set[int], budget: _Budget, deadline: float | None,
               memory_limit: int | None) -> bool | None:
    """Whether some continuation of ``start`` completes; when none does,
    every state visited joins ``doomed``. None when a bound cut the search
    (``budget.cut`` says which)."""
    if state_fingerprint(m, start) in doomed:
        return False
    if m.is_done(start) and not _violates(m, start):
        return True
    left = None if deadline is None else max(0.0, deadline - time.perf_counter())
    search = _Search(m, doomed, budget)
    r = visit(m, search, [start], strategy="dfs", time_limit=left, memory_limit=memory_limit)
    if search.found:
        return True
    if r.verdict == INTERRUPTED:
        raise Interrupted(r.bound_reason)
    if r.verdict != PASS:
        budget.cut = budget.cut or r.bound_reason
        return None
    doomed.update(search.seen)
    return False


class _Search(Visitor):
    """One forward search: a doomed state is neither counted nor expanded,
    a violating one is counted but not expanded, and the first done state
    that violates nothing ends the search."""

    def __init__(self, m: Any, doomed: set[int], budget: _Budget) -> None:
        self.m, self.doomed, self.budget = m, doomed, budget
        self.seen: list[int] = []
        self.found = False

    def on_state(self, state, fp, parent, ai, depth):
        if parent is not None:
            if fp in self.doomed:
                return PRUNE  # completes nothing: searched before
            b = self.budget
            if b.limit is not None and b.count >= b.limit:
                b.cut = "max_states"
                return STOP
            b.count += 1
        bad = _violates(self.m, state)
        if not bad and parent is not None and self.m.is_done(state):
            self.found = True
            return STOP
        self.seen.append(fp)
        return PRUNE if bad else None
