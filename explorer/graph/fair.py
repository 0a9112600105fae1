"""Liveness under fairness: a *fair lasso* in which a subject waits for ever.

The model names subjects (at most 64, the bits of a mask: serq's
sessions) and says in each state which of them *wait* (`waiting`), and
puts its actions in *fairness classes* (1..63; 0: an action under no
fairness; serq: one class a stage, its iterations). A behaviour is an
infinite path of the state graph, or a finite one that ends in a state
without successor (it stays there: nothing is enabled). It is

* *weakly fair* when no class is enabled at every state from some point
  on and taken only finitely often;
* *strongly fair* when no class is enabled infinitely often and taken
  only finitely often.

A subject *starves* on a fair behaviour in which, from some point on, it
waits in every state. On a finite graph such a behaviour exists iff some
state where it waits ends every path (a state without successor), or
some strongly connected component of the graph restricted to the states
where it waits is fair (the known algorithm: Emerson and Lei's fair
components, refined for strong fairness; TLC's liveness checking also
looks for strongly connected components, of its behaviour graph):

* weak: the component has an internal edge, and every class enabled at
  all of its states is taken on one of its internal edges (a sub-cycle of
  an unfair component is unfair too: the check needs the maximal
  components only);
* strong: every class enabled at one of its states is taken inside it.
  An unfair component is refined: its states where an untaken class is
  enabled are removed, and the components of what is left are checked
  again (each round removes a state).

The components are those of `cycles.py`'s compiled search (`_scc`, the
livelock pass's, over the states where the subject waits: the others are
marked done before it starts). The lasso is the shortest path to the
first discovered state of a fair component (its *entry*), then a cycle
inside the component from the entry through one witness per class
enabled in it -- an edge of the class, or (weak fairness) a state where
the class is disabled -- and back, each leg a breadth-first shortest
path (`_cycle`, the livelock's, when no class is enabled in it).

Input: the graph as offsets and targets (every edge, sources in id order,
ids in discovery order), a byte per edge (its class, bits 0..6), a mask
per state (the subjects waiting), the mask of the subjects under strong
fairness. O(S * (V + E)) for S subjects that ever wait, times the rounds
of refinement under strong fairness. `check` (the run's limits: a
callable that raises when the time or memory limit is past) is called
before each subject and each round, so the analysis is cut by them like
the search before it."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numba import njit

from explorer.graph.cycles import DONE_NODE, _cycle, _grow32, _scc, csr

__all__ = ["CLASS_BITS", "fair_lasso", "FairLasso", "fair_result", "fair_pass", "graph_lasso"]

CLASS_BITS = 0x7F  # an edge's byte: its fairness class in bits 0..6


@njit(cache=True, nogil=True)
def _enabled(n, ofs, ecls):
    """The mask of the classes (bit c for class c > 0) each state enables."""
    en = np.zeros(n, np.uint64)
    for u in range(n):
        m = np.uint64(0)
        for e in range(ofs[u], ofs[u + 1]):
            c = ecls[e] & 0x7F
            if c != 0:
                m |= np.uint64(1) << np.uint64(c)
        en[u] = m
    return en


@njit(cache=True, nogil=True)
def _peel_within(n, ofs, dst, comp):
    """`cycles._acyclic_part` within the nodes whose comp is 0 (the others,
    DONE_NODE, are not there): the nodes on no cycle of that subgraph
    peeled off (DONE_NODE), the others left 0; returns how many are left.
    The in-degrees are counted in comp itself, so nothing a node is added
    to it (the components search after it then runs over the rest alone,
    its stacks the size of that rest)."""
    for u in range(n):
        if comp[u] == DONE_NODE:
            continue
        for e in range(ofs[u], ofs[u + 1]):
            w = dst[e]
            if comp[w] != DONE_NODE:
                comp[w] += 1
    st = np.empty(1024, np.int32)
    left = 0
    for v in range(n):
        if comp[v] != DONE_NODE:
            left += 1
    for v in range(n):
        if comp[v] != 0:
            continue
        sp = 1
        st[0] = v
        while sp > 0:
            sp -= 1
            u = st[sp]
            comp[u] = -1
            left -= 1
            for e in range(ofs[u], ofs[u + 1]):
                w = dst[e]
                if comp[w] == DONE_NODE or comp[w] < 0:
                    continue
                comp[w] -= 1
                if comp[w] == 0 and w < v:  # a larger id is met by the sweep
                    if sp == st.shape[0]:
                        st = _grow32(st, sp)
                    st[sp] = w
                    sp += 1
    for v in range(n):
        comp[v] = DONE_NODE if comp[v] < 0 or comp[v] == DONE_NODE else 0
    return left


@njit(cache=True, nogil=True)
def _judge(n, ofs, dst, ecls, comp, en, strong, inside):
    """The components (comp's labels, 0..n-1; DONE_NODE: outside) with an
    internal edge (the others cannot be fair), numbered 0..C-1 in the
    order of their first node (`slot[label]`, -1 for the others), and per
    such component the classes taken on its internal edges, enabled at all
    of its states (allm), at one of them (anym): a state's share of it all
    is 5 bytes (the labels with an internal edge, their numbers), 24 per
    such component. Returns (each node's status: 0 on no cycle or not
    `inside`, 1 in a fair component, 2 in an unfair one; its component's
    number or -1; taken, anym; under strong fairness, each node of an
    unfair component where a class enabled in it and never taken in it is
    enabled (`drop`: the refinement removes them), else nothing)."""
    cyc = np.zeros(n, np.bool_)
    for u in range(n):
        c = comp[u]
        if c == DONE_NODE:
            continue
        for e in range(ofs[u], ofs[u + 1]):
            if comp[dst[e]] == c:
                cyc[c] = True
                break
    slot = np.full(n, -1, np.int32)
    C = 0
    for u in range(n):
        c = comp[u]
        if c != DONE_NODE and cyc[c] and slot[c] < 0:
            slot[c] = C
            C += 1
    taken = np.zeros(C, np.uint64)
    allm = np.zeros(C, np.uint64)
    anym = np.zeros(C, np.uint64)
    seen = np.zeros(C, np.bool_)
    for u in range(n):
        c = comp[u]
        if c == DONE_NODE or slot[c] < 0:
            continue
        k = slot[c]
        if not seen[k]:
            seen[k] = True
            allm[k] = en[u]
        else:
            allm[k] &= en[u]
        anym[k] |= en[u]
        for e in range(ofs[u], ofs[u + 1]):
            if comp[dst[e]] == c:
                x = ecls[e] & 0x7F
                if x != 0:
                    taken[k] |= np.uint64(1) << np.uint64(x)
    status = np.zeros(n, np.int8)
    drop = np.zeros(n if strong else 0, np.bool_)
    for u in range(n):
        c = comp[u]
        if not inside[u] or c == DONE_NODE or slot[c] < 0:
            continue
        k = slot[c]
        need = anym[k] if strong else allm[k]
        status[u] = 1 if (need & ~taken[k]) == 0 else 2
        if strong and status[u] == 2:
            drop[u] = (en[u] & anym[k] & ~taken[k]) != 0
    return status, slot, taken, anym, drop


@njit(cache=True, nogil=True)
def _leg(n, ofs, dst, comp, src, tgt):
    """A shortest path src -> tgt inside src's component (its edges
    scanned in recorded order): the nodes after src, ending with tgt
    (empty when src == tgt)."""
    if src == tgt:
        return np.empty(0, np.int64)
    par = np.full(n, -1, np.int32)
    seen = np.zeros(n, np.bool_)
    q = np.empty(1024, np.int32)
    qh, qt = 0, 1
    q[0] = src
    seen[src] = True
    while qh < qt:
        u = q[qh]
        qh += 1
        for e in range(ofs[u], ofs[u + 1]):
            v = dst[e]
            if seen[v] or comp[v] != comp[src]:
                continue
            seen[v] = True
            par[v] = u
            if v == tgt:
                k = 0
                w = v
                while w != src:
                    k += 1
                    w = par[w]
                out = np.empty(k, np.int64)
                w = v
                while w != src:
                    k -= 1
                    out[k] = w
                    w = par[w]
                return out
            if qt == q.shape[0]:
                q = _grow32(q, qt)
            q[qt] = v
            qt += 1
    return np.empty(0, np.int64)


class FairLasso:
    """A starved subject: `entry` (a node), `cycle` (the nodes after it,
    ending with it; empty: the entry has no successor and the behaviour
    stays there), `classes` (the class of each cycle edge, as chosen)."""

    def __init__(self, subject: int, entry: int, cycle: list[int], classes: list[int]) -> None:
        self.subject, self.entry, self.cycle, self.classes = subject, entry, cycle, classes

    def __repr__(self) -> str:
        return f"FairLasso(subject={self.subject}, entry={self.entry}, cycle={self.cycle})"


def _components(n, ofs, dst, ecls, inside, en, strong, check=None):
    """(entry, comp, label, taken, anym) of the fair component with the
    smallest node among those inside `inside` (refined under strong
    fairness), or None; taken and anym: its classes taken on its internal
    edges and enabled at one of its states."""
    best = None
    inside = inside.copy()
    while inside.any():
        if check is not None:
            check()
        comp = np.full(n, DONE_NODE, np.int32)
        comp[inside] = 0
        if _peel_within(n, ofs, dst, comp) == 0:  # no cycle among them: no fair component, nothing to refine
            break
        _scc(n, ofs, dst, comp)
        status, slot, taken, anym, drop = _judge(n, ofs, dst, ecls, comp, en, strong, inside)
        fair_nodes = np.flatnonzero(status == 1)
        if fair_nodes.size and (best is None or fair_nodes[0] < best[0]):
            entry = int(fair_nodes[0])
            label = int(comp[entry])
            best = (entry, comp, label, taken[slot[label]], anym[slot[label]])
        del slot, taken, anym
        if not strong:
            break
        inside = (status == 2) & ~drop
    return best


def fair_lasso(n: int, ofs: np.ndarray, dst: np.ndarray, ecls: np.ndarray, wait: np.ndarray,
               strong_mask: int, check=None) -> FairLasso | None:
    """The fair lasso with the earliest discovered entry (then the lowest
    subject), or None when no subject starves. `check()`: the run's
    limits, called between rounds (it raises to cut the analysis)."""
    ecls = np.asarray(ecls, np.uint8)
    wait = np.asarray(wait, np.uint64)
    en = _enabled(n, ofs, ecls)
    ever = int(np.bitwise_or.reduce(wait)) if n else 0
    terminal = np.diff(ofs) == 0
    best = None
    for k in range(64):
        if not ever >> k & 1:
            continue
        inside = np.empty(n, np.bool_)  # (a block at a time: no temporary of 8 bytes a state)
        for a in range(0, n, 1 << 20):
            np.not_equal(wait[a: a + (1 << 20)] & np.uint64(1 << k), 0, out=inside[a: a + (1 << 20)])
        ends = np.flatnonzero(inside & terminal)
        cand = None
        if ends.size:
            cand = (int(ends[0]), k, None)
        found = _components(n, ofs, dst, ecls, inside, en, bool(strong_mask >> k & 1), check)
        if found is not None and (cand is None or found[0] < cand[0]):
            cand = (found[0], k, found[1:])
        if cand is not None and (best is None or cand[0] < best[0]):
            best = cand
    if best is None:
        return None
    entry, k, inner = best
    if inner is None:
        return FairLasso(k, entry, [], [])
    return _lasso((n, ofs, dst, ecls), en, inner, k, entry, bool(strong_mask >> k & 1))


def _lasso(graph, en, inner, k: int, entry: int, strong: bool) -> FairLasso:
    """The cycle from `entry` through a witness of each class enabled in
    the component (`inner`: its comp, label, classes taken, classes
    enabled somewhere: the component's masks), and back."""
    n, ofs, dst, ecls = graph
    comp, label, taken, anym = inner
    members = np.flatnonzero(comp == label)
    wits: list[tuple[int, int, int]] = []  # (node, next node or -1, class)
    for c in range(1, 64):
        bit = np.uint64(1) << np.uint64(c)
        if not anym & bit:
            continue
        if taken & bit:
            u, v = _class_edge(ofs, dst, ecls, comp, label, members, c)
            wits.append((u, v, c))
        elif not strong:
            u = next(int(x) for x in members if not en[x] & bit)
            wits.append((u, -1, 0))
    wits.sort()
    if not wits:
        cyc = [int(v) for v in _cycle(n, ofs, dst, comp, entry)]
        return FairLasso(k, entry, cyc, [_edge_class(ofs, dst, ecls, a, b) for a, b in zip([entry] + cyc, cyc)])
    path: list[int] = []
    want: list[int] = []  # the class each edge must have (-1: any)
    cur = entry
    for u, v, c in wits:
        leg = [int(x) for x in _leg(n, ofs, dst, comp, cur, u)]
        path += leg
        want += [-1] * len(leg)
        cur = u
        if v >= 0:
            path.append(v)
            want.append(c)
            cur = v
    back = [int(x) for x in _leg(n, ofs, dst, comp, cur, entry)]
    path += back
    want += [-1] * len(back)
    if not path:  # the entry's witness is a state (weak fairness) and nothing else: its shortest cycle
        path = [int(v) for v in _cycle(n, ofs, dst, comp, entry)]
        want = [-1] * len(path)
    classes = [w if w >= 0 else _edge_class(ofs, dst, ecls, a, b) for w, a, b in zip(want, [entry] + path, path)]
    return FairLasso(k, entry, path, classes)


def _class_edge(ofs, dst, ecls, comp, label, members, c) -> tuple[int, int]:
    for u in members:
        for e in range(int(ofs[u]), int(ofs[u + 1])):
            if ecls[e] & CLASS_BITS == c and comp[dst[e]] == label:
                return int(u), int(dst[e])
    raise AssertionError("a class taken inside a component has an edge there")


def _edge_class(ofs, dst, ecls, u: int, v: int) -> int:
    """The class of the first edge u -> v (the replay takes the first action reaching v)."""
    for e in range(int(ofs[u]), int(ofs[u + 1])):
        if dst[e] == v:
            return int(ecls[e] & CLASS_BITS)
    return 0


def graph_lasso(succ: Sequence[Sequence[tuple[int, int]]], wait: Sequence[int],
                strong_mask: int, check=None) -> FairLasso | None:
    """`fair_lasso` over a graph given as each node's (class, target)
    edges in order (the stored graph of graph/stored.py, its edge data the
    class)."""
    n, ofs, dst = csr([[v for _c, v in out] for out in succ])
    ecls = np.fromiter((c for out in succ for c, _v in out), np.uint8, int(ofs[n]))
    return fair_lasso(n, ofs, dst, ecls, np.array(list(wait), np.uint64), strong_mask, check)


def fair_pass(model, result, wait) -> Any:
    """A pass: the model's note on it (`fair_note`, given the subjects that
    ever wait) added to its message."""
    ever = int(np.bitwise_or.reduce(np.asarray(wait, np.uint64))) if len(wait) else 0
    note = model.fair_note(ever)
    if note:
        result.message += f"; {note}"
    return result


def fair_result(model, chain_of, lasso: FairLasso, fps: Sequence[int], stats):
    """The Result of a starved subject: the stored path to the entry, then
    the cycle (each edge of the class the lasso chose), in the model's
    words (`fair_words`)."""
    from explorer.result import Result
    from explorer.runtime.verdict import VIOLATION
    from explorer.trace import extend_along, format_path, rebuild

    entry = int(fps[0])
    trace = rebuild(model, chain_of(entry))
    start = len(trace) - 1
    classes = lasso.classes

    def same_class(state, action, nxt, j):
        return classes[j] == model.fair_class(state, action)

    extend_along(model, trace, [int(f) for f in fps[1:]], None, same_class)
    kind, message = model.fair_words(trace, start if lasso.cycle else None, lasso.subject)
    return Result(VIOLATION, message, kind=kind, trace=trace, lasso_start=start if lasso.cycle else None,
                  stats=stats, replay_path=format_path(trace), fingerprint=entry)
