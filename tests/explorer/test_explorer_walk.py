"""explorer.graph.walk: every reachable state once, every transition once, and
the engine's limits and signals."""

import time

from explorer.runtime.interrupt import Interrupted
from explorer.graph.walk import walk

SUCC = {0: (1, 2), 1: (3,), 2: (3, 0), 3: ()}


def successors(s):
    return [(a, n, f"{s}->{n}") for a, n in enumerate(SUCC[s])]


def test_walk_visits_each_state_and_edge_once():
    states, edges = [], []
    end = walk([0], successors, on_state=states.append, on_edge=lambda s, a, n, i: edges.append(i))
    assert end.complete and end.states == 4
    assert states == [0, 1, 2, 3]
    assert edges == ["0->1", "0->2", "1->3", "2->3", "2->0"]


def test_walk_limits():
    end = walk([0], successors, max_states=2)
    assert (end.reason, end.states, end.limit) == ("max_states", 2, 2)
    end = walk([0], successors, deadline=time.perf_counter() - 1, time_limit=5)
    assert (end.reason, end.states, end.limit) == ("time_limit", 1, 5)


def test_walk_interrupted_returns_what_it_visited():
    def succ(s):
        if s == 2:
            raise Interrupted("SIGTERM")
        return successors(s)
    end = walk([0], succ)
    assert (end.reason, end.states) == ("SIGTERM", 4)
