"""The memory bound: `--memory SIZE` (or the default, from the memory
available) and a `MemoryError` end a search with the verdict "bound"
(reason "memory", exit 13) and the statistics so far."""

import contextlib
import io
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.runtime.memory import MemoryGuard, default_limit, parse_size, rss
from serq.cli import main
from tests.fixtures import FOREVER

ROOT = Path(__file__).resolve().parents[2]


def _warm(*args):
    """Run a command once without a limit on its address space, so that the
    compiled kernel is in numba's cache before a child under `ulimit -v`
    loads it: compiling it (once per install, on a clean machine) needs
    more memory than the limits below leave, and LLVM aborts the process
    when an allocation fails (SIGABRT, not a MemoryError). Run in this
    process: the cache is the same, without an interpreter's start-up."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(list(args))


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5G") == 3 << 29
    assert parse_size("2GiB") == parse_size("2gb") == 2 << 30
    for bad in ("400", "", "G", "-1G", "nanG", "1e400G", "12X"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_guard_and_default():
    assert rss() > 0
    assert MemoryGuard(1).over() and not MemoryGuard(None).over()
    assert default_limit() > rss()


@pytest.mark.parametrize("flags", [[], ["--workers", "2"], ["--strategy", "dfs"]], ids=["bfs", "workers2", "dfs"])
def test_memory_flag_stops_cleanly(tmp_path, capsys, flags):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    assert main(["explore", str(inst), "--memory", "1M", "--no-timing", *flags]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bound: no violation within the bound (memory=1MiB); exploration incomplete"
    assert out[-1].startswith("stats: generated=")


def test_memory_flag_needs_a_unit(capsys):
    assert main(["explore", "instances/self_preempt.sq", "--memory", "4000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--memory:1:1: error[E012]: a memory size needs a unit")


def test_memory_error_under_ulimit_is_a_clean_stop(tmp_path):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)

    def low():  # the address space of the child only: enough to load, not to explore for ever
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))

    _warm("explore", str(inst), "--strategy", "dfs", "--max-states", "100", "--no-timing")
    r = subprocess.run([sys.executable, "-m", "serq", "explore", str(inst), "--strategy", "dfs", "--memory", "100G",
                        "--no-timing"], cwd=ROOT, capture_output=True, text=True, preexec_fn=low, timeout=600)
    assert r.returncode == 13, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "bound: no violation within the bound (memory=MemoryError); exploration incomplete"
    assert int(lines[-1].split("distinct=")[1].split()[0]) > 0


# ---------------------------------------------------------------- the simulator

GROW = """pool kv { cap 2; block 1; admit via gpu; }
pool slot { cap 1; admit via gpu; }
stage gpu { budget 4; }
session sub { hold kv reserve 2 { prefill 1; decode 1000000; } end; }
session agent {
  while true {
    hold slot 1 { prefill 1; }
    spawn sub x 1000;
  }
}
workload { 1 x agent; }
"""


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_run_stops_at_the_memory_flag(tmp_path, capsys, cmd):
    inst = tmp_path / "grow.sq"
    inst.write_text(GROW)
    assert main([cmd, str(inst), "--memory", "1M", "--no-progress"]) == 13
    out, err = capsys.readouterr()
    if cmd == "run":
        assert "stopped: memory limit" in out.splitlines()[0]
        assert err.endswith(f"{inst}: stopped at the memory limit (1MiB) at 0 iterations simulated; "
                            "the report covers the run so far\n")
    else:
        assert out == f"{inst}: no violation before the memory limit (1MiB, 0 iterations simulated); not a pass\n"


def test_run_has_the_default_memory_bound(tmp_path, capsys, monkeypatch):
    import explorer.runtime.memory

    monkeypatch.setattr(explorer.runtime.memory, "default_limit", lambda: 1 << 20)
    inst = tmp_path / "grow.sq"
    inst.write_text(GROW)
    assert main(["run", str(inst), "--no-progress", "--json"]) == 13
    assert '"stopped": "memory limit"' in capsys.readouterr().out


def test_a_memory_error_in_a_run_is_a_clean_stop(tmp_path, monkeypatch):
    from serq.lang.load import load_text
    from serq.sim.report import Stats
    from serq.sim.simulator import MEMORY_LIMIT, SimConfig, Simulator

    real, calls = Stats.events, []

    def events(self, *a):
        calls.append(1)
        if len(calls) == 40:
            raise MemoryError
        return real(self, *a)

    monkeypatch.setattr(Stats, "events", events)
    r = Simulator(load_text(GROW, "grow.sq").program, SimConfig()).run()
    assert (r.stopped, r.limit) == (MEMORY_LIMIT, "MemoryError")
    assert r.now > 0 and len(r.state.sessions) > 1000  # the run so far: spawned sessions, simulated time


def test_run_under_ulimit_is_a_clean_stop(tmp_path):
    inst = tmp_path / "grow.sq"
    inst.write_text(GROW)

    def low():  # enough to load and start, not for the sessions the run spawns
        resource.setrlimit(resource.RLIMIT_AS, (700 << 20, 700 << 20))

    _warm("run", str(inst), "--time-limit", "0.5", "--no-progress")
    r = subprocess.run([sys.executable, "-m", "serq", "run", str(inst), "--memory", "100G", "--no-progress"],
                       cwd=ROOT, capture_output=True, text=True, preexec_fn=low, timeout=600)
    assert r.returncode == 13, r.stderr
    assert "Traceback" not in r.stderr
    assert "stopped: memory limit" in r.stdout.splitlines()[0]
    assert "programs" in r.stdout  # the report of the run so far
    assert "stopped at the memory limit (MemoryError) at " in r.stderr


def test_run_stops_at_the_time_limit(tmp_path, capsys):
    inst = tmp_path / "grow.sq"
    inst.write_text(GROW)
    assert main(["run", str(inst), "--time-limit", "0", "--no-progress"]) == 13
    out, err = capsys.readouterr()
    assert "stopped: time limit" in out.splitlines()[0] and "iterations: 0 simulated" in out
    assert "stopped at the time limit (0 s) at 0 iterations simulated" in err
    assert main(["check", str(inst), "--time-limit", "0"]) == 13
    assert "no violation before the time limit (0 s, 0 iterations simulated); not a pass" in capsys.readouterr().out
    for bad in ("-1", "nan"):
        assert main(["run", str(inst), "--time-limit", bad]) == 2
        assert "error[E012]: --time-limit must be" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [[], ["--workers", "2"]], ids=["one", "workers2"])
def test_a_model_too_large_to_build_is_a_clean_stop(tmp_path, capsys, monkeypatch, flags):
    # e.g. the rows of a workload of a million sessions under `ulimit -v`
    import serq.check.model

    def too_large(self, *a, **kw):
        raise MemoryError

    monkeypatch.setattr(serq.check.model.SerqModel, "__init__", too_large)
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    assert main(["explore", str(inst), "--no-timing", *flags]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("bound: no violation within the bound (memory=MemoryError); exploration incomplete: "
                      "reached while the model was being built (nothing explored)")
    assert out[1].startswith("stats: generated=0 distinct=0 ")


def test_no_address_space_reserved_ahead_under_ulimit():
    """Under `ulimit -v` the engine's arrays grow by doubling, without the
    reserve of BIG entries ahead (address space one array reserves is
    refused to the next: a run would stop sooner under a larger limit);
    without a limit they reserve it."""
    code = ("import numpy as np; from explorer.runtime.memory import BIG, _reserve, limited; "
            "from explorer.strategies.arrays.table import SUB0, _Store; st = _Store(None); st.relayout(); "
            "print(limited(), _reserve(np.zeros(10, np.int32), 11, 10).shape[0] == (20 if limited() else BIG), "
            "st.R == (2 if limited() else 16) * SUB0)")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = 4 << 30 if hard == resource.RLIM_INFINITY else min(4 << 30, hard)

    def low():
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))

    def unlimited():
        for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            resource.setrlimit(r, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    cases = [(low, "True True True")]
    data = resource.getrlimit(resource.RLIMIT_DATA)
    if hard == resource.RLIM_INFINITY and data[1] == resource.RLIM_INFINITY:
        cases.append((unlimited, "False True True"))
    for pre, want in cases:
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, preexec_fn=pre,
                           timeout=120)
        assert r.stdout.split() == want.split(), r.stderr


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_a_spawn_of_many_keeps_the_time_limit(tmp_path, capsys, cmd):
    """`spawn sub x 65536`: the step that spawns restarts once per drawn
    prompt length, thousands of times (20 s here); the time limit holds
    inside it."""
    import time

    inst = tmp_path / "spawn.sq"
    inst.write_text((ROOT / "instances" / "agent_subagents.sq").read_text()
                    .replace("spawn sub(task=1) x 2;", "spawn sub(task=1) x 65536;"))
    t0 = time.perf_counter()
    assert main([cmd, str(inst), "--time-limit", "1.5", "--no-progress"][: 5 if cmd == "run" else 4]) == 13
    assert time.perf_counter() - t0 < 5
    out, err = capsys.readouterr()
    assert "time limit (1.5 s" in out + err and "Traceback" not in err


def test_a_workload_of_many_sessions_keeps_the_limits(tmp_path):
    """100,000 sessions: each successor row is about 20 MiB, and one
    expansion's first buffers were 64 of them. They now start small and
    grow within the limits: the time limit and the memory both hold."""
    import json

    inst = tmp_path / "many.sq"
    inst.write_text((ROOT / "instances" / "agent_subagents.sq").read_text()
                    .replace("workload { 1 x agent; }", "workload { 100000 x agent; }"))
    code = ("import resource, sys\nfrom serq.cli import main\nr = main(sys.argv[1:])\n"
            "print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nsys.exit(r)")
    p = subprocess.run([sys.executable, "-c", code, "explore", str(inst), "--time-limit", "1", "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 13, p.stderr
    d = json.loads(p.stdout)
    # about 1 s alone; the margin allows a loaded machine (the workload uncut: minutes)
    assert d["bound_reason"] == "time_limit" and d["stats"]["elapsed"] < 5.0, d["stats"]
    # KiB: 2.6 GB before; about 0.5 GB warm, 1.3 GB when numba compiles in this process (a cold cache)
    assert int(p.stderr.split("maxrss ")[1].split()[0]) < 1800 * 1024


def test_swarm_keeps_the_memory_bound(tmp_path, capsys):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    assert main(["explore", str(inst), "--swarm", "2", "--memory", "1M", "--time-limit", "10"]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bound: no violation within the bound (memory=1MiB); exploration incomplete"
    assert out[1].startswith("stats: generated=") and " workers=2 " in out[1]
