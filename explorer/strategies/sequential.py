"""Sequential BFS/DFS exploration (reached through ``explorer.check``).

Event semantics (the partitions driver reproduces them exactly, see
partitions/driver.py and partitions/objects.py):

* A state is stored when first generated; its invariants are checked right
  then, and the first violation stops the search (it is counted as distinct
  but never expanded).  Initial states are generated in
  ``initial_states()`` order.
* A state is *expanded* when taken from the frontier: every action in
  ``actions`` order is stepped.  No applicable action and not ``is_done``
  is a deadlock, which stops the search.
* ``max_states``: generating a new state when ``max_states`` are already
  stored stops the search with verdict "bound".
* ``max_depth``: states at depth ``max_depth`` are expanded (so their
  deadlocks are found) but their new successors are not stored; if any
  existed the verdict is "bound" unless a violation is found.
* ``time_limit`` and ``memory_limit``: checked before each expansion;
  hitting one gives "bound".
* SIGINT/SIGTERM (``Interrupted``, see interrupt.py) give "interrupted"
  with the statistics so far.

BFS expands level by level, so the first violation/deadlock found has a
shortest trace.  Livelocks are searched only after a complete, unbounded,
violation-free exploration.

A visitor (``Settings.visitor``, explorer/visitor.py) is called as the
search goes: ``on_state`` when a state is stored (before its invariants),
``on_edge`` for each transition once its target is stored, ``on_terminal``
for an expanded state without successors (before the deadlock check). A
state it prunes is stored and checked but not expanded; a STOP ends the
search with "bound" (reason "visitor"). This engine is the one that
honours a visitor: the door gives it every run that has one. Without a
visitor the hooks cost one test of a local against None per state and
per edge.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable

from explorer.fingerprint import state_fingerprint
from explorer.model import successor_with_events
from explorer.runtime.limits import LimitReached, Limits, limits_on
from explorer.runtime.memory import MemoryGuard, mib
from explorer.runtime.interrupt import interrupt_of
from explorer.outcome import bounded, deadlock, interrupted, livelock_or_pass, stopped, violation
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.stores.seen import Store
from explorer.visitor import PRUNE, STOP, answer, hooks

__all__ = ["sequential_check"]


def sequential_check(m: Any, s: Settings) -> Result:
    """Explore the model `m` over its Python states, breadth or depth first
    (`s.strategy`), in this process (the engine `explorer.check` gives a
    model without rows, or one that fell back from them).

    ``memory_limit``: bytes of resident memory (this process, see
    memory.py); above it, or at a MemoryError, the verdict is "bound" with
    reason "memory".

    May raise NondeterministicModel when a counterexample cannot be replayed.
    """
    return _Search(m, s).run()


_GC = {"runs": 0, "old": None}  # searches running (on any thread), the thresholds before the first
_GC_LOCK = threading.Lock()


@contextmanager
def _fewer_collections(gen0: int = 10_000):
    """CPython's cyclic collector less often while the search runs. The
    search keeps a few objects per state for good (its records, the
    frontier's entries, a visitor's graph) and makes no cycles of its own;
    at the default threshold (700 allocations) the collector walks the
    growing heap again and again (a third of the time of `--worst ttft`'s
    stored graph on vllm_chat). The thresholds are the process's: the
    first search to start raises them, the last to end puts them back."""
    with _GC_LOCK:
        if _GC["runs"] == 0:
            _GC["old"] = old = gc.get_threshold()
            gc.set_threshold(max(gen0, old[0]), *old[1:])
        _GC["runs"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC["runs"] -= 1
            if _GC["runs"] == 0:
                gc.set_threshold(*_GC["old"])


class _Stop(Exception):
    """Unwinds the search loop once a verdict is known."""

    def __init__(self, build: Callable[[], Result]) -> None:
        self.build = build


class _Search:
    def __init__(self, model, s: Settings) -> None:
        self.m = model
        self.strategy = strategy = s.strategy
        self.max_states = s.max_states
        self.max_depth = s.max_depth
        self.time_limit = time_limit = s.time_limit
        self.check_deadlock = s.check_deadlock
        self.check_livelock = s.check_livelock
        self.progress = s.progress
        self.interval = progress_interval = s.progress_interval
        memory_limit = s.memory_limit
        self.store = Store()
        self.stats = Stats(strategy=strategy)
        self.np_edges: dict[int, list[int]] = {}
        # fingerprints cut off by max_depth; the run is bounded iff one of
        # them is still unstored at the end (DFS may store them later).
        self.cut: set[int] = set()
        self.pending = 0  # the queue's length at the last tick, for an interrupt
        self.memory = MemoryGuard(memory_limit)
        self.t0 = s.clock()  # the check's start: building the model counted (explorer/check.py)
        self.limits = Limits(time_limit, self.memory, self.t0)
        self.next_report = self.t0 + progress_interval
        # the visitor's hooks (None: not called), explorer/visitor.py
        self.on_state, self.on_edge, self.on_terminal = hooks(s.visitor)
        self.with_events = s.visitor is not None and s.visitor.events
        self.pruned: set[int] = set()  # states a visitor pruned (DFS with max_depth must not expand them again)

    # -- shared helpers -------------------------------------------------
    def _elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def _tick(self, pending: int) -> None:
        self.pending = pending
        now = time.perf_counter()
        if self.time_limit is not None and now - self.t0 >= self.time_limit:
            raise _Stop(lambda: bounded(self._final(pending), "time_limit", self.time_limit))
        if self.memory.over():
            raise _Stop(lambda: bounded(self._final(pending), "memory", mib(self.memory.limit)))
        if self.progress is not None and now >= self.next_report:
            self.next_report = now + self.interval
            st = self.stats
            st.queue, st.elapsed, st.distinct = pending, now - self.t0, len(self.store)
            self.progress(st.snapshot())

    def _final(self, pending: int) -> Stats:
        st = self.stats
        st.queue = pending
        st.distinct = len(self.store)
        st.elapsed = self._elapsed()
        return st

    def _admit(self, fp: int, state: Any, parent: int | None, ai: int, depth: int, pending: int) -> bool:
        """Store a new state, show it to the visitor and check its
        invariants (raises _Stop); False when the visitor pruned it."""
        if self.max_states is not None and len(self.store) >= self.max_states:
            raise _Stop(lambda: bounded(self._final(pending), "max_states", self.max_states))
        self.store.add(fp, parent, ai, depth)
        if depth > self.stats.max_depth:
            self.stats.max_depth = depth
        keep = True
        if self.on_state is not None:
            said = self.on_state(state, fp, parent, ai, depth)
            if said is not None:
                if answer("on_state", said) == STOP:
                    raise _Stop(lambda: stopped(self._final(pending)))
                self.pruned.add(fp)
                keep = False
        bad = self.m.invariants(state)
        if bad:
            kind, msg = bad[0]
            raise _Stop(lambda: violation(self.m, self.store.chain, fp, kind, msg, self._final(pending)))
        return keep

    def _said(self, hook: str, said: Any, pending: int) -> None:
        """What a visitor's on_edge or on_terminal answered, not None: STOP ends the search."""
        if answer(hook, said) == STOP:
            raise _Stop(lambda: stopped(self._final(pending)))

    def _initial(self, pending_of: Callable[[], int], push: Callable[[Any, int, int], None]) -> None:
        for i, state in enumerate(self.m.initial_states()):
            self.stats.generated += 1
            fp = state_fingerprint(self.m, state)
            if fp in self.store:
                continue
            if self._admit(fp, state, None, i, 0, pending_of()):
                push(state, fp, 0)

    def _successors(self, state: Any, fp: int):
        """Yield (action index, action, next state, next fp, events: None
        unless the visitor asks for them); record non-progress edges."""
        m = self.m
        np_out: list[int] | None = [] if self.check_livelock else None
        limits = self.limits
        with_events = self.with_events
        events = None
        for ai, action in enumerate(m.actions(state)):
            if ai & 255 == 255:  # a state with very many successors: the limits hold inside its expansion
                limits.check()
            if with_events:
                nxt, events = successor_with_events(m, state, action)
            else:
                nxt = m.step(state, action)
            if nxt is None:
                continue
            self.stats.generated += 1
            nfp = state_fingerprint(m, nxt)
            if np_out is not None and not m.is_progress(state, action, nxt):
                np_out.append(nfp)
            yield ai, action, nxt, nfp, events
        if np_out:
            self.np_edges[fp] = np_out

    def _deadlock(self, state: Any, fp: int, pending: int) -> None:
        if self.check_deadlock and not self.m.is_done(state):
            raise _Stop(lambda: deadlock(self.m, self.store.chain, fp, self._final(pending)))

    def _finish(self, pending: int) -> Result:
        st = self._final(pending)
        if any(fp not in self.store for fp in self.cut):
            return bounded(st, "max_depth", self.max_depth)
        edges = self.np_edges if self.check_livelock else {}
        return livelock_or_pass(self.m, self.store.chain, edges, self.store.first_of, st)

    # -- strategies -----------------------------------------------------
    def run(self) -> Result:
        with limits_on(self.m, self.limits), _fewer_collections():
            return self._run()

    def _run(self) -> Result:
        try:
            return self._bfs() if self.strategy == "bfs" else self._dfs()
        except _Stop as stop:
            return stop.build()
        except (KeyboardInterrupt, SystemError) as e:
            return interrupted(self._final(self.pending), interrupt_of(e))
        except MemoryError:
            return bounded(self._final(self.pending), "memory", "MemoryError")
        except LimitReached as e:  # inside one expansion (explorer/runtime/limits.py)
            return bounded(self._final(self.pending), e.reason, e.value)

    def _bfs(self) -> Result:
        queue: deque = deque()
        self._initial(lambda: len(queue), lambda s, fp, d: queue.append((s, fp, d)))
        on_edge, has = self.on_edge, self.store.has
        while queue:
            self._tick(len(queue))
            state, fp, depth = queue.popleft()
            any_succ = False
            for ai, action, nxt, nfp, events in self._successors(state, fp):
                any_succ = True
                if not has(nfp):
                    if self.max_depth is not None and depth >= self.max_depth:
                        self.cut.add(nfp)
                        continue
                    if self._admit(nfp, nxt, fp, ai, depth + 1, len(queue)):
                        queue.append((nxt, nfp, depth + 1))
                if on_edge is not None:
                    said = on_edge(state, fp, ai, action, nxt, nfp, events)
                    if said is not None:
                        self._said("on_edge", said, len(queue))
            if not any_succ:
                if self.on_terminal is not None and (said := self.on_terminal(state, fp)) is not None:
                    self._said("on_terminal", said, len(queue))
                self._deadlock(state, fp, len(queue))
        return self._finish(0)

    def _dfs(self) -> Result:
        # With a depth bound a state first reached on a long path may be
        # reachable on a shorter one; re-expanding it when its depth improves
        # guarantees every state within max_depth is explored.  Without a
        # bound depth is irrelevant and each state is expanded once.
        stack: list = []
        self._initial(lambda: len(stack), lambda s, fp, d: stack.append((s, fp, d)))
        stack.reverse()  # expand initial state 0 first
        expanded: set[int] = set()
        bounded_depth = self.max_depth is not None
        on_edge, has = self.on_edge, self.store.has
        while stack:
            self._tick(len(stack))
            state, fp, depth = stack.pop()
            if bounded_depth:
                if self.store.get(fp).depth < depth:
                    continue  # a shorter entry for this state exists
                if fp in expanded:
                    self.np_edges.pop(fp, None)  # re-expansion records them again
                expanded.add(fp)
            children = []
            any_succ = False
            for ai, action, nxt, nfp, events in self._successors(state, fp):
                any_succ = True
                if has(nfp):
                    if bounded_depth and self.store.get(nfp).depth > depth + 1:
                        # Shorter path found: re-parent (depths along parent
                        # links still strictly decrease) and re-expand.
                        self.store.add(nfp, fp, ai, depth + 1)
                        if nfp not in self.pruned:
                            children.append((nxt, nfp, depth + 1))
                elif bounded_depth and depth >= self.max_depth:
                    self.cut.add(nfp)
                    continue
                elif self._admit(nfp, nxt, fp, ai, depth + 1, len(stack) + len(children)):
                    children.append((nxt, nfp, depth + 1))
                if on_edge is not None:
                    said = on_edge(state, fp, ai, action, nxt, nfp, events)
                    if said is not None:
                        self._said("on_edge", said, len(stack) + len(children))
            if not any_succ:
                if self.on_terminal is not None and (said := self.on_terminal(state, fp)) is not None:
                    self._said("on_terminal", said, len(stack))
                self._deadlock(state, fp, len(stack))
            stack.extend(reversed(children))
        return self._finish(0)
