"""The visitor protocol and the analyses that are visitors, on serq
instances with `turn`, `spawn`/`join`, preemption and prefix reuse: a
visitor that counts states counts the search's distinct states (the rows
engine's, without a visitor); the stored graph (`build_graph`, a visitor
over the sequential search) is the graph a brute-force BFS over the
model's protocol finds, node for node and edge for edge; the walk of the
theorem's solo runs visits what a brute-force BFS over the step function
visits."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from explorer import Settings, Visitor, check
from explorer.check import build_graph, walk
from explorer.fingerprint import state_fingerprint
from serq.check.explore import Completion
from serq.check.model import SerqModel
from serq.lang.load import load_path, load_text
from serq.semantics.model import Model
from tests.fixtures import AGENT_TURNS, TURN_FIRST

ROOT = Path(__file__).resolve().parents[2]

# turn, spawn/join, preemption, prefixes (agent_turns has all four)
TEXTS = {"agent_turns": AGENT_TURNS, "turn_first": TURN_FIRST}
LIBRARY = ["agent_subagents", "decode_preempt", "multiturn_chat", "theorem_no_fit", "theorem_no_join_rule"]


def program(name):
    if name in TEXTS:
        return load_text(TEXTS[name], f"{name}.sq", explorer=True).program
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


class Count(Visitor):
    def __init__(self) -> None:
        self.states, self.edges, self.fps = 0, 0, set()

    def on_state(self, state, fp, parent, ai, depth):
        self.states += 1
        self.fps.add(fp)

    def on_edge(self, state, fp, ai, action, nxt, nfp, events):
        self.edges += 1


@pytest.mark.parametrize("name", sorted(TEXTS) + LIBRARY + ["vllm_chat"])
@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_a_counting_visitor_counts_the_distinct_states(name, strategy):
    prog = program(name)
    plain = check(SerqModel(prog), Settings(strategy=strategy))  # bfs: the rows engine
    v = Count()
    seen = check(SerqModel(prog), Settings(strategy=strategy, visitor=v))
    assert (seen.verdict, seen.stats.distinct, seen.replay_path) == (plain.verdict, plain.stats.distinct,
                                                                    plain.replay_path)
    assert v.states == len(v.fps) == seen.stats.distinct
    if seen.verdict == "pass":
        assert v.edges == seen.stats.generated - 1  # every transition once (the initial state is generated too)


def brute_graph(model, expand_bad: bool):
    """(fingerprints in BFS order, {(fp, action index, fp')}) by a plain
    BFS over the model's protocol, a bad state not expanded unless asked."""
    fp = lambda s: state_fingerprint(model, s)  # noqa: E731
    order, edges, todo = [], set(), deque()
    for s in model.initial_states():
        if fp(s) not in order:
            order.append(fp(s))
            todo.append(s)
    known = set(order)
    while todo:
        s = todo.popleft()
        if model.invariants(s) and not expand_bad:
            continue
        for ai, a in enumerate(model.actions(s)):
            n = model.step(s, a)
            if n is None:
                continue
            edges.add((fp(s), ai, fp(n)))
            if fp(n) not in known:
                known.add(fp(n))
                order.append(fp(n))
                todo.append(n)
    return order, edges


@pytest.mark.parametrize("name", sorted(TEXTS) + LIBRARY)
@pytest.mark.parametrize("expand_bad", [False, True])
def test_the_stored_graph_is_the_brute_force_graph(name, expand_bad):
    model = Completion(SerqModel(program(name), symmetry=False))  # as the point of no return reads it
    g = build_graph(model, expand_bad=expand_bad)
    order, edges = brute_graph(model, expand_bad)
    assert g.complete and g.fps == order
    assert {(g.fps[u], ai, g.fps[v]) for u in range(len(g)) for ai, v in g.succ[u]} == edges
    assert g.edges == len(edges)
    assert g.bad == [bool(model.invariants(s)) for s in _states(model, g)]
    for u in range(1, len(g)):  # first-discovery links: a parent is discovered before, one step shorter
        assert g.parent[u] < u and (g.via[u], u) in g.succ[g.parent[u]]


def _states(model, g):
    """The graph's states, replayed along its first-discovery links."""
    out = []
    for u in range(len(g)):
        path = g.path_to(u)
        s = model.initial_states()[path[0][1]]
        for _v, ai in path[1:]:
            s = model.step(s, model.actions(s)[ai])
        assert state_fingerprint(model, s) == g.fps[u]
        out.append(s)
    return out


@pytest.mark.parametrize("name", sorted(TEXTS) + ["agent_subagents", "decode_preempt"])
def test_the_walk_visits_what_a_brute_force_bfs_visits(name):
    m = Model(program(name), ties="seq")
    states, edges = [], []
    end = walk([m.initial_state()], m.transitions, on_state=states.append,
               on_edge=lambda s, a, n, ev: edges.append((s, a, n, tuple(ev))))
    seen, todo, want_edges = {m.initial_state()}, deque([m.initial_state()]), []
    order = [m.initial_state()]
    while todo:
        s = todo.popleft()
        for a, n, ev in m.transitions(s):
            want_edges.append((s, a, n, tuple(ev)))
            if n not in seen:
                seen.add(n)
                order.append(n)
                todo.append(n)
    assert end.complete and end.states == len(order)
    assert states == order and edges == want_edges
