"""`serq sweep` over two constants (a capacity frontier) benchmark: what a
grid costs against one exploration, with every cell evaluated and with
bisection per row.

    python bench/bench_frontier.py
    python bench/bench_frontier.py --kv 2..12 --bs 1..3 --worst ttft

The instance is instances/theorem.sq with its KV capacity a constant
(`const KV`); the grid is KV x BS. Prints, for each mode, the wall time,
the cells evaluated, the explorations' distinct states in all, and the
ratio against one exploration of the instance as it is written (KV = 8,
BS = 2). Times are the best of `--repeat` runs, one worker (the sweep's
own pool is not timed against the machine)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import best  # noqa: E402  (bench/timing.py, beside the script)

from serq.check.explore import explore  # noqa: E402
from serq.check.sweep import sweep  # noqa: E402
from serq.lang.load import load_text  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", default="2..12")
    ap.add_argument("--bs", default="1..3")
    ap.add_argument("--worst", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    text = (ROOT / "instances" / "theorem.sq").read_text().replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;")
    prog = load_text(text, "theorem_kv.sq", explorer=True).program
    explore(prog, graph_limit=0)  # loading the compiled code is not the exploration's cost
    one, t1 = best(lambda: explore(prog, graph_limit=0), max(a.repeat, 3))
    print(f"one exploration (KV=8, BS=2): {t1:.3f} s, {one.stats.distinct} states")
    for mode, bisect in (("every cell", False), ("bisection per row", True)):
        sw, t = best(lambda: sweep(text, "theorem_kv.sq", [f"KV={a.kv}", f"BS={a.bs}"], bisect=bisect, workers=1,
                                   worst=a.worst or None), a.repeat)
        states = sum(r.states for r in sw.rows)
        print(f"{mode:18}: {t:7.3f} s  {len(sw.rows):3} cells  {states:8} states  {t / t1:6.1f}x one exploration"
              f"  frontier {sorted(sw.frontier)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
