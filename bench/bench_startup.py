"""Start-up benchmark: the wall time of the commands that do no
simulation or search (`serq --help`, `serq fmt`, `serq compile`), and of
the two whose work is small next to their start-up with a warm numba
cache (`serq explore` of the 5-state instances/self_preempt.sq, target
<= 0.7 s; `serq run` of the 1,000-request vLLM-like trace of
bench/bench_sim.py, moderate regime, target <= 1 s in all), median of 5
runs each, in a fresh process every run.

    python bench/bench_startup.py                      # python -m serq, this checkout
    python bench/bench_startup.py --serq serq          # the installed `serq` command
    python bench/bench_startup.py --runs 9

Each line gives the median wall time and the median CPU time of the
process (user + system): on a machine shared with other work the wall
time grows with the load, the CPU time much less.

The instance of --help, fmt and compile is instances/vllm_chat.sq of
this checkout. One run of each command comes first, unmeasured: it fills
numba's cache if it is cold (bench/bench_cold_compile.py measures that),
and Python's bytecode cache, as an installed package has it: the
commands run with their bytecode cached in a directory of their own
(PYTHONPYCACHEPREFIX, even where PYTHONDONTWRITEBYTECODE is set, which
would make every command compile serq's sources again: about 0.25 s more;
--no-bytecode-cache measures that).
What a command imports is seen with `python -X importtime -m serq --help
2>&1 | sort -t'|' -k2 -n | tail`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
INSTANCE = str(ROOT / "instances" / "vllm_chat.sq")
COMMANDS = {"--help": ["--help"], "fmt": ["fmt", INSTANCE], "compile": ["compile", INSTANCE],
            "explore": ["explore", str(ROOT / "instances" / "self_preempt.sq")]}
TARGETS = {"explore": 0.7, "run": 1.0}  # seconds of wall time, warm cache (issue: start-up)


def cpu_of_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `cmd`."""
    c, t = cpu_of_children(), time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, env=env)
    if p.returncode not in (0, 10, 11, 12):  # a verdict's exit code is not a failure here
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode})")
    return time.perf_counter() - t, cpu_of_children() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serq", default=f"{sys.executable} -m serq",
                    help="the command that runs serq (default: this Python's `-m serq`)")
    ap.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="leave PYTHONDONTWRITEBYTECODE as it is (set: serq's sources compiled in every run)")
    a = ap.parse_args()
    prefix = shlex.split(a.serq)
    from bench_sim import INSTANCE as SIM, REGIMES

    with tempfile.TemporaryDirectory(prefix="serq-startup-") as d:
        env = None
        if not a.no_bytecode_cache:
            env = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(d) / "pycache"))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        trace = Path(d) / "vllm_1000.sq"
        trace.write_text(SIM.format(n=1000, **REGIMES["moderate"]))
        commands = dict(COMMANDS, run=["run", str(trace), "--no-progress"])
        print(f"{a.serq}: median of {a.runs} runs, seconds (CPU: user + system; on a busy machine the wall "
              "time grows, the CPU time much less); bytecode "
              f"{'as the environment says' if a.no_bytecode_cache else 'cached'}")
        for name, args in commands.items():
            timed(prefix + args, env)  # numba's and the bytecode's caches filled if they were cold
            walls, cpus = zip(*(timed(prefix + args, env) for _ in range(a.runs)))
            target = f"   target <= {TARGETS[name]} s wall" if name in TARGETS else ""
            print(f"  {name:<8} wall {statistics.median(walls):6.3f} (min {min(walls):.3f}, max {max(walls):.3f})"
                  f"   CPU {statistics.median(cpus):6.3f}{target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
