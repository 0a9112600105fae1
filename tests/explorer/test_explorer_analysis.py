"""The stored graph and its analyses, on explicit toy graphs with answers
worked out by hand, and longest paths against brute force over every
path of small random acyclic graphs."""

from __future__ import annotations

import itertools
import random

import pytest
from explorer_toys import CounterPair, Graph, TwoLocks

from explorer import check
from explorer.graph.analysis import completable, highest, longest, point_of_no_return, sccs
from explorer.report import render_json, render_text
from explorer.graph.stored import build_graph
from explorer.trace import follow


def test_build_graph_stores_every_edge():
    g = build_graph(CounterPair(2))
    assert len(g) == 9 and g.edges == 12 and g.complete
    assert g.done.count(True) == 1
    # BFS numbering and first-discovery links give shortest paths
    assert [ai for _, ai in g.path_to(len(g) - 1)] == [0, 0, 0, 1, 1]


def test_build_graph_bound_and_bad_states():
    g = build_graph(CounterPair(3), max_states=5)
    assert not g.complete and g.bound_reason == "max_states" and len(g) == 5
    # node 2 is bad: not expanded unless asked
    toy = Graph({0: (1, 2), 1: (3,), 2: (3,), 3: ()}, done={3}, bad={2})
    assert build_graph(toy).succ[2] == []
    assert build_graph(toy, expand_bad=True).succ[2] == [(0, 3)]


def test_completable_skips_violations():
    # 0 -> 1 -> 3 (done), 0 -> 2 (bad) -> 3, 0 -> 4 -> 4 (a dead loop)
    toy = Graph({0: (1, 2, 4), 1: (3,), 2: (3,), 3: (), 4: (4,)}, done={3}, bad={2})
    g = build_graph(toy, expand_bad=True)
    good = completable(g)
    by_state = {s: good[u] for u, s in enumerate([0, 1, 2, 4, 3])}
    assert by_state == {0: True, 1: True, 2: False, 4: False, 3: True}


def test_no_return_on_a_deadlock_trace():
    r = check(TwoLocks())
    assert r.verdict == "deadlock"
    nr = point_of_no_return(TwoLocks(), r)
    # P0 takes A (step 1): P0 can still finish; P1 takes B (step 2): doomed
    assert (nr.status, nr.step) == ("step", 2)
    text = render_text(r, with_timing=False)
    assert "  -- point of no return: no continuation of step 2 completes --" in text
    assert "point of no return: step 2 (" in text
    j = render_json(r, with_timing=False)["point_of_no_return"]
    assert j["status"] == "step" and j["step"] == 2 and j["doomed_states"] == nr.doomed == 1


def test_no_return_initial_none_unknown():
    doomed = Graph({0: (1,), 1: ()})  # deadlock, nothing is done
    r = check(doomed)
    assert point_of_no_return(doomed, r).status == "initial"
    # a livelock whose cycle can be left: completion stays reachable
    loop = Graph({0: (1,), 1: (2, 3), 2: (1,), 3: ()}, done={3}, np_edges={(1, 2), (2, 1)})
    r = check(loop)
    assert r.verdict == "livelock"
    nr = point_of_no_return(loop, r)
    assert nr.status == "none" and nr.doomed == 0
    # a graph cut before the answer is known
    r = check(TwoLocks())
    assert point_of_no_return(TwoLocks(), r, max_states=2).status == "unknown"


def test_sccs_reverse_topological():
    toy = Graph({0: (1,), 1: (2,), 2: (1, 3), 3: ()})
    g = build_graph(toy)
    comp, comps = sccs(g)
    assert sorted(map(len, comps)) == [1, 1, 2]
    assert comp[g.index[g.fps[1]]] == comp[g.index[g.fps[2]]]
    # successors first
    pos = {c: i for i, c in enumerate(range(len(comps)))}
    for u, out in enumerate(g.succ):
        for _, v in out:
            assert pos[comp[v]] <= pos[comp[u]]


