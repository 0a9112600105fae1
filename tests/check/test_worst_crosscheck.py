"""`serq explore --worst` against brute force (tests/worst_brute.py): every
metric equals its maximum over every path, on instances with `turn`,
`spawn`/`join`, preemption, prefix-cache reuse, a `while` loop, and on
random small instances; an unbounded metric's lasso really grows."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.worst_brute import METRIC_NAMES, along, brute_force

from serq.diagnostics import SerqError
from serq.lang.load import load_path, load_text
from serq.check.worst import find_worst
from tests.fixtures import AGENT_TURNS, TURN_FIRST

ROOT = Path(__file__).resolve().parents[2]


# a `while` loop: the graph has cycles, each request is still bounded
LOOP = """
pool kv { cap 6; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; }
session chat {
  while true {
    turn;
    hold kv need 2 take 0 { prefill 2 growing kv; decode 1 growing kv; }
  }
}
session once {
  hold kv need 2 take 0 { prefill 3 growing kv; }
  end;
}
workload { 1 x chat; 1 x once; }
"""

TEXTS = {"turn_first": TURN_FIRST, "agent_turns": AGENT_TURNS, "loop": LOOP}
LIBRARY = ["decode_preempt", "theorem", "theorem_no_reserve", "agent_subagents", "hol_none"]


@cache
def program(name: str):
    if name in TEXTS:
        return load_text(TEXTS[name], f"{name}.sq", explorer=True).program
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


@cache
def brute(name: str, max_depth: int | None = None) -> dict[str, int]:
    best, cut = brute_force(program(name), max_depth=max_depth)
    assert cut == (max_depth is not None), "an instance without a loop has finitely many paths"
    return best


def check_worst(prog, metric: str, expected: int) -> None:
    """find_worst equals the brute force (with symmetry, as the command
    runs, and without), and its witness counts that value for one subject
    (one request, one session, the run)."""
    assert find_worst(prog, metric).value == expected
    w = find_worst(prog, metric, symmetry=False)
    assert w.complete and w.value == expected, (metric, w.value, expected)
    if w.metric.kind == "path":
        assert sum(n for _k, n in w.counted) == w.value
        # the witness, replayed by the brute force's own counting
        assert along(prog, [s.action for s in w.trace[1:]])[metric] == w.value


@pytest.mark.parametrize("name", LIBRARY + ["turn_first", "agent_turns"])
@pytest.mark.parametrize("metric", METRIC_NAMES)
def test_every_metric_equals_brute_force(name, metric):
    check_worst(program(name), metric, brute(name)[metric])


def test_the_requests_of_a_chat_are_counted_apart():
    # a chat that waits at `turn` for its user has no request under way, and
    # its two requests are two values, never one sum
    b = brute("turn_first")
    assert (b["ttft"], b["latency"]) == (1, 1)
    for metric in ("ttft", "latency"):
        w = find_worst(program("turn_first"), metric)
        assert (w.value, w.counted) == (1, [(3, 1)])
        assert (w.subject, w.request_from) == ("chat#1, its request from step 2", 2)


def test_multiturn_chat():
    # one test for both metrics: the brute force (about 42,000 paths' states)
    # is the cost, and a worker computes it once
    b = brute("multiturn_chat")
    assert (b["ttft"], b["latency"]) == (5, 6)
    for metric in ("ttft", "latency"):
        check_worst(program("multiturn_chat"), metric, b[metric])


def lasso_grows(prog, metric: str) -> None:
    """An unbounded worst case: its lasso, pumped, counts more every time
    round (the brute force's counting along the path)."""
    w = find_worst(prog, metric, symmetry=False)
    assert w.value is None and w.lasso_start is not None
    actions = [s.action for s in w.trace[1:]]
    head, loop = actions[:w.lasso_start], actions[w.lasso_start:]
    values = [along(prog, head + loop * k)[metric] for k in (1, 2, 3)]
    assert values[0] < values[1] < values[2], values


def test_a_loop_bounds_each_request():
    # a request restarts the count each time round the loop: bounded; the
    # whole run is not
    prog = program("loop")
    b = brute("loop", max_depth=14)
    for metric in ("ttft", "ttft-time", "latency", "latency-time", "preemptions", "recomputed", "queue", "peak"):
        check_worst(prog, metric, b[metric])
    assert (b["ttft"], b["latency"]) == (3, 3)
    for metric in ("iterations", "time"):
        lasso_grows(prog, metric)


@pytest.mark.parametrize("metric", ["ttft", "latency", "preemptions", "iterations"])
def test_self_preemption_is_unbounded(metric):
    lasso_grows(program("self_preempt"), metric)


# ---------------------------------------------------------------- random instances


@st.composite
def instances(draw) -> str:
    """A small instance: one pool, one stage, a session of one or two
    requests (each may start with `turn`, reuse its cached prefix, decode,
    spawn a subagent and join it) or of a loop of requests, one or two of
    them."""
    cap = draw(st.sampled_from([4, 6, 8]))
    block = draw(st.sampled_from([1, 2]))
    pool = f"pool kv {{ cap {cap}; block {block}; admit via gpu;"
    pool += draw(st.sampled_from(["", " preempt lifo;"])) + draw(st.sampled_from(["", " evict lru;"])) + " }"
    stage = f"stage gpu {{ budget {draw(st.integers(2, 4))};"
    stage += draw(st.sampled_from(["", " chunk 2;"])) + draw(st.sampled_from(["", " cost 2 + ntok;"])) + " }"
    body = ["let ctx = 0;"]
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.booleans()):
            body.append("turn;")
        p = draw(st.integers(1, 3))
        decode = draw(st.sampled_from(["", "decode 1 growing kv;", "draw o in 1..2; "]))
        if decode.startswith("draw"):
            body.append(decode)
            decode = "decode o growing kv;"
        if draw(st.booleans()):
            body.append(f"hold kv reuse c need (ctx + {p} - c) take 0 at admission (c = min(cached(kv), ctx)) "
                        f"{{ prefill (ctx + {p} - c) growing kv; {decode} }} keep (kv full);")
        else:
            body.append(f"hold kv need {p} take 0 {{ prefill {p} growing kv; {decode} }}")
        body.append(f"set ctx = ctx + {p};")
        if draw(st.integers(0, 3)) == 0:
            body.append("spawn sub; join;")
    if draw(st.integers(0, 3)) == 0:  # a chat without end: its requests in a loop
        p = draw(st.integers(1, 3))
        body = [f"while true {{ turn; hold kv need {p} take 0 {{ prefill {p} growing kv; decode 1 growing kv; }} }}"]
    n = draw(st.integers(1, 2))
    return "\n".join([pool, stage,
                      "session sub { hold kv need 1 take 0 { prefill 1 growing kv; } end; }",
                      "session chat {", *body, "end;", "}", f"workload {{ {n} x chat; }}"])


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.lists(st.sampled_from(METRIC_NAMES), min_size=2, max_size=2, unique=True))
def test_random_instances_equal_brute_force(text, metrics):
    try:
        prog = load_text(text, "random.sq", explorer=True).program
    except SerqError:
        assume(False)
    depth = 12 if "while" in text else 24  # a loop's paths never end: fewer steps
    best, cut = brute_force(prog, max_depth=depth, max_paths=200_000)
    for metric in metrics:
        w = find_worst(prog, metric, symmetry=False)
        assert w.complete
        if w.value is None:
            lasso_grows(prog, metric)
            continue
        # every path counts at most the worst; the brute force sees the
        # witness's path when it is not longer than its depth
        assert best[metric] <= w.value, (metric, text)
        if not cut or len(w.trace) - 1 <= depth:
            assert best[metric] == w.value, (metric, text)
