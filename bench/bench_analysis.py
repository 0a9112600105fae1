"""Analysis benchmark: what the point of no return, worst cases and sweeps
cost relative to a plain exploration of the same instance.

    python bench/bench_analysis.py                    # the default instances
    python bench/bench_analysis.py --instances vllm_chat --metrics ttft peak

- point of no return: `serq explore` of a failing instance with the
  analysis (the whole graph, every edge) against without it
  (`graph_limit=0`), in one process;
- worst cases: `--worst METRIC` against a plain exploration; the graph of a
  per-session metric is explored without symmetry and with a phase per
  session, so its state count is printed next to the plain one;
- sweep: `serq sweep` over a capacity on all cores against the sum of the
  plain explorations of its values, one after the other;
- frontier: `serq sweep` over a capacity and a block size (a grid), every
  cell and `--bisect`, plain and with `--worst ttft`, against the sum of
  the plain explorations (and worst cases) of its cells.

Times are the best of `--repeat` runs (wall seconds)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import best  # noqa: E402  (bench/timing.py, beside the script)

from serq.check.explore import explore  # noqa: E402
from serq.lang.load import load_path, load_text  # noqa: E402
from serq.check.sweep import sweep  # noqa: E402
from serq.check.worst import METRICS, find_worst  # noqa: E402

FAILING = ["theorem_no_fit", "theorem_no_lifo", "theorem_no_join_rule", "hol_none"]
WORST = ["theorem", "decode_preempt", "multiturn_chat", "vllm_chat"]


def program(name):
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


def bench_no_return(names, repeat):
    print("point of no return (explore of a failing instance, with the analysis / without)")
    print(f"  {'instance':<22} {'states':>7} {'graph':>7} {'plain s':>8} {'with s':>8} {'ratio':>6}")
    for name in names:
        prog = program(name)
        plain, tp = best(lambda: explore(prog, graph_limit=0), repeat)
        full, tf = best(lambda: explore(prog), repeat)
        nr = full.no_return
        print(f"  {name:<22} {plain.stats.distinct:>7} {nr.states:>7} {tp:>8.3f} {tf:>8.3f} {tf / tp:>6.1f}")


def bench_worst(names, metrics, repeat):
    print("worst cases (--worst METRIC against a plain exploration)")
    print(f"  {'instance':<16} {'metric':<13} {'value':>9} {'states':>7} {'graph':>7} {'plain s':>8} "
          f"{'worst s':>8} {'ratio':>6}")
    for name in names:
        prog = program(name)
        plain, tp = best(lambda: explore(prog, graph_limit=0), repeat)
        for metric in metrics:
            w, tw = best(lambda: find_worst(prog, metric), repeat)
            value = "unbounded" if w.value is None else str(w.value)
            print(f"  {name:<16} {metric:<13} {value:>9} {plain.stats.distinct:>7} {w.states:>7} "
                  f"{tp:>8.3f} {tw:>8.3f} {tw / tp:>6.1f}")


def bench_sweep(repeat):
    src = (ROOT / "instances" / "multiturn_chat.sq").read_text()
    text = src.replace("pool kv { cap 12;", "const KV = 12;\npool kv { cap KV;")
    assert text != src
    lo, hi = 4, 12
    values = range(lo, hi + 1)
    _, tseq = best(lambda: [explore(load_text(text, "kv.sq", explorer=True, consts={"KV": v}).program,
                                    graph_limit=0) for v in values], repeat)
    cores = os.cpu_count() or 1
    sw, tall = best(lambda: sweep(text, "kv.sq", f"KV={lo}..{hi}"), repeat)
    _, tbis = best(lambda: sweep(text, "kv.sq", f"KV={lo}..{hi}", bisect=True), repeat)
    print(f"sweep of multiturn_chat.sq's capacity, KV={lo}..{hi} ({len(values)} values, {cores} cores); "
          f"{sw.note}")
    print(f"  plain explorations one after the other  {tseq:8.3f} s")
    print(f"  serq sweep, every value                 {tall:8.3f} s  ratio {tall / tseq:5.2f} "
          "(includes the counterexample's point of no return)")
    print(f"  serq sweep --bisect                     {tbis:8.3f} s  ratio {tbis / tseq:5.2f}")


def bench_frontier(repeat):
    src = (ROOT / "instances" / "theorem.sq").read_text()
    text = src.replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;")
    assert text != src
    kvs, bss = range(4, 12), range(1, 5)
    cells = [(kv, bs) for kv in kvs for bs in bss]
    progs = lambda: [load_text(text, "kv.sq", explorer=True, consts={"KV": kv, "BS": bs}).program  # noqa: E731
                     for kv, bs in cells]
    _, tseq = best(lambda: [explore(p, graph_limit=0) for p in progs()], repeat)
    _, tw = best(lambda: [(explore(p, graph_limit=0), find_worst(p, "ttft")) for p in progs()], repeat)
    vary = ["KV=4..11", "BS=1..4"]
    sw, tall = best(lambda: sweep(text, "kv.sq", vary), repeat)
    bis, tbis = best(lambda: sweep(text, "kv.sq", vary, bisect=True), repeat)
    _, tall_w = best(lambda: sweep(text, "kv.sq", vary, worst=["ttft"]), repeat)
    _, tbis_w = best(lambda: sweep(text, "kv.sq", vary, worst=["ttft"], bisect=True), repeat)
    cores = os.cpu_count() or 1
    print(f"frontier of theorem.sq's capacity x block size, KV=4..11 x BS=1..4 ({len(cells)} cells, {cores} cores; "
          f"--bisect explores {len(bis.rows)}); frontier {sw.frontier}")
    print(f"  plain explorations one after the other  {tseq:8.3f} s")
    print(f"  serq sweep, every cell                  {tall:8.3f} s  ratio {tall / tseq:5.2f}")
    print(f"  serq sweep --bisect                     {tbis:8.3f} s  ratio {tbis / tseq:5.2f}")
    print(f"  explorations and --worst ttft, in turn  {tw:8.3f} s")
    print(f"  serq sweep --worst ttft, every cell     {tall_w:8.3f} s  ratio {tall_w / tw:5.2f}")
    print(f"  serq sweep --worst ttft --bisect        {tbis_w:8.3f} s  ratio {tbis_w / tw:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--failing", nargs="*", default=FAILING, help="instances for the point of no return")
    ap.add_argument("--instances", nargs="*", default=WORST, help="instances for the worst cases")
    ap.add_argument("--metrics", nargs="*", default=list(METRICS), help="metrics for the worst cases")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--no-frontier", action="store_true")
    ap.add_argument("--only", choices=("frontier",), help="run that part alone")
    a = ap.parse_args()
    explore(program("theorem"), graph_limit=0)  # warm up: imports and the grammar cache
    if a.only == "frontier":
        bench_frontier(a.repeat)
        return
    bench_no_return(a.failing, a.repeat)
    bench_worst(a.instances, a.metrics, a.repeat)
    if not a.no_sweep:
        bench_sweep(a.repeat)
    if not a.no_frontier:
        bench_frontier(a.repeat)


if __name__ == "__main__":
    main()
