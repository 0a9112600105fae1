import pytest

from explorer import (
    EXIT_BOUND, EXIT_DEADLOCK, EXIT_LIVELOCK, EXIT_PASS, EXIT_VIOLATION, ModelFactory,
    NondeterministicModel, check, replay,
)
from explorer_toys import CounterPair, Evented, Flaky, Graph, TwoLocks, Unhashable, retry_loop


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_counter_pair_exact_distinct_count(strategy, n):
    r = check(CounterPair(n), strategy=strategy)
    assert r.verdict == "pass" and r.exit_code == EXIT_PASS
    assert r.stats.distinct == (n + 1) ** 2
    assert r.stats.queue == 0
    assert r.trace == [] and r.replay_path is None
    if strategy == "bfs":
        assert r.stats.max_depth == 2 * n
        assert r.stats.generated == 1 + 2 * n * (n + 1)  # initial + every transition


def test_unhashable_states_are_fine():
    r = check(Unhashable(3))
    assert r.verdict == "pass" and r.stats.distinct == 16


def test_invariant_violation_shortest_trace():
    r = check(CounterPair(9, limit=5))
    assert r.verdict == "violation" and r.kind == "invariant"
    assert r.exit_code == EXIT_VIOLATION
    assert r.message == "x+y=5 reached 5"
    assert len(r.trace) == 6  # 5 steps: shortest
    # first violating state in BFS order = lexicographically smallest path
    assert r.replay_path == "0/0/0/0/0/0"
    assert r.trace[-1].state == (5, 0)
    assert [s.index for s in r.trace] == list(range(6))
    # counts at the stop: levels 0..4 (1+2+3+4+5) plus the violating state
    assert r.stats.distinct == 16


def test_dfs_finds_a_violation_not_necessarily_shortest():
    r = check(CounterPair(9, limit=5), strategy="dfs")
    assert r.verdict == "violation"
    assert sum(r.trace[-1].state) == 5 and len(r.trace) >= 6


def test_violation_in_initial_state():
    r = check(Graph({0: ()}, bad={0}))
    assert r.verdict == "violation" and r.kind == "assert" and len(r.trace) == 1
    assert r.replay_path == "0" and r.stats.distinct == 1


def test_deadlock_two_locks():
    r = check(TwoLocks())
    assert r.verdict == "deadlock" and r.exit_code == EXIT_DEADLOCK
    assert len(r.trace) == 3  # shortest: P0 takes A, P1 takes B
    assert [s.action_text for s in r.trace[1:]] == ["P0 takes A", "P1 takes B"]
    assert r.trace[-1].state == (1, 1, 0, 1)
    assert r.diagnosis == ["P0 waits for lock B held by P1", "P1 waits for lock A held by P0"]
    assert r.replay_path == "0/0/1"


def test_deadlock_check_can_be_disabled():
    r = check(TwoLocks(), check_deadlock=False)
    assert r.verdict == "pass"


def test_done_state_is_not_a_deadlock():
    r = check(Graph({0: (1,), 1: ()}, done={1}))
    assert r.verdict == "pass"
    r = check(Graph({0: (1,), 1: ()}))
    assert r.verdict == "deadlock" and r.diagnosis == ["stuck in 1"]


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_livelock_lasso(strategy):
    r = check(retry_loop(), strategy=strategy)
    assert r.verdict == "livelock" and r.exit_code == EXIT_LIVELOCK
    assert [s.state for s in r.trace] == [0, 1, 2, 1]
    assert r.lasso_start == 1
    assert r.trace[r.lasso_start].fingerprint == r.trace[-1].fingerprint
    assert r.replay_path == "0/0/0/0"


def test_livelock_self_loop():
    r = check(retry_loop(self_loop=True))
    assert r.verdict == "livelock"
    assert [s.state for s in r.trace] == [0, 1, 1] and r.lasso_start == 1


def test_livelock_cycle_is_shortest_and_entry_is_first_discovered():
    # 0 -> 1 -> 2 -> 3 -> 1 (long cycle) and 2 <-> 4 (short); all non-progress
    # except 0 -> 1.  First-discovered cyclic state is 1; shortest cycle from 1
    # is 1 -> 2 -> 3 -> 1 (length 3), although 2 <-> 4 is shorter elsewhere.
    succ = {0: (1,), 1: (2,), 2: (4, 3), 3: (1,), 4: (2,)}
    np = {(1, 2), (2, 3), (3, 1), (2, 4), (4, 2)}
    r = check(Graph(succ, np_edges=np))
    assert r.verdict == "livelock"
    assert [s.state for s in r.trace] == [0, 1, 2, 3, 1] and r.lasso_start == 1


