"""`serq explore --probability` / `--expected` (serq/check/prob*.py)
against a brute force (tests/prob_brute.py: every path, every draw with
the simulator's weights, min and max by exhaustive search) on small
instances with preemption, `turn`, spawn/join and a cached prefix;
against closed forms and a livelock instance by hand on graphs with
cycles (interval iteration; tests/check/test_interval.py checks it against
exact rationals on random processes); and
against many seeded runs of the simulator (`serq run`'s draws)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from serq.check.prob import Question, parse_event, parse_expected
from serq.check.probreport import analyse, render_json, render_text
from serq.check.worst import MetricError
from serq.lang.load import load_text
from serq.semantics.model import Model
from tests.prob_brute import PREEMPT, expected, probability


# `turn`, a conversation's cached prefix reused, and a second program
TURNS = """
pool kv { cap 8; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; }
session chat {
  let ctx = 0;
  repeat 2 {
    turn;
    draw q in {1, 3} ~ weights(3, 1);
    hold kv reuse c need (ctx + q - c) take 0 at admission (c = min(cached(kv), ctx)) {
      prefill (ctx + q - c) growing kv;
      decode 1 growing kv;
    } keep (kv full);
    set ctx = ctx + q + 1;
  }
  end;
}
session once {
  draw n in 1..2 ~ uniform;
  hold kv need 2 take 0 { prefill 2 growing kv; decode n growing kv; }
  end;
}
workload { 1 x chat; 1 x once; }
"""

# spawn/join: the agent's cached turn and two subagents, preempted, sometimes stuck
AGENT = """
pool kv { cap 6; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; cost 3 + ntok; }
session sub {
  draw o in 1..3 ~ geometric(0.3);
  hold kv need 2 take 0 { prefill 2 growing kv; decode o growing kv; }
  end;
}
session agent {
  turn;
  hold kv need 2 take 0 { prefill 2 growing kv; } keep (kv full);
  spawn sub x 2;
  join;
  end;
}
workload { 1 x agent; }
"""

# a `while` loop that goes round again with probability 1/2: a cycle
LOOP = """
pool kv { cap 4; block 2; admit via gpu; }
stage gpu { budget 4; }
session chat {
  let more = 1;
  while more == 1 {
    hold kv need 2 take 0 { prefill 2 growing kv; }
    draw d in {0, 1} ~ weights(1, 1);
    set more = d;
  }
  end;
}
workload { 1 x chat; }
"""

# an unkeyed `choose`: the scheduler's, not chance
CHOOSE = TURNS.replace("draw n in 1..2 ~ uniform;", "choose n in 1..2;")

TEXTS = {"preempt": PREEMPT, "turns": TURNS, "agent": AGENT, "loop": LOOP, "choose": CHOOSE}
EVENTS = ("stuck", "deadlock", "preemptions>=1", "preemptions>=2", "stuck|preemptions>=2", "deadlock|preemptions>=1")


def program(name):
    return load_text(TEXTS[name], f"{name}.sq", explorer=True).program


def result(prog, events=EVENTS, metric=None):
    return analyse(prog, Question([parse_event(e, prog) for e in events],
                                  parse_expected(metric, prog) if metric else None))


@pytest.mark.parametrize("name", ["preempt", "turns", "agent", "choose"])
def test_events_equal_brute_force(name):
    prog = program(name)
    r = result(prog)
    assert r.complete and r.exact and r.acyclic
    m = Model(prog)
    for a, ev in zip(r.answers, EVENTS):
        assert isinstance(a.best, (int, Fraction)) and isinstance(a.worst, (int, Fraction))
        assert math.isclose(float(a.best), probability(m, ev, False), abs_tol=1e-9), (ev, a.best)
        assert math.isclose(float(a.worst), probability(m, ev, True), abs_tol=1e-9), (ev, a.worst)


@pytest.mark.parametrize("name", ["preempt", "turns", "agent", "choose"])
@pytest.mark.parametrize("metric", ["ttft", "latency", "preemptions", "iterations"])
def test_expected_equals_brute_force(name, metric):
    prog = program(name)
    a = result(prog, (), metric).answers[0]
    m = Model(prog)
    for got, n, mx in ((a.best, a.best_starts, False), (a.worst, a.worst_starts, True)):
        total, count = expected(m, metric, mx)
        assert math.isclose(float(got), total, rel_tol=1e-9, abs_tol=1e-9), (metric, mx, got, total)
        if a.per != "run":
            assert math.isclose(float(n), count, abs_tol=1e-9)


SLO_CASES = [
    ("preempt", "check ttft <= 2;"),
    ("preempt", "check completes, latency <= 4, recomputed <= q;"),
    ("preempt", "check preemptions <= 0;"),
    ("turns", "check ttft <= 1, latency <= 3;"),
    ("turns", "check recomputed <= 0;"),
    ("agent", "check latency <= 6;"),
    ("agent", "check stuck, latency <= 8;"),
]


def slo_program(name, line):
    return load_text(TEXTS[name] + line + "\n", f"{name}.sq", explorer=True).program


@pytest.mark.parametrize("name,line", SLO_CASES)
def test_violation_holds_the_per_request_slos(name, line):
    # `violation` includes the per-request SLO checks: the probability that one is broken equals the
    # brute force's (each request's counts by tests/slo_brute.py, on every path)
    from serq.check.model import Checks

    prog = slo_program(name, line)
    bounds = {s.metric: s.attr or s.bound for s in Checks.of_program(prog).slo}
    r = result(prog, ("violation", "violation|deadlock"))
    m = Model(prog)
    brute = ("violation|stuck", "violation|stuck|deadlock") if "stuck" in line else ("violation", "violation|deadlock")
    for a, ev in zip(r.answers, brute):
        assert isinstance(a.best, (int, Fraction)) and isinstance(a.worst, (int, Fraction))
        assert math.isclose(float(a.best), probability(m, ev, False, bounds=bounds), abs_tol=1e-9), (ev, a.best)
        assert math.isclose(float(a.worst), probability(m, ev, True, bounds=bounds), abs_tol=1e-9), (ev, a.worst)


@pytest.mark.parametrize("name,line", SLO_CASES)
def test_violation_is_possible_where_the_search_finds_one(name, line):
    # every drawn value here has a positive weight: the worst scheduler's probability is positive exactly
    # when `serq explore` (the SLO product, serq/check/slo.py's search) finds the violation
    from serq.check.explore import explore

    prog = slo_program(name, line)
    a = result(prog, ("violation",)).answers[0]
    assert (a.worst > 0) == (explore(prog, graph_limit=0).verdict == "violation")


def test_the_slo_cases_are_not_trivial():
    got = [result(slo_program(n, line), ("violation",)).answers[0] for n, line in SLO_CASES]
    assert sum(0 < a.worst < 1 for a in got) >= 4 and any(0 < a.best < 1 for a in got)
    assert any(a.worst == 1 for a in got)


def test_violation_counts_slos_only_when_asked():
    # the SLO counters are carried only for `violation`: another event's graph is the one it had
    prog = slo_program("preempt", "check ttft <= 2;")
    plain = result(program("preempt"), ("stuck",))
    assert result(prog, ("stuck",)).states == plain.states
    viol = result(prog, ("violation", "ttft>=3"))
    assert viol.states > plain.states
    # ttft <= 2 fails exactly when some request waits 3 iterations: one event, two words
    assert viol.answers[0].best == viol.answers[1].best == 0
    assert viol.answers[0].worst == viol.answers[1].worst == Fraction(3, 49)
    # no SLO check: a violation is a fault, a failed assert or invariant (none here)
    assert result(program("preempt"), ("violation",)).answers[0].worst == 0


def test_a_poisson_draw_is_solved_in_floating_point():
    # e^-λ is not rational: one recursion in floats, against the brute force's float weights
    prog = load_text(PREEMPT.replace("geometric(0.5)", "poisson(2)"), "p.sq", explorer=True).program
    r = result(prog, ("preemptions>=1",), "latency")
    assert r.method == "recursion" and not r.exact and "rounding errors only" in render_text(r)
    m = Model(prog)
    assert math.isclose(r.answers[0].worst, probability(m, "preemptions>=1", True), rel_tol=1e-12)
    lat = r.answers[1]
    assert math.isclose(lat.worst, expected(m, "latency", True)[0], rel_tol=1e-12)
    (d,) = r.draws
    assert d.dist == "poisson(2)" and math.isclose(d.kept, math.exp(-2) * (2 + 2 + 8 / 6))


def test_the_answers_are_not_trivial():
    # the brute force is compared on values that tell schedulers and draws apart
    r = result(program("turns"), metric="ttft")
    pre1 = r.answers[2]
    assert pre1.best == 0 and pre1.worst == Fraction(3, 8)
    agent = result(program("agent"))
    assert agent.answers[0].best == agent.answers[0].worst == Fraction(49, 219)  # stuck: no choice avoids it
    ttft = r.answers[-1]
    assert ttft.best < ttft.worst and ttft.worst_case == 4


def test_a_choose_is_the_schedulers():
    # `once` decodes 1 or 2 tokens: drawn, the mean of both; chosen, the best and the worst scheduler's
    drawn, chosen = (result(program(n), (), "latency").answers[0] for n in ("turns", "choose"))
    assert chosen.best < drawn.best and chosen.worst > drawn.worst
    assert [d.attr for d in result(program("choose"), ()).draws] == ["q"]


def test_a_cycle_is_solved_by_interval_iteration():
    # loops L ~ geometric(1/2) on 1, 2, ...: E[L] = 2, one iteration a loop; P(L >= 3) = 1/4
    r = result(program("loop"), ("deadlock", "iterations>=3"), "iterations")
    assert r.complete and not r.acyclic and not r.exact and r.method == "interval-iteration"
    dead, three, it = r.answers
    for a, want in ((it, 2), (three, 0.25)):
        for lo, hi in (a.best_bounds, a.worst_bounds):
            assert lo <= want <= hi and hi - lo < 1e-8, (a, lo, hi)
    assert dead.best_bounds == dead.worst_bounds == (0.0, 0.0)  # found on the graph: no path to a deadlock
    assert it.worst_case_unbounded  # every number of loops has a positive probability
    text = render_text(r)
    assert "interval iteration" in text and "proven to lie in the interval" in text and " ± " in text
    data = render_json(r)
    assert data["arithmetic"]["proven"] and data["arithmetic"]["epsilon"] == 1e-9
    assert data["events"][1]["worst_lower"] <= 0.25 <= data["events"][1]["worst_upper"]


def test_an_slo_on_a_cycle():
    # the loop's one request ends after L ~ geometric(1/2) iterations: `latency <= 2` fails when L >= 3
    prog = load_text(LOOP + "check latency <= 2;\n", "l.sq", explorer=True).program
    a = result(prog, ("violation",)).answers[0]
    for lo, hi in (a.best_bounds, a.worst_bounds):
        assert lo <= 0.25 <= hi and hi - lo < 1e-9


def test_a_loop_the_scheduler_may_take_again():
    # `choose c` then a draw: the loop goes round again when c = 1 and d = 1 (1/3): the best scheduler
    # stops at once, the worst keeps c = 1: E = 3/2 loops, P(>= 3 loops) = 1/9
    prog = load_text(LOOP.replace("draw d in {0, 1} ~ weights(1, 1);\n    set more = d;",
                                  "choose c in {0, 1};\n    draw d in {0, 1} ~ weights(2, 1);\n    set more = c * d;"),
                     "l.sq", explorer=True).program
    r = result(prog, ("iterations>=3",), "iterations")
    three, it = r.answers
    assert three.best_bounds == (0.0, 0.0)
    lo, hi = three.worst_bounds
    assert lo <= 1 / 9 <= hi and hi - lo < 1e-9
    assert it.best_bounds[0] <= 1 <= it.best_bounds[1] and it.worst_bounds[0] <= 1.5 <= it.worst_bounds[1]


def test_truncation_is_reported():
    r = result(program("agent"), ("stuck",))
    (d,) = r.draws
    # geometric(0.3) on 1..3 keeps 1 - 0.7^3 of its mass, renormalized over the domain
    assert d.kept == 1 - Fraction(7, 10) ** 3
    assert d.probs == tuple(Fraction(3, 10) * Fraction(7, 10) ** k / d.kept for k in range(3))
    text = render_text(r)
    assert "holds 0.657 of the distribution's mass; the rest (0.343) is renormalized" in text
    data = render_json(r)
    assert data["draws"][0]["truncation"] == "renormalized" and data["draws"][0]["kept"] == pytest.approx(0.657)


def test_a_weight_of_zero_is_no_worst_case():
    # q = 3 has weight 0: --worst counts it (every value of the domain), the worst case here does not
    from serq.check.worst import find_worst

    prog = load_text(PREEMPT.replace("1..3 ~ geometric(0.5)", "{1, 3} ~ weights(1, 0)"), "w.sq",
                     explorer=True).program
    a = result(prog, (), "ttft").answers[0]
    assert find_worst(prog, "ttft").value == 4 and a.worst_case == 1


@pytest.mark.parametrize("text,col,words", [
    ("stuk", 1, "did you mean `stuck`?"),
    ("preemption>=2", 1, "did you mean `preemptions`?"),
    ("preemptions>=x", 14, "not a whole number"),
    ("preemptions>=0", 14, "holds from the start"),
    ("peak:nope>=2", 6, "unknown pool"),
    ("stuck|deadlok", 7, "did you mean `deadlock`?"),
])
def test_bad_events_are_located(text, col, words):
    prog = program("preempt")
    with pytest.raises(MetricError) as e:
        parse_event(text, prog)
    assert e.value.col == col and (words in str(e.value) or words in " ".join(e.value.notes))


def test_expected_takes_a_path_metric():
    with pytest.raises(MetricError, match="not a sum along a run"):
        parse_expected("queue", program("preempt"))


# ---------------------------------------------------------------- against the simulator


SIM = """
pool kv { cap 10; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 6; chunk 4; }
session chat {
  let g = 0;
  repeat 2 {
    turn;
    draw q in {2, 4} ~ weights(3, 1);
    draw o in 1..4 ~ geometric(0.3) hidden;
    set g = 0;
    hold kv need (q + 1) take q {
      prefill q growing kv;
      decode (o - g) growing kv progress g;
    }
  }
  end;
}
workload { 1 x chat; }
"""


def simulate(text, seeds):
    """Each request's ttft and latency over seeded runs of the simulator."""
    from serq.lang.load import load_text as load
    from serq.sim.requests import attach
    from serq.sim.simulator import SimConfig, Simulator

    prog = load(text, "sim.sq", simulate=True).program
    runs = []
    for seed in range(seeds):
        sim = Simulator(prog, SimConfig(seed=seed))
        log = attach(sim)
        sim.run()
        runs.append(log.rows)
    return runs


