"""The point of no return of the instance library's counterexamples, exact:
the trace step after which no continuation completes, and how many of
the reachable states (a violation ends a behaviour) can no longer
complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.cli import main
from serq.exploration import explore
from serq.load import load_path

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = {
    # nothing in these instances depends on a choice: doomed from the start
    "join_in_hold": ("initial", 0, 3, 3),
    "self_preempt": ("initial", 0, 5, 5),
    "hol_none": ("initial", 0, 46, 46),
    # chat#1 arrives drawing prompt=3, o=3: 3 blocks of a 2-block pool
    "theorem_no_fit": ("step", 1, 91, 179),
    # the second chat draws prompt=3, o=3 while the first did too: under
    # fifo both are preempted in turn
    "theorem_no_lifo": ("step", 2, 11, 158),
    # the iteration in which the parent spawns a child that draws prompt=3
    "theorem_no_join_rule": ("step", 3, 13, 18),
    # b takes `slot` while a holds `kv`: the lock-order deadlock is sealed
    "theorem_no_nesting": ("step", 2, 4, 18),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_point_of_no_return_exact(name):
    prog = load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program
    r = explore(prog)
    nr = r.no_return
    assert (nr.status, nr.step, nr.doomed, nr.states) == EXPECTED[name]


def test_no_return_action_theorem_no_fit():
    prog = load_path(ROOT / "instances" / "theorem_no_fit.sq", explorer=True).program
    r = explore(prog)
    assert r.trace[r.no_return.step].action_text.startswith(
        "arrive chat#1 (chat#1 draws prompt=3, chat#1 draws o=3)")


def test_passing_instance_has_none():
    prog = load_path(ROOT / "instances" / "theorem.sq", explorer=True).program
    assert explore(prog).no_return is None


def test_no_return_json_and_skip(capsys):
    inst = str(ROOT / "instances" / "theorem_no_join_rule.sq")
    assert main(["explore", inst, "--json", "--no-timing"]) == 10
    d = json.loads(capsys.readouterr().out)["point_of_no_return"]
    assert (d["status"], d["step"], d["doomed_states"], d["states"]) == ("step", 3, 13, 18)
    assert d["action"].startswith("iterate gpu (chat#2 draws prompt=3")
    assert main(["explore", inst, "--json", "--graph-limit", "0"]) == 10
    assert "point_of_no_return" not in json.loads(capsys.readouterr().out)
    # a graph cut before the answer is known says so
    assert main(["explore", inst, "--graph-limit", "5", "-q"]) == 10
    assert "point of no return: unknown (the state graph was cut at its max_states bound)" in capsys.readouterr().out


def test_graph_limit_must_be_non_negative(capsys):
    assert main(["explore", str(ROOT / "instances" / "join_in_hold.sq"), "--graph-limit", "-1"]) == 2
    assert "--graph-limit must be non-negative" in capsys.readouterr().err
