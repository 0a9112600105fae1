"""The one strongly-connected-components and shortest-cycle module.

The graph is compact (4 B per edge plus one offset per state): nodes on
no cycle peeled off first (Kahn), then Pearce's strongly-connected-
components search on what is left (4 B a state), and the lasso's cycle
rebuilt from the component found. The array engines call the compiled
functions over their own arrays (`strategies/arrays/engine.py`,
`strategies/partitions/driver.py`); the sequential engines' livelock
(`find_livelock`, over fingerprints) and the stored graph's analyses
(`components`, `graph/analysis.py`) go through the same functions."""

from __future__ import annotations

import numpy as np
from numba import njit

from explorer.runtime.jit import inner

from typing import Callable, Iterable, Mapping, Sequence

__all__ = ["DONE_NODE", "_acyclic_part", "_scc", "_cycle", "_cycle_within", "_grow32", "csr", "components", "find_livelock"]

@inner  # called only from compiled code: compiled into each caller
def _grow32(a, n):
    b = np.empty(2 * a.shape[0], a.dtype)
    for i in range(n):  # not b[:n] = a[:n]: numba's check of the shapes compiles its message's formatting (3 s)
        b[i] = a[i]
    return b


DONE_NODE = np.int32(2**31 - 1)  # in rindex: a node on no cycle, removed by _acyclic_part


@njit(cache=True, nogil=True)
def _acyclic_part(n, ofs, dst):
    """Kahn's peeling: the nodes whose predecessors all lead back to no
    cycle are removed (DONE_NODE); the others get 0. Nothing is left when
    the graph has no cycle, the usual case, which then needs no depth-first
    search at all. One int32 a node, and a stack that holds only nodes
    freed by an edge to a smaller id."""
    deg = np.zeros(n, np.int32)
    for e in range(ofs[n]):
        deg[dst[e]] += 1
    st = np.empty(1024, np.int32)
    left = n
    for v in range(n):
        if deg[v] != 0:
            continue
        sp = 1
        st[0] = v
        while sp > 0:
            sp -= 1
            u = st[sp]
            deg[u] = -1
            left -= 1
            for e in range(ofs[u], ofs[u + 1]):
                w = dst[e]
                deg[w] -= 1
                if deg[w] == 0 and w < v:  # a larger id is met by the sweep
                    if sp == st.shape[0]:
                        st = _grow32(st, sp)
                    st[sp] = w
                    sp += 1
    for v in range(n):
        deg[v] = DONE_NODE if deg[v] < 0 else 0
    return deg, left


@njit(cache=True, nogil=True)
def _scc(n, ofs, dst, rindex):
    """Pearce's algorithm, iteratively, over the nodes whose rindex is 0
    (the others count as done): rindex becomes the component of every such
    node; returns the smallest node on a cycle (in a component of 2+ nodes
    or with an edge to itself), -1 if none. One int32 a node (rindex), and
    the stacks."""
    fn = np.empty(1024, np.int32)  # the call stack: node, edge cursor, is-root
    fe = np.empty(1024, np.int32)
    fr = np.empty(1024, np.bool_)
    st = np.empty(1024, np.int32)  # nodes of components not yet complete
    sp = 0
    index = 1
    c = n - 1
    best = -1
    for r in range(n):
        if rindex[r] != 0:
            continue
        d = 0
        fn[0] = r
        fe[0] = ofs[r]
        fr[0] = True
        rindex[r] = index
        index += 1
        while d >= 0:
            v = fn[d]
            e = fe[d]
            if e < ofs[v + 1]:
                w = dst[e]
                if rindex[w] == 0:
                    d += 1
                    if d == fn.shape[0]:
                        fn = _grow32(fn, d)
                        fe = _grow32(fe, d)
                        fr = _grow32(fr, d)
                    fn[d] = w
                    fe[d] = ofs[w]
                    fr[d] = True
                    rindex[w] = index
                    index += 1
                    continue
                fe[d] = e + 1
                if w == v and (best < 0 or v < best):
                    best = v
                if rindex[w] < rindex[v]:
                    rindex[v] = rindex[w]
                    fr[d] = False
            else:
                if fr[d]:
                    index -= 1
                    low = v
                    many = False
                    while sp > 0 and rindex[v] <= rindex[st[sp - 1]]:
                        x = st[sp - 1]
                        sp -= 1
                        rindex[x] = c
                        index -= 1
                        many = True
                        if x < low:
                            low = x
                    rindex[v] = c
                    c -= 1
                    if many and (best < 0 or low < best):
                        best = low
                else:
                    if sp == st.shape[0]:
                        st = _grow32(st, sp)
                    st[sp] = v
                    sp += 1
                d -= 1
    return best


