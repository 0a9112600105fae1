"""SIGINT (Ctrl-C) and SIGTERM sent to real `serq explore` and `serq run`
processes: the verdict "interrupted" (exit 16) with the statistics so far,
never a traceback, no worker left behind. The signal is sent once the
process shows it is under way (a progress line, a trace line), so nothing
here depends on how fast the machine is."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from serq.lang.load import load_text
from serq.sim.simulator import INTERRUPTED, SimConfig, Simulator
from explorer.runtime.interrupt import Interrupted

from tests.fixtures import FOREVER, alive, children  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

def _interrupt(p, sig, ready=lambda: None, timeout: float = 120):
    """ready() (it waits until p is under way; what it returns is kept),
    then `sig` to p: (ready's value, p's stdout, p's stderr). p is killed
    if it outlives the test."""
    try:
        got = ready()
        p.send_signal(sig)
        out, err = p.communicate(timeout=timeout)
        return got, out, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _progress_lines(p, n: int) -> None:
    """Wait for the n-th progress line: the search is under way."""
    seen = 0
    for line in p.stderr:
        if line.startswith("exploring:"):
            seen += 1
            if seen == n:
                return
    raise AssertionError(f"{seen} progress lines, not {n}")


def _start(tmp_path, *argv):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "serq", *argv[:1], str(inst), *argv[1:]], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("flags", [[], ["--workers", "2"], ["--strategy", "dfs"]], ids=["bfs", "workers2", "dfs"])
def test_explore_interrupted(tmp_path, sig, flags):
    p = _start(tmp_path, "explore", "--progress", *flags)

    def ready():
        _progress_lines(p, 1)  # the search loop is under way (its first line comes after a second of it)
        return children(p.pid)  # worker processes, if any (serq models expand on threads)

    kids, out, err = _interrupt(p, sig, ready)
    _interrupted(p, out, err, sig, workers=2 if "--workers" in flags else 1)
    assert not [k for k in kids if alive(k)]  # workers stopped and joined


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_explore_on_disk_interrupted_leaves_no_file(tmp_path, sig):
    """The disk mode's files (a directory of its own under --disk DIR) are
    removed when a signal stops the search."""
    disk = tmp_path / "disk"
    p = _start(tmp_path, "explore", "--progress", "--check", "deadlock", "--disk", str(disk))

    def ready():
        _progress_lines(p, 2)
        return os.listdir(disk)  # the run's directory, during the search

    during, out, err = _interrupt(p, sig, ready)
    _interrupted(p, out, err, sig, workers=1)
    assert len(during) == 1 and during[0].startswith("serq-disk-") and os.listdir(disk) == []


def _interrupted(p, out: str, err: str, sig, workers: int) -> None:
    """An exploration stopped by `sig`: exit 16, no traceback, the verdict
    line and statistics that agree on the distinct states."""
    assert p.returncode == 16, (out, err)
    assert "Traceback" not in err
    lines = out.splitlines()
    m = re.fullmatch(rf"interrupted: stopped by {sig.name} after (\d+) distinct states, none of them a "
                     r"violation; exploration incomplete", lines[0])
    assert m, out
    st = re.match(r"stats: generated=(\d+) distinct=(\d+) queue=(\d+) max_depth=(\d+) .* workers=(\d+)", lines[-1])
    assert st, out
    assert int(st[2]) == int(m[1]) > 0 and int(st[1]) >= int(st[2]) and int(st[4]) > 0, out
    assert int(st[5]) == workers, out


def test_explore_interrupted_json(tmp_path):
    import json

    p = _start(tmp_path, "explore", "--progress", "--json")
    _, out, err = _interrupt(p, signal.SIGINT, lambda: _progress_lines(p, 1))
    assert out.strip(), f"no JSON on stdout (exit {p.returncode}); stderr:\n{err}"
    d = json.loads(out)
    assert p.returncode == 16 and d["verdict"] == "interrupted" and d["exit_code"] == 16
    assert d["bound_reason"] == "SIGINT" and d["stats"]["distinct"] > 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_interrupted(tmp_path, sig):
    p = _start(tmp_path, "run", "--trace")

    def ready():  # 100 trace lines: the run is under way
        for n, _line in enumerate(p.stdout):
            if n == 100:
                return

    _, out, err = _interrupt(p, sig, ready)
    assert p.returncode == 16, err
    assert "Traceback" not in err
    assert "stopped: interrupted" in out
    assert f"interrupted by {sig.name} at 0 iterations simulated; the report covers the run so far" in err
    # the report counts what the run did before the signal: turns taken, drawn values
    assert re.search(r"│ s +│ +2 │ +0 │ +0 │ +- │ +- │ +[1-9]\d* │", out), out


def _interrupting_sim(cfg_kw, after=50):
    prog = load_text(FOREVER, "forever.sq").program
    n = [0]

    def trace(*a):
        n[0] += 1
        if n[0] == after:
            raise Interrupted("SIGTERM")
    return Simulator(prog, SimConfig(trace=trace, **cfg_kw))


def test_simulator_interrupt_is_a_stop_with_the_run_so_far():
    r = _interrupting_sim({}).run()
    assert r.stopped == INTERRUPTED and r.signal == "SIGTERM"
    assert r.stats.ended_total == 0


def test_check_interrupted_is_not_ok(monkeypatch, capsys, tmp_path):
    from serq.sim import simulator as sim_cli  # `serq check` imports it when it runs

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    real = sim_cli.Simulator

    def sim(program, cfg):
        n = [0]

        def trace(*a):
            n[0] += 1
            if n[0] == 50:
                raise Interrupted("SIGINT")
        cfg.trace = trace
        return real(program, cfg)

    monkeypatch.setattr(sim_cli, "Simulator", sim)
    from serq.cli import main

    assert main(["check", str(inst)]) == 16
    out = capsys.readouterr().out
    assert "interrupted by SIGINT: no violation in 0 iterations simulated before it; not a pass" in out
    assert "ok" not in out.split(":")[1]


def test_interrupt_inside_compiled_code_is_an_interrupt():
    """A signal whose handler runs while a compiled function returns comes
    out as CPython's `SystemError: ... returned a result with an exception
    set`, the interrupt as its cause: the engines read it as the interrupt."""
    from explorer.runtime.interrupt import interrupt_of

    sig = Interrupted("SIGTERM")
    try:
        try:
            raise sig
        except Interrupted as cause:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from cause
    except SystemError as e:
        assert interrupt_of(e) is sig
    assert interrupt_of(sig) is sig
    with pytest.raises(SystemError, match="other"):
        interrupt_of(SystemError("other"))


def test_simulator_reads_a_wrapped_interrupt_as_interrupted():
    prog = load_text(FOREVER, "forever.sq").program
    n = [0]

    def trace(*a):
        n[0] += 1
        if n[0] == 50:
            try:
                raise Interrupted("SIGTERM")
            except Interrupted as cause:
                raise SystemError("returned a result with an exception set") from cause
    r = Simulator(prog, SimConfig(trace=trace)).run()
    assert r.stopped == INTERRUPTED and r.signal == "SIGTERM"


def _catches_sigterm_before_numba(pid: int) -> bool:
    """The process handles SIGTERM (Python's default leaves it alone) while
    numba, the heaviest of its imports, is not loaded yet."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M)[1], 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1) and "numba" not in maps and "llvmlite" not in maps


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_loading_is_an_interrupt(tmp_path, sig):
    """The handlers are in place before the heavy imports: a signal sent
    while the program is still loading ends it with exit 16, no traceback."""
    import time

    p = _start(tmp_path, "explore")

    def ready():
        t0 = time.monotonic()
        while not _catches_sigterm_before_numba(p.pid):
            assert p.poll() is None and time.monotonic() - t0 < 30, "no handler before the heavy imports"
            time.sleep(0.001)

    _, out, err = _interrupt(p, sig, ready)
    assert p.returncode == 16, err
    assert "Traceback" not in err and f"interrupted by {sig.name}" in err


def test_the_early_exit_code_is_the_interrupted_one():
    from serq.__main__ import EXIT_INTERRUPTED
    from explorer.runtime.verdict import EXIT_INTERRUPTED as engine

    assert EXIT_INTERRUPTED == engine


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_swarm_interrupted_gives_its_statistics(tmp_path, sig):
    """A signal stops the swarm's searches; their counts so far are reported
    as in every other mode, and no search process is left behind."""
    import time

    p = _start(tmp_path, "explore", "--swarm", "2")

    def ready():
        t0 = time.monotonic()
        while len(kids := children(p.pid)) < 2:  # both searches forked: the swarm is under way
            assert p.poll() is None and time.monotonic() - t0 < 60, "the swarm never started"
            time.sleep(0.01)
        time.sleep(0.3)
        return kids

    kids, out, err = _interrupt(p, sig, ready, timeout=60)
    _interrupted(p, out, err, sig, workers=2)
    assert not [k for k in kids if alive(k)]
