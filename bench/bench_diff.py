"""`serq diff` benchmark: what comparing two variants costs against
exploring each alone.

    python bench/bench_diff.py
    python bench/bench_diff.py --repeat 3 --worst ttft

For each pair (a library instance and a variant of it: the same text with
one policy or size changed), the time of `serq.check.diff.diff` (which
explores each variant alone for its verdict line, then the product) and of
its product search alone, against the two plain explorations the product
is made of (`--ties seq --no-symmetry`, the form a joint state pairs),
with the state counts: the product's joint states against the sum of the
variants' states. Times are the best of `--repeat` runs (wall seconds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import best  # noqa: E402  (bench/timing.py, beside the script)

from serq.check.diff import Checks, DiffModel, Side, diff  # noqa: E402
from serq.check.explore import explore  # noqa: E402
from serq.lang.load import load_text  # noqa: E402

PAIRS = [  # (name, instance, (old, new) edits of the variant)
    ("lifo/fifo", "theorem.sq", [("preempt lifo", "preempt fifo")]),
    ("budget 4/2", "theorem.sq", [("budget 4;", "budget 2;")]),
    ("cap 8/10 (spawn)", "join_in_hold.sq", [("cap 8;", "cap 10;")]),
    ("budget 4/2 (spawn)", "agent_subagents.sq", [("budget 4;", "budget 2;")]),
    ("chunk 4/1 (turns)", "multiturn_chat.sq", [("chunk 4;", "chunk 1;")]),
    ("cap 12/10 (turns)", "multiturn_chat.sq", [("cap 12;", "cap 10;")]),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--worst", metavar="METRIC", help="also time --worst METRIC")
    a = ap.parse_args()
    from explorer.check import build_graph

    warm = load_text((ROOT / "instances" / "theorem.sq").read_text(), "theorem.sq", explorer=True).program
    explore(warm, graph_limit=0)  # numba's start-up, outside the times
    print(f"{'pair':<20} {'a':>6} {'b':>6} {'joint':>7} {'alone s':>8} {'product s':>9} {'ratio':>6} "
          f"{'joint/s':>8} {'diff s':>7} {'verdict':<7}" + (f" {'worst s':>8}" if a.worst else ""))
    for name, inst, edits in PAIRS:
        text = (ROOT / "instances" / inst).read_text()
        vtext = text
        for old, new in edits:
            assert old in vtext, old
            vtext = vtext.replace(old, new)
        pa, pb = (load_text(t, inst, explorer=True).program for t in (text, vtext))
        alone, ta = best(lambda: [explore(p, ties="seq", symmetry=False, graph_limit=0) for p in (pa, pb)], a.repeat)
        sides = tuple(Side(p, "seq", Checks.of_program(p)) for p in (pa, pb))
        g, tp = best(lambda: build_graph(DiffModel(sides), edge_info=lambda s, x, n: x[0],
                                         node_info=DiffModel(sides).status), a.repeat)
        r, td = best(lambda: diff(pa, pb, (inst, "variant")), a.repeat)
        line = (f"{name:<20} {alone[0].stats.distinct:>6} {alone[1].stats.distinct:>6} {len(g):>7} {ta:>8.2f} "
                f"{tp:>9.2f} {tp / ta:>6.1f} {len(g) / tp:>8.0f} {td:>7.2f} {r.verdict:<7}")
        if a.worst:
            _, tw = best(lambda: diff(pa, pb, (inst, "variant"), worst=a.worst), a.repeat)
            line += f" {tw:>8.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
