"""The point of no return by forward searches from a trace's states
(explorer/graph/forward.py): the same answer as the whole graph's on random
graphs and random paths, bounded by its budget, and within the states
reachable from the first doomed state."""

from __future__ import annotations

import random

import pytest
from explorer_toys import Graph, TwoLocks

from explorer import check
from explorer.graph.analysis import no_return
from explorer.graph.forward import forward_no_return
from explorer.graph.stored import build_graph


def random_graph(rnd: random.Random, n: int) -> Graph:
    succ = {u: tuple(rnd.randrange(n) for _ in range(rnd.choice((0, 1, 1, 2, 2, 3)))) for u in range(n)}
    done = {u for u in range(n) if rnd.random() < 0.15}
    bad = {u for u in range(1, n) if rnd.random() < 0.1}
    return Graph(succ, done=done, bad=bad)


def random_path(rnd: random.Random, toy: Graph) -> list[int]:
    """A path from node 0 that stops at its first bad node (as a search would)."""
    path = [0]
    for _ in range(rnd.randrange(1, 12)):
        out = toy.succ[path[-1]]
        if not out or path[-1] in toy.bad:
            break
        path.append(rnd.choice(out))
    return path


@pytest.mark.parametrize("seed", range(60))
def test_forward_equals_the_whole_graph(seed):
    rnd = random.Random(seed)
    toy = random_graph(rnd, rnd.randrange(3, 25))
    g = build_graph(toy)
    for _ in range(5):
        path = random_path(rnd, toy)
        want = no_return(g, [_fp(toy, s) for s in path])
        got = forward_no_return(toy, path)
        assert (got.status, got.step) == (want.status, want.step), (toy.succ, toy.done, toy.bad, path)
        assert got.method == "forward" and got.searched <= len(g)


def _fp(toy, s):
    from explorer.fingerprint import state_fingerprint

    return state_fingerprint(toy, s)


def test_forward_visits_only_what_the_first_doomed_state_reaches():
    # a long completable chain 0 -> 1 -> ... -> 50 (done) with a doomed
    # branch at every node into one dead loop; the trace takes the branch at 0
    succ = {u: (u + 1, 100) for u in range(50)}
    succ.update({50: (), 100: (101,), 101: (100,)})
    toy = Graph(succ, done={50})
    nr = forward_no_return(toy, [0, 100, 101, 100])
    assert (nr.status, nr.step) == ("step", 1)
    # the dead loop (2 states, once: the earlier searches stop at known
    # doomed states), then the first completion from 0, found depth first
    assert nr.searched <= 2 + 51


def test_forward_cut_says_what_it_knows():
    succ = {u: (u + 1, 100) for u in range(50)}
    succ.update({50: (), 100: (101,), 101: (100,)})
    toy = Graph(succ, done={50})
    nr = forward_no_return(toy, [0, 100, 101, 100], max_states=10)
    assert (nr.status, nr.reason, nr.doomed_from, nr.searched) == ("unknown", "max_states", 1, 10)


def test_forward_on_a_deadlock_trace():
    r = check(TwoLocks())
    nr = forward_no_return(TwoLocks(), [s.state for s in r.trace])
    assert (nr.status, nr.step) == ("step", 2)
