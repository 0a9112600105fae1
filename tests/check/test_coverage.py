"""`serq explore --coverage` against brute force (tests/coverage_brute.py):
per kind of event, the explored transitions that had it, on instances with
`turn`, `spawn`/`join`, preemption (in prefill, in decode, of itself), a
shared prefix and prefix-cache reuse, an `admit if` gate with `hol skip`
and an event-driven pool; each witness is as short as the brute force's
first transition of its kind, and its last step has the kind."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from tests.check.test_slo_crosscheck import CHAT_AGENTS, PREFIX_PREEMPT
from tests.coverage_brute import brute_coverage, classify
from tests.fixtures import AGENT_TURNS, TURN_FIRST

from serq.check.coverage import KINDS, CoverageVisitor, vacuity
from serq.check.explore import explore
from serq.check.model import SerqModel, Checks
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]

# a gate (`admit if`) on a stage-admitted pool that lets holds pass (`hol
# skip`), inside an event-driven pool of seats; a self-preempting prefill
GATED = """
pool seats { cap 2; }
pool kv { cap 8; block 2; admit via gpu; preempt lifo; evict lru; hol skip; }
stage gpu { budget 4; self_preempt continue; }
session chat {
  draw prompt in {2, 6};
  hold seats 1 {
    hold kv need (prompt) take 0 admit if (prompt < 6 or free(kv) >= 8) {
      prefill prompt growing kv;
      decode 2 growing kv;
    } keep (kv full);
  }
  end;
}
workload { 3 x chat; }
"""

# a long prefill that cannot fit beside another: it preempts itself
SELF = """
pool kv { cap 8; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; }
session long { hold kv need 2 take 0 { prefill 8 growing kv; } end; }
session short { hold kv need 2 take 0 { prefill 2 growing kv; decode 2 growing kv; } end; }
workload { 1 x long; 1 x short; }
"""

TEXTS = {"turn_first": TURN_FIRST, "agent_turns": AGENT_TURNS, "prefix_preempt": PREFIX_PREEMPT,
         "chat_agents": CHAT_AGENTS, "gated": GATED, "self": SELF}
LIBRARY = ["decode_preempt", "agent_subagents", "multiturn_chat", "self_preempt", "hol_none", "theorem"]
NAMES = list(TEXTS) + LIBRARY


@cache
def program(name: str):
    if name in TEXTS:
        return load_text(TEXTS[name], f"{name}.sq", explorer=True).program
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


def covered(prog, kinds=KINDS, **kw):
    v = CoverageVisitor(witness=kinds)
    r = explore(prog, visitor=v, checks=["invariant"], **kw)  # no deadlock or livelock ends it: the whole graph
    return r, v.finish(r)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_brute_force(name):
    prog = program(name)
    r, cov = covered(prog)
    assert r.verdict == "pass" and cov.complete
    counts, transitions, shortest = brute_coverage(SerqModel(prog, checks=Checks.of_program(prog, ["invariant"])))
    assert cov.transitions == transitions == r.stats.generated - 1
    assert cov.counts == counts
    sm = cov.sm
    for k in KINDS:
        trace = cov.witnesses[k]
        if counts[k] == 0:
            assert trace is None
            continue
        assert len(trace) - 1 == shortest[k], k  # a shortest witness
        last, before = trace[-1], trace[-2]
        nxt, events = sm.m.step_events(before.state.tuple(), last.action)
        assert k in classify(sm.m, prog, before.state.tuple(), last.action, events, nxt)


def test_the_instances_cover_every_kind():
    """Together the instances above exercise every kind (so no count is
    checked only at 0)."""
    seen = set()
    for name in NAMES:
        seen |= {k for k, n in covered(program(name), kinds=())[1].counts.items() if n}
    assert seen == set(KINDS)


EXACT = {  # pinned: the brute force agrees with these
    "decode_preempt": {"admission": 7, "admission-blocked": 1, "preemption": 2, "preemption-prefill": 0,
                       "preemption-decode": 2, "self-preemption": 0, "cache-hit": 2, "eviction": 9, "requeue": 2,
                       "spawn": 0, "join": 0},
}


def test_exact_counts_pinned():
    for name, want in EXACT.items():
        assert covered(program(name), kinds=())[1].counts == want


def test_dfs_counts_each_transition_once():
    for name in ("gated", "agent_turns"):
        prog = program(name)
        bfs = covered(prog, kinds=())[1]
        dfs = covered(prog, kinds=(), strategy="dfs")[1]
        assert dfs.counts == bfs.counts and dfs.transitions == bfs.transitions


def test_vacuity_warning():
    prog = program("agent_subagents")  # a reserving agent: `kv` could preempt, never does
    r, cov = covered(prog, kinds=())
    (w,) = vacuity(prog, cov)
    assert (w.code, w.line, w.severity) == ("W520", 12, "warning")
    assert "no explored transition preempts, although `kv` could" in w.message
    assert vacuity(program("decode_preempt"), covered(program("decode_preempt"), kinds=())[1]) == []


def test_no_vacuity_warning_on_a_partial_search():
    prog = program("agent_subagents")
    r, cov = covered(prog, kinds=(), max_states=3)
    assert r.verdict == "bound" and not cov.complete and vacuity(prog, cov) == []


# ---------------------------------------------------------------- the command

from tests.check.test_instances import compare_golden  # noqa: E402

from serq.cli import main  # noqa: E402


@pytest.mark.parametrize("name, argv", [
    ("decode_preempt", ["--witness", "preemption-decode", "--witness", "admission-blocked"]),
    ("agent_subagents", ["--witness", "join", "--witness", "preemption"]),
    ("self_preempt", ["--witness", "self-preemption"]),
], ids=["decode_preempt", "agent_subagents", "self_preempt"])
def test_coverage_golden(name, argv, capsys):
    """The table and the witnesses in words, byte for byte
    (tests/golden/NAME.coverage.txt); the exit code is the verdict's."""
    inst = str(ROOT / "instances" / f"{name}.sq")
    code = main(["explore", inst, "--coverage", *argv, "--no-timing", "-q"])
    out, err = capsys.readouterr()
    assert code == main(["explore", inst, "--no-timing", "-q"])
    plain = capsys.readouterr().out
    assert out.startswith(plain)  # the verdict's words unchanged, the coverage after them
    compare_golden(f"{name}.coverage.txt", out)
    assert ("warning[W520]" in err) == (name == "agent_subagents"), err


