"""`completes` means every session finishes: deadlock, livelock, failed
asserts, invariants and run-time errors; `stuck` is a property of its own
(`check stuck;`, `--check stuck`). Under `completes` a reachable stuck
session is a note on the verdict line, and the point of no return is about
completion: a stuck session that still finishes is not past it."""

from __future__ import annotations

import pytest

from serq.cli import main
from serq.explore import Checks
from serq.exploration import explore
from serq.load import compile_source

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