def _tarjan(succ):
    """The textbook recursive Tarjan: components in completion order."""
    index, low, on, stack, comps = {}, {}, set(), [], []

    def visit(u):
        index[u] = low[u] = len(index)
        stack.append(u)
        on.add(u)
        for v in succ[u]:
            if v not in index:
                visit(v)
                low[u] = min(low[u], low[v])
            elif v in on:
                low[u] = min(low[u], index[v])
        if low[u] == index[u]:
            members = []
            while True:
                w = stack.pop()
                on.discard(w)
                members.append(w)
                if w == u:
                    break
            comps.append(sorted(members))

    for u in range(len(succ)):
        if u not in index:
            visit(u)
    return comps


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_components_are_tarjans_in_the_same_order(seed):
    """`cycles.components` (the compiled search every engine uses) gives
    networkx's components, in the completion order of the textbook Tarjan
    (the order the stored graph's analyses read), on random graphs."""
    import networkx as nx

    from explorer.graph.cycles import components

    rng = random.Random(seed)
    n = rng.randint(1, 30)
    succ = [[rng.randrange(n) for _ in range(rng.choice((0, 1, 1, 2, 3)))] for _ in range(n)]
    comp, comps = components(succ)
    assert comps == _tarjan(succ)
    assert all(comp[v] == i for i, c in enumerate(comps) for v in c)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((u, v) for u, vs in enumerate(succ) for v in vs)
    assert sorted(map(sorted, nx.strongly_connected_components(g))) == sorted(comps)


@pytest.mark.parametrize("seed", range(40))
def test_the_livelock_is_the_first_state_on_a_cycle_and_a_shortest_cycle_back(seed):
    """`cycles.find_livelock` over fingerprints: the entry is the earliest
    state on any cycle (networkx's cycles, self-loops included), and the
    cycle is a path of edges back to it, as short as a breadth-first search
    inside its component finds."""
    import networkx as nx

    from explorer.graph.cycles import find_livelock

    rng = random.Random(seed)
    n = rng.randint(1, 25)
    fp = [rng.getrandbits(64) for _ in range(n)]
    edges = {}
    for u in range(n):
        vs = [rng.randrange(n) for _ in range(rng.choice((0, 1, 1, 2)))]
        if vs:
            edges[fp[u]] = [fp[v] for v in vs]
    order = {f: i for i, f in enumerate(fp)}
    found = find_livelock(edges, lambda fps: min(fps, key=order.__getitem__))
    g = nx.DiGraph()
    g.add_edges_from((u, v) for u, vs in edges.items() for v in vs)
    cyclic = {x for c in nx.strongly_connected_components(g) for x in c
              if len(c) > 1 or g.has_edge(next(iter(c)), next(iter(c)))}
    if not cyclic:
        assert found is None
        return
    entry, cycle = found
    assert entry == min(cyclic, key=order.__getitem__) and cycle[-1] == entry
    path = [entry, *cycle]
    assert all(g.has_edge(a, b) for a, b in zip(path, path[1:]))
    comp = next(c for c in nx.strongly_connected_components(g) if entry in c)
    assert len(cycle) == _bfs_cycle_length(g.subgraph(comp), entry)


def _bfs_cycle_length(g, entry):
    """The length of a shortest cycle through entry in g."""
    from collections import deque

    dist, queue = {entry: 0}, deque([entry])
    best = None
    while queue:
        u = queue.popleft()
        for v in g.successors(u):
            if v == entry:
                best = dist[u] + 1 if best is None else min(best, dist[u] + 1)
            elif v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return best


class Weighted(Graph):
    """A Graph whose edges carry weights w[(u, v)] (track 0)."""

    def __init__(self, succ, w, **kw):
        super().__init__(succ, **kw)
        self.w = w

    def info(self, state, action, nxt):
        x = self.w.get((state, nxt), 0)
        return ((0, x),) if x else ()


def _random_dag(rnd):
    """A random DAG on 2..8 nodes (edges only to larger ids) and a weight 0..3 per edge."""
    n = rnd.randint(2, 8)
    succ = {u: tuple(sorted(rnd.sample(range(u + 1, n), rnd.randint(0, n - u - 1)))) if u < n - 1 else ()
            for u in range(n)}
    return succ, {(u, v): rnd.randint(0, 3) for u in succ for v in succ[u]}


def _all_paths(succ, u):
    yield [u]
    for v in succ.get(u, ()):
        for p in _all_paths(succ, v):
            yield [u] + p


