import pytest

from explorer import ReplayError, check, format_path, parse_path, replay, state_fingerprint
from explorer_toys import CounterPair, Graph, TwoLocks


def test_round_trip_from_result():
    m = TwoLocks()
    r = check(m)
    trace = replay(m, r.replay_path)
    assert [s.fingerprint for s in trace] == [s.fingerprint for s in r.trace]
    assert [s.action_text for s in trace] == [s.action_text for s in r.trace]
    assert format_path(trace) == r.replay_path


def test_round_trip_livelock_lasso():
    from explorer_toys import retry_loop

    m = retry_loop()
    r = check(m)
    trace = replay(m, r.replay_path)
    assert [s.state for s in trace] == [0, 1, 2, 1]


def test_multiple_initial_states_path_starts_with_initial_index():
    m = Graph({0: (), 1: (2,), 2: ()}, init=(0, 1), done={0, 2}, bad={2})
    r = check(m)
    assert r.verdict == "violation" and r.replay_path == "1/0"
    trace = replay(m, "1/0")
    assert [s.state for s in trace] == [1, 2]
    assert trace[0].action_index == 1 and trace[0].action is None


def test_parse_and_format():
    assert parse_path("0/2/1") == [0, 2, 1]
    assert parse_path(" 3 ") == [3]
    for bad in ("", "a/b", "0//1", "0/-1"):
        with pytest.raises(ReplayError):
            parse_path(bad)


def test_invalid_paths_are_replay_errors():
    m = CounterPair(1)
    with pytest.raises(ReplayError):
        replay(m, "1")  # only one initial state
    with pytest.raises(ReplayError):
        replay(m, "0/5")  # no action #5
    with pytest.raises(ReplayError) as ei:
        replay(m, "0/0/0")  # x is already 1: inc_x not applicable
    assert ei.value.step == 2


def test_replay_accepts_index_list_and_states_match():
    m = CounterPair(3)
    trace = replay(m, [0, 1, 0, 1])
    assert [s.state for s in trace] == [(0, 0), (0, 1), (1, 1), (1, 2)]
    assert all(s.fingerprint == state_fingerprint(m, s.state) for s in trace)
    assert trace[2].diff == ["x: 0 -> 1"] and trace[0].diff == ["x=0 y=0"]
