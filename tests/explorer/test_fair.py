"""explorer/graph/fair.py against the definitions on small random graphs:
a subject starves iff some state where it waits has no successor, or
some set of states where it waits, strongly connected by edges inside it
(a cycle through each), is fair -- weak: every class enabled at all of
its states is taken inside it; strong: every class enabled at one of its
states is -- every subset enumerated (no components search); and the
lasso returned is a cycle of the graph, inside the subject's waiting
states, fair by the same definition."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.graph.fair import graph_lasso


def _strongly_connected(succ, nodes: set[int]) -> bool:
    for u in nodes:
        seen, stack = set(), [v for _c, v in succ[u] if v in nodes]
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(w for _c, w in succ[v] if w in nodes)
        if seen != nodes:
            return False
    return True


def _fair(succ, nodes: set[int], strong: bool) -> bool:
    taken = {c for u in nodes for c, v in succ[u] if v in nodes and c}
    ens = [{c for c, _v in succ[u] if c} for u in nodes]
    need = set().union(*ens) if strong else set.intersection(*ens)
    return need <= taken


def brute(succ, wait, strong_mask) -> set[int]:
    out = set()
    for k in range(2):
        inside = [u for u in range(len(succ)) if wait[u] >> k & 1]
        if any(not succ[u] for u in inside):
            out.add(k)
            continue
        for r in range(1, len(inside) + 1):
            if any(_strongly_connected(succ, set(s)) and _fair(succ, set(s), bool(strong_mask >> k & 1))
                   for s in combinations(inside, r)):
                out.add(k)
                break
    return out


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 7))
    succ = [draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, n - 1)), max_size=3)) for _ in range(n)]
    wait = [draw(st.integers(0, 3)) for _ in range(n)]
    return succ, wait, draw(st.integers(0, 3))


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_fair_lasso_against_the_definition(g):
    succ, wait, strong_mask = g
    expected = brute(succ, wait, strong_mask)
    got = graph_lasso(succ, wait, strong_mask)
    if not expected:
        assert got is None
        return
    assert got is not None and got.subject in expected
    k, strong = got.subject, bool(strong_mask >> got.subject & 1)
    assert wait[got.entry] >> k & 1
    if not got.cycle:
        assert not succ[got.entry]
        return
    path = [got.entry] + got.cycle
    assert path[-1] == got.entry
    for u, v, c in zip(path, path[1:], got.classes):
        assert (c, v) in succ[u] and wait[v] >> k & 1
    taken = {c for c in got.classes if c}
    ens = [{c for c, _v in succ[u] if c} for u in path[:-1]]
    need = set().union(*ens) if strong else set.intersection(*ens)
    assert need <= taken


def test_weak_and_strong_differ():
    # 0 <-> 1 with class 0 edges; class 1 enabled at 0 only (0 -> 2): a weakly fair cycle, not a strongly fair one
    succ = [[(0, 1), (1, 2)], [(0, 0)], []]
    wait = [1, 1, 0]
    assert graph_lasso(succ, wait, 0).cycle == [1, 0]
    assert graph_lasso(succ, wait, 1) is None
    # under strong fairness the cycle must take the class: refined to nothing here, but a cycle through it is fair
    succ2 = [[(0, 1), (1, 2)], [(0, 0)], [(0, 0)]]
    wait2 = [1, 1, 1]
    got = graph_lasso(succ2, wait2, 1)
    assert got is not None and 1 in got.classes


def test_no_waiting_subject_no_lasso():
    assert graph_lasso([[(1, 0)]], [0], 0) is None


def test_the_analysis_calls_the_limits_each_round_and_stops_when_they_raise():
    from explorer.runtime.limits import LimitReached

    succ2 = [[(0, 1), (1, 2)], [(0, 0)], [(0, 0)]]
    calls = []
    assert graph_lasso(succ2, [1, 1, 1], 1, lambda: calls.append(1)) is not None
    assert calls  # called at least once a subject

    def past():
        raise LimitReached("time_limit", 5)

    with pytest.raises(LimitReached):
        graph_lasso(succ2, [1, 1, 1], 1, past)
