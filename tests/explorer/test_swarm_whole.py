"""A swarm (`serq explore --swarm N`) looks for non-progress cycles as
SPIN's does, and a search that explores the whole state space gives the
exhaustive verdict and says so: on every instance of the library, a
swarm's verdict is the exhaustive search's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.check import check
from explorer.model import ModelFactory
from explorer.strategies.swarm import search_once
from serq.check.model import Checks, SerqModel
from serq.cli import main
from serq.lang.load import load_path

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))


def factory(path, checks=None):
    prog = load_path(path, explorer=True).program
    return ModelFactory(SerqModel, (prog,), {"checks": checks or Checks.of_program(prog)})


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda p: p.stem)
def test_a_swarm_that_exhausts_gives_the_exhaustive_verdict(inst, capsys):
    """Search 0 has no depth bound and a budget of a million states: it
    explores every instance of the library whole, so the swarm's verdict is
    the exhaustive one (a pass, a livelock, a deadlock, a violation)."""
    code = main(["explore", str(inst), "--no-timing", "-q"])
    plain = capsys.readouterr().out
    if "SLO" in plain or "ttft" in inst.read_text().split("check", 1)[-1]:
        pytest.skip("a per-request SLO check is refused with --swarm")
    swarm_code = main(["explore", str(inst), "--swarm", "1", "--no-timing", "-q"])
    out = capsys.readouterr().out
    if swarm_code == 2:
        pytest.skip("refused with --swarm")
    assert swarm_code == code, out
    verdict = plain.split(":")[0]
    assert out.split(":")[0] == verdict
    if verdict == "pass":
        distinct = re.search(r"in (\d+) distinct states", plain).group(1)
        assert out.startswith(f"pass: no violation, deadlock or livelock in {distinct} distinct states: search 0 of "
                              "1 (seed 0, no depth bound) explored the whole state space, so the swarm's verdict is "
                              "exhaustive"), out


def test_a_depth_bound_that_cuts_is_no_proof(capsys):
    inst = ROOT / "instances" / "theorem.sq"
    assert main(["explore", str(inst), "--swarm", "2", "--max-depth", "3", "--no-timing", "-q"]) == 17
    out = capsys.readouterr().out
    assert "this is not a proof: a swarm search is incomplete (none explored the whole state space)" in out


def test_a_swarm_finds_a_livelock_that_replays(capsys):
    inst = ROOT / "instances" / "self_preempt.sq"
    assert main(["explore", str(inst), "--swarm", "2", "--no-timing", "-q"]) == 11
    out = capsys.readouterr().out
    assert out.startswith("livelock: a cycle of 3 steps that make no progress") and "found by search" in out
    assert "-- cycle starts here --" in out and "it explored the whole state space (5 states)" in out
    path = [ln for ln in out.splitlines() if ln.startswith("replay: ")][0].split()[1]
    assert main(["explore", str(inst), "--replay", path, "--no-timing"]) == 11
    assert "without progress" in capsys.readouterr().out


def test_a_livelock_within_a_budget():
    """A search cut by its budget still reports the non-progress cycle
    among the states it stored; not the whole space."""
    f = factory(ROOT / "instances" / "theorem_no_fit.sq", checks=Checks(livelock=True))
    got = [search_once(f, 0, seed, None, 120, None, False, check_livelock=True) for seed in range(6)]
    found = [g for g in got if g.kind == "livelock"]
    assert found and all(g.reason == "budget" and not g.whole for g in found)
    r = check(f, strategy="swarm", searches=2, seed=found[0].seed, max_states=120, check_deadlock=False)
    assert r.verdict == "livelock" and r.lasso_start is not None and r.exit_code == 11


def test_no_livelock_search_when_livelock_is_not_checked(capsys):
    inst = ROOT / "instances" / "self_preempt.sq"
    code = main(["explore", str(inst), "--check", "deadlock", "--no-timing", "-q"])
    assert capsys.readouterr().out.startswith("pass: ") and code == 0
    assert main(["explore", str(inst), "--check", "deadlock", "--swarm", "2", "--no-timing", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pass: no violation or deadlock in 5 distinct states: search "), out  # the first to end
