"""The SLO checks (`check ttft <= N;` ...) against brute force
(tests/slo_brute.py): for every metric and several bounds, on instances
with `turn`, `spawn`/`join`, preemption, a shared prefix and prefix-cache
reuse, and a `while` loop, the explorer's verdict (violated or not) and
the depth of its counterexample equal the shortest violation over every
path enumerated one by one; its trace, replayed by the brute force's own
counting, violates at its last step and not before; and a bound is
violated exactly when it is below the worst case `--worst` computes."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.check.test_worst_crosscheck import AGENT_TURNS, LOOP, instances
from tests.fixtures import TURN_FIRST
from tests.slo_brute import shortest_violation, violates_at

from serq.check.explore import explore
from serq.check.worst import find_worst
from serq.diagnostics import SerqError
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]

# two chats share a 4-token system prompt; the second one reuses the
# first's cached blocks, and a decode that cannot grow preempts the last admitted
PREFIX_PREEMPT = """
prefix SYS = 4;
pool kv { cap 10; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; }
session chat {
  draw prompt in {SYS + 2, SYS + 4};
  hold kv prefix SYS reuse c need (prompt - c) take 0
       at admission (c = min(cached(kv), floor((prompt - 1) / 2) * 2)) {
    prefill (prompt - c) growing kv;
    decode 2 growing kv;
  } keep (kv full);
  end;
}
workload { 2 x chat; }
"""

# two conversations of two requests; each request reuses the conversation's
# cached blocks, spawns a subagent and joins it; the pool is small enough
# that a second request can be preempted
CHAT_AGENTS = """
pool kv { cap 8; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; }
session sub {
  hold kv need 2 take 0 { prefill 2 growing kv; decode 2 growing kv; }
  end;
}
session chat {
  let ctx = 0;
  repeat 2 {
    turn;
    hold kv reuse c need (ctx + 2 - c) take 0 at admission (c = min(cached(kv), ctx)) {
      prefill (ctx + 2 - c) growing kv;
      decode 2 growing kv;
    } keep (kv full);
    set ctx = ctx + 2;
    spawn sub;
    join;
  }
  end;
}
workload { 2 x chat; }
"""

TEXTS = {"turn_first": TURN_FIRST, "agent_turns": AGENT_TURNS, "loop": LOOP, "prefix_preempt": PREFIX_PREEMPT,
         "chat_agents": CHAT_AGENTS}
LIBRARY = ["decode_preempt", "theorem_no_reserve", "agent_subagents", "hol_none"]
NO_TURN = LIBRARY + ["prefix_preempt"]  # a session is one request: --worst's per-session counts are per request
METRICS = ("ttft", "latency", "preemptions", "recomputed")
DEPTH = {"loop": 12}  # a loop's paths never end: the brute force looks this deep


@cache
def program(name: str):
    if name in TEXTS:
        return load_text(TEXTS[name], f"{name}.sq", explorer=True).program
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


@cache
def worst(name: str, metric: str) -> int:
    w = find_worst(program(name), metric)
    assert w.complete and w.value is not None
    return w.value


def explored(name: str, check: str):
    return explore(program(name), checks=[check], graph_limit=0)


def agree(name: str, bounds: dict, check: str) -> int | None:
    """The explorer and the brute force agree on `check`; the depth of the
    shortest violation, or None."""
    prog = program(name)
    depth = DEPTH.get(name, 40)
    expected = shortest_violation(prog, bounds, max_depth=depth)
    r = explored(name, check)
    metric = next(iter(bounds))
    if expected is None:
        assert r.verdict == "pass", (check, r.verdict, r.message)
        # a loop: every state of the product is within the brute force's depth
        assert r.stats.max_depth < depth
        return None
    assert (r.verdict, r.kind) == ("violation", f"slo {metric}"), (check, r.verdict, r.message)
    assert len(r.trace) - 1 == expected, (check, len(r.trace) - 1, expected)
    # the counterexample is a real one: the brute force's counting sees the
    # bound passed at its last step, and not before
    assert violates_at(prog, bounds, [s.action for s in r.trace[1:]]) == expected
    return expected


@pytest.mark.parametrize("name", sorted(TEXTS) + LIBRARY)
@pytest.mark.parametrize("metric", METRICS)
def test_verdict_and_depth_equal_brute_force(name, metric):
    top = worst(name, metric) if name != "loop" else 3
    for b in range(0, top + 2) if top <= 6 else sorted({0, 1, top // 2, top - 1, top, top + 1}):
        agree(name, {metric: b}, f"{metric}<={b}")


@pytest.mark.parametrize("name", NO_TURN + ["turn_first", "agent_turns", "chat_agents"])
@pytest.mark.parametrize("metric", METRICS)
def test_violated_exactly_below_the_worst_case(name, metric):
    # ttft and latency are per request in both; preemptions and recomputed
    # are per session in --worst, which is a request where no `turn` restarts it
    if name not in NO_TURN and metric in ("preemptions", "recomputed"):
        pytest.skip("--worst counts these per session, a check per request")
    w = worst(name, metric)
    for b in (max(w - 1, 0), w, w + 1):
        r = explored(name, f"{metric}<={b}")
        assert (r.verdict == "violation") == (b < w), (b, w, r.message)


def test_a_bound_read_from_an_attribute():
    # `recomputed <= prompt`: each session's own prompt; and a bound of 0 tokens
    for bound in ("prompt", 0, 1):
        agree("prefix_preempt", {"recomputed": bound}, f"recomputed<={bound}")


def test_several_checks_at_once_report_the_first_passed():
    prog = program("prefix_preempt")
    r = explore(prog, checks=["ttft<=4", "preemptions<=0"], graph_limit=0)
    first = min(shortest_violation(prog, {"ttft": 4}), shortest_violation(prog, {"preemptions": 0}))
    assert r.verdict == "violation" and len(r.trace) - 1 == first


def test_queue_bounds_every_state():
    # `queue(POOL) <= K` is a state property: the kernel's states, with
    # symmetry: the same distinct states as without the check when it holds
    prog = program("hol_none")
    plain = explore(prog, checks=["deadlock"], graph_limit=0)
    held = explore(prog, checks=["deadlock", "queue(kv)<=9"], graph_limit=0)
    assert held.verdict == plain.verdict and held.stats.distinct == plain.stats.distinct
    w = find_worst(prog, "queue:kv").value
    for b in (w - 1, w):
        r = explore(prog, checks=[f"queue(kv)<={b}"], graph_limit=0)
        assert (r.verdict == "violation") == (b < w)
        if b < w:
            assert r.kind == "slo queue" and len(r.trace) - 1 == len(find_worst(prog, "queue:kv").trace) - 1


def test_a_second_request_counts_its_own_preemptions():
    # chat_agents: a chat's preemption belongs to the request it happens in;
    # every request is preempted at most once, on some path one is
    assert agree("chat_agents", {"preemptions": 0}, "preemptions<=0") is not None
    assert agree("chat_agents", {"preemptions": 1}, "preemptions<=1") is None


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(METRICS), st.integers(0, 3))
def test_random_instances_equal_brute_force(text, metric, bound):
    try:
        prog = load_text(text, "random.sq", explorer=True).program
    except SerqError:
        assume(False)
    depth = 14 if "while" in text else 30
    r = explore(prog, checks=[f"{metric}<={bound}"], graph_limit=0)
    assume(r.verdict != "pass" or r.stats.max_depth < depth)
    try:
        expected = shortest_violation(prog, {metric: bound}, max_depth=depth, max_paths=300_000)
    except AssertionError:
        assume(False)  # too many paths for a brute force
    if expected is None:
        assert r.verdict == "pass", r.message
    else:
        assert (r.verdict, r.kind, len(r.trace) - 1) == ("violation", f"slo {metric}", expected), r.message
