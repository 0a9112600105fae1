"""serq's model in the explorer: exact state counts, verdicts, properties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.fingerprint import state_fingerprint
from explorer import check
from explorer.trace import replay
from serq.check.model import Checks, SerqModel
from serq.check.explore import explore
from serq.lang.load import load_text
from serq.semantics.state import State
from tests.fixtures import TWO_CHATS

SELF_PREEMPT = """
pool kv { cap 8; block 4; admit via gpu; preempt lifo; }
stage gpu { budget 4; }
session big { hold kv need 4 take 0 { prefill 12 growing kv; } }
workload { 1 x big; }
check livelock;
"""

JOIN_IN_HOLD = """
pool kv { cap 4; block 4; }
stage gpu { budget 8; }
session sub { hold kv reserve 4 { prefill 4 growing kv; } }
session agent {
  hold kv reserve 4 {
    prefill 4 growing kv;
    spawn sub x 2;
    join;
  }
}
workload { 1 x agent; }
"""

HOL_NONE = """
pool kv { cap 8; block 4; admit via gpu; preempt none; }
stage gpu { budget 8; }
session chat { hold kv need 4 take 0 { prefill 8 growing kv; decode 2 growing kv; } }
workload { 2 x chat; }
"""


def prog(text: str):
    return load_text(text, "t.sq", explorer=True).program


def test_two_chats_exact_counts():
    p = prog(TWO_CHATS)
    on = explore(p)
    off = explore(p, symmetry=False)
    assert (on.verdict, off.verdict) == ("pass", "pass")
    assert on.stats.distinct == 87
    assert off.stats.distinct == 170


def test_one_chat_count_by_hand():
    # initial 1; arrived with (prompt, o) in {3,5}x{1,2}: 4; mid-run states:
    # (3,2) decoding, (5,1) and (5,2) after the first chunk, (5,2) decoding: 4;
    # done with no cache entry (3,1) or one dead 4-unit entry: 2.
    assert explore(prog(TWO_CHATS.replace("2 x chat", "1 x chat"))).stats.distinct == 11


def test_ties_seq_does_not_change_a_keyless_instance():
    # no declared keys: no ties, so --ties seq explores the same graph
    p = prog(TWO_CHATS)
    assert explore(p, ties="seq").stats.distinct == explore(p).stats.distinct


def test_self_preemption_is_a_livelock_lasso():
    r = explore(prog(SELF_PREEMPT))
    assert r.verdict == "livelock"
    assert r.lasso_start == 2
    assert len(r.trace) - 1 - r.lasso_start == 3
    texts = [s.action_text for s in r.trace[1:]]
    assert any("self-preemption" in t for t in texts)


def test_self_preemption_is_stuck_when_stuck_is_checked():
    r = explore(prog(SELF_PREEMPT), checks=["stuck"])
    assert (r.verdict, r.kind) == ("violation", "stuck")


def test_join_in_hold_deadlocks_with_wait_for_cycle():
    r = explore(prog(JOIN_IN_HOLD))
    assert r.verdict == "deadlock"
    assert len(r.trace) == 3
    assert r.diagnosis[-1] == ("wait-for cycle: agent#1 waits for sub#2 (its child); "
                               "sub#2 waits for agent#1 (which holds kv)")


def test_preempt_none_head_of_line_deadlock():
    r = explore(prog(HOL_NONE))
    assert r.verdict == "deadlock"
    assert any("queued" in line for line in r.diagnosis)


@pytest.mark.parametrize("text, counts", [(TWO_CHATS, (87, 170)), (JOIN_IN_HOLD, (3, 3)), (HOL_NONE, (6, 11))])
def test_bfs_and_dfs_count_the_same_states(text, counts):
    # only `invariant` checked on the deadlocking ones: both searches see the whole graph
    p = prog(text)
    ch = ["completes"] if text is TWO_CHATS else ["invariant"]
    for sym, n in zip((True, False), counts):
        b = explore(p, symmetry=sym, checks=ch)
        d = explore(p, symmetry=sym, strategy="dfs", checks=ch)
        assert (b.verdict, d.verdict) == ("pass", "pass")
        assert (b.stats.distinct, d.stats.distinct) == (n, n)


def test_bound_is_not_a_pass():
    r = explore(prog(TWO_CHATS), max_states=10)
    assert r.verdict == "bound"
    assert r.exit_code == 13


def test_replay_reaches_the_reported_state():
    p = prog(JOIN_IN_HOLD)
    r = explore(p)
    sm = SerqModel(p)
    trace = replay(sm, r.replay_path)
    assert trace[-1].fingerprint == r.fingerprint
    assert state_fingerprint(sm, trace[-1].state) == r.fingerprint


def _permute(state, perm):
    """Rename sessions: new id of old session i is perm[i]."""
    sessions, pools, seq, fault = state
    n = len(sessions)
    out = [None] * n
    for old, s in enumerate(sessions):
        out[perm[old]] = s._replace(parent=perm[s.parent] if s.parent >= 0 else -1)
    new_pools = tuple(pool._replace(cache=tuple(e._replace(owner=perm[e.owner]) for e in pool.cache),
                                    queue=tuple(perm[q] for q in pool.queue))
                      for pool in pools)
    return State(tuple(out), new_pools, seq, fault)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 25))
def test_permuting_identical_sessions_keeps_the_fingerprint(seed, steps):
    text = TWO_CHATS.replace("2 x chat", "3 x chat")
    sm = SerqModel(prog(text))
    rng = random.Random(seed)
    state = sm.initial_states()[0]
    for _ in range(steps):
        acts = sm.actions(state)
        if not acts:
            break
        state = sm.step(state, acts[rng.randrange(len(acts))])
    perm = list(range(len(state.sessions)))
    rng.shuffle(perm)
    assert state_fingerprint(sm, _permute(state, perm)) == state_fingerprint(sm, state)
    # and the permuted state behaves the same: same successor fingerprints
    a = sorted(state_fingerprint(sm, sm.step(state, x)) for x in sm.actions(state))
    p = _permute(state, perm)
    b = sorted(state_fingerprint(sm, sm.step(p, x)) for x in sm.actions(p))
    assert a == b


def test_checks_from_instance_lines():
    p = prog(SELF_PREEMPT)
    c = Checks.of_program(p)
    assert (c.deadlock, c.livelock, c.stuck, c.invariant) == (False, True, False, False)
    assert Checks.of_program(prog(TWO_CHATS)) == Checks()


def test_workers_give_the_same_count():
    p = prog(TWO_CHATS)
    assert explore(p, workers=2).stats.distinct == explore(p).stats.distinct


def test_check_engine_directly_on_model():
    r = check(SerqModel(prog(TWO_CHATS), symmetry=False), strategy="dfs")
    assert r.verdict == "pass" and r.stats.distinct == 170


def test_explorer_rejects_what_it_cannot_treat_finitely(capsys):
    from serq.diagnostics import SerqError

    clock = "stage gpu { budget 4; }\nsession a { let t = now; prefill 1; }\nworkload { 1 x a; }\n"
    with pytest.raises(SerqError) as e:
        load_text(clock, "c.sq", explorer=True)
    assert e.value.render().startswith("c.sq:2:21: error[E600]: `now` reads the clock")
    load_text(clock, "c.sq")  # the simulator may read it
    wide = "stage gpu { budget 4; }\nsession a { draw x in 1..100000; prefill x; }\nworkload { 1 x a; }\n"
    with pytest.raises(SerqError) as e:
        load_text(wide, "w.sq", explorer=True)
    assert "error[E601]: a domain of 100000 values is too large to explore" in e.value.render()


def _action_texts(sm: SerqModel, n: int) -> list[str]:
    s = sm.initial_states()[0]
    out = []
    for _ in range(n):
        a = sm.actions(s)[0]
        out.append(sm.format_action(s, a))
        s = sm.step(s, a)
    return out


def test_a_trace_calls_a_session_stuck_only_when_stuck_is_checked_or_watched():
    # the second self-preemption (step 7) repeats the first one's position;
    # `completes` watches stuck sessions (the positions are kept), a list
    # without `stuck` does not
    p = prog(SELF_PREEMPT)
    words = "big#1 was preempted again without passing the position of its previous preemption"
    livelock_only = _action_texts(SerqModel(p, checks=Checks.of_program(p, ["livelock"])), 7)
    assert "self-preemption" in livelock_only[6]
    assert not any("preempted again" in t for t in livelock_only)
    for names in (["stuck"], ["completes"]):
        assert words in _action_texts(SerqModel(p, checks=Checks.of_program(p, names)), 7)[6], names


REPEAT_AND_A_LOOK_ALIKE = """
pool seqs { cap 1; admit via gpu; }
stage gpu { budget 4; }
session s {
  let _repeat1 = 7;
  repeat 2 { hold seqs 1 { prefill 1; } }
  assert _repeat1 == 7;
}
workload { 1 x s; }
"""


def test_repeat_counter_has_a_slot_of_its_own():
    # the counter of `repeat` once shared the slot of a user attribute named `_repeat1`
    p = prog(REPEAT_AND_A_LOOK_ALIKE)
    assert [a.name for a in p.session("s").attrs] == ["_repeat1", "repeat#1"]
    assert explore(p).verdict == "pass"
