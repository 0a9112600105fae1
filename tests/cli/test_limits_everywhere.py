"""Limits and interrupts in every mode that explores (--theorem, --worst,
serq sweep, serq ui), --exact, the collision estimate, and `serq check`'s
verdict as a library call."""

import re
from pathlib import Path

import pytest

from explorer.runtime.interrupt import Interrupted
from explorer.report import stats_line
from explorer.result import Stats
from serq.lang.load import load_path, load_text

from tests.fixtures import FOREVER  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

def forever():
    return load_text(FOREVER, "forever.sq", explorer=True).program


def _interrupt_after(monkeypatch, cls, method, n, sig="SIGINT"):
    real = getattr(cls, method)
    calls = [0]

    def wrapped(self, *a, **kw):
        calls[0] += 1
        if calls[0] == n:
            raise Interrupted(sig)
        return real(self, *a, **kw)
    monkeypatch.setattr(cls, method, wrapped)


# ------------------------------------------------------------------ --theorem
def test_theorem_solo_runs_keep_the_time_limit():
    from serq.check.theorem import check_theorem

    hs, result, line, code = check_theorem(forever(), time_limit=0.5)
    h = {x.code: x for x in hs}
    assert h["H3"].holds is None and h["H4"].holds is None
    assert "`s` alone: the time limit (0.5 s) came after" in h["H3"].witnesses[0]
    assert result.verdict == "bound" and result.bound_reason == "time_limit" and code == 13
    assert line == "no violation within the bound: the theorem's conclusion could not be checked fully"


def test_theorem_solo_runs_keep_max_states():
    from serq.check.theorem import check_theorem

    hs, result, line, code = check_theorem(forever(), max_states=50)
    h = {x.code: x for x in hs}
    assert h["H3"].witnesses == ["`s` alone has more than 50 states"]
    assert result.verdict == "bound" and result.bound_reason == "max_states" and code == 13


def test_theorem_interrupted_in_the_solo_runs(monkeypatch):
    from serq.check import theorem

    _interrupt_after(monkeypatch, theorem.Model, "transitions", 20, "SIGTERM")
    hs, result, line, code = theorem.check_theorem(forever())
    assert result.verdict == "interrupted" and code == 16
    assert result.message == "stopped by SIGTERM while checking the hypotheses; nothing explored yet"
    assert {x.code: x.holds for x in hs}["H3"] is None
    assert line == "interrupted: the theorem's conclusion could not be checked fully"


def test_theorem_solo_runs_walk_the_explorer():
    """measure goes through explorer.graph.walk, so its limits are the walk's."""
    import serq.check.theorem as th

    assert th.walk.__module__ == "explorer.graph.walk"
    peaks, bound_fail, undecided, growth, stopped = th.measure(
        load_path(ROOT / "instances" / "theorem.sq").program)
    assert peaks and not undecided and stopped is None


# ------------------------------------------------------------------ --worst
def test_worst_keeps_the_time_limit():
    from serq.check.worst import find_worst

    w = find_worst(forever(), "iterations", time_limit=0.3)
    assert not w.complete and w.bound_reason == "time_limit" and w.exit_code == 13


def test_worst_interrupted_keeps_the_graph_so_far(monkeypatch):
    from serq.check import worst

    _interrupt_after(monkeypatch, worst.MetricModel, "step", 200)
    w = worst.find_worst(forever(), "iterations")
    assert not w.complete and w.bound_reason == "SIGINT" and w.exit_code == 16
    text = worst.render_text(w)
    assert "interrupted by SIGINT: the state graph was cut there: a larger value may exist" in text
    assert w.states > 0


# ------------------------------------------------------------------ serq sweep
def test_sweep_interrupted_keeps_the_values_finished(monkeypatch, capsys):
    from serq.check import sweep as sw
    from serq.cli import main

    real = sw._explore_value

    def value(job):
        if job[3] == 3:
            raise Interrupted("SIGINT")
        return real(job)
    monkeypatch.setattr(sw, "_explore_value", value)
    path = ROOT / "instances" / "vllm_chat.sq"
    text = path.read_text()
    name = next(n for n, _ in load_path(path).program.consts)
    assert main(["sweep", str(path), "--vary", f"{name}=1..4", "--workers", "1", "--no-timing",
                 "--max-states", "2000"]) == 16
    out = capsys.readouterr().out
    assert "interrupted by SIGINT: the values above are those finished before it; the sweep is incomplete" in out
    rows = [x.split()[0] for x in out.splitlines()[2:] if re.match(r"\s*\d+  ", x)]
    assert rows == ["1", "2"]
    assert text  # the source is untouched