@pytest.mark.parametrize("seed", range(30))
def test_longest_matches_brute_force_on_dags(seed):
    rnd = random.Random(seed)
    succ, w = _random_dag(rnd)
    toy = Weighted(succ, w)
    g = build_graph(toy, edge_info=toy.info)
    best = longest(g)
    brute = max(sum(w[(a, b)] for a, b in itertools.pairwise(p)) for p in _all_paths(succ, 0))
    assert best.value == brute
    # the witness is a real path of that weight
    trace = follow(toy, 0, [(g.fps[v], ai) for v, ai in best.path[1:]])
    states = [s.state for s in trace]
    assert sum(w[(a, b)] for a, b in itertools.pairwise(states)) == brute


def test_longest_unbounded_lasso_and_zero_cycles():
    # 0 -> 1 <-> 2 (weight 1 on 2 -> 1), 1 -> 3
    toy = Weighted({0: (1,), 1: (2, 3), 2: (1,), 3: ()}, {(2, 1): 1, (1, 3): 5})
    g = build_graph(toy, edge_info=toy.info)
    best = longest(g)
    assert best.unbounded
    nodes = [g.fps[v] for v, _ in best.path]
    start = best.cycle_start
    assert nodes[start] == nodes[-1]  # the cycle returns to where it started
    # a zero-weight cycle does not pump: 0 + 5
    toy = Weighted({0: (1,), 1: (2, 3), 2: (1,), 3: ()}, {(0, 1): 2, (1, 3): 5})
    g = build_graph(toy, edge_info=toy.info)
    assert longest(g).value == 7


def test_longest_per_track_and_highest():
    toy = Graph({0: (1, 2), 1: (3,), 2: (3,), 3: ()})
    w = {(0, 1): ((0, 2),), (1, 3): ((1, 1),), (0, 2): ((1, 3),), (2, 3): ((1, 1),)}
    g = build_graph(toy, edge_info=lambda s, a, n: w.get((s, n), ()), node_info=lambda s: s * 10)
    best = longest(g)
    assert (best.value, best.track) == (4, 1)
    assert highest(g) == (30, g.index[g.fps[3]])


class Restarting(Graph):
    """A Graph whose edges carry weights w[(u, v)] (track 0) and restart
    track 0 on the edges in `restart`."""

    def __init__(self, succ, w, restart, **kw):
        super().__init__(succ, **kw)
        self.w, self.restart = w, restart

    def info(self, state, action, nxt):
        x = self.w.get((state, nxt), 0)
        if (state, nxt) in self.restart:
            return ((0, x, True),)
        return ((0, x),) if x else ()


def _since_restart(path, w, restart) -> int:
    """The largest sum since the last restart along a path (weights >= 0)."""
    best = run = 0
    for a, b in itertools.pairwise(path):
        run = (0 if (a, b) in restart else run) + w[(a, b)]
        best = max(best, run)
    return best


@pytest.mark.parametrize("seed", range(30))
def test_longest_with_restarts_matches_brute_force(seed):
    rnd = random.Random(seed)
    succ, w = _random_dag(rnd)
    restart = {e for e in w if rnd.random() < 0.3}
    toy = Restarting(succ, w, restart)
    g = build_graph(toy, edge_info=toy.info)
    best = longest(g)
    brute = max(_since_restart(p, w, restart) for p in _all_paths(succ, 0))
    assert best.value == brute
    # the witness's path counts that much since its last restart
    trace = follow(toy, 0, [(g.fps[v], ai) for v, ai in best.path[1:]])
    states = [s.state for s in trace]
    assert _since_restart(states, w, restart) == brute


def test_a_restart_on_a_cycle_bounds_it():
    # 0 -> 1 -> 2 -> 1 (a cycle), 2 -> 3; weight 1 on 1 -> 2 and 2 -> 3,
    # 2 -> 1 restarts: each time round counts 1 again, never more than 2
    w = {(1, 2): 1, (2, 3): 1}
    toy = Restarting({0: (1,), 1: (2,), 2: (1, 3), 3: ()}, w, {(2, 1)})
    g = build_graph(toy, edge_info=toy.info)
    assert longest(g).value == 2
    # without the restart the cycle pumps
    toy = Restarting({0: (1,), 1: (2,), 2: (1, 3), 3: ()}, w, set())
    assert longest(build_graph(toy, edge_info=toy.info)).unbounded
