"""Quantifiers over sessions: what a quantified invariant costs the
explorer against a pool-total invariant and against none.

    python bench/bench_quantifiers.py
    python bench/bench_quantifiers.py --repeat 3

For each instance, the same search (`serq explore`, one worker, the
instance's own lines replaced) with `check completes;` alone, with a
pool-total invariant added, and with a `forall` and a `count` over the
sessions added: distinct states and wall seconds (the best of `--repeat`
runs), and states per second. Every state is then judged by a call of
the kernel's evaluator from Python, as for any invariant."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import best  # noqa: E402  (bench/timing.py, beside the script)

from serq.check.explore import explore  # noqa: E402
from serq.lang.load import load_text  # noqa: E402

CASES = [  # (instance, a pool-total invariant, a quantified one)
    ("multiturn_chat.sq", "check invariant free(kv) >= 0;",
     "check invariant forall chat c: c.g < c.max_out and c.held(kv) <= 12;"),
    ("vllm_chat.sq", "check invariant free(kv) >= 0;",
     "check invariant count(chat c where c.waiting) <= 3 and (forall chat c: c.held(kv) >= 0);"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    warm = load_text((ROOT / "instances" / "quantifiers.sq").read_text(), "warm", explorer=True).program
    explore(warm, graph_limit=0)  # numba's start-up, not in the first figure
    print(f"{'instance':20} {'invariant':10} {'states':>8} {'seconds':>8} {'states/s':>9}")
    for name, pool_inv, quant_inv in CASES:
        base = re.sub(r"(?m)^check .*$", "", (ROOT / "instances" / name).read_text()) + "check completes;\n"
        for label, extra in (("none", ""), ("pool", pool_inv), ("quantified", quant_inv)):
            prog = load_text(base + extra + "\n", name, explorer=True).program
            r, t = best(lambda: explore(prog, graph_limit=0), args.repeat)
            assert r.verdict == "pass", (name, label, r.message)
            print(f"{name:20} {label:10} {r.stats.distinct:>8} {t:>8.2f} {r.stats.distinct / t:>9.0f}")


if __name__ == "__main__":
    main()