def mean_and_error(xs):
    n = len(xs)
    mu = sum(xs) / n
    sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1))
    return mu, sd / math.sqrt(n)


def test_one_chat_equals_the_simulators_mean():
    # one session: no scheduler choice changes its latency; the draws alone do
    prog = load_text(SIM, "sim.sq", explorer=True).program
    a = result(prog, (), "latency").answers[0]
    assert a.best == a.worst and a.best_starts == a.worst_starts
    exact = a.best / a.best_starts
    rows = [r for run in simulate(SIM, 1500) for r in run]
    mu, se = mean_and_error([r["latency"] for r in rows if r["latency"] is not None])
    assert abs(mu - float(exact)) < 4 * se, (mu, float(exact), se)
    assert se < 0.03  # the check is tight: 4 standard errors are about 5% of the mean


def test_two_chats_bracket_the_simulator():
    # two sessions: the simulator's own scheduler lies between the best and the worst
    two = SIM.replace("1 x chat", "2 x chat").replace("1..4", "1..3")
    prog = load_text(two, "sim2.sq", explorer=True).program
    r = result(prog, ("preemptions>=1",), "ttft")
    pre, ttft = r.answers
    runs = simulate(two, 600)
    xs = [r["ttft"] for run in runs for r in run if r["ttft"] is not None]
    mu, se = mean_and_error(xs)
    lo, hi = float(ttft.best / ttft.best_starts), float(ttft.worst / ttft.worst_starts)
    assert lo < hi and lo - 4 * se <= mu <= hi + 4 * se, (lo, mu, hi, se)
    seen = sum(1 for run in runs if any(r["preemptions"] for r in run)) / 600  # runs with a preemption
    assert 0 < seen and float(pre.best) <= seen <= float(pre.worst) + 4 * math.sqrt(seen * (1 - seen) / 600)


