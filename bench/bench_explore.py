"""Explorer benchmark: a family of vLLM-like chat instances with N = 2..6
identical sessions on a small KV pool. For each N, with and without
symmetry reduction: distinct states, wall time, states/s, peak memory (max
RSS of a fresh process per run) and the symmetry ratio.

    python bench/bench_explore.py                 # N = 2..6, 300 s limit per run
    python bench/bench_explore.py --n 2 3 4 --time-limit 60

A run that hits the time limit prints its verdict as `bound` and its
figures as lower bounds (marked `>`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

TEMPLATE = """\
// bench: N identical vLLM-like chats on a 4-block KV pool
const BS = 4;
pool kv { cap 16; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; }
session chat {
  draw prompt in {4, 6};
  draw o in 1..2 hidden;
  let max_out = 2;
  let g = 0;
  hold kv reuse (c) need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  } keep (kv full);
}
workload { {N} x chat; }
"""

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from serq.lang.load import load_text
    from serq.check.explore import explore
    text, sym, limit = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3])
    prog = load_text(text, "bench.sq", explorer=True).program
    t = time.perf_counter()
    r = explore(prog, symmetry=sym, time_limit=limit)
    dt = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"verdict": r.verdict, "distinct": r.stats.distinct, "generated": r.stats.generated,
                      "seconds": dt, "rss_mib": rss / 1024}))
""")


def run(n: int, sym: bool, limit: float) -> dict:
    text = TEMPLATE.replace("{N}", str(n))
    out = subprocess.run([sys.executable, "-c", CHILD, text, "1" if sym else "0", str(limit)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[2, 3, 4, 5, 6])
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args()
    hdr = f"{'N':>2} {'symmetry':>8} {'verdict':>8} {'distinct':>10} {'seconds':>8} {'states/s':>9} {'peak MiB':>8} {'ratio':>6}"
    print(hdr)
    print("-" * len(hdr))
    for n in args.n:
        res = {}
        for sym in (True, False):
            r = run(n, sym, args.time_limit)
            res[sym] = r
            mark = ">" if r["verdict"] == "bound" else " "
            rate = r["distinct"] / r["seconds"] if r["seconds"] else 0
            ratio = ""
            if not sym and res[True]["distinct"]:
                ratio = f"{r['distinct'] / res[True]['distinct']:.1f}x"
            print(f"{n:>2} {'on' if sym else 'off':>8} {r['verdict']:>8} {mark}{r['distinct']:>9} "
                  f"{r['seconds']:>8.2f} {rate:>9.0f} {r['rss_mib']:>8.1f} {ratio:>6}", flush=True)


if __name__ == "__main__":
    main()
