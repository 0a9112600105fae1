"""The rank reduction (`serq explore --reduce ranks`, serq/semantics/ranks.py)
against the unreduced engine.

The brute-force check: the whole unreduced state graph (no symmetry), each
state's reduced fingerprint beside it. Two states with one reduced
fingerprint must have the same flags, the same invariant failures and, action
by action, successors of one reduced fingerprint (the reduction is a
bisimulation), and the reduced search must store exactly as many states as
there are reduced fingerprints in the graph. Then verdicts: the same on every
instance of instances/ and on random instances, with and without symmetry;
a counterexample's replay path replays under the reduction, and one that
is not a lasso (deadlock, invariant, SLO) is as long as the unreduced one
(a lasso may close sooner: a cycle that returns to a state differing only in
dead ranks is a cycle of the reduced graph, but needs another turn in the
unreduced one).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serq.check.explore import explore, replay_verdict
from serq.check.model import Checks, SerqModel
from serq.check.slo import needs_product
from serq.lang.load import load_text
from serq.semantics.kernel.abi import RK_ADM_FREE, RK_ADM_NONE, RK_ARR_DEAD, RK_OK
from serq.semantics.ranks import rank_flags
from tests.semantics.test_semantics_properties import instances

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))
BRUTE_LIMIT = 6_000  # unreduced states the brute-force check walks at most


def program(text: str, name: str = "t.sq"):
    return load_text(text, name, explorer=True).program


def bisimulation(prog, limit: int = BRUTE_LIMIT) -> tuple[int, int] | None:
    """(unreduced states, reduced classes) of the whole graph, asserting the
    reduction is a bisimulation on it; None when it has more than `limit`
    states."""
    full = SerqModel(prog, symmetry=False)
    red = SerqModel(prog, symmetry=False, reduce_ranks=True)
    init = full.initial_states()[0]
    seen = {init.fp}
    todo = [init]
    classes: dict[int, tuple] = {}
    while todo:
        s = todo.pop()
        rfp = red.rows.pack(s).fp
        succ = full.rows.expand(s)
        sig = (s.flags, tuple(m for _, m in full.invariants(s)),
               tuple(sorted((a, red.rows.pack(t).fp) for a, t in succ)))
        if rfp in classes:
            assert classes[rfp] == sig, f"two states of one reduced class differ:\n{classes[rfp]}\n{sig}"
        else:
            classes[rfp] = sig
        for _, t in succ:
            if t.fp not in seen:
                seen.add(t.fp)
                todo.append(t)
                if len(seen) > limit:
                    return None
    return len(seen), len(classes)


def check_instance(prog, brute: bool = True, bound: int = 50_000) -> tuple[int, int] | None:
    """The reduction against the unreduced engine (above); the graph's
    (unreduced states, reduced classes) when the brute force walked it."""
    sizes = None
    if brute:
        sizes = bisimulation(prog)
        if sizes is not None:
            r = explore(prog, symmetry=False, reduce_ranks=True, graph_limit=0)
            assert r.verdict in ("pass", "deadlock", "livelock", "violation")
            if r.verdict == "pass" and not needs_product(Checks.of_program(prog)):
                # (a failure ends the search before the whole graph; an SLO's search carries counters)
                assert r.stats.distinct == sizes[1]
    for sym in (False, True):
        a = explore(prog, symmetry=sym, graph_limit=0, max_states=bound)
        b = explore(prog, symmetry=sym, reduce_ranks=True, graph_limit=0, max_states=bound)
        if "bound" in (a.verdict, b.verdict):  # (the reduced search may find within the bound what the other does not)
            continue
        assert a.verdict == b.verdict, (sym, a.message, b.message)
        assert (a.kind or "") == (b.kind or "")
        assert b.stats.distinct <= a.stats.distinct or a.verdict != "pass"
        if b.trace:
            lasso = a.verdict == "livelock" or (a.kind or "").startswith("eventually")
            if lasso:
                assert len(b.trace) <= len(a.trace)
            else:
                assert len(b.trace) == len(a.trace), (a.replay_path, b.replay_path)
            _, again = replay_verdict(prog, b.replay_path, symmetry=sym, reduce_ranks=True)
            assert (again.verdict, again.kind) == (b.verdict, b.kind)
    return sizes


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda p: p.stem)
def test_instances_reduced_agree(inst):
    check_instance(program(inst.read_text(), str(inst)))


CHAT = """
pool kv {{ cap {cap}; block 2; admit via gpu; preempt {victim}; evict lru; requeue {requeue};{queue} }}
stage gpu {{ budget 4; serve {serve}; }}
session chat {{
  draw o in 1..2 hidden;
  let g = 0;
  {body}
  end;
}}
workload {{ 3 x chat; }}
"""
HOLD = "hold kv need (2 + g) take 0 { prefill (2 + g) growing kv; decode (o - 1 - g) growing kv progress g; }"


def chat(cap=6, victim="lifo", requeue="front", queue="", serve="(admitted)", body=HOLD) -> str:
    return CHAT.format(cap=cap, victim=victim, requeue=requeue, queue=queue, serve=serve, body=body)


# (instance, its flags, (unreduced states, reduced classes) of its whole graph, pinned: the
# reduction must reduce what its flags allow, no more and no less)
@pytest.mark.parametrize("text, flags, sizes", [
    (chat(), RK_OK | RK_ARR_DEAD | RK_ADM_FREE, (296, 260)),
    (chat(serve="(arrived)"), RK_OK | RK_ADM_FREE | RK_ADM_NONE, (296, 260)),  # serve falls back on arrivals
    (chat(victim="(arrived)"), RK_OK | RK_ADM_FREE, (299, 263)),
    (chat(requeue="order"), RK_OK | RK_ADM_FREE, (296, 260)),  # a preempted hold re-enters by arrival
    (chat(queue=" queue (admitted);"), RK_OK | RK_ARR_DEAD, (317, 281)),  # the queue reads stale admissions
    (chat(serve="(g, admitted)"), RK_OK | RK_ARR_DEAD | RK_ADM_FREE, (296, 260)),
    (chat(serve="(arrived + g)"), 0, (296, 296)),  # a key reads a sequence number: nothing reduced
    (chat(body="prefill 2; " + HOLD), RK_OK, (692, 656)),  # a run outside any hold: admissions may tie
    (chat(body="turn; " + HOLD), RK_OK | RK_ARR_DEAD | RK_ADM_FREE, (1232, 532)),
    # an acquire reached after a hold: the arrival it queues with is not the newest
    (chat(body=HOLD + " " + HOLD), RK_OK | RK_ADM_FREE, (857, 617)),
], ids=["chat", "serve-arrived", "victim-arrived", "requeue-order", "queue-admitted", "serve-key",
        "key-reads-seq", "run-outside", "turn", "two-holds"])
def test_flags_and_bisimulation(text, flags, sizes):
    prog = program(text)
    assert rank_flags(prog) == flags
    assert check_instance(prog, bound=BRUTE_LIMIT) == sizes


VARIANTS = {
    "serve": ["(admitted)", "(arrived)", "(desc admitted)", "(g, admitted)", "(desc g, arrived)"],
    "queue": ["", "queue (arrived); ", "queue (desc arrived); ", "queue (admitted); ", "queue (desc g, arrived); "],
    "requeue": ["front", "back", "order"],
}


@st.composite
def varied(draw):
    """The property tests' random instances, their serve, queue and requeue
    orders varied (so that every rank kind is read by some of them)."""
    text = draw(instances())
    serve = draw(st.sampled_from(VARIANTS["serve"]))
    queue = draw(st.sampled_from(VARIANTS["queue"]))
    requeue = draw(st.sampled_from(VARIANTS["requeue"]))
    text = text.replace("serve (admitted);", f"serve {serve};")
    text = re.sub(r"requeue \w+;", f"requeue {requeue}; {queue}", text)
    return text


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(varied())
def test_random_instances_reduced_agree(text):
    try:
        prog = program(text)
    except Exception:  # noqa: BLE001 (an order the moment refuses, e.g. g where it is hidden)
        assume(False)
    check_instance(prog, bound=BRUTE_LIMIT)


def test_cli_reduces_and_replays_with_the_flag(capsys):
    from serq.cli import main

    inst = str(ROOT / "instances" / "hol_none.sq")
    assert main(["explore", inst, "--no-symmetry", "--no-timing", "--reduce", "ranks"]) == 10
    out = capsys.readouterr().out
    assert out.startswith("deadlock") and "distinct=54 " in out
    path = re.search(r"^replay: (\S+)", out, re.M).group(1)
    assert main(["explore", inst, "--no-symmetry", "--no-timing", "--reduce", "ranks", "--replay", path]) == 10
    assert capsys.readouterr().out.startswith("deadlock")



def test_the_witness_searches_are_reduced_with_the_main_search():
    """`check sometimes` lines are searched under the same reduction: the
    same verdicts and witness lengths, and a line that never holds walks
    the reduced graph (as many states as the main reduced search)."""
    import serq

    text = (ROOT / "instances" / "sometimes_preempt.sq").read_text() + "check sometimes free(kv) > 100;\n"
    plain = serq.explore(text, symmetry=False)
    red = serq.explore(text, symmetry=False, reduce="ranks")
    assert red.distinct < plain.distinct
    assert [(s.verdict, len(s.result.trace)) for s in red.sometimes] == \
           [(s.verdict, len(s.result.trace)) for s in plain.sometimes]
    assert red.sometimes[-1].verdict == plain.sometimes[-1].verdict == "never"
    assert red.sometimes[-1].result.stats.distinct == red.distinct
    assert plain.sometimes[-1].result.stats.distinct == plain.distinct


def test_a_reduction_that_reduces_nothing_is_said(tmp_path, capsys):
    from serq.cli import main

    inst = tmp_path / "seq.sq"
    inst.write_text(chat(serve="(arrived + g)"))
    main(["explore", str(inst), "--no-symmetry", "--no-timing", "--reduce", "ranks", "-q"])
    err = capsys.readouterr().err
    assert "warning: --reduce ranks reduces nothing here: stage gpu's serve order reads a sequence number" in err
    inst.write_text(chat())
    main(["explore", str(inst), "--no-symmetry", "--no-timing", "--reduce", "ranks", "-q"])
    assert "--reduce ranks" not in capsys.readouterr().err


def test_the_library_warns_as_the_command_does():
    import serq

    with pytest.warns(UserWarning, match="reduce='ranks' reduces nothing here: stage gpu's serve order"):
        serq.explore(chat(serve="(arrived + g)"), symmetry=False, reduce="ranks")