def test_a_cycle_the_worst_scheduler_keeps_is_infinite():
    # the loop goes round again by the scheduler's `choose`: the worst scheduler never stops (an end
    # component that adds an iteration each round), the best stops after one
    prog = load_text(LOOP.replace("draw d in {0, 1} ~ weights(1, 1);", "choose d in {0, 1};"), "c.sq",
                     explorer=True).program
    r = result(prog, ("deadlock", "iterations>=3"), "iterations")
    dead, three, it = r.answers
    assert it.best_bounds[0] <= 1 <= it.best_bounds[1] and it.worst == math.inf and it.worst_case_unbounded
    assert three.best_bounds == (0.0, 0.0) and three.worst_bounds == (1.0, 1.0)  # Prob1E: loop for ever
    text = render_text(r)
    assert "worst scheduler infinite" in text and "infinite (proven on the graph)" in text
    data = render_json(r)
    assert data["expected"]["worst"]["total"] is None and data["expected"]["worst"]["infinite"]


def test_a_livelock_instance_by_hand():
    # instances/starved_large.sq: no draw, so every probability is 0 or 1. Its chats loop for ever
    # (`while true`), so the graph has cycles; the worst scheduler starves `big` for ever (--worst ttft
    # is unbounded: some request waits any number of iterations), the best one serves it; every run
    # has infinitely many requests, each taking an iteration: the expected sums are infinite
    from pathlib import Path

    from serq.check.worst import find_worst
    from serq.lang.load import load_path

    prog = load_path(Path(__file__).resolve().parents[2] / "instances" / "starved_large.sq", explorer=True).program
    r = result(prog, ("stuck", "ttft>=6"), "iterations")
    stuck, ttft, it = r.answers
    assert not r.acyclic and find_worst(prog, "ttft").value is None
    assert stuck.best_bounds == stuck.worst_bounds == (0.0, 0.0)
    assert ttft.best_bounds == (0.0, 0.0) and ttft.worst_bounds == (1.0, 1.0)
    assert it.best == it.worst == math.inf
