"""The visitor protocol (explorer/visitor.py) on toy models: the hooks see
every stored state once and every transition once, in the search's order;
a pruning visitor's search equals a brute-force search that does not
expand the pruned states; a STOP ends the search as a bound; the door
gives a visited run to the sequential engine and refuses what it cannot
honour. The serq instances (turn, spawn/join, preemption, prefixes):
tests/check/test_visitor_instances.py."""

from __future__ import annotations

from collections import deque

import pytest
from explorer_toys import AsArrays, CounterPair, Evented, Graph, TwoLocks, retry_loop

from explorer import PRUNE, STOP, Settings, Visitor, check
from explorer.check import engine_for
from explorer.fingerprint import state_fingerprint


class Record(Visitor):
    """Everything the hooks are told, in order."""

    def __init__(self) -> None:
        self.states, self.edges, self.terminal, self.calls = [], [], [], []

    def on_state(self, state, fp, parent, ai, depth):
        self.states.append((state, fp, parent, ai, depth))
        self.calls.append(("state", state))

    def on_edge(self, state, fp, ai, action, nxt, nfp, events):
        self.edges.append((state, ai, action, nxt, events))
        self.calls.append(("edge", state, nxt))

    def on_terminal(self, state, fp):
        self.terminal.append(state)


def brute(model, prune=lambda s: False):
    """Every reachable state and transition, by a plain BFS over the
    model's protocol (no checks), pruned states not expanded."""
    fp = lambda s: state_fingerprint(model, s)  # noqa: E731
    seen, order, edges = set(), [], []
    todo = deque()
    for s in model.initial_states():
        if fp(s) not in seen:
            seen.add(fp(s))
            order.append(s)
            todo.append(s)
    while todo:
        s = todo.popleft()
        if prune(s):
            continue
        for ai, a in enumerate(model.actions(s)):
            n = model.step(s, a)
            if n is None:
                continue
            edges.append((s, ai, n))
            if fp(n) not in seen:
                seen.add(fp(n))
                order.append(n)
                todo.append(n)
    return order, edges


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
@pytest.mark.parametrize("make", [lambda: CounterPair(4), TwoLocks, lambda: CounterPair(6, limit=7),
                                  lambda: retry_loop(), lambda: Graph({0: (1, 2), 1: (3,), 2: (3, 0), 3: ()})])
def test_a_counting_visitor_sees_every_distinct_state_once(make, strategy):
    plain = check(make(), strategy=strategy)
    v = Record()
    seen = check(make(), Settings(strategy=strategy, visitor=v))
    assert (seen.verdict, seen.stats.distinct, seen.stats.generated) == (
        plain.verdict, plain.stats.distinct, plain.stats.generated)
    assert seen.replay_path == plain.replay_path
    assert len(v.states) == seen.stats.distinct  # the violating state included
    assert len({fp for _, fp, *_ in v.states}) == len(v.states)
    if plain.verdict == "pass":  # a complete search: every transition, once
        assert sorted(map(repr, ((s, ai, n) for s, ai, _a, n, _e in v.edges))) == \
            sorted(map(repr, brute(make())[1]))


def test_hooks_come_in_the_search_order():
    v = Record()
    check(Graph({0: (1, 2), 1: (3,), 2: (3, 0), 3: ()}, done={3}), visitor=v)
    # BFS: a new target is stored (on_state) before its edge is shown
    assert v.calls == [("state", 0), ("state", 1), ("edge", 0, 1), ("state", 2), ("edge", 0, 2),
                       ("state", 3), ("edge", 1, 3), ("edge", 2, 3), ("edge", 2, 0)]
    assert [(s, p is None, ai, d) for s, _fp, p, ai, d in v.states] == [
        (0, True, 0, 0), (1, False, 0, 1), (2, False, 1, 1), (3, False, 0, 2)]
    assert v.terminal == [3]


def test_a_deadlock_is_terminal_and_still_a_deadlock():
    v = Record()
    r = check(TwoLocks(), visitor=v)
    assert r.verdict == "deadlock" and len(v.terminal) == 1
    assert r.stats.distinct == len(v.states)


class Prune(Visitor):
    def __init__(self, pred) -> None:
        self.pred, self.pruned = pred, []

    def on_state(self, state, fp, parent, ai, depth):
        if self.pred(state):
            self.pruned.append(state)
            return PRUNE
        return None


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_a_pruned_state_is_stored_but_not_expanded(strategy):
    pred = lambda s: s[0] == 2  # noqa: E731  x = 2: a wall the search does not cross
    v = Prune(pred)
    r = check(CounterPair(5), Settings(strategy=strategy, visitor=v))
    order, _ = brute(CounterPair(5), pred)
    assert r.verdict == "pass" and r.stats.distinct == len(order) == 18  # x in 0..2, y in 0..5
    assert sorted(v.pruned) == [(2, y) for y in range(6)]
    # a pruned state is no deadlock: it was never expanded
    r = check(Graph({0: (1,), 1: (2,), 2: ()}), visitor=Prune(lambda s: s == 1))
    assert (r.verdict, r.stats.distinct) == ("pass", 2)


def test_a_pruned_state_is_not_expanded_again_under_a_depth_bound():
    # DFS with max_depth expands a state again when it is reached by a
    # shorter path: not a pruned one. 0 -> 1 -> 2 -> 3 and 0 -> 3; 3 -> 4
    toy = Graph({0: (1, 3), 1: (2,), 2: (3,), 3: (4,), 4: ()}, done={4})
    v = Prune(lambda s: s == 3)
    r = check(toy, Settings(strategy="dfs", max_depth=5, visitor=v))
    assert r.verdict == "pass" and r.stats.distinct == 4 and v.pruned == [3]


