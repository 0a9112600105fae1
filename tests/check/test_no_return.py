"""The point of no return of the instance library's counterexamples, exact:
the trace step after which no continuation completes, and how many of
the reachable states (a violation ends a behaviour) can no longer
complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.graph.forward import forward_no_return
from serq.cli import main
from serq.check.model import SerqModel
from serq.check.explore import Completion, explore, mark_no_return
from serq.lang.load import load_path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    # nothing in these instances depends on a choice: doomed from the start
    "join_in_hold": ("initial", 0, 3, 3),
    "self_preempt": ("initial", 0, 5, 5),
    "hol_none": ("initial", 0, 46, 46),
    # chat#1 arrives drawing prompt=3, o=3: 3 blocks of a 2-block pool
    "theorem_no_fit": ("step", 1, 91, 179),
    # the second chat draws prompt=3, o=3 while the first did too: under
    # fifo both are preempted in turn (a stuck state is no end of a
    # behaviour: the graph goes on past it)
    "theorem_no_lifo": ("step", 2, 13, 160),
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
    # a graph cut before the answer is known: forward searches from the
    # trace's states answer within the same bound (18 states in all)...
    # (6 states visited: each search is the one search, depth first with its
    # first successor first, a visitor stopping it at the first completion;
    # the searches' own loop took the last successor first and visited 14)
    assert main(["explore", inst, "--graph-limit", "15", "-q"]) == 10
    out = capsys.readouterr().out
    assert "  -- point of no return: no continuation of step 3 completes --" in out
    assert ("from step 2 some continuation still completes, from step 3 none does (found by forward searches "
            "from the trace's states, 6 states visited: the whole state graph is past --graph-limit 15)") in out
    # ...or say the flag that cut them too, and what they decided
    assert main(["explore", inst, "--graph-limit", "5", "-q"]) == 10
    assert ("point of no return: unknown (the state graph and the forward searches from the trace's states were "
            "cut by --graph-limit 5, after 5 states; from step 3 on none completes)") in capsys.readouterr().out
    assert main(["explore", inst, "--graph-limit", "5", "--json"]) == 10
    d = json.loads(capsys.readouterr().out)["point_of_no_return"]
    assert (d["status"], d["method"], d["cut_by"], d["searched_states"]) == ("unknown", "forward", "--graph-limit 5", 5)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_forward_search_agrees_with_the_whole_graph(name):
    prog = load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program
    r = explore(prog)
    nr = forward_no_return(Completion(SerqModel(prog)), [s.state for s in r.trace])  # as mark_no_return runs it
    assert (nr.status, nr.step) == EXPECTED[name][:2]
    assert nr.searched <= EXPECTED[name][3]


def test_graph_limit_must_be_non_negative(capsys):
    assert main(["explore", str(ROOT / "instances" / "join_in_hold.sq"), "--graph-limit", "-1"]) == 2
    assert "--graph-limit must be non-negative" in capsys.readouterr().err


def test_no_graph_when_the_search_alone_stored_more_than_the_limit(monkeypatch):
    """theorem_no_fit's search stores 179 states before its counterexample:
    a graph of at most 100 would be cut, so only the forward searches run."""
    import serq.check.explore as exploration

    def no_graph(*_a, **_k):
        raise AssertionError("the graph was built")

    prog = load_path(ROOT / "instances" / "theorem_no_fit.sq", explorer=True).program
    monkeypatch.setattr(exploration, "point_of_no_return", no_graph)
    r = explore(prog, graph_limit=100)
    assert r.stats.distinct == 179
    nr = r.no_return
    assert (nr.status, nr.step, nr.method, nr.cut_by) == ("step", 1, "forward", "--graph-limit 100")
    with pytest.raises(AssertionError, match="the graph was built"):
        explore(prog, graph_limit=200)  # within the limit: the whole graph, for its counts


def test_the_memory_bound_holds_for_the_point_of_no_return():
    """The graph and the forward searches are cut by the run's memory bound
    (here one byte: the first reading is past it), named in the answer."""
    prog = load_path(ROOT / "instances" / "theorem_no_fit.sq", explorer=True).program
    r = explore(prog, graph_limit=0)
    assert r.no_return is None and r.trace
    mark_no_return(prog, r, memory_limit=1)
    nr = r.no_return
    assert (nr.status, nr.method, nr.cut_by) == ("unknown", "forward", "the memory bound"), nr
