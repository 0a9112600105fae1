"""`serq explore --replay PATH` judges every state of the path as the search
does (the first that fails ends the run with its verdict), and its
counterexamples, like those of `--swarm`, end with their point of no
return."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"

# an invariant that fails while the session holds its blocks, and holds
# again once it has released them
INVARIANT = """
pool kv { cap 8; block 2; admit via gpu; }
stage gpu { budget 4; }
session chat {
  hold kv need 4 {
    prefill 4 growing kv; decode 3 growing kv;
  }
  end;
}
workload { 1 x chat; }
check invariant allocated(kv) <= 1;
"""

STUCK_AT_9 = "0/5/5/0/0/0/0/0/0/0"  # theorem_no_lifo's counterexample to `stuck`: stuck at step 9


def run(capsys, *argv):
    code = main(["explore", *map(str, argv)])
    return code, capsys.readouterr().out


def lines_with(out: str, prefix: str) -> list[str]:
    return [x for x in out.splitlines() if x.startswith(prefix)]


def test_a_path_that_goes_on_past_a_stuck_step_is_not_a_pass(capsys):
    code, out = run(capsys, INST / "theorem_no_lifo.sq", "--replay", STUCK_AT_9 + "/0", "--no-timing",
                    "--check", "stuck")
    assert code == 12, out
    assert out.startswith("violation (stuck): chat#1 was preempted again without passing the position of its "
                          "previous preemption (at step 9 of the 10 replayed: a behaviour ends at its first "
                          "failure, as in the search; the 1 step(s) after it are not shown)\n")
    assert "\n  9. iterate gpu: preempt chat#1" in out and "\n  10. " not in out
    assert lines_with(out, "replay: ") == [f"replay: {STUCK_AT_9}"]


def test_a_path_through_a_violated_invariant_is_not_a_pass(tmp_path, capsys):
    inst = tmp_path / "inv.sq"
    inst.write_text(INVARIANT)
    code, out = run(capsys, inst, "--replay", "0/0/0/0/0/0", "--no-timing")
    assert code == 12, out
    assert out.startswith("violation (invariant): invariant at line 11 is violated (at step 2 of the 5 replayed")
    assert lines_with(out, "replay: ") == ["replay: 0/0/0"]
    # the same run's first two steps violate nothing
    assert run(capsys, inst, "--replay", "0/0", "--no-timing")[0] == 0


def test_a_path_that_goes_on_around_a_cycle_ends_at_its_first_return(capsys):
    code, out = run(capsys, INST / "self_preempt.sq", "--replay", "0/0/0/0/0/0/0/0", "--no-timing")
    assert code == 11, out
    assert out.startswith("livelock: replayed 5 step(s): the last 3 return to the state of step 2 without "
                          "progress (at step 5 of the 7 replayed")
    assert "-- cycle returns to step 2 --" in out and lines_with(out, "replay: ") == ["replay: 0/0/0/0/0/0"]


@pytest.mark.parametrize("name", ["theorem_no_lifo", "hol_none"])
def test_replay_has_the_point_of_no_return_of_the_search(name, capsys):
    code, out = run(capsys, INST / f"{name}.sq", "-q", "--no-timing")
    path = lines_with(out, "replay: ")[0].split()[1]
    searched = lines_with(out, "point of no return: ")
    code2, again = run(capsys, INST / f"{name}.sq", "--replay", path, "--no-timing")
    assert code2 == code and len(searched) == 1
    assert lines_with(again, "point of no return: ") == searched
    assert lines_with(again, "  -- point of no return") == lines_with(out, "  -- point of no return")


def test_replay_point_of_no_return_bounds(capsys):
    inst = INST / "theorem_no_lifo.sq"
    code, out = run(capsys, inst, "--replay", STUCK_AT_9, "--json", "--graph-limit", "0", "--check", "stuck")
    assert code == 12 and "point_of_no_return" not in json.loads(out)
    # (32 states: a stuck state is no end of a behaviour, the searches go past it)
    code, out = run(capsys, inst, "--replay", STUCK_AT_9, "--graph-limit", "40", "--check", "stuck")
    assert ("point of no return: step 2 (arrive chat#2 (chat#2 draws prompt=3, chat#2 draws o=3): chat#2 queues "
            "for kv): from step 1 some continuation still completes, from step 2 none does (found by forward "
            "searches from the trace's states") in out
    code, out = run(capsys, inst, "--replay", STUCK_AT_9, "--max-states", "8", "--check", "stuck")
    assert "cut by --max-states 8, after 8 states; from step 2 on none completes)" in out
    # a passing path is no counterexample: nothing to locate
    code, out = run(capsys, inst, "--replay", "0/5/5")
    assert code == 0 and "point of no return" not in out


def test_swarm_counterexamples_have_a_point_of_no_return(capsys):
    code, out = run(capsys, INST / "hol_none.sq", "--swarm", "2", "-q", "--no-timing")
    assert code == 10, out
    assert lines_with(out, "point of no return: ") == [
        "point of no return: the initial state: no behaviour completes (46 of 46 reachable states cannot complete)"]
    # one search (deterministic): its own path, doomed when chat#1 draws its largest values
    # (a swarm looks for no livelock: this one is found as a stuck session)
    code, out = run(capsys, INST / "theorem_no_fit.sq", "--swarm", "1", "-q", "--no-timing", "--json",
                    "--check", "stuck")
    d = json.loads(out)
    assert code == 12 and d["verdict"] == "violation"
    nr = d["point_of_no_return"]
    assert nr["status"] == "step" and nr["states"] == 179 and "draws prompt=3" in nr["action"]


def test_a_replay_through_a_stuck_step_not_checked_notes_it(capsys):
    # as the search's verdict line does under `completes`: a note, not a failure
    inst = str(ROOT / "instances" / "stuck_completes.sq")
    assert main(["explore", inst, "--check", "stuck", "-q", "--no-timing"]) == 12
    path = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("replay: ")).split()[1]
    assert main(["explore", inst, "--replay", path, "-q", "--no-timing"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"pass: replayed {path.count('/')} step(s); note: a session can be stuck (chat#3 ")
