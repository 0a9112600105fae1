"""Simulator benchmark: a vLLM-like instance with 1,000 requests, run with
and without step coalescing, in three regimes.

    python bench/bench_sim.py                    # all regimes, 1000 requests
    python bench/bench_sim.py --requests 200     # quicker
    python bench/bench_sim.py --regimes long     # one regime
    python bench/bench_sim.py --no-baseline      # coalesced runs only

Regimes (one instance text, three workloads):
  moderate   poisson 2/s, answers of 32..512 tokens: the engine is busy
             ~90% of the time, the queue mostly empty;
  long       poisson 0.5/s, answers of 256..2048 tokens: long decodes and
             an empty queue — the regime of the seed note where coalescing
             pays;
  saturated  poisson 20/s: the queue is never empty, so by the seed's rule
             (k = 1 while a via-queue waits) almost nothing coalesces.

For each run: wall time and CPU time (on a machine shared with other
work the wall time grows with the load, the CPU time much less),
iterations simulated and evaluated, simulated iterations per wall second;
and a check that both runs end in the same state with the same report
(but the evaluated count). The kernel's compiled code is loaded before
the first run (`serq run` loads it before its clock starts too), so the
first run is timed as the others.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from serq.lang.load import load_text  # noqa: E402
from serq.sim.report import build_report  # noqa: E402
from serq.sim.simulator import simulate  # noqa: E402

INSTANCE = """
// vLLM-like: 16-token blocks, 16k KV tokens, 128 sequences, budget 2048,
// prefix caching (keep full blocks, re-hit up to floor((N-1)/BS)*BS),
// gate on the whole sequence, allocate as computed, LIFO preemption that
// resumes. Cost: an affine fit in the step shape (licensed for coalescing).
const BS = 16;
pool kv   {{ cap 16384; block BS; admit via gpu; preempt lifo; evict lru; }}
pool seqs {{ cap 128; admit via gpu; }}
stage gpu {{ budget 2048; serve (admitted); cost 8ms + 60us * ntok + 20us * kvb; }}

session chat {{
  draw prompt in {{128, 256, 512, 1024}} ~ uniform;
  draw o in {answers} ~ weights(4, 4, 3, 2, 1) hidden;
  let g = 0;
  hold seqs 1, kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {{
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }} keep (kv full);
  end;
}}

workload {{ {n} x chat poisson {rate}/s seed 1; }}
"""

REGIMES = {
    "moderate": dict(rate="2", answers="{32, 64, 128, 256, 512}"),
    "long": dict(rate="0.5", answers="{256, 512, 1024, 1536, 2048}"),
    "saturated": dict(rate="20", answers="{32, 64, 128, 256, 512}"),
}


def run(text: str, coalesce: bool):
    prog = load_text(text).program
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate(prog, seed=0, coalesce=coalesce)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return r, wall, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--regimes", default=",".join(REGIMES))
    ap.add_argument("--no-baseline", action="store_true", help="skip the runs without coalescing")
    args = ap.parse_args(argv)
    rows = []
    import serq.semantics.entries  # noqa: F401 (registers the kernel's entry points)
    from explorer.runtime import compiled

    compiled.load()
    for name in args.regimes.split(","):
        text = INSTANCE.format(n=args.requests, **REGIMES[name])
        results = {}
        for co in ([True] if args.no_baseline else [True, False]):
            r, wall, cpu = run(text, co)
            sim = sum(r.stats.iters)
            ev = r.stats.evaluated
            results[co] = r
            rows.append((name, "on" if co else "off", r.now / 1e9, sim, ev, wall, sim / wall, cpu))
            print(f"{name:9} coalescing {'on ' if co else 'off'}: {wall:8.1f} s wall, {cpu:6.2f} s CPU, "
                  f"{sim} iterations simulated, {ev} evaluated", file=sys.stderr, flush=True)
        if len(results) == 2:
            a, b = (build_report(results[c]) for c in (True, False))
            for rep in (a, b):
                rep.pop("coalesce"), rep.pop("iterations_evaluated")
            same = results[True].state == results[False].state and a == b
            rows.append((name, "equal", None, None, None, None, None, None) if same else
                        (name, "DIFFERENT", None, None, None, None, None, None))
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"serq run, {args.requests} requests (one core, CPython {sys.version.split()[0]})")
    for c in ("regime", "coalescing", "simulated s", "iterations", "evaluated", "wall s", "CPU s", "iterations/s",
              "speed-up"):
        t.add_column(c, justify="left" if c in ("regime", "coalescing") else "right")
    walls = {(r[0], r[1]): r[5] for r in rows if r[5] is not None}
    for name, co, simulated, sim, ev, wall, rate, cpu in rows:
        if wall is None:
            t.add_row(name, f"reports and states {co}", "", "", "", "", "", "", "")
            continue
        sp = ""
        if co == "on" and (name, "off") in walls:
            sp = f"{walls[(name, 'off')] / wall:.1f}x"
        t.add_row(name, co, f"{simulated:.1f}", str(sim), str(ev), f"{wall:.1f}", f"{cpu:.2f}", f"{rate:,.0f}", sp)
    Console(width=132).print(t)
    return 0 if all(r[1] != "DIFFERENT" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
