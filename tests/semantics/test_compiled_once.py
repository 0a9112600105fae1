"""The program is compiled once: a run lowers each program it checks into
the kernel's table one time (`semantics/lower.py`, `Lowered`), and
everything else — the search, the point of no return, the trace words,
costs, the deadlock diagnosis — reads that table. There is no second
compiler of expressions (`compile_expr` is gone from `ir/fold.py`: it is the constant folder only)."""

from __future__ import annotations

from pathlib import Path

import pytest

import serq.ir.fold
from serq.cli import main
from serq.semantics import lower

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"


@pytest.fixture
def lowerings(monkeypatch):
    """The programs lowered from here on, one entry per construction of
    the kernel's table."""
    made: list = []
    build = lower.Lowered.__init__

    def counted(self, program, ties):
        made.append(program)
        build(self, program, ties)

    monkeypatch.setattr(lower.Lowered, "__init__", counted)
    monkeypatch.setattr(lower, "_LOWERED", {})  # nothing lowered before counts
    return made


def test_there_is_no_second_compiler():
    assert not hasattr(serq.ir.fold, "compile_expr")


def test_a_failing_explore_lowers_its_program_once(lowerings, capsys):
    # a deadlock: the search, its counterexample's trace words, the deadlock
    # diagnosis and the point of no return all read the one table
    assert main(["explore", str(INSTANCES / "hol_none.sq"), "--no-timing"]) == 10
    out = capsys.readouterr().out
    assert out.startswith("deadlock:") and "point of no return:" in out and "replay: " in out, out
    assert len(lowerings) == 1


def test_worst_lowers_its_program_once(lowerings, capsys):
    assert main(["explore", "--worst", "ttft", str(INSTANCES / "hol_none.sq")]) == 0
    assert "ttft" in capsys.readouterr().out
    assert len(lowerings) == 1


@pytest.mark.parametrize("name,solos", [("theorem_no_nesting.sq", 2), ("theorem_no_fit.sq", 1)])
def test_the_theorem_lowers_each_distinct_program_once(lowerings, capsys, name, solos):
    # the hypotheses' solo runs check programs of their own (one per
    # distinct workload entry, that session alone, its pools made
    # infinite), each lowered once; the explorations of the conclusion
    # (`completes`, then perhaps with never-admitted sessions done) share
    # the instance's one table
    assert main(["explore", "--theorem", str(INSTANCES / name), "--no-timing"]) in (0, 10, 11)
    capsys.readouterr()
    assert len(lowerings) == solos + 1
    assert len({id(p) for p in lowerings}) == len(lowerings)  # no program twice