@njit(cache=True, nogil=True)
def _cycle(n, ofs, dst, comp, entry):
    """A shortest cycle entry -> ... -> entry inside entry's component,
    successors scanned in recorded order: the ids after entry, ending with
    entry."""
    par = np.full(n, -1, np.int32)
    seen = np.zeros(n, np.bool_)
    q = np.empty(n, np.int32)
    qh = 0
    qt = 1
    q[0] = entry
    seen[entry] = True
    while qh < qt:
        u = q[qh]
        qh += 1
        for e in range(ofs[u], ofs[u + 1]):
            v = dst[e]
            if v == entry:
                path = [entry]
                while u != entry:
                    path.append(u)
                    u = par[u]
                out = np.empty(len(path), np.int64)
                for i in range(len(path)):
                    out[i] = path[len(path) - 1 - i]
                return out
            if comp[v] == comp[entry] and not seen[v]:
                seen[v] = True
                par[v] = u
                q[qt] = v
                qt += 1
    return np.empty(0, np.int64)


@inner  # (numba's np.searchsorted and np.full would bring numba's array functions, and scipy, into each load)
def _position(nodes, v):
    """The position of `v` in the sorted `nodes`, which hold it."""
    lo, hi = 0, nodes.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if nodes[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _cycle_within(n, ofs, dst, comp, entry):
    """`_cycle`, with its arrays the size of entry's component (13 bytes a
    node of it: the component's ids, sorted, and the search's own arrays
    by position among them) instead of the graph's (9 bytes a node), when
    that is less: the same cycle."""
    c = comp[entry]
    k = 0
    for v in range(n):
        if comp[v] == c:
            k += 1
    if 13 * k >= 9 * n:
        return _cycle(n, ofs, dst, comp, entry)
    nodes = np.empty(k, np.int32)
    j = 0
    for v in range(n):
        if comp[v] == c:
            nodes[j] = v
            j += 1
    par = np.empty(k, np.int32)
    for j in range(k):
        par[j] = -1
    seen = np.zeros(k, np.bool_)
    q = np.empty(k, np.int32)
    at = _position(nodes, entry)
    qh = 0
    qt = 1
    q[0] = at
    seen[at] = True
    while qh < qt:
        lu = q[qh]
        qh += 1
        u = nodes[lu]
        for e in range(ofs[u], ofs[u + 1]):
            v = dst[e]
            if v == entry:
                path = [np.int64(entry)]
                while nodes[lu] != entry:
                    path.append(np.int64(nodes[lu]))
                    lu = par[lu]
                out = np.empty(len(path), np.int64)
                for i in range(len(path)):
                    out[i] = path[len(path) - 1 - i]
                return out
            if comp[v] == c:
                lv = _position(nodes, v)
                if not seen[lv]:
                    seen[lv] = True
                    par[lv] = lu
                    q[qt] = lv
                    qt += 1
    return np.empty(0, np.int64)


def csr(succ: Sequence[Sequence[int]]) -> tuple[int, np.ndarray, np.ndarray]:
    """(n, offsets, targets) of a graph given as each node's successors in
    order (dense ids 0..n-1)."""
    n = len(succ)
    ofs = np.zeros(n + 1, np.int32)
    for u, vs in enumerate(succ):
        ofs[u + 1] = ofs[u] + len(vs)
    dst = np.fromiter((v for vs in succ for v in vs), np.int32, int(ofs[n]))
    return n, ofs, dst


def components(succ: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """(component of each node, components, each sorted) with the
    components in reverse topological order (a component's successors come
    before it): the order in which the depth-first search, from nodes 0..n-1
    and each node's successors in order, completes them."""
    n, ofs, dst = csr(succ)
    rindex = np.zeros(n, np.int32)
    _scc(n, ofs, dst, rindex)
    comp = (n - 1 - rindex).tolist()  # the first completed has the highest label, n - 1
    comps: list[list[int]] = [[] for _ in range(n - 1 - int(rindex.min()) + 1 if n else 0)]
    for v, c in enumerate(comp):
        comps[c].append(v)
    return comp, comps


def find_livelock(edges: Mapping[int, Sequence[int]],
                  first_of: Callable[[Iterable[int]], int]) -> tuple[int, list[int]] | None:
    """(entry, cycle) of the first livelock over the non-progress edges
    between fingerprints, or None. A livelock is a cycle of such edges (a
    self-loop counts): among the states on one, `first_of(fps)` picks the
    earliest discovered, the entry; the cycle is a shortest one back to it
    through its component, successors scanned in recorded order: the
    fingerprints after entry, ending with entry."""
    ids: dict[int, int] = {}
    for u, vs in edges.items():
        ids.setdefault(u, len(ids))
        for v in vs:
            ids.setdefault(v, len(ids))
    fps = list(ids)
    succ: list[list[int]] = [[] for _ in fps]
    for u, vs in edges.items():
        succ[ids[u]] = [ids[v] for v in vs]
    n, ofs, dst = csr(succ)
    comp, left = _acyclic_part(n, ofs, dst)
    if not left or _scc(n, ofs, dst, comp) < 0:
        return None
    size: dict[int, int] = {}
    for c in comp.tolist():
        size[c] = size.get(c, 0) + 1
    on_cycle = [fps[v] for v in range(n) if comp[v] != DONE_NODE and (size[int(comp[v])] > 1 or v in succ[v])]
    entry = ids[first_of(on_cycle)]
    return fps[entry], [fps[int(v)] for v in _cycle(n, ofs, dst, comp, entry)]
