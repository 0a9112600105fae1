"""The chat family, as in the SPIN comparison: N chats, a KV pool of 6
blocks of 4, budget 8, prompt 6, outputs 1..4 drawn at arrival, LIFO
preemption (a chat may preempt itself), resume keeping its outputs. For
each N and with and without symmetry: verdict, distinct states, wall
seconds, states/s, CPU seconds, bytes per stored state (peak RSS above the
process's RSS once the instance is loaded and every compiled part of the
engine warm, over the states) and the speed of 2 workers against 1
(`--workers`: states per second, so also for a run the time limit
stops), with the 2-worker run's CPU time over its wall time (how much of
the second core it used) and its serial fraction: the CPU time of the
calling thread over the run's CPU time (with f that fraction, 2 workers
can give at most 1 / (f + (1 - f) / 2). The workers do all the search,
the walk included, and that thread only watches, so f is the start, the
end and the livelock pass; the merge, which keeps the order, runs on the
worker that finished a chunk last and is not in f).

The machine's own ceiling for that ratio (`--workers`): two independent
1-worker runs at once, in two processes, against one alone; the sum of
their speeds relative to the lone run (2.00x when two cores give twice
the work of one; less when the two cores share a physical core or its
memory). The two start together once both are warm, and their work is
counted in the time of the slower: two runs started apart, or each
counted in its own time, would have the machine alone for a while and
raise the figure (and runs cut at one time limit would compare an
earlier, faster stretch of the search with a later one). A 2-worker ratio is read against it: the engine cannot split a
run better than two processes that share nothing. With `--repeat K` the
1-worker, 2-worker and ceiling runs are taken K times in turn and their
medians printed (the speed of a shared virtual machine drifts within
minutes). The load average is printed before and after: on a shared
machine the worker ratio means little under load.

    python bench/bench_chat_family.py                  # N = 3..6
    python bench/bench_chat_family.py --n 3 4 5 6 7 --workers
    python bench/bench_chat_family.py --n 5 --symmetry off --workers --repeat 3
    python bench/bench_chat_family.py --n 5 6 --symmetry off --reduce ranks --cli

`--reduce ranks` adds a row per case explored with the rank reduction
(`serq explore --reduce ranks`); `x SPIN` is the states over the
configurations SPIN's chat.pml stores for the same behaviour (without
symmetry: ../shared/spin/, `-DNOPROG`). `--cli` adds the CPU seconds of a
whole `serq explore` command, start-up included (its process's user + system
time: what to set beside SPIN's `./pan` time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

TEMPLATE = """\
const BS = 4;
pool kv { cap 24; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; }
session chat {
  draw o in 1..4 hidden;
  let g = 0;
  hold kv need (6 + g) take 0 {
    prefill (6 + g) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }
  end;
}
workload { {N} x chat; }
"""

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from serq.lang.load import load_text
    from serq.check.explore import explore
    text, sym, limit, workers = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), int(sys.argv[4])
    red = sys.argv[2] == "r"  # no symmetry, ranks reduced
    small = load_text(sys.argv[5], "small.sq", explorer=True).program
    for s in (True, False):  # every compiled part of the engine loaded (a whole run of 2 chats)
        explore(small, symmetry=s, workers=workers, reduce_ranks=red)
    prog = load_text(text, "bench.sq", explorer=True).program
    explore(prog, symmetry=sym, max_states=50, workers=workers, reduce_ranks=red)
    if len(sys.argv) > 6:  # a barrier: the runs of a pair start together, once both are warm
        import os
        open(os.path.join(sys.argv[6], sys.argv[7]), "w").close()
        waited = time.perf_counter()
        while len(os.listdir(sys.argv[6])) < 2:
            if time.perf_counter() - waited > 300:
                raise SystemExit("the other run of the pair never got ready")
            time.sleep(0.0005)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    c = time.process_time()
    mc = time.thread_time()
    r = explore(prog, symmetry=sym, time_limit=limit, workers=workers, reduce_ranks=red)
    dt, cpu, main = time.perf_counter() - t, time.process_time() - c, time.thread_time() - mc
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"verdict": r.verdict, "distinct": r.stats.distinct, "seconds": dt, "cpu": cpu, "main": main,
                      "bytes": (rss - base) * 1024 / max(r.stats.distinct, 1)}))
""")


# the configurations SPIN's chat.pml stores (-DNOPROG), by N: the same behaviour without symmetry
SPIN = {3: 5_501, 4: 123_353, 5: 2_892_055, 6: 73_727_593, 7: 188_383_700}


