import json

from explorer import check, render_json, render_text, stats_line
from explorer_toys import CounterPair, Graph, TwoLocks, retry_loop

DEADLOCK_TEXT = """\
deadlock: no action is applicable after 2 steps and the state is not done
  0. initial state
  1. P0 takes A
       (0, 0, None, None) -> (1, 0, 0, None)
  2. P1 takes B
       (1, 0, 0, None) -> (1, 1, 0, 1)
deadlock diagnosis:
  P0 waits for lock B held by P1
  P1 waits for lock A held by P0
replay: 0/0/1
"""

LIVELOCK_TEXT = """\
livelock: a cycle of 2 steps that make no progress, reached after 1 step
  0. initial state
  1. 0 -> 1
       node: 0 -> 1
  -- cycle starts here --
  2. 1 -> 2
       node: 1 -> 2
  3. 2 -> 1
       node: 2 -> 1
  -- cycle returns to step 1 --
replay: 0/0/0/0
"""

VIOLATION_TEXT = """\
violation (invariant): x+y=2 reached 2
  0. initial state
       x=0 y=0
  1. inc_x
       x: 0 -> 1
  2. inc_x
       x: 1 -> 2
replay: 0/0/0
stats: generated=4 distinct=4 queue=1 max_depth=2
"""


def test_deadlock_text_golden():
    assert render_text(check(TwoLocks()), with_stats=False) == DEADLOCK_TEXT


def test_livelock_text_golden():
    assert render_text(check(retry_loop()), with_stats=False) == LIVELOCK_TEXT


def test_violation_text_without_timing_is_stable():
    a = render_text(check(CounterPair(4, limit=2)), with_timing=False)
    b = render_text(check(CounterPair(4, limit=2)), with_timing=False)
    assert a == b == VIOLATION_TEXT


def test_timing_only_in_last_line():
    r = check(CounterPair(4, limit=2))
    with_t = render_text(r).splitlines()
    without = render_text(r, with_timing=False).splitlines()
    assert with_t[:-1] == without[:-1]
    assert with_t[-1].startswith(stats_line(r.stats, with_timing=False))
    assert "elapsed=" in with_t[-1] and "elapsed=" not in without[-1]


def test_verdict_first_line_for_pass_and_bound():
    assert render_text(check(CounterPair(2))).splitlines()[0] == "pass: no violation in 9 distinct states"
    first = render_text(check(CounterPair(4), max_states=3)).splitlines()[0]
    assert first.startswith("bound: no violation within the bound (max_states=3)")


def test_initial_state_index_shown_when_not_zero():
    r = check(Graph({0: (), 1: ()}, init=(0, 1), done={0}))
    assert "  0. initial state #1" in render_text(r)


def test_json_has_same_content_and_is_serializable():
    r = check(retry_loop())
    d = render_json(r, with_timing=False)
    assert json.loads(json.dumps(d)) == d
    assert d["verdict"] == "livelock" and d["exit_code"] == 11
    assert d["lasso_start"] == 1 and d["replay_path"] == "0/0/0/0"
    assert [s["action"] for s in d["trace"]] == [None, "0 -> 1", "1 -> 2", "2 -> 1"]
    assert d["trace"][1]["diff"] == ["node: 0 -> 1"]
    assert d["trace"][1]["fingerprint"] == d["trace"][3]["fingerprint"]
    assert "elapsed" not in d["stats"] and "elapsed" in render_json(r)["stats"]
    dead = check(TwoLocks())
    assert render_json(dead)["diagnosis"] == dead.diagnosis
