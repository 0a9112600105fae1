"""`completes` means every session finishes: deadlock, livelock, failed
asserts, invariants and run-time errors; `stuck` is a property of its own
(`check stuck;`, `--check stuck`). Under `completes` a reachable stuck
session is a note on the verdict line, and the point of no return is about
completion: a stuck session that still finishes is not past it."""

from __future__ import annotations

import pytest

from serq.cli import main
from serq.check.model import Checks
from serq.check.explore import explore
from serq.lang.load import compile_source

# Three chats on a 3-unit pool: the third is preempted twice at the same
# position (stuck), yet on every path every chat finishes.
STUCK_COMPLETES = """
pool kv { cap 3; block 1; admit via gpu; preempt lifo; }
stage gpu { budget 4; serve (admitted); }
session chat {
  let g = 0;
  hold kv reserve (1 + g) {
    prefill (1 + g) growing kv;
    decode (2 - g) growing kv progress g;
  }
  end;
}
workload { 3 x chat; }
"""


def program(text: str, check: str = ""):
    prog, _ = compile_source(text + check)
    return prog


def test_completes_passes_on_a_stuck_instance_that_completes_with_a_note():
    r = explore(program(STUCK_COMPLETES, "check completes;"))
    assert r.verdict == "pass", r.message
    assert "note: a session can be stuck (chat#3 was preempted again" in r.message
    assert "--check stuck gives its trace" in r.message
    # the same as checking deadlock, livelock and invariants, with the
    # positions kept (the state count of `completes` is unchanged)
    assert r.stats.distinct == 50


def test_no_check_line_is_completes():
    r = explore(program(STUCK_COMPLETES))
    assert r.verdict == "pass" and "note: a session can be stuck" in r.message


@pytest.mark.parametrize("how", ["line", "flag"])
def test_stuck_is_its_own_property(how):
    if how == "line":
        r = explore(program(STUCK_COMPLETES, "check completes;\ncheck stuck;"))
    else:
        r = explore(program(STUCK_COMPLETES, "check completes;"), checks=["stuck"])
    assert (r.verdict, r.kind) == ("violation", "stuck")
    assert "note:" not in r.message
    # every state of its trace can still complete: no point of no return
    assert r.no_return is not None and r.no_return.status == "none", r.no_return
    assert r.no_return.doomed == 0


def test_point_of_no_return_with_exact_identities():
    r = explore(program(STUCK_COMPLETES, "check stuck;"), exact=True)
    assert (r.verdict, r.kind) == ("violation", "stuck")
    assert r.no_return.status == "none"


def test_note_with_worker_threads_and_partitions():
    prog = program(STUCK_COMPLETES, "check completes;")
    for kw in ({"workers": 2}, {"partitions": 2}):
        r = explore(prog, **kw)
        assert r.verdict == "pass" and "note: a session can be stuck" in r.message, kw


def test_no_note_when_stuck_is_not_watched():
    # an explicit list without `stuck` does not keep the positions: nothing to note
    r = explore(program(STUCK_COMPLETES, "check deadlock;"))
    assert r.verdict == "pass" and "note" not in r.message


def test_checks_of_program():
    prog = program(STUCK_COMPLETES)
    c = Checks.of_program(prog)
    assert (c.deadlock, c.livelock, c.invariant, c.stuck, c.watch_stuck) == (True, True, True, False, True)
    c = Checks.of_program(prog, ["completes", "stuck"])
    assert c.stuck and c.deadlock and c.positions
    c = Checks.of_program(prog, ["deadlock", "livelock"])
    assert not c.stuck and not c.positions
    assert Checks.of_program(prog, ["stuck"]).positions


def test_cli_verdict_line_and_stuck_flag(tmp_path, capsys):
    f = tmp_path / "x.sq"
    f.write_text(STUCK_COMPLETES + "check completes;\n")
    assert main(["explore", str(f), "--no-timing", "-q"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("pass: no violation in 50 distinct states; note: a session can be stuck")
    assert main(["explore", str(f), "--no-timing", "-q", "--check", "stuck"]) == 12
    out = capsys.readouterr().out
    assert out.startswith("violation (stuck): chat#3 was preempted again")
    assert ("point of no return: none: every state of this trace can still complete (0 of 50 reachable states "
            "cannot complete)") in out
    assert "-- point of no return" not in out


@pytest.mark.parametrize("stuck", [[], ["--check", "stuck"]])
def test_check_and_explore_agree_on_a_stuck_instance_that_completes(capsys, stuck):
    # the simulator's `serq check` selects properties as the explorer does:
    # under `completes` both pass with a note; with stuck selected both fail
    from pathlib import Path

    inst = str(Path(__file__).resolve().parents[2] / "instances" / "stuck_completes.sq")
    explored = main(["explore", inst, "--no-timing", "-q", *stuck])
    verdict = capsys.readouterr().out.splitlines()[0]
    checked = main(["check", inst, *stuck])
    lines = capsys.readouterr().out.splitlines()
    assert explored == checked == (12 if stuck else 0)
    if stuck:
        assert verdict.startswith("violation (stuck): chat#3 was preempted again")
        assert lines == [f"{inst}: FAIL: stuck at 4 iterations: chat#3 was preempted again from pool `kv` "
                         "without passing the position of its previous preemption: it held 1 of `kv`'s 3 blocks "
                         "and needed another; chat#2 holds 1 unit"]
    else:
        assert "; note: a session can be stuck (chat#3 was preempted again" in verdict
        assert lines == [f"{inst}: ok: no deadlock, failed assert, invariant or conservation violation; all 3 "
                         "sessions ended at 9 iterations (seed 0)",
                         f"{inst}: note: a session was stuck at 4 iterations (action 8): chat#3 was preempted "
                         "again from pool `kv` without passing the position of its previous preemption: it held "
                         "1 of `kv`'s 3 blocks and needed another; chat#2 holds 1 unit; stuck is not checked: "
                         "`check stuck;` or --check stuck fails on it"]


def test_check_selects_like_explore(tmp_path, capsys):
    # a stalled end is a deadlock only where deadlock is selected; an
    # `invariant` line fails only where invariant is selected
    f = tmp_path / "x.sq"
    f.write_text("""
pool kv { cap 8; block 4; admit via gpu; preempt none; }
stage gpu { budget 16; }
session s { hold kv need 4 take 0 { prefill 4 growing kv; decode 3 growing kv; } end; }
workload { 2 x s; }
check invariant allocated(kv) <= 4;
check deadlock;
""")
    assert main(["check", str(f)]) == 12  # the invariant first
    assert "FAIL: invariant" in capsys.readouterr().out
    assert main(["check", str(f), "--check", "deadlock"]) == 10
    assert "FAIL: deadlock: the simulation ended at" in capsys.readouterr().out
    assert main(["explore", str(f), "--no-timing", "-q", "--check", "deadlock"]) == 10
    capsys.readouterr()
    assert main(["check", str(f), "--check", "livelock"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("ok: no failed assert or conservation violation; the simulation ended at 1 iteration "
                           "with 2 session(s) that can never move, and deadlock is not checked (seed 0):")
    assert out[1].startswith("  s#1 waits to be served by `gpu`")
    assert main(["explore", str(f), "--no-timing", "-q", "--check", "livelock"]) == 0
