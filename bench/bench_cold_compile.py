"""Cold compile: the CPU time of a first `serq explore` on a machine
whose numba cache is empty (the kernel and the explorer's compiled
functions are compiled, once per install), against the same command with
the cache warm.

    python bench/bench_cold_compile.py                 # instances/self_preempt.sq
    python bench/bench_cold_compile.py --runs 3 --instance instances/vllm_chat.sq

Each cold run gets a fresh, empty cache directory (NUMBA_CACHE_DIR), so
nothing of the user's cache is touched. Prints the median CPU (user +
system, the process and its children) and wall time of the cold and the
warm runs. The target: a cold compile of at most 30 s of CPU (how the
kernel is compiled: serq/semantics/kernel/jit.py; the figures:
docs/explorer.md, "Compiling the kernel, once per install"). Where the time
goes, function by function: numba's event API (`numba.core.event`, a
listener on "numba:compile") over `explorer.runtime.compiled.load()`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 10, 11, 12, 13):
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--instance", default="instances/self_preempt.sq")
    a = ap.parse_args()
    cmd = [sys.executable, "-m", "serq", "explore", a.instance, "--no-timing"]
    cold, warm = [], []
    for _ in range(a.runs):
        with tempfile.TemporaryDirectory(prefix="serq-cold-") as d:
            env = dict(os.environ, NUMBA_CACHE_DIR=d, PYTHONPATH=str(ROOT))
            cold.append(run(cmd, env))
            warm.append(run(cmd, env))
    for name, xs in (("cold", cold), ("warm", warm)):
        cpu = statistics.median(x[0] for x in xs)
        wall = statistics.median(x[1] for x in xs)
        print(f"{name}: {cpu:7.1f} s CPU  {wall:7.1f} s wall  ({len(xs)} run{'s' if len(xs) > 1 else ''}: "
              f"serq explore {a.instance})")
    print(f"cold compile: {statistics.median(x[0] for x in cold) - statistics.median(x[0] for x in warm):.1f} s CPU "
          "(cold minus warm; target <= 30 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
