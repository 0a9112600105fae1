"""Property tests over random small graphs."""

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer import ModelFactory, check
from explorer_toys import Graph


@st.composite
def graphs(draw, max_nodes=8):
    n = draw(st.integers(1, max_nodes))
    node = st.integers(0, n - 1)
    succ = {u: tuple(draw(st.lists(node, max_size=3))) for u in range(n)}
    init = tuple(draw(st.lists(node, min_size=1, max_size=3)))
    done = draw(st.sets(node))
    bad = draw(st.sets(node, max_size=2))
    edges = sorted({(u, v) for u, vs in succ.items() for v in vs})
    np_edges = draw(st.sets(st.sampled_from(edges), max_size=len(edges))) if edges else set()
    return dict(succ=succ, init=init, done=done, bad=bad, np_edges=np_edges)


def reachable(g):
    dg = nx.DiGraph()
    dg.add_nodes_from(g["succ"])
    dg.add_edges_from((u, v) for u, vs in g["succ"].items() for v in vs)
    out = set()
    for i in g["init"]:
        out |= {i} | nx.descendants(dg, i)
    return out


@settings(max_examples=100, deadline=None, database=None)
@given(graphs())
def test_bfs_dfs_explore_the_same_states(g):
    m = Graph(g["succ"], g["init"])
    opts = dict(check_deadlock=False, check_livelock=False)
    bfs = check(m, strategy="bfs", **opts)
    dfs = check(m, strategy="dfs", **opts)
    assert bfs.verdict == dfs.verdict == "pass"
    assert bfs.stats.distinct == dfs.stats.distinct == len(reachable(g))


@settings(max_examples=100, deadline=None, database=None)
@given(graphs())
def test_bfs_and_dfs_agree_on_violation_and_bfs_is_shortest(g):
    """Whether a bad state is reachable does not depend on the strategy
    (which one is reported may); the BFS counterexample is a shortest one."""
    m = Graph(**g)
    flags = dict(check_deadlock=False, check_livelock=False)
    b = check(m, strategy="bfs", **flags)
    d = check(m, strategy="dfs", **flags)
    assert b.verdict == d.verdict
    assert (b.verdict == "violation") == bool(reachable(g) & g["bad"])
    if b.verdict == "violation":
        dg = nx.DiGraph([(u, v) for u, vs in g["succ"].items() for v in vs])
        dg.add_nodes_from(g["succ"])
        dist = nx.multi_source_dijkstra_path_length(dg, set(g["init"]))
        assert len(b.trace) - 1 == min(dist[t] for t in g["bad"] if t in dist)
        assert d.trace[-1].state in g["bad"]


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.sampled_from([None, 1, 3, 5]), st.sampled_from([None, 1, 2]))
def test_parallel_matches_sequential(g, max_states, max_depth):
    factory = ModelFactory(Graph, (), g)
    seq = check(factory, max_states=max_states, max_depth=max_depth)
    par = check(factory, max_states=max_states, max_depth=max_depth, workers=2)
    assert par.verdict == seq.verdict
    assert par.kind == seq.kind and par.message == seq.message
    assert par.replay_path == seq.replay_path and par.lasso_start == seq.lasso_start
    assert par.stats.distinct == seq.stats.distinct
    assert par.stats.queue == seq.stats.queue
    assert par.stats.generated == seq.stats.generated
    assert par.stats.max_depth == seq.stats.max_depth
    assert par.bound_reason == seq.bound_reason
