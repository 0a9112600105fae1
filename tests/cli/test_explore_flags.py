"""Every flag of `serq explore` that a mode (--worst, --theorem, --replay,
--swarm) cannot honour is refused, located in its value (E012, exit 2),
before any work; the flags a mode honours still run."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq.cli import main
from serq.cli.explore_flags import GIVEN, REFUSED

ROOT = Path(__file__).resolve().parents[2]
INST = str(ROOT / "instances" / "theorem.sq")

MODES = {"--worst": ["--worst", "ttft"], "--theorem": ["--theorem"], "--replay": ["--replay", "0"],
         "--swarm": ["--swarm", "2"], "--probability": ["--probability", "stuck"]}
# a value for each flag that the mode cannot honour
VALUES = {"--strategy dfs": ["--strategy", "dfs"],
          "--max-depth": ["--max-depth", "3"], "--memory": ["--memory", "1G"],
          "--check": ["--check", "deadlock"], "--workers": ["--workers", "2"], "--exact": ["--exact"],
          "--graph-limit": ["--graph-limit", "7"], "--progress": ["--progress"],
          "--replay": ["--replay", "0/0"], "--coverage": ["--coverage"], "--reduce": ["--reduce", "ranks"]}
CASES = [(mode, flag) for mode, flags in REFUSED.items() for flag in flags]


def test_every_refused_flag_has_a_value_here():
    assert set(VALUES) == set(GIVEN) == {f for _m, f in CASES}  # no flag known here that no mode refuses


@pytest.mark.parametrize("mode, flag", CASES, ids=[f"{m[2:]}-{f[2:]}" for m, f in CASES])
def test_a_flag_a_mode_cannot_honour_is_refused(capsys, mode, flag):
    argv = ["explore", INST, *MODES[mode], *VALUES[flag]]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    name, value = flag.split()[0], VALUES[flag][-1]
    assert out == ""
    assert err.startswith(f"{name}:1:1: error[E012]: {name} cannot be honoured with {mode}: "), err
    assert f"\n  {value}\n  ^" in err and "drop " + name in err


@pytest.mark.parametrize("mode", [None, "--worst", "--theorem", "--replay"])
def test_seed_without_swarm_is_refused(capsys, mode):
    argv = ["explore", INST, *(MODES[mode] if mode else []), "--seed", "3"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("--seed:1:1: error[E012]: --seed chooses the searches of --swarm; "
                                              "drop --seed, or add --swarm N")


@pytest.mark.parametrize("argv, code", [
    (["--worst", "ttft", "--strategy", "bfs", "--workers", "1", "--max-states", "100000", "--time-limit", "60",
      "--memory", "2G", "--ties", "seq", "--no-symmetry", "--json", "-q", "--no-timing"], 0),
    (["--replay", "0/0", "--check", "deadlock", "--ties", "seq", "--no-symmetry", "--no-timing",
      "--max-states", "40", "--time-limit", "9"], 0),
    (["--swarm", "1", "--seed", "5", "--max-depth", "30", "--max-states", "50", "--no-timing", "-q"], 17),
], ids=["worst", "replay", "swarm"])
def test_the_flags_a_mode_honours_run(capsys, argv, code):
    assert main(["explore", INST, *argv]) == code


def test_theorem_honours_graph_limit(capsys):
    # the theorem's counterexample gets its point of no return within
    # --graph-limit states: 1 state is too few to say
    inst = str(ROOT / "instances" / "theorem_no_lifo.sq")
    assert main(["explore", inst, "--theorem", "--no-timing", "--graph-limit", "1"]) != 2
    out = capsys.readouterr().out
    assert "point of no return: unknown" in out
    main(["explore", inst, "--theorem", "--no-timing"])
    assert "point of no return: step" in capsys.readouterr().out
