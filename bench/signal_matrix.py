"""The signal matrix: SIGINT and SIGTERM sent to `serq explore` (every
strategy), `serq run`, `serq check` and `serq sweep` at several moments,
and what each run did. A cell is bad when the run printed a traceback, did
not end within HANG seconds of the signal (it is then killed), exited with
another code than the one documented for a signal (16), or left a process
of its own behind.

The moments, each found by looking at the process, not by guessing a time:

- parse: as soon as serq's handlers are in place (its first statement,
  serq/__main__.py: SIGTERM caught, read from /proc), while it loads its
  modules and reads the instance (a signal in the interpreter's own start,
  the few tens of milliseconds before serq's first statement runs, meets
  Python's defaults: not serq's to handle);
- build: while the model of a workload of many sessions is built (its
  resident memory past the size of a run that has started, read from
  /proc, before any state is explored);
- search: in the search or the simulation (CPU time past what the start
  takes, with the process still running; the instance never ends);
- output: blocked writing its output (standard output, a pipe not read:
  the process waits in `pipe_write`; `serq run --trace`).

SIGINT goes to the process group, as Ctrl-C on a terminal sends it (the
workers ignore it); SIGTERM to the process alone, as `kill` sends it.

    python bench/signal_matrix.py [--quick] [--only SUBSTRING]

prints one line per cell and a summary: cells run, bad cells."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures import FOREVER  # noqa: E402

HANG = 60.0  # seconds a run may take to end after the signal
EXIT_INTERRUPTED = 16

MANY = """pool kv {{ cap 8; block 2; admit via gpu; }}
stage gpu {{ budget 4; serve (admitted); }}
session s {{ hold kv reserve 2 {{ prefill 2 growing kv; }} end; }}
workload {{ {n} x s; }}
"""

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

SWEEP = FOREVER.replace("pool kv { cap 6;", "const CAP = 6;\npool kv { cap CAP;")


def _status(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _status_hex(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def _cpu(pid: int) -> float:
    """CPU seconds of the run: its process and its workers (the processes
    of its session)."""
    total = 0.0
    for p in _session(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            total += (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def _wchan(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read().strip()
    except OSError:
        return ""


def _session(sid: int) -> list[int]:
    """Processes of the session `sid` still alive (the run's own)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            if int(parts[3]) == sid and parts[0] != "Z":
                out.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return out


def _wait_for(cond, proc, limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if cond():
            return True
        time.sleep(0.02)
    return False


def cell(argv: list[str], moment: str, sig: int, workdir: str, start_cpu: float) -> tuple[str, str]:
    """Run one cell: (status, detail)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out_r = subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-m", "serq", *argv], cwd=workdir, stdout=out_r, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)
    pid = proc.pid
    if moment == "parse":  # serq's handlers in place (its first statement): SIGTERM caught
        reached = _wait_for(lambda: _status_hex(pid, "SigCgt") >> (signal.SIGTERM - 1) & 1, proc, 30)
    elif moment == "build":
        reached = _wait_for(lambda: _status(pid, "VmRSS") > 700_000, proc, 120)  # kB: past a started run
    elif moment == "search":
        reached = _wait_for(lambda: _cpu(pid) > start_cpu + 1.5, proc, 180)
    else:  # output: blocked writing to the pipe nobody reads yet
        reached = _wait_for(lambda: "pipe_write" in _wchan(pid), proc, 180)
    if not reached:
        proc.kill()
        proc.communicate()
        return "skip", "the moment was not reached (the run ended first)"
    t0 = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(pid, sig)
    else:
        os.kill(pid, sig)
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(pid, signal.SIGKILL)
        proc.communicate()
        return "HANG", f"no end {HANG:.0f} s after the signal"
    took = time.monotonic() - t0
    time.sleep(0.3)
    left = _session(pid)
    err_s = err.decode(errors="replace")
    out_s = out.decode(errors="replace")
    first = (out_s.splitlines() or [""])[0][:90] if moment != "output" else "(output)"
    last_err = (err_s.strip().splitlines() or [""])[-1][:100]
    if "Traceback" in err_s:
        return "TRACEBACK", err_s.strip().splitlines()[-1][:160]
    if left:
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        return "LEFT", f"processes left behind: {left}"
    if proc.returncode != EXIT_INTERRUPTED:
        return "EXIT", f"exit {proc.returncode}: {first} | {last_err}"
    return "ok", f"{took:.1f}s  {first or last_err}"


def start_cpu(argv: list[str], workdir: str) -> float:
    """CPU seconds a run takes to start: that of the same command on a
    bound reached at once."""
    t = time.process_time()
    r = subprocess.run([sys.executable, "-c", "import resource, sys\nfrom serq.cli import main\nmain(sys.argv[1:])\n"
                        "u = resource.getrusage(resource.RUSAGE_SELF)\nprint(u.ru_utime + u.ru_stime, file=sys.stderr)",
                        *argv], cwd=workdir, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    del t
    try:
        return float(r.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 5.0


def cells(quick: bool) -> list[tuple[str, list[str], str]]:
    """(label, argv, moment)."""
    explore = {"bfs": [], "dfs": ["--strategy", "dfs"], "workers2": ["--workers", "2"],
               "partitions2": ["--partitions", "2"], "partitions2-workers2": ["--partitions", "2", "--workers", "2"],
               "swarm2": ["--swarm", "2"], "exact": ["--exact"], "worst": ["--worst", "ttft"],
               "theorem": ["--theorem"]}
    if quick:
        explore = {k: explore[k] for k in ("bfs", "workers2", "swarm2")}
    out = []
    for name, flags in explore.items():
        out.append((f"explore {name}", ["explore", "forever.sq", *flags], "parse"))
        if name not in ("worst", "theorem", "swarm2"):
            out.append((f"explore {name}", ["explore", "many.sq", *flags], "build"))
        out.append((f"explore {name}", ["explore", "forever.sq", *flags], "search"))
    out += [("run", ["run", "forever.sq", "--no-progress"], "parse"),
            ("run", ["run", "many.sq", "--no-progress"], "build"),
            ("run", ["run", "forever.sq", "--no-progress"], "search"),
            ("run --trace", ["run", "grow.sq", "--no-progress", "--trace"], "output"),
            ("check", ["check", "forever.sq"], "parse"),
            ("check", ["check", "forever.sq"], "search"),
            ("sweep", ["sweep", "sweep.sq", "--vary", "CAP=4..7"], "parse"),
            ("sweep", ["sweep", "sweep.sq", "--vary", "CAP=4..7"], "search"),
            ("sweep workers2", ["sweep", "sweep.sq", "--vary", "CAP=4..7", "--workers", "2"], "search")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="three strategies of explore only")
    ap.add_argument("--only", default="", help="cells whose label or moment contain this")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="serq-signals-")
    Path(workdir, "forever.sq").write_text(FOREVER)
    Path(workdir, "many.sq").write_text(MANY.format(n=1_000_000))
    Path(workdir, "sweep.sq").write_text(SWEEP)
    Path(workdir, "grow.sq").write_text(GROW)
    starts: dict[str, float] = {}
    ran, bad = 0, []
    t0 = time.monotonic()
    for label, argv, moment in cells(args.quick):
        if args.only and args.only not in f"{label} {moment}":
            continue
        key = argv[0]
        if moment == "search" and key not in starts:
            starts[key] = start_cpu(["explore", "forever.sq", "--max-states", "1"] if key == "explore" else
                                    [key, "forever.sq", "--time-limit", "0"] if key in ("run", "check") else
                                    ["sweep", "sweep.sq", "--vary", "CAP=4..4", "--max-states", "1"], workdir)
        for sig in (signal.SIGINT, signal.SIGTERM):
            status, detail = cell(argv, moment, sig, workdir, starts.get(key, 0.0))
            name = signal.Signals(sig).name
            print(f"{status:9} {label:28} {moment:7} {name:8} {detail}", flush=True)
            if status != "skip":
                ran += 1
            if status not in ("ok", "skip"):
                bad.append((label, moment, name, status))
    print(f"cells run: {ran}; bad: {len(bad)}; {time.monotonic() - t0:.0f} s")
    for b in bad:
        print("  bad:", *b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