def test_coverage_json_validates(capsys):
    import json

    import jsonschema

    inst = str(ROOT / "instances" / "agent_subagents.sq")
    assert main(["explore", inst, "--coverage", "--witness", "all", "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, json.loads((ROOT / "serq" / "schemas" / "serq-explore.json").read_text()))
    cov = d["coverage"]
    assert cov["complete"] and cov["counts"]["spawn"] == 4 and cov["counts"]["preemption"] == 0
    assert cov["witnesses"]["preemption"] is None and cov["witnesses"]["join"]["steps"] == 4
    assert [w["code"] for w in d["warnings"]] == ["W520"]
    assert d["warnings"][0]["line"] == 12


@pytest.mark.parametrize("argv, flag", [
    (["--workers", "2"], "--workers"), (["--partitions", "2"], "--partitions"),
    (["--swarm", "2"], "--coverage"), (["--worst", "ttft"], "--coverage"), (["--replay", "0"], "--coverage"),
])
def test_coverage_refused_where_it_cannot_be_counted(argv, flag, capsys):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--coverage", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{flag}:1:1: error[E012]: "), err


def test_witness_implies_coverage_and_a_bad_kind_is_refused(capsys):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--witness", "admission", "--no-timing", "-q"]) == 0
    assert "witness admission: " in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["explore", inst, "--witness", "preemption-decod"])
    assert e.value.code == 2
    assert "preemption-decode" in capsys.readouterr().err
