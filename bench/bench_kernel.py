"""Kernel benchmark: one step of the compiled kernel in microseconds (called
from Python, so numba's dispatch included), and the explorer's states/s on
`instances/vllm_chat.sq` with and without symmetry (CPU time, warm cache):
the first run in the process, and the best of a few (what a run costs
once the compiled engine is loaded; the statistics' states/s is the
whole run's, livelock pass included).

    python bench/bench_kernel.py"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from serq.check.explore import explore  # noqa: E402
from serq.lang.load import load_path  # noqa: E402
from serq.semantics.model import Model  # noqa: E402
from serq.semantics.engine import KIND, NO_ROWS  # noqa: E402
from serq.semantics.kernel.abi import CALL_STEP  # noqa: E402
from serq.semantics.kernel.call import call  # noqa: E402


REPEAT = 5  # runs of each exploration: the first pays for loading the compiled engine once per process


def main() -> None:
    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    m = Model(prog, ties="all")
    t0 = time.process_time()
    s = m.initial_state()
    for sid in range(len(s[0])):
        s = m.step(s, m.actions(s)[0])
    s = m.step(s, [a for a in m.actions(s) if a[0] == "iterate"][0])
    print(f"first kernel call (compile or cache load): {time.process_time() - t0:.2f} s CPU")
    e = m.engine
    e.load(s)
    row = e.w[: e.W].copy()
    n = 200_000
    t0 = time.process_time()
    for _ in range(n):
        e.w[: e.W] = row
        call(e.K, e.w, (CALL_STEP, KIND["iterate"], 0, 0, 0, 0, 0), e._pk, NO_ROWS)
    dt = time.process_time() - t0
    print(f"one step (iterate, 3 residents, with its summary) from Python: {dt / n * 1e6:.2f} us CPU ({n} calls)")
    explore(prog, symmetry=False, max_states=10)  # the engine's compiled parts loaded
    for sym in (False, True):
        cpu, wall = [], []
        for _ in range(REPEAT):
            t0, w0 = time.process_time(), time.perf_counter()
            r = explore(prog, symmetry=sym)
            cpu.append(time.process_time() - t0)
            wall.append(time.perf_counter() - w0)
        n = r.stats.distinct
        print(f"explore vllm_chat symmetry={sym}: {n} distinct; first run {cpu[0]:.3f} s CPU "
              f"({n / cpu[0]:,.0f} states/s); best of {REPEAT}: {min(cpu):.3f} s CPU "
              f"({n / min(cpu):,.0f} states/s), {min(wall):.3f} s wall ({n / min(wall):,.0f} states/s)")

if __name__ == "__main__":
    main()
