"""Bytes the partitioned engine sends per state, measured, and a model of
how it scales to 8, 64 and 512 workers (docs/explorer.md, "How the
partitions scale").

The partitions run in this process (the same code as on Ray, where each
bundle is an object put in the store and fetched by its owner): every
level, each partition sends to each other partition one bundle of the
successors that partition owns (packed rows, and per successor its key,
fingerprint, flags and action), and the driver gathers the keys of the
new states and hands back their global ids. What is counted:

- successor bytes that cross partitions (a bundle a partition keeps for
  itself crosses nothing), per distinct state;
- the driver's bytes (8-byte keys in, 8-byte ids out), per distinct state;
- the messages per level (K*(K-1) bundles, 2K driver calls).

    python bench/bench_traffic.py                      # chat family N=5, symmetry on, K = 2 4 8 16
    python bench/bench_traffic.py --n 6 --partitions 2 8 32

Then, with the measured per-successor bytes at each K and the instance's
successors per state and levels, the model: bytes per state sent by each
worker and in all, and messages per level, at K = 8, 64, 512 (a
packed bundle carries a fixed header per varying column, so per-successor
bytes grow a little as bundles shrink with K; the model uses the largest K
measured, and says so).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_chat_family import TEMPLATE  # noqa: E402


def bundle_bytes(pieces: list) -> tuple[int, int, int]:
    """(payload bytes, header bytes, successors) of one bundle: the packed
    rows' words and the arrays beside them (per successor), and each
    packed block's header (the constant columns and 33 bytes a varying
    column: per block, whatever its length)."""
    pay = head = n = 0
    for packed, keys, fps, flags, acts in pieces:
        h = packed.const.nbytes + 33 * packed.var.size
        head += h
        pay += packed.nbytes - h + keys.nbytes + fps.nbytes + flags.nbytes + acts.nbytes
        n += len(keys)
    return pay, head, n


def measure(factory, k: int) -> dict:
    from explorer import check
    from explorer.strategies.partitions import partition as part

    tally = {"cross": 0, "head": 0, "pay": 0, "blocks": 0, "succ_cross": 0, "succ": 0}
    orig = part.Partition.expand

    def expand(self, depth):
        out = orig(self, depth)
        me = self.index
        for d, pieces in enumerate(out[1:]):
            pay, head, n = bundle_bytes(pieces)
            tally["succ"] += n
            tally["pay"] += pay
            tally["head"] += head
            tally["blocks"] += len(pieces)
            if d != me:
                tally["cross"] += pay + head
                tally["succ_cross"] += n
        return out

    part.Partition.expand = expand
    try:
        t = time.process_time()
        r = check(factory, strategy="partitioned", partitions=k)
        tally["cpu"] = time.process_time() - t
    finally:
        part.Partition.expand = orig
    tally["distinct"] = r.stats.distinct
    tally["generated"] = r.stats.generated
    tally["levels"] = r.stats.max_depth + 1
    tally["verdict"] = r.verdict
    return tally


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="chats (default 5)")
    ap.add_argument("--symmetry", choices=("on", "off"), default="on")
    ap.add_argument("--partitions", type=int, nargs="+", default=[2, 4, 8, 16])
    a = ap.parse_args()

    from explorer.model import ModelFactory
    from explorer.strategies.partitions.partition import CHUNK
    from serq.check.model import SerqModel
    from serq.lang.load import load_text

    prog = load_text(TEMPLATE.replace("{N}", str(a.n)), "bench.sq", explorer=True).program
    f = ModelFactory(SerqModel, (prog,), {"symmetry": a.symmetry == "on"})
    from explorer import check

    check(f(), max_states=50)  # the kernel loaded
    rows = []
    for k in a.partitions:
        t = measure(f, k)
        rows.append((k, t))
    first = rows[0][1]
    g = first["generated"] / first["distinct"]
    print(f"chat family N={a.n}, symmetry {a.symmetry}: {first['verdict']}, {first['distinct']:,} states, "
          f"{first['generated']:,} successors ({g:.2f} a state), {first['levels']} levels")
    print(f"{'K':>4} {'payload B/succ':>14} {'header B/block':>14} {'blocks':>7} {'crossing':>8} "
          f"{'B/state sent':>12} {'msgs/level':>10} {'cpu s':>6}")
    for k, t in rows:
        print(f"{k:>4} {t['pay'] / t['succ']:14.1f} {t['head'] / t['blocks']:14.0f} {t['blocks']:7,} "
              f"{t['succ_cross'] / t['succ']:8.1%} {t['cross'] / t['distinct']:12.1f} {k * (k - 1) + 2 * k:>10,} "
              f"{t['cpu']:6.1f}")
    pay = max(t["pay"] / t["succ"] for _, t in rows)
    head = max(t["head"] / t["blocks"] for _, t in rows)
    lv = first["levels"]
    big, levels = 1e9, 40
    print(f"\nmodel: a successor's payload {pay:.1f} B and a block's header {head:.0f} B (the largest measured), "
          f"{g:.2f} successors a state; the driver 16 B a state (8 keys in, 8 ids out).")
    print(f"Payload: each state's successors cross with probability (K-1)/K. Headers: a partition cuts its "
          f"frontier into chunks of {CHUNK} rows and sends a block to each other partition per chunk, so "
          f"K*(K-1) blocks a level at least, (K-1) a chunk: for S = {big:.0e} states in {levels} levels, "
          f"max(K*(K-1)*{levels}, (K-1)*S/{CHUNK}) blocks.")
    print(f"{'K':>4} {'payload B/state':>15} {'headers B/state':>15} {'msgs/level':>10}")
    for k in (8, 64, 512):
        payload = g * pay * (k - 1) / k
        blocks = max(k * (k - 1) * levels, (k - 1) * big / CHUNK)
        print(f"{k:>4} {payload:15.1f} {blocks * head / big:15.1f} {k * (k - 1) + 2 * k:>10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
