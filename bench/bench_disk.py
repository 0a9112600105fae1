"""The array engine's disk mode (`serq explore --disk DIR`) against the
same search in memory, on the chat family of bench_chat_family.py
(without symmetry by default), checking deadlocks and invariants, and
with `--livelock` the livelock check too (the non-progress edges: in
RAM in memory, in files in the disk mode, made into a graph once the
search is over; the time and memory of that pass are given apart): for
each, the
verdict, distinct states, wall seconds, states per second, and bytes of
RAM per stored state (peak RSS above the process's RSS once the instance
is loaded and the engine warm, over the states). For the disk mode also
the bytes on disk at the end of the search (its trace and the level
files left, per state) and the largest the directory got, and the
ratio of its rate to the in-memory one. Then what 10^9 states would take
at these figures (RAM, disk, hours), the rate taken as it is (the table
and the files grow linearly; the table's misses grow with its size).

    python bench/bench_disk.py --n 5                      # chat(5), no symmetry
    python bench/bench_disk.py --n 6 --reduce ranks       # chat(6), ranks reduced: 34.65M states
    python bench/bench_disk.py --n 5 --dir /var/tmp       # where the disk mode writes
    python bench/bench_disk.py --n 6 --only disk          # chat(6) unreduced, the disk mode alone
    python bench/bench_disk.py --n 5 --livelock           # the livelock check too
    python bench/bench_disk.py --n 5 --eventually         # `check eventually done` too (every edge kept)

With `--livelock`, also: "search B/st", the peak RSS while the search
ran (before the livelock pass); "pass anon", the pass's peak of anonymous
memory (RssAnon above the process's once warm: the store and the edges
still held, the pass's own arrays), and "pass cpu",
its CPU seconds (the graph made, then Kahn's peeling and the components
search); "rate" is then that of the search and the pass together, and
"disk B/st" counts the edge files too, and "disk peak" the files of
the buckets the edges' targets are resolved in. The RAM column is the whole run's
peak RSS, which in the disk mode includes the pages of the memory-mapped
graph that the page cache holds (file pages: reclaimable, not the
process's own). `--eventually` adds `check eventually done` (liveness
under fairness: every edge kept, with its class, and each state's waiting
sessions; then the fair pass), with the same columns as `--livelock`,
and "fair anon": the fair pass's own peak of anonymous memory (above what
the process held when it began: its arrays alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_chat_family import TEMPLATE  # noqa: E402

CHILD = textwrap.dedent("""
    import json, os, resource, sys, threading, time
    from serq.lang.load import load_text
    from serq.check.explore import explore
    from explorer.strategies.arrays import diskstore
    text, sym, limit, disk = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] or None
    red = sym == "r"
    symmetry = sym == "1"
    livelock = sys.argv[6] == "1"
    checks = ["deadlock", "invariant"] + (["livelock"] if livelock else []) + \
        (["eventually done"] if sys.argv[7] == "1" else [])
    seen = {"end": 0, "peak": 0, "search_rss": 0, "pass_cpu0": None, "pass_anon": 0, "on": False,
            "fair_on": False, "fair0": 0, "fair_anon": 0}
    from explorer.strategies.arrays import diskgraph, engine
    def status():
        got = {}
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "VmRSS:")):
                    got[line.split(":")[0]] = int(line.split()[1]) * 1024
        return got
    def sample():  # the pass's peak of anonymous memory (and the fair pass's alone)
        while True:
            if seen["on"]:
                seen["pass_anon"] = max(seen["pass_anon"], status().get("RssAnon", 0))
            if seen["fair_on"]:
                seen["fair_anon"] = max(seen["fair_anon"], status().get("RssAnon", 0))
            time.sleep(0.005)
    threading.Thread(target=sample, daemon=True).start()
    def marking(graph):
        def wrapped(self, *a):
            seen["search_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            seen["pass_cpu0"] = time.process_time()
            seen["pass_anon"] = status().get("RssAnon", 0)
            seen["on"] = True
            return graph(self, *a)
        return wrapped
    resolve, table = diskgraph._resolve, diskgraph._table
    def resolving(d, *a):  # the edges' targets resolved: the directory at its largest once the buckets are written
        seen["dir"] = d
        try:
            seen["peak"] = max(seen["peak"], du(d))
        except OSError:
            pass
        return resolve(d, *a)
    def tabling(n):
        try:
            seen["peak"] = max(seen["peak"], du(seen["dir"]))
        except OSError:
            pass
        return table(n)
    diskgraph._resolve, diskgraph._table = resolving, tabling
    engine.Edges.graph = marking(engine.Edges.graph)
    from explorer.graph import fair
    lasso = fair.fair_lasso
    def fair_marked(*a, **k):  # the fair pass alone: its peak above what the process held when it began
        seen["fair0"] = seen["fair_anon"] = status().get("RssAnon", 0)
        seen["fair_on"] = True
        try:
            return lasso(*a, **k)
        finally:
            seen["fair_on"] = False
    fair.fair_lasso = engine.fair_lasso = fair_marked
    diskgraph.EdgeFiles.graph = marking(diskgraph.EdgeFiles.graph)
    def du(d):
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    close = diskstore.Trace.close
    def closing(self):  # the files' size at the end of the search, before they go
        try:
            seen["end"] = du(self.dir)
        except OSError:
            pass
        close(self)
    diskstore.Trace.close = closing
    drop = diskstore.Trace.drop_level
    def dropping(self, depth):  # the directory at its largest: at the end of a level, before its file goes
        try:
            seen["peak"] = max(seen["peak"], du(self.dir))
        except OSError:
            pass
        drop(self, depth)
    diskstore.Trace.drop_level = dropping
    small = load_text(sys.argv[5], "small.sq", explorer=True).program
    for s in (True, False):
        explore(small, symmetry=s, reduce_ranks=red, checks=checks, disk=disk)
    prog = load_text(text, "bench.sq", explorer=True).program
    explore(prog, symmetry=symmetry, max_states=50, reduce_ranks=red, checks=checks, disk=disk)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    c = time.process_time()
    seen["on"] = False
    anon0 = status().get("RssAnon", 0)
    r = explore(prog, symmetry=symmetry, time_limit=limit, reduce_ranks=red, checks=checks, disk=disk)
    dt, cpu = time.perf_counter() - t, time.process_time() - c
    seen["on"] = False
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = max(r.stats.distinct, 1)
    passed = seen["pass_cpu0"] is not None
    print(json.dumps({"verdict": r.verdict, "distinct": r.stats.distinct, "seconds": dt, "cpu": cpu,
                      "bytes": (rss - base) * 1024 / n, "disk_end": seen["end"] / n,
                      "disk_peak": max(seen["peak"], seen["end"]) / n,
                      "search_bytes": (seen["search_rss"] - base * 1024) / n if passed else None,
                      "pass_cpu": time.process_time() - seen["pass_cpu0"] if passed else None,
                      "pass_anon": (seen["pass_anon"] - anon0) / n if passed else None,
                      "fair_anon": (seen["fair_anon"] - seen["fair0"]) / n if passed else None}))
""")


def run(n: int, sym: str, limit: float, disk: str | None, livelock: bool, eventually: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, TEMPLATE.replace("{N}", str(n)), sym, str(limit), disk or "",
                          TEMPLATE.replace("{N}", "2"), "1" if livelock else "0", "1" if eventually else "0"],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[5])
    ap.add_argument("--symmetry", choices=("off", "on"), default="off")
    ap.add_argument("--reduce", choices=("ranks",))
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--only", choices=("disk",), help="disk: the disk mode alone (a member too large to also run "
                                                      "in memory in the time at hand)")
    ap.add_argument("--livelock", action="store_true", help="the livelock check too, in both modes")
    ap.add_argument("--eventually", action="store_true", help="`check eventually done` too, in both modes")
    ap.add_argument("--dir", default=None, help="where the disk mode writes (default: a new directory under /var/tmp)")
    args = ap.parse_args()
    passes = args.livelock or args.eventually  # (a pass over the graph after the search: its own columns)
    sym = "r" if args.reduce else "1" if args.symmetry == "on" else "0"
    root = args.dir or tempfile.mkdtemp(prefix="bench-disk-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores); "
          f"disk mode under {root}")
    hdr = (f"{'N':>2} {'mode':>6} {'verdict':>8} {'distinct':>11} {'seconds':>8} {'st/cpu s':>9} {'cpu s':>7} "
           f"{'RAM B/st':>8}" + (f" {'search B/st':>11} {'pass anon':>9} {'pass cpu':>8}" if passes else "")
           + (f" {'fair anon':>9}" if args.eventually else "")
           + f" {'disk B/st':>9} {'disk peak':>9} {'rate':>6}")
    print(hdr)
    print("-" * len(hdr))
    for n in args.n:
        mem = run(n, sym, args.time_limit, None, args.livelock, args.eventually) if args.only is None else None
        dsk = run(n, sym, args.time_limit, root, args.livelock, args.eventually)
        if mem and mem["verdict"] != "bound" and (mem["verdict"], mem["distinct"]) != (dsk["verdict"], dsk["distinct"]):
            raise SystemExit(f"the disk mode differs: {dsk} against {mem}")
        rates = {"memory": 0.0}
        for mode, r in (("memory", mem), ("disk", dsk)):
            if r is None:
                continue
            rates[mode] = r["distinct"] / r["cpu"] if r["cpu"] else 0.0  # (per CPU second: a shared machine)
            extra = ""
            if passes:
                extra = (f" {r['search_bytes']:>11.1f} {r['pass_anon']:>9.1f} {r['pass_cpu']:>8.1f}"
                         if r["pass_cpu"] is not None else f" {'':>11} {'':>9} {'':>8}")
                if args.eventually:
                    extra += f" {r['fair_anon']:>9.1f}" if r["pass_cpu"] is not None else f" {'':>9}"
            extra += f" {r['disk_end']:>9.1f} {r['disk_peak']:>9.1f}" if mode == "disk" else ""
            extra += f" {rates['disk'] / rates['memory']:>5.0%}" if mode == "disk" and rates["memory"] else ""
            print(f"{n:>2} {mode:>6} {r['verdict']:>8} {r['distinct']:>11,} {r['seconds']:>8.1f} "
                  f"{rates[mode]:>9,.0f} {r['cpu']:>7.1f} {r['bytes']:>8.1f}{extra}")
        g = 1e9
        inmem = f" ({mem['bytes'] * g / 2**30:.1f} GiB in memory)" if mem else ""
        ram = dsk["bytes"]
        if dsk.get("pass_cpu") is not None:  # the search's peak, or the pass's anonymous memory (page cache aside)
            ram = max(dsk["search_bytes"], dsk["pass_anon"])
        print(f"   10^9 states at these figures: RAM {ram * g / 2**30:.1f} GiB in the disk mode{inmem}, "
              f"disk {dsk['disk_peak'] * g / 2**30:.1f} GiB, {g / rates['disk'] / 3600:.1f} h of CPU at "
              f"{rates['disk']:,.0f} states/s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.dir is None:
        os.rmdir(root)


if __name__ == "__main__":
    main()
