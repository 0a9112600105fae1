"""The Markov decision process on a stored graph (serq/check/prob.py): the
minimum and the maximum over schedulers of a reachability probability or
of an expected sum along a run.

A node's edges form a small tree: the scheduler picks an action (a base:
arrive, turn, iterate), then the step's questions come in the order it
asked them (`Edge.tags`): a choice node (a tie, an unkeyed `choose`: the
scheduler picks, seeing what was drawn before it in the step) or a chance
node (a draw: the children weighted by their probabilities). A value is a
pair (the sum asked, the subjects started), so that a per-request mean is
the expected sum over the expected number of requests under the one
scheduler that optimizes the sum.

On a graph without cycles the nodes are solved once each, in reverse
topological order (`explorer.check.sccs`, the compiled search of the
engines' livelock pass), exactly (rationals when every probability is
one) or in floating point. A graph with cycles is solved by interval
iteration and proven bounds (serq/check/interval.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any



def trees(g, exact: bool) -> list:
    """Each node's tree of edges: an edge index (a leaf), ("n", children)
    or ("p", [(probability, child)])."""
    out = []
    for u, info in enumerate(g.info):
        by_base: dict = {}
        for k, e in enumerate(info):
            by_base.setdefault(e.base, []).append(k)
        out.append(("n", [_sub(info, ks, 0, exact) for ks in by_base.values()]) if info else None)
    return out


def _sub(info, ks, i, exact):
    if len(ks) == 1 and len(info[ks[0]].choices) == i:
        return ks[0]
    tag = info[ks[0]].tags[i]
    groups: dict = {}
    for k in ks:
        groups.setdefault(info[k].choices[i], []).append(k)
    kids = [(a, _sub(info, kk, i + 1, exact)) for a, kk in groups.items()]
    if tag[0] == "n":
        return ("n", [c for _a, c in kids])
    return ("p", [(tag[1][a] if exact else float(tag[1][a]), c) for a, c in kids])


def acyclic(comps, g) -> bool:
    return all(len(c) == 1 and all(v not in c for _a, v in g.succ[next(iter(c))]) for c in comps)


@dataclass
class Solution:
    value: Any  # the probability or expected sum at the initial state
    starts: Any  # the expected subjects started under the same scheduler
    sweeps: int  # 0: one pass


def solve(g, tr, scc, rewards, target, maximize: bool, exact: bool) -> Solution:
    """`rewards[u][k]`: (amount, subjects started) of edge k of u, or None
    (all zero); `target[u]`: the event has happened at u (value 1), or None
    for an expected sum."""
    zero = 0 if exact else 0.0
    one = 1 if exact else 1.0
    V: list = [(zero, zero)] * len(g)
    succ = g.succ

    def leaf(u, k):
        _ai, v = succ[u][k]
        if rewards is None or rewards[u] is None:
            return V[v]
        r, d = rewards[u][k]
        return (r + V[v][0], d + V[v][1])

    def ev(u, t):
        if type(t) is int:
            return leaf(u, t)
        if t[0] == "n":
            best = None
            for c in t[1]:
                x = ev(u, c)
                if best is None or (x[0] > best[0] if maximize else x[0] < best[0]):
                    best = x
            return best
        a = b = zero
        for p, c in t[1]:
            x = ev(u, c)
            a += p * x[0]
            b += p * x[1]
        return (a, b)

    def node(u):
        if target is not None and target[u]:
            return (one, zero)
        t = tr[u]
        return (zero, zero) if t is None else ev(u, t)

    _comp, comps = scc
    for members in comps:
        u = members[0]
        if len(members) > 1 or any(v == u for _a, v in succ[u]):
            raise ValueError("a graph with cycles is solved by serq/check/interval.py")
        V[u] = node(u)
    return Solution(V[0][0], V[0][1], 0)


def positive_graph(g):
    """The graph of the behaviours with positive probability: without the
    edges whose drawn value has probability 0 (a `weights` of 0) and the
    nodes only they reach, renumbered in breadth-first order from the root;
    its `info` the metric's weights (for `longest`)."""
    from collections import deque

    from explorer.check import StateGraph

    keep = [[k for k, e in enumerate(inf) if all(t[0] != "p" or t[1][a] > 0 for t, a in zip(e.tags, e.choices))]
            for inf in g.info]
    new = {0: 0}
    order, parent, via = [0], [-1], [g.via[0]]
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for k in keep[u]:
            ai, v = g.succ[u][k]
            if v not in new:
                new[v] = len(order)
                order.append(v)
                parent.append(new[u])
                via.append(ai)
                queue.append(v)
    h = StateGraph()
    h.fps = [g.fps[u] for u in order]
    h.index = {fp: i for i, fp in enumerate(h.fps)}
    h.parent, h.via = parent, via
    h.succ = [[(ai, new[v]) for ai, v in (g.succ[u][k] for k in keep[u])] for u in order]
    h.info = [[g.info[u][k].weights for k in keep[u]] for u in order]
    h.done = [g.done[u] for u in order]
    h.bad = [g.bad[u] for u in order]
    h.edges = sum(map(len, h.succ))
    return h
