"""The whole state graph, stored: nodes, every edge, and what analyses need.

The search (``strategies/sequential.py``) keeps only one parent link per state and stops
at the first violation; the analyses in ``analysis.py`` need more: every
edge, to know from which states completion is still reachable and which
path is the longest. ``build_graph`` explores breadth-first like the search
(same fingerprints, same action order, same initial states), but goes on
past violations and stores, per node:

* ``fps[u]`` its fingerprint; nodes are numbered in discovery (BFS) order;
* ``parent[u]``, ``via[u]``: the first edge that reached it (-1 and the
  initial-state index for a root), so ``path_to(u)`` is a shortest path;
* ``succ[u]``: its edges ``(action index, target node)`` in action order,
  and, if an ``edge_info`` callback is given, ``info[u]`` parallel to it;
* ``done[u]`` (``is_done``), ``bad[u]`` (``invariants`` not empty) and, if a
  ``node_info`` callback is given, ``value[u]``.

A bad state is expanded only with ``expand_bad``: the point of no return
treats a violation as the end of a behaviour, a worst case may look past it.

Cost: one exploration (the same steps as the search) plus the edge lists
in memory -- about 100 bytes per edge in CPython. ``max_states`` and
``time_limit`` bound it; a bounded graph says so in ``complete``.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from explorer.fingerprint import state_fingerprint
from explorer.runtime.interrupt import interrupt_of, signal_name
from explorer.runtime.limits import LimitReached, Limits
from explorer.runtime.memory import MemoryGuard
from explorer.model import build_model

__all__ = ["StateGraph", "build_graph"]


@dataclass
class StateGraph:
    fps: list[int] = field(default_factory=list)
    index: dict[int, int] = field(default_factory=dict)
    parent: list[int] = field(default_factory=list)
    via: list[int] = field(default_factory=list)
    succ: list[list[tuple[int, int]]] = field(default_factory=list)
    info: list[list[Any]] | None = None
    value: list[Any] | None = None
    done: list[bool] = field(default_factory=list)
    bad: list[bool] = field(default_factory=list)
    complete: bool = True
    bound_reason: str | None = None  # "max_states" | "time_limit" when not complete
    edges: int = 0
    elapsed: float = 0.0

    def __len__(self) -> int:
        return len(self.fps)

    def path_to(self, u: int) -> list[tuple[int, int]]:
        """[(node, action index)] from a root to ``u`` along first-discovery
        links; the root's "action index" is its initial-state index."""
        out = []
        while u >= 0:
            out.append((u, self.via[u]))
            u = self.parent[u]
        out.reverse()
        return out

    def edge_info(self, u: int, k: int) -> Any:
        return self.info[u][k] if self.info is not None else None


def build_graph(
    model: Any,
    *,
    max_states: int | None = None,
    time_limit: float | None = None,
    expand_bad: bool = False,
    edge_info: Callable[[Any, Any, Any], Any] | None = None,
    node_info: Callable[[Any], Any] | None = None,
    memory_limit: int | None = None,
) -> StateGraph:
    """Explore every reachable state of ``model`` (a Model or ModelFactory)
    and store the graph. ``edge_info(state, action, nxt)`` and
    ``node_info(state)`` attach data to edges and nodes. Above
    ``memory_limit`` bytes of resident memory (memory.py), or at a
    MemoryError, the graph is cut with the bound reason "memory"."""
    m, _ = build_model(model)
    g = StateGraph()
    if edge_info is not None:
        g.info = []
    if node_info is not None:
        g.value = []
    t0 = time.perf_counter()
    queue: deque = deque()

    def add(state: Any, fp: int, parent: int, via: int) -> int | None:
        if max_states is not None and len(g.fps) >= max_states:
            g.complete, g.bound_reason = False, "max_states"
            return None
        u = len(g.fps)
        g.index[fp] = u
        g.fps.append(fp)
        g.parent.append(parent)
        g.via.append(via)
        g.succ.append([])
        if g.info is not None:
            g.info.append([])
        if g.value is not None:
            g.value.append(node_info(state))
        g.done.append(bool(m.is_done(state)))
        g.bad.append(bool(m.invariants(state)))
        queue.append((state, u))
        return u

    try:
        _grow(m, g, queue, add, expand_bad, edge_info, Limits(time_limit, MemoryGuard(memory_limit), t0))
    except (KeyboardInterrupt, SystemError) as e:  # SIGINT/SIGTERM: the graph so far, cut where the signal came
        e = interrupt_of(e)
        _trim(g)
        g.complete, g.bound_reason = False, signal_name(e)
    except MemoryError:  # the graph so far, cut where memory ran out
        _trim(g)
        g.complete, g.bound_reason = False, "memory"
    except LimitReached as e:  # the time or memory limit, between or inside expansions
        _trim(g)
        g.complete, g.bound_reason = False, e.reason
    g.elapsed = time.perf_counter() - t0
    return g


def _trim(g: StateGraph) -> None:
    """Drop a node half added when a signal came, and edges to it."""
    lists = [g.fps, g.parent, g.via, g.succ, g.done, g.bad] + [x for x in (g.info, g.value) if x is not None]
    n = min(len(x) for x in lists)
    for x in lists:
        del x[n:]
    for fp in [f for f, u in g.index.items() if u >= n]:
        del g.index[fp]
    for u in range(n):  # only the last node's last edges can be cut
        out = g.succ[u]
        k = next((i for i, (_a, v) in enumerate(out) if v >= n), len(out))
        if g.info is not None:
            k = min(k, len(g.info[u]))
            del g.info[u][k:]
        del out[k:]


def _grow(m, g, queue, add, expand_bad, edge_info, limits: Limits) -> None:
    for i, state in enumerate(m.initial_states()):
        fp = state_fingerprint(m, state)
        if fp not in g.index and add(state, fp, -1, i) is None:
            break
    while queue and g.complete:
        limits.check()
        state, u = queue.popleft()
        if g.bad[u] and not expand_bad:
            continue
        out = g.succ[u]
        for ai, action in enumerate(m.actions(state)):
            if ai & 255 == 255:  # a state with very many successors: the limits hold inside its expansion
                limits.check()  # (the graph is cut there: this state's edges so far)
            nxt = m.step(state, action)
            if nxt is None:
                continue
            fp = state_fingerprint(m, nxt)
            v = g.index.get(fp)
            if v is None:
                v = add(nxt, fp, u, ai)
                if v is None:
                    break
            out.append((ai, v))
            if g.info is not None:
                g.info[u].append(edge_info(state, action, nxt))
        g.edges += len(out)
