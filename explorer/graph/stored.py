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

The graph is a visitor (explorer/visitor.py) over the one search
(``explorer.check``, the sequential BFS): the search stores and numbers
the states, keeps the limits and the signals; the visitor records each
node as it is stored and each edge once its target is, and prunes a bad
node (unless ``expand_bad``). The model is seen ``Unchecked``: a violation
ends no search here, it is a node's ``bad``.

Cost: one exploration (the same steps as the search) plus the edge lists
in memory -- about 100 bytes per edge in CPython. ``max_states`` and
``time_limit`` bound it; a bounded graph says so in ``complete``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from explorer.model import build_model
from explorer.runtime.verdict import PASS
from explorer.visitor import PRUNE, Visitor, visit

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
    r = visit(m, _Grow(m, g, expand_bad, edge_info, node_info), max_states=max_states, time_limit=time_limit,
              memory_limit=memory_limit)
    if r.verdict != PASS:  # a limit or a signal: the graph so far, cut where it came
        _trim(g)
        g.complete, g.bound_reason = False, r.bound_reason
    g.edges = sum(map(len, g.succ))
    g.elapsed = time.perf_counter() - t0
    return g


class _Grow(Visitor):
    """Each state the search stores becomes the next node; each edge is
    recorded once its target is a node."""

    def __init__(self, m: Any, g: StateGraph, expand_bad: bool, edge_info, node_info) -> None:
        self.m, self.g, self.expand_bad = m, g, expand_bad
        self.edge_info, self.node_info = edge_info, node_info
        self.u, self.fp = -1, None  # the node whose edges come (the search expands one state at a time)

    def on_state(self, state, fp, parent, ai, depth):
        g, m = self.g, self.m
        g.index[fp] = len(g.fps)
        g.fps.append(fp)
        g.parent.append(-1 if parent is None else g.index[parent])
        g.via.append(ai)
        g.succ.append([])
        if g.info is not None:
            g.info.append([])
        if g.value is not None:
            g.value.append(self.node_info(state))
        g.done.append(bool(m.is_done(state)))
        bad = bool(m.invariants(state))
        g.bad.append(bad)
        return PRUNE if bad and not self.expand_bad else None

    def on_edge(self, state, fp, ai, action, nxt, nfp, events):
        g = self.g
        if fp != self.fp:
            self.fp, self.u = fp, g.index[fp]
        g.succ[self.u].append((ai, g.index[nfp]))
        if g.info is not None:
            g.info[self.u].append(self.edge_info(state, action, nxt))


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
