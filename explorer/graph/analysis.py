"""Analyses of a stored state graph (``stored.py``): where completion is
still reachable, and worst cases over every behaviour.

* ``completable`` -- backward reachability from the goal states (done, no
  violation) through states that violate nothing: the states from which
  some continuation completes. Along any path the completable states form
  a prefix (a state that reaches a completable one is completable), so the
  *point of no return* of a trace is the step after its last completable
  state (``no_return``). O(V + E).
* ``sccs`` -- strongly connected components (`cycles.py`'s compiled search), in reverse
  topological order of the condensation. O(V + E).
* ``longest`` -- the largest sum of edge weights over all paths from an
  initial state, per *track* (a metric counted separately per subject, e.g.
  per request; weights are sparse ``((track, w), ...)`` tuples, w >= 0).
  An entry ``(track, w, True)`` *restarts* the track: its sum starts again
  from 0 at that edge (then adds w), so what a track counts is the sum
  since its last restart -- one request of a session at a time, never two
  added up. For each track, its restart edges are cut from the graph: a
  positive-weight edge inside a strongly connected component of what is
  left lies on a cycle that can be pumped: the maximum is unbounded, and
  the witness is a lasso through that edge. Otherwise every component's
  internal edges weigh 0, so all its nodes share one value: a longest-path
  pass over the condensation (a DAG) in topological order, where a root
  and the target of a restart edge start a sum. O(T * (V + E)) for T
  tracks.
* ``highest`` -- the largest node value (a state metric) and the shortest
  path to the first node that has it. O(V).

Witness paths are lists of ``(node, action index)``, root first, as
``StateGraph.path_to`` returns; ``trace.follow`` turns one into a trace.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

from explorer.graph.stored import StateGraph
from explorer.graph.cycles import components

__all__ = ["completable", "NoReturn", "no_return", "point_of_no_return", "sccs", "Longest", "longest",
           "highest"]


def completable(g: StateGraph) -> list[bool]:
    """good[u]: some path from u reaches a done state without passing a
    state that violates an invariant (u itself included)."""
    n = len(g)
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, out in enumerate(g.succ):
        if g.bad[u]:
            continue  # a violation ends the behaviour: nothing completes through it
        for _ai, v in out:
            preds[v].append(u)
    good = [g.done[u] and not g.bad[u] for u in range(n)]
    queue = deque(u for u in range(n) if good[u])
    while queue:
        v = queue.popleft()
        for u in preds[v]:
            if not good[u]:
                good[u] = True
                queue.append(u)
    return good


@dataclass
class NoReturn:
    """Where a trace lost every completing continuation.

    status: "step" (``step`` is the trace step whose action left the last
    completable state, step - 1), "initial" (no state of the trace, not even
    the first, can complete), "none" (every state of the trace can still
    complete: e.g. a cycle that a different choice leaves), "unknown" (the
    graph was bounded before it showed the answer)."""

    status: str
    step: int | None = None
    doomed: int = 0  # reachable states from which nothing completes
    states: int = 0  # reachable states in the graph
    reason: str | None = None  # for "unknown": the bound that was hit
    method: str = "graph"  # "graph": the whole state graph; "forward": searches from the trace (forward.py)
    searched: int = 0  # "forward": the states its searches visited
    doomed_from: int | None = None  # "forward", "unknown": no continuation completes from this step on
    cut_by: str | None = None  # the flag whose bound cut the graph, "--graph-limit 5" (set by the caller)


def no_return(g: StateGraph, trace_fps: Sequence[int], good: list[bool] | None = None) -> NoReturn:
    """The point of no return of a trace given by its fingerprints."""
    if good is None:
        good = completable(g)
    doomed = sum(1 for x in good if not x)
    last = -1
    for k, fp in enumerate(trace_fps):
        u = g.index.get(fp)
        if u is not None and good[u]:
            last = k
    if not g.complete:
        # a completable state stays completable in a bigger graph, a doomed
        # one may not: only a completable last step is certain
        if last == len(trace_fps) - 1:
            return NoReturn("none", None, doomed, len(g))
        return NoReturn("unknown", None, doomed, len(g), g.bound_reason)
    if last == len(trace_fps) - 1:
        return NoReturn("none", None, doomed, len(g))
    if last < 0:
        return NoReturn("initial", 0, doomed, len(g))
    return NoReturn("step", last + 1, doomed, len(g))


def point_of_no_return(model: Any, result: Any, *, max_states: int | None = None,
                       time_limit: float | None = None, memory_limit: int | None = None) -> NoReturn | None:
    """Build the graph of ``model`` and locate the point of no return of
    ``result.trace`` (None when the result has no trace). Sets and returns
    ``result.no_return``."""
    if not result.trace:
        return None
    from explorer.graph.stored import build_graph  # noqa: PLC0415 - keeps the import graph one-way

    g = build_graph(model, max_states=max_states, time_limit=time_limit, memory_limit=memory_limit)
    result.no_return = no_return(g, [s.fingerprint for s in result.trace])
    return result.no_return


def sccs(g: StateGraph, cut: frozenset | set = frozenset()) -> tuple[list[int], list[list[int]]]:
    """(component of each node, components) with components in reverse
    topological order (a component's successors come before it); the
    edges ``(u, k)`` in ``cut`` (the k-th edge of u) are left out. The
    compiled search of ``cycles.py``, the one the engines' livelock pass runs."""
    succ = [[e[1] for k, e in enumerate(out) if not (cut and (u, k) in cut)] for u, out in enumerate(g.succ)]
    return components(succ)


@dataclass
class Longest:
    """The worst case of one path metric.

    ``value`` is the maximum (None when unbounded), ``track`` the subject
    that attains it. ``path`` is the witness ``[(node, action index)]``;
    for an unbounded metric it is a lasso: ``path[cycle_start]`` is the node
    the cycle leaves from and the last edge returns to it."""

    value: int | None
    track: Any
    path: list[tuple[int, int]]
    cycle_start: int | None = None

    @property
    def unbounded(self) -> bool:
        return self.value is None


def _weight(info: Any, track: Any) -> int:
    for t, w, *_restart in info or ():
        if t == track:
            return w
    return 0


def _restarts(g: StateGraph) -> dict[Any, set[tuple[int, int]]]:
    """track -> its restart edges (u, k)."""
    out: dict[Any, set[tuple[int, int]]] = {}
    for u, infos in enumerate(g.info or ()):
        for k, info in enumerate(infos):
            for t, _w, *restart in info or ():
                if restart and restart[0]:
                    out.setdefault(t, set()).add((u, k))
    return out


def _inner_path(g: StateGraph, members: set[int], src: int, dst: int,
                cut: frozenset | set = frozenset()) -> list[tuple[int, int]]:
    """Shortest [(node, action index)] edges from src to dst inside one
    component, not through an edge in ``cut`` (empty when src == dst); BFS
    in action order."""
    if src == dst:
        return []
    prev: dict[int, tuple[int, int]] = {src: (-1, -1)}
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for k, (ai, v) in enumerate(g.succ[u]):
            if v in members and v not in prev and (u, k) not in cut:
                prev[v] = (u, ai)
                if v == dst:
                    out = []
                    while v != src:
                        u2, a2 = prev[v]
                        out.append((v, a2))
                        v = u2
                    out.reverse()
                    return out
                queue.append(v)
    raise ValueError("no path inside the component")


def _tracks(g: StateGraph) -> list[Any]:
    seen: dict[Any, None] = {}
    for infos in g.info or ():
        for info in infos:
            for t, w, *_restart in info or ():
                if w and t not in seen:
                    seen[t] = None
    return sorted(seen, key=lambda t: (str(type(t)), t))


def longest(g: StateGraph, scc: tuple[list[int], list[list[int]]] | None = None) -> Longest:
    """Worst case over every path of the graph's edge weights (``info``),
    the maximum over tracks; ties go to the smallest track, then the node
    discovered first. A metric no edge increases is 0 at the initial state.
    ``scc``: the graph's components, when known (for tracks without
    restarts)."""
    tracks = _tracks(g)
    restarts = _restarts(g)
    whole = None
    per_track = {}
    for t in tracks:
        cut = restarts.get(t, set())
        if cut:
            per_track[t] = sccs(g, cut)
        else:
            whole = whole or (scc if scc is not None else sccs(g))
            per_track[t] = whole
    # Unbounded first: the first node (discovery order) with a positive edge
    # inside its own component, for the smallest track that has one.
    for t in tracks:
        comp, comps = per_track[t]
        cut = restarts.get(t, set())
        for u in range(len(g)):
            for k, (ai, v) in enumerate(g.succ[u]):
                if comp[v] == comp[u] and (u, k) not in cut and _weight(g.info[u][k], t) > 0:
                    members = set(comps[comp[u]])
                    prefix = g.path_to(u)
                    cycle = [(v, ai)] + _inner_path(g, members, v, u, cut)
                    return Longest(None, t, prefix + cycle, len(prefix) - 1)
    if not tracks:
        return _longest_track(g, scc if scc is not None else sccs(g), None, set())
    best: Longest | None = None
    for t in tracks:
        cand = _longest_track(g, per_track[t], t, restarts.get(t, set()))
        if best is None or cand.value > best.value:
            best = cand
    return best


def _longest_track(g: StateGraph, scc, track: Any, cut: set[tuple[int, int]]) -> Longest:
    comp, comps = scc
    n = len(g)
    # value per component, and what starts it: the entering edge (u, k, v)
    # that gives it, or a restart edge ("restart", u, k, v), or a root (None)
    cval = [-1] * len(comps)
    centry: list[tuple | None] = [None] * len(comps)
    croot: list[int] = [-1] * len(comps)
    for u in range(n):
        if g.parent[u] < 0:
            c = comp[u]
            if cval[c] < 0:
                cval[c], croot[c] = 0, u
    for u, k in sorted(cut):  # a restart starts a sum wherever it leads
        v = g.succ[u][k][1]
        w = _weight(g.info[u][k], track)
        if w > cval[comp[v]]:
            cval[comp[v]], centry[comp[v]] = w, ("restart", u, k, v)
    # reverse topological order -> topological: sources first
    for c in range(len(comps) - 1, -1, -1):
        base = cval[c]
        if base < 0:
            continue  # unreachable (cannot happen in a graph built from initial states)
        for u in comps[c]:
            for k, (_ai, v) in enumerate(g.succ[u]):
                d = comp[v]
                if d == c or (u, k) in cut:
                    continue
                val = base + (_weight(g.info[u][k], track) if g.info is not None else 0)
                if val > cval[d]:
                    cval[d], centry[d] = val, (u, k, v)
    top = max(range(len(comps)), key=lambda c: (cval[c], -min(comps[c])))
    target = min(comps[top])
    return Longest(cval[top], track, _witness(g, comp, comps, centry, croot, target, cut))


def _witness(g, comp, comps, centry, croot, target, cut) -> list[tuple[int, int]]:
    """Walk the chosen entering edges back from ``target`` to a root (or to
    a restart edge, then along first-discovery links to a root)."""
    rev: list[list[tuple[int, int]]] = []
    node = target
    while True:
        c = comp[node]
        members = set(comps[c])
        entry = centry[c]
        if entry is None:
            start = croot[c]
            rev.append(_inner_path(g, members, start, node, cut))
            rev.append([(start, g.via[start])])
            break
        restart = entry[0] == "restart"
        u, k, v = entry[1:] if restart else entry
        rev.append(_inner_path(g, members, v, node, cut))
        rev.append([(v, g.succ[u][k][0])])
        if restart:
            rev.append(g.path_to(u))
            break
        node = u
    out: list[tuple[int, int]] = []
    for seg in reversed(rev):
        out.extend(seg)
    return out


def highest(g: StateGraph, key=lambda v: v) -> tuple[Any, int]:
    """(largest node value by ``key``, the first node that has it)."""
    best_u = max(range(len(g)), key=lambda u: (key(g.value[u]), -u))
    return g.value[best_u], best_u