def run(n: int, sym, limit: float, workers: int = 1, barrier: tuple = ()) -> dict:
    """sym: True, False, or "r" (no symmetry, ranks reduced)."""
    text = TEMPLATE.replace("{N}", str(n))
    flag = sym if sym == "r" else "1" if sym else "0"
    out = subprocess.run([sys.executable, "-c", CHILD, text, flag, str(limit), str(workers),
                          TEMPLATE.replace("{N}", "2"), *barrier],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_cpu(n: int, sym, limit: float) -> tuple[str, float]:
    """(verdict line, CPU seconds) of a whole `serq explore` process."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"chat{n}.sq")
        with open(path, "w") as f:
            f.write(TEMPLATE.replace("{N}", str(n)))
        cmd = [sys.executable, "-m", "serq", "explore", path, "--time-limit", str(limit), "--no-timing"]
        cmd += [] if sym is True else ["--no-symmetry"]
        cmd += ["--reduce", "ranks"] if sym == "r" else []
        before = os.times()
        out = subprocess.run(cmd, capture_output=True, text=True)
        after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return (out.stdout.strip().splitlines() or [""])[0], cpu


def ceiling(n: int, sym: bool, limit: float, alone: float) -> float:
    """Two whole 1-worker runs at once, started together once both are
    warm: twice the work of a run alone (`alone` seconds) in the time the
    slower of the two took (the other had the machine alone for the
    difference, which this does not count in its favour)."""
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(2) as ex:
        both = list(ex.map(lambda i: run(n, sym, limit, barrier=(d, str(i))), range(2)))
    return 2 * alone / max(r["seconds"] for r in both)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[3, 4, 5, 6])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--workers", action="store_true", help="also time 2 workers against 1")
    ap.add_argument("--symmetry", choices=("both", "on", "off"), default="both")
    ap.add_argument("--reduce", choices=("ranks",), help="ranks: also each case without symmetry, ranks reduced")
    ap.add_argument("--cli", action="store_true", help="also the CPU seconds of a whole `serq explore` process")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="with --workers: take the 1-worker, 2-worker and ceiling runs K times, print medians")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat needs K >= 1")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    hdr = (f"{'N':>2} {'symmetry':>8} {'verdict':>8} {'distinct':>10} {'seconds':>8} {'states/s':>9} "
           f"{'cpu s':>7} {'B/state':>8} {'2 workers':>9} {'ceiling':>7} {'2w cpu/wall':>11} {'serial':>6}"
           f" {'x SPIN':>6}" + (f" {'cli cpu s':>9}" if args.cli else ""))
    print(hdr)
    print("-" * len(hdr))
    syms = {"both": (True, False), "on": (True,), "off": (False,)}[args.symmetry]
    if args.reduce:
        syms += ("r",)
    for n in args.n:
        for sym in syms:
            reps = args.repeat if args.workers else 1
            ones = [run(n, sym, args.time_limit)]
            r = ones[0]
            mark = ">" if r["verdict"] == "bound" else " "
            two = use = ser = cap = ""
            if args.workers:
                ratios, caps, uses, sers = [], [], [], []
                for k in range(reps):
                    if k:
                        ones.append(run(n, sym, args.time_limit))
                    one = ones[-1]
                    r2 = run(n, sym, args.time_limit, workers=2)
                    if r["verdict"] != "bound" and (r2["distinct"], r2["verdict"]) != (r["distinct"], r["verdict"]):
                        raise SystemExit(f"2 workers differ from 1: {r2} vs {r}")
                    if r2["seconds"] and one["seconds"] and one["distinct"]:
                        # states per second of 2 workers over 1 (their seconds when both complete;
                        # the states each reached when the time limit stops both)
                        ratios.append((r2["distinct"] / r2["seconds"]) / (one["distinct"] / one["seconds"]))
                        uses.append(r2["cpu"] / r2["seconds"])
                    if r2["cpu"]:
                        sers.append(r2["main"] / r2["cpu"])
                    if r["verdict"] != "bound":  # (a run the time limit stops takes the limit in any company)
                        caps.append(ceiling(n, sym, args.time_limit, one["seconds"]))
                two = f"{statistics.median(ratios):.2f}x" if ratios else ""
                cap = f"{statistics.median(caps):.2f}x" if caps else ""
                use = f"{statistics.median(uses):.2f}" if uses else ""
                ser = f"{statistics.median(sers):.0%}" if sers else ""
            secs = statistics.median(o["seconds"] for o in ones)
            cpu = statistics.median(o["cpu"] for o in ones)
            rate = r["distinct"] / secs if secs else 0
            spin = f"{r['distinct'] / SPIN[n]:.2f}" if sym is not True and n in SPIN and mark == " " else ""
            cli = ""
            if args.cli:
                line, c = cli_cpu(n, sym, args.time_limit)
                cli = f"{c:.2f}" if line.startswith(("pass", "PASS")) or r["verdict"] != "bound" else f">{c:.2f}"
            name = "ranks" if sym == "r" else "on" if sym else "off"
            print(f"{n:>2} {name:>8} {r['verdict']:>8} {mark}{r['distinct']:>9} "
                  f"{secs:>8.2f} {rate:>9.0f} {cpu:>7.2f} {r['bytes']:>8.0f} {two:>9} {cap:>7} {use:>11} {ser:>6}"
                  f" {spin:>6}" + (f" {cli:>9}" if args.cli else ""), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