# ------------------------------------------------------------------ serq ui
def test_ui_violation_search_keeps_its_limits():
    from serq.view.ui import Explorer

    ex = Explorer(forever(), "forever.sq", time_limit=0.3)
    r = ex.violation()
    assert r.verdict == "bound" and r.bound_reason == "time_limit"
    ex = Explorer(forever(), "forever.sq", max_states=100)
    assert ex.violation().bound_reason == "max_states"


# ------------------------------------------------------------------ --exact
@pytest.mark.parametrize("inst", sorted(p.name for p in (ROOT / "instances").glob("*.sq")))
def test_exact_gives_the_same_counts_verdict_and_trace(inst):
    from serq.check.explore import explore

    from explorer.report import render_text

    prog = load_path(ROOT / "instances" / inst, explorer=True).program
    a = explore(prog, max_states=20_000)
    b = explore(prog, max_states=20_000, exact=True)
    assert (b.verdict, b.kind, b.stats.distinct, b.stats.generated, b.stats.max_depth, b.replay_path) == \
        (a.verdict, a.kind, a.stats.distinct, a.stats.generated, a.stats.max_depth, a.replay_path)
    # the whole text: trace, diagnosis, point of no return (computed on the exact identities)
    assert render_text(b, with_timing=False) == render_text(a, with_timing=False)
    assert b.stats.exact and b.stats.collision_probability == 0 and not a.stats.exact


def test_exact_identities_never_collide():
    from explorer.stores.exact import Exact

    class M:
        capabilities = frozenset({"exact_key"})

        def exact_key(self, s):
            return bytes([s % 3])
    e = Exact(M())
    assert [e.fingerprint(s) for s in (0, 1, 2, 3, 4)] == [1, 2, 3, 1, 2]
    assert not hasattr(e, "array_expand")


def test_exact_with_workers_is_a_flag_error(capsys):
    from serq.cli import main

    assert main(["explore", "instances/theorem.sq", "--exact", "--workers", "2"]) == 2
    assert "--exact explores in one process" in capsys.readouterr().err


