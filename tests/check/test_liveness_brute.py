"""`check eventually` against brute force (tests/fair_brute.py): on
instances with `turn`, `spawn`/`join`, preemption, a shared prefix and
cache reuse, a `while` loop, a livelock and a deadlock, for both goals and
both fairness assumptions, the explorer starves a session exactly when
the brute force finds a fair set of states (or an end) where one waits,
and the lasso it prints is, judged by the brute force's own reading, a
real fair cycle of the graph in which the named session waits throughout.
The state counts of the two enumerations agree (the brute force tells
states apart by their whole canonical row)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from tests.check.test_slo_crosscheck import CHAT_AGENTS, PREFIX_PREEMPT
from tests.check.test_worst_crosscheck import AGENT_TURNS, LOOP
from tests.fair_brute import Graph, lasso_is_fair, starved
from tests.fixtures import TURN_FIRST

from serq.check.explore import explore
from serq.check.model import Checks
from serq.check.slo import make_model
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]
STARVED = (ROOT / "instances" / "starved_large.sq").read_text()

# a session that holds the pool across its user's turn (`turn` inside the
# hold) and one that needs it: under `hol skip` and a higher priority the
# holder takes the pool back each time
HOLDER = """
pool kv { cap 4; block 2; admit via gpu; queue (desc pr, arrived); hol skip; }
stage gpu { budget 2; }
session hog(pr) {
  while true {
    hold kv reserve 4 { prefill 1; turn; }
  }
}
session one(pr) {
  hold kv reserve 2 { prefill 2; }
  end;
}
workload { 1 x hog(pr=1); 1 x one(pr=0); }
"""

TEXTS = {"starved": STARVED, "fifo": STARVED.replace("queue (desc pr, arrived); hol skip; ", ""),
         "turn_first": TURN_FIRST, "agent_turns": AGENT_TURNS, "loop": LOOP, "prefix_preempt": PREFIX_PREEMPT,
         "chat_agents": CHAT_AGENTS, "holder": HOLDER}
LIBRARY = ["self_preempt", "hol_none", "decode_preempt", "agent_subagents", "join_in_hold", "multiturn_chat"]
CHECKS = ["eventually admitted", "eventually admitted under strong", "eventually done",
          "eventually done under strong"]


@cache
def program(name: str):
    if name in TEXTS:
        return load_text(TEXTS[name], f"{name}.sq", explorer=True).program
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


@cache
def graph(name: str, check: str) -> Graph:
    goal = check.split()[1]
    sm = make_model(program(name), checks=Checks.of_program(program(name), [check]))
    return Graph(sm, {goal: check.endswith("strong")})


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("name", sorted(TEXTS) + LIBRARY)
def test_verdict_and_lasso_equal_brute_force(name, check):
    g = graph(name, check)
    expected = starved(g)
    r = explore(program(name), checks=[check], graph_limit=0)
    assert r.stats.distinct == len(g), (r.stats.distinct, len(g))
    if not expected:
        assert r.verdict == "pass", (name, check, r.message)
        return
    assert (r.verdict, r.kind) == ("violation", " ".join(check.split()[:2])), (name, check, r.message)
    who = re.match(r"(\S+?)(?:'s request| waits)", r.message).group(1)
    sid = next(i for i in range(g.sessions()) if g.sm.label(r.trace[-1].state, i) == who)
    goal = check.split()[1]
    assert (goal, sid) in {(gl, s) for gl, s, _how in expected}, (who, expected)
    assert lasso_is_fair(g, r.trace, r.lasso_start, goal, sid, check.endswith("strong"))


def test_the_crosscheck_sees_both_answers():
    """Not a vacuous comparison: the instances give passes and violations
    of each goal, by a cycle and by an end."""
    seen = set()
    for name in sorted(TEXTS) + LIBRARY:
        for check in CHECKS:
            for goal, _sid, how in starved(graph(name, check)):
                seen.add((goal, how))
    assert {("admitted", "cycle"), ("done", "cycle"), ("done", "end")} <= seen