def test_stopping_ends_the_search_as_a_bound():
    class StopAt(Visitor):
        def __init__(self, n) -> None:
            self.n, self.seen = n, 0

        def on_state(self, state, fp, parent, ai, depth):
            self.seen += 1
            return STOP if self.seen == self.n else None

    r = check(CounterPair(6), visitor=StopAt(5))
    assert (r.verdict, r.bound_reason, r.stats.distinct) == ("bound", "visitor", 5)
    assert r.message.startswith("stopped by its visitor after 5 distinct states")
    assert r.exit_code == 13

    class StopOnEdge(Visitor):
        def on_edge(self, state, fp, ai, action, nxt, nfp, events):
            return STOP if nxt == (1, 1) else None

    r = check(CounterPair(6), strategy="dfs", visitor=StopOnEdge())
    assert (r.verdict, r.bound_reason) == ("bound", "visitor")

    class StopAtEnd(Visitor):
        def on_terminal(self, state, fp):
            return STOP

    r = check(TwoLocks(), visitor=StopAtEnd())  # before the deadlock is decided
    assert (r.verdict, r.bound_reason) == ("bound", "visitor")


def test_a_hook_answers_none_prune_or_stop():
    class Odd(Visitor):
        def on_edge(self, state, fp, ai, action, nxt, nfp, events):
            return PRUNE  # pruning is on_state's

    with pytest.raises(ValueError, match="on_edge returned 'prune' \\(expected None or STOP\\)"):
        check(CounterPair(2), visitor=Odd())

    class Yes(Visitor):
        def on_state(self, state, fp, parent, ai, depth):
            return True

    with pytest.raises(ValueError, match="on_state returned True \\(expected None, PRUNE or STOP\\)"):
        check(CounterPair(2), visitor=Yes())


def test_events_when_asked():
    class Events(Visitor):
        events = True

        def __init__(self) -> None:
            self.got = []

        def on_edge(self, state, fp, ai, action, nxt, nfp, events):
            self.got.append(events)

    v = Events()
    check(Evented(1), visitor=v)
    m = Evented(1)
    want = [m.step_events(s, m.actions(s)[ai])[1] for s, ai, _n in brute(m)[1]]
    assert v.got == [list(e) for e in want] and any(v.got)
    r = Record()
    check(Evented(1), visitor=r)
    assert {e for *_x, e in r.edges} == {None}  # not asked: not computed


def test_the_door_gives_a_visited_run_to_the_sequential_engine():
    rows = AsArrays(CounterPair(6, limit=7), 2)
    assert engine_for(rows, Settings()).__name__ == "rows"
    assert engine_for(rows, Settings(visitor=Visitor())).__name__ == "sequential"
    v = Record()
    r = check(AsArrays(CounterPair(6, limit=7), 2), visitor=v)
    plain = check(AsArrays(CounterPair(6, limit=7), 2))
    assert (r.verdict, r.stats.distinct, r.replay_path) == (plain.verdict, plain.stats.distinct, plain.replay_path)
    assert len(v.states) == r.stats.distinct
    # exact identities: the same states seen
    assert check(CounterPair(3), exact=True, visitor=Record()).stats.distinct == 16


def test_what_cannot_call_a_visitor_refuses_one():
    for bad in (dict(workers=2), dict(strategy="swarm", searches=1),
                dict(strategy="partitioned", partitions=2)):
        with pytest.raises(ValueError, match="a visitor is called by the sequential engine alone"):
            Settings(visitor=Visitor(), **bad)
    with pytest.raises(TypeError, match="a visitor is an explorer.visitor.Visitor, not function"):
        Settings(visitor=lambda s: None)


def test_no_hook_left_as_the_base_is_called(monkeypatch):
    """A visitor that overrides nothing costs nothing per edge: the search
    does not call the base's hooks."""
    def boom(*_a):
        raise AssertionError("called")

    monkeypatch.setattr(Visitor, "on_edge", boom)
    monkeypatch.setattr(Visitor, "on_state", boom)
    monkeypatch.setattr(Visitor, "on_terminal", boom)
    assert check(CounterPair(3), visitor=Visitor()).stats.distinct == 16


class Signalled(Graph):
    """A graph whose expansion of node `at` is cut by a signal."""

    def __init__(self, succ, at, k=1, **kw) -> None:
        super().__init__(succ, **kw)
        self.at, self.k = at, k

    def step(self, state, k):
        from explorer import Interrupted

        if (state, k) == (self.at, self.k):
            raise Interrupted("SIGTERM")
        return super().step(state, k)


def test_the_analyses_keep_their_limits_and_signals_on_the_one_search():
    from explorer import Interrupted
    from explorer.check import build_graph, forward_no_return

    succ = {0: (1, 2), 1: (3, 4), 2: (4,), 3: (), 4: ()}
    g = build_graph(Signalled(succ, at=1, done={3}))  # node 1's second edge never comes
    assert (g.complete, g.bound_reason, len(g)) == (False, "SIGTERM", 4)
    assert g.succ == [[(0, 1), (1, 2)], [(0, 3)], [], []] and g.edges == 3
    assert build_graph(Graph(succ), time_limit=0).bound_reason == "time_limit"
    assert build_graph(Graph(succ), max_states=2).bound_reason == "max_states"
    with pytest.raises(Interrupted):  # the point of no return is given up, as before
        forward_no_return(Signalled(succ, at=1, k=0, done={3}), [0, 2, 4])
    nr = forward_no_return(Graph(succ, done={3}), [0, 2, 4], time_limit=0)
    assert (nr.status, nr.reason) == ("unknown", "time_limit")