def test_progress_cycle_is_not_a_livelock():
    r = check(Graph({0: (1,), 1: (0,)}))
    assert r.verdict == "pass"
    r = check(retry_loop(), check_livelock=False)
    assert r.verdict == "pass"


def test_bounds_give_bound_not_pass():
    r = check(CounterPair(4), max_states=10)
    assert r.verdict == "bound" and r.exit_code == EXIT_BOUND
    assert r.bound_reason == "max_states" and r.stats.distinct == 10
    r = check(CounterPair(4), max_depth=3)
    assert r.verdict == "bound" and r.bound_reason == "max_depth"
    assert r.stats.distinct == 1 + 2 + 3 + 4 and r.stats.max_depth == 3
    r = check(CounterPair(4), time_limit=0)
    assert r.verdict == "bound" and r.bound_reason == "time_limit"


def test_bounds_that_do_not_cut_are_a_pass():
    assert check(CounterPair(2), max_states=9).verdict == "pass"
    assert check(CounterPair(2), max_depth=4).verdict == "pass"
    assert check(CounterPair(2), max_depth=4, strategy="dfs").verdict == "pass"


def test_violation_within_bound_beats_bound():
    r = check(CounterPair(9, limit=3), max_depth=5)
    assert r.verdict == "violation"


def test_bounded_run_skips_livelock_check():
    r = check(retry_loop(), max_depth=1)
    assert r.verdict == "bound"


def test_dfs_depth_bound_explores_everything_within_it():
    # DFS reaches 3 first along the long branch (depth 3), later along the
    # short one (depth 1); with max_depth=2 it must still find bad node 4,
    # which is at distance 2.
    succ = {0: (1, 3), 1: (2,), 2: (3,), 3: (4,), 4: ()}
    r = check(Graph(succ, bad={4}, done={4}), strategy="dfs", max_depth=2)
    assert r.verdict == "violation" and r.trace[-1].state == 4


def test_nondeterministic_model_is_reported_not_printed():
    with pytest.raises(NondeterministicModel) as ei:
        check(Flaky(5, limit=2, budget=3))
    err = ei.value
    assert err.step == 1 and err.action_index == 0 and err.action_text == "inc_x"
    assert "diverged at step 1" in str(err)


def test_replay_detects_nondeterminism():
    m = Flaky(5, limit=None, budget=2)
    with pytest.raises(NondeterministicModel):
        replay(m, "0/0/0")


def test_progress_callback_called():
    seen = []
    r = check(CounterPair(6), progress=seen.append, progress_interval=0.0)
    assert r.verdict == "pass" and seen
    assert all(0 < s.distinct <= r.stats.distinct for s in seen)
    assert [s.distinct for s in seen] == sorted(s.distinct for s in seen)


def test_progress_callback_parallel():
    seen = []
    r = check(ModelFactory(CounterPair, (6,)), workers=2, progress=seen.append, progress_interval=0.0)
    assert r.verdict == "pass" and seen and all(0 < s.distinct <= 49 for s in seen)


def test_step_events_are_in_trace():
    r = check(Evented(3, limit=2))
    assert r.trace[1].events == ["inc_x fired"]


def test_bad_arguments():
    with pytest.raises(ValueError):
        check(CounterPair(1), strategy="random")
    with pytest.raises(ValueError):
        check(CounterPair(1), workers=2, strategy="dfs")
    with pytest.raises(ValueError):
        check(CounterPair(1), workers=0)


def test_the_collector_runs_less_often_during_a_search_and_as_before_after():
    import gc

    from explorer import Visitor

    class During(Visitor):
        def on_state(self, state, fp, parent, ai, depth):
            seen.append(gc.get_threshold()[0])

    before, seen = gc.get_threshold(), []
    check(CounterPair(2), visitor=During())
    assert gc.get_threshold() == before
    assert set(seen) == {max(10_000, before[0])}
    check(CounterPair(6, limit=7))  # ended by a violation: put back too
    assert gc.get_threshold() == before
