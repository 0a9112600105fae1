"""The front end's time against the size of an instance: N session
programs (each a hold, a draw, a loop, a spawn) and a workload line each,
parsed, compiled and validated. Prints seconds per phase; linear time means
the per-session figure stays flat as N grows.

    python bench/bench_front_end.py [N ...]      (default: 1000 2000 4000 8000)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from serq.lang.compiler import Compiler  # noqa: E402
from serq.diagnostics import Sink  # noqa: E402
from serq.lang.parser import parse_tree  # noqa: E402
from serq.lang.validate import validate  # noqa: E402


def instance(n: int) -> str:
    out = ["pool kv { cap 64; block 4; admit via gpu; }", "stage gpu { budget 8; }"]
    for i in range(n):
        out.append(f"session s{i}(p = 4) {{\n  draw o in 1..4 ~ geometric(0.5) hidden;\n"
                   f"  let k = 0;\n  while k < 2 {{ set k = k + 1; turn think 1ms; }}\n"
                   f"  hold kv need p take p {{ prefill p on gpu; decode o on gpu growing kv; }}\n"
                   f"  spawn s{(i + 1) % n}(p = 2) x 0;\n}}")
    out.append("workload {\n" + "\n".join(f"  1 x s{i}(p = 3) every 10ms;" for i in range(n)) + "\n}")
    return "\n".join(out) + "\n"


def main(sizes: list[int]) -> None:
    print(f"{'sessions':>8} {'parse s':>8} {'compile s':>9} {'validate s':>10} {'validate us/session':>20}")
    for n in sizes:
        text = instance(n)
        t0 = time.perf_counter()
        tree = parse_tree(text, "bench.sq")
        t1 = time.perf_counter()
        sink = Sink("bench.sq")
        prog = Compiler("bench.sq", sink).compile(tree)
        t2 = time.perf_counter()
        diags = validate(prog)
        t3 = time.perf_counter()
        assert not sink.errors and not any(d.is_error for d in diags), diags[:3]
        print(f"{n:>8} {t1 - t0:>8.2f} {t2 - t1:>9.2f} {t3 - t2:>10.2f} {(t3 - t2) / n * 1e6:>20.0f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 2000, 4000, 8000])