def test_exact_on_the_command_line(capsys):
    from serq.cli import main

    assert main(["explore", "instances/theorem.sq", "--exact"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("fp_collision=0 (exact)")


# ------------------------------------------------------------------ collisions
def test_collision_estimate():
    st = Stats(generated=4_000_000, distinct=1_000_000)
    assert st.collision_probability == pytest.approx(1e6 * 3e6 / 2**64)
    st = Stats(generated=10, distinct=10)
    assert st.collision_probability == pytest.approx(10 * 9 / 2**65)
    assert Stats().collision_probability == 0
    assert Stats(generated=10**12, distinct=10**11).collision_probability == 1.0
    assert stats_line(Stats(generated=4_000_000, distinct=1_000_000)).endswith(" fp_collision=1.6e-07")
    assert "fp_collision" not in stats_line(Stats(), with_timing=False)
    assert stats_line(Stats(exact=True)).endswith(" fp_collision=0 (exact)")


# ------------------------------------------------------------------ serq check's verdict
def _sim(text_or_path, **cfg):
    from serq.sim.simulator import SimConfig, Simulator

    prog = (load_path(text_or_path) if isinstance(text_or_path, Path) else load_text(text_or_path, "x.sq")).program
    return Simulator(prog, SimConfig(stop_on_violation=True, **cfg)).run()


def test_judge_ok_bound_deadlock_violation():
    from serq.sim.checking import judge
    from serq.check.model import Checks

    j = judge(_sim(ROOT / "instances" / "theorem.sq"), label="t.sq", seed=0, max_steps=10_000)
    assert j.verdict == "pass" and j.exit_code == 0 and j.lines[0].startswith(
        "t.sq: ok: no deadlock, failed assert, invariant or conservation violation")
    j = judge(_sim(FOREVER, max_steps=20), label="f.sq", seed=0, max_steps=20)
    assert j.verdict == "bound" and j.exit_code == 13 and j.lines[0].startswith(
        "f.sq: no violation within the step limit (20 actions, ")
    j = judge(_sim(ROOT / "instances" / "join_in_hold.sq"), label="j.sq", seed=0, max_steps=10_000)
    assert j.verdict == "deadlock" and j.exit_code == 10 and "can never move" in j.lines[0]
    prog = load_path(ROOT / "instances" / "self_preempt.sq").program
    j = judge(_sim(ROOT / "instances" / "self_preempt.sq", checks=Checks.of_program(prog, ["stuck"])),
              label="s.sq", seed=0, max_steps=10_000)
    assert j.verdict == "violation" and j.exit_code == 12 and j.lines[0].startswith("s.sq: FAIL: stuck at ")
    # `check livelock;`: stuck is a note, and the no-progress watchdog is never a pass
    j = judge(_sim(ROOT / "instances" / "self_preempt.sq"), label="s.sq", seed=0, max_steps=100_000)
    assert j.verdict == "bound" and j.exit_code == 13 and j.lines[0].endswith("a livelock, most likely "
                                                                              "(`serq explore` decides); not a pass")


def test_durations_are_readable():
    from serq.durations import duration_text

    assert duration_text(0) == "0.000000 s"
    assert duration_text(250) == "250 ns"
    assert duration_text(3_500) == "3.5 µs"
    assert duration_text(1_500_000) == "0.001500 s"
    assert duration_text(12_500_000_000) == "12.500000 s"


def test_a_nanosecond_run_does_not_report_zero_seconds(capsys):
    from serq.cli import main
    import tempfile

    src = """
pool kv { cap 8; block 2; admit via gpu; }
stage gpu { budget 4; cost 2; }
session s { hold kv { prefill 2 on gpu; } }
workload { 2 x s every 2; }
"""
    with tempfile.NamedTemporaryFile("w", suffix=".sq", delete=False) as f:
        f.write(src)
    assert main(["run", f.name]) == 0
    out = capsys.readouterr().out
    assert "simulated 0.000000 s" not in out and " ns  stopped: done" in out, out


def test_one_stuck_message():
    """The simulator, the explorer's verdict, its trace and `serq run --trace`
    say it with the same words (serq.words.stuck_text)."""
    import ast

    from serq.words import stuck_text

    assert stuck_text("chat#1") == "chat#1 was preempted again without passing the position of its previous preemption"
    for f in ("sim/simulator.py", "semantics/model.py", "check/model.py", "sim/report.py"):
        src = (ROOT / "serq" / f).read_text()
        assert "preempted again" not in src and "is stuck" not in src, f
        assert "stuck_text(" in src, f
    ast.parse((ROOT / "serq" / "words.py").read_text())


def test_worst_memory_error_keeps_the_graph_so_far(monkeypatch):
    from serq.check import worst

    real = worst.MetricModel.step
    calls = [0]

    def step(self, *a):
        calls[0] += 1
        if calls[0] == 100:
            raise MemoryError
        return real(self, *a)
    monkeypatch.setattr(worst.MetricModel, "step", step)
    w = worst.find_worst(forever(), "iterations")
    assert not w.complete and w.bound_reason == "memory" and w.exit_code == 13
    assert "the state graph was cut at its memory bound: a larger value may exist" in worst.render_text(w)


def test_sweep_interrupted_before_any_value(monkeypatch, capsys):
    from serq.check import sweep as sw
    from serq.cli import main

    def value(job):
        raise Interrupted("SIGTERM")
    monkeypatch.setattr(sw, "_explore_value", value)
    assert main(["sweep", str(ROOT / "instances" / "vllm_chat.sq"), "--vary", "BS=1..4", "--workers", "1"]) == 16
    out = capsys.readouterr().out
    assert out.splitlines()[1:] == ["BS  verdict    states  message", "no value has a verdict",
                                    "interrupted by SIGTERM: the values above are those finished before it; "
                                    "the sweep is incomplete"]


def test_theorem_time_limit_on_the_command_line(tmp_path, capsys):
    from serq.cli import main

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    assert main(["explore", str(inst), "--theorem", "--time-limit", "0.5", "--no-timing"]) == 13
    out = capsys.readouterr().out
    assert out.startswith("no violation within the bound: the theorem's conclusion could not be checked fully\n")
    assert "unknown  `s` alone: the time limit (0.5 s) came after" in out
    assert "bound: the time limit (0.5 s) came while checking the hypotheses; nothing explored yet" in out


# One state with 2^16 successors: every answer of sixteen draws in one step.
WIDE = """
pool kv { cap 6; block 2; admit via gpu; }
stage gpu { budget 2; }
session s {
  let g = 0;
  repeat 16 { draw y in {1, 2}; set g = g + y; }
  turn;
}
workload { 2 x s; }
"""


@pytest.mark.parametrize("flags", [[], ["--workers", "2"], ["--strategy", "dfs"]], ids=["bfs", "workers2", "dfs"])
def test_the_time_limit_holds_inside_one_expansion(tmp_path, capsys, flags):
    from serq.cli import main

    f = tmp_path / "wide.sq"
    f.write_text(WIDE)
    limit = "0.01" if "dfs" in flags else "0"
    assert main(["explore", str(f), "--time-limit", limit, "--no-timing", *flags]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"bound: no violation within the bound (time_limit={float(limit)}); exploration incomplete"
    generated = int(out[1].split("generated=")[1].split()[0])
    assert generated <= 1 + 2**16 - 256  # cut inside the first state's expansion (2^16 successors)


def test_the_memory_bound_holds_inside_one_expansion(tmp_path, capsys):
    from serq.cli import main

    f = tmp_path / "wide.sq"
    f.write_text(WIDE)
    assert main(["explore", str(f), "--memory", "1M", "--no-timing"]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bound: no violation within the bound (memory=1MiB); exploration incomplete"
    assert out[1].startswith("stats: generated=1 ")


def test_worst_keeps_the_time_limit_inside_one_expansion():
    from serq.check.worst import find_worst

    w = find_worst(load_text(WIDE, "wide.sq").program, "iterations", time_limit=0.01)
    assert (w.complete, w.bound_reason, w.exit_code) == (False, "time_limit", 13)
    assert w.states < 2**16


# ------------------------------------------------------------------ partitions

@pytest.mark.parametrize("workers", ["1", "2"])
def test_partitions_check_the_memory_bound_inside_a_level(tmp_path, capsys, monkeypatch, workers):
    """The memory bound is exceeded while the level at depth 2 is being
    expanded: the search stops inside that level (its states are not
    counted), not at the level's end."""
    import json

    from explorer.runtime.memory import MemoryGuard
    from explorer.strategies.partitions.partition import Partition
    from serq.cli import main
    from tests.fixtures import TWO_CHATS

    over = [False]
    real = Partition.expand

    def expand(self, depth):
        over[0] = over[0] or depth == 2
        return real(self, depth)
    monkeypatch.setattr(Partition, "expand", expand)
    monkeypatch.setattr(MemoryGuard, "over", lambda self: over[0])
    f = tmp_path / "two.sq"
    f.write_text(TWO_CHATS)
    assert main(["explore", str(f), "--partitions", "2", "--workers", workers, "--memory", "64G", "--json"]) == 13
    d = json.loads(capsys.readouterr().out)
    assert d["bound_reason"] == "memory" and d["stats"]["max_depth"] == 2


def test_partitions_keep_the_time_limit_inside_a_level(tmp_path, capsys):
    """Levels that grow ninefold: the search stops within a few tenths of a
    second of its time limit, not at the end of the level under way."""
    import json

    from serq.cli import main

    f = tmp_path / "grow.sq"
    f.write_text("""
pool kv { cap 64; block 2; admit via gpu; }
stage gpu { budget 64; }
session s { let g = 0; while true { draw y in 1..6; set g = g + y; turn; } }
workload { 6 x s; }
""")
    assert main(["explore", str(f), "--partitions", "2", "--time-limit", "1", "--json"]) == 13
    d = json.loads(capsys.readouterr().out)
    # a level uncut would end seconds later; the margin allows a loaded machine
    assert d["bound_reason"] == "time_limit" and d["stats"]["elapsed"] < 3.0, d["stats"]


@pytest.mark.parametrize("flags", [[], ["--strategy", "dfs"]], ids=["bfs", "dfs"])
def test_one_expansion_of_a_million_successors_ends_at_the_time_limit(tmp_path, capsys, flags):
    """One state with 2^20 successors: its buffers grow by attempts, and the
    last attempt before the limit is sized to end near it (it overran the
    limit by several seconds)."""
    import json

    from serq.cli import main

    f = tmp_path / "wide20.sq"
    f.write_text(WIDE.replace("repeat 16", "repeat 20"))
    assert main(["explore", str(f), "--time-limit", "1.5", "--json", *flags]) == 13
    d = json.loads(capsys.readouterr().out)
    # it overran to 5 s; the margin allows a loaded machine
    assert d["bound_reason"] == "time_limit" and d["stats"]["elapsed"] < 4.0, d["stats"]
