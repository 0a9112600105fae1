"""Where the array engine's time goes on a chat family member (the
instance of bench_chat_family.py): the search run in a warm process, its
phases timed from Python (CPU seconds, and nanoseconds a successor): the
kernel's expansion of a chunk (`expand_batch` in the model's
`array_expand`), the walk (`_walk`) and its prefetch pass (`_touch`),
packing the new rows (`_pack_new`, compression included) and unpacking a
chunk of several blocks or one (`_unpack_pieces`, inflating included);
the rest is Python between them.

`--perf-map` also names the compiled functions for `perf` (numba's code
has no symbols): every compiled library's functions, looked up in numba's
execution engine, are written to /tmp/perf-PID.map once the engine is
warm, and the script waits for Enter before the search, so that

    python bench/bench_array_phases.py --n 5 --perf-map &
    perf record -F 999 -p PID     # then press Enter in the first shell
    perf report --sort sym

attributes the samples to kernel and engine functions by name.

    python bench/bench_array_phases.py --n 5
    python bench/bench_array_phases.py --n 6 --symmetry
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_chat_family import TEMPLATE  # noqa: E402


def perf_map() -> int:
    """Write /tmp/perf-PID.map for every function numba has compiled or
    loaded in this process; returns how many."""
    from numba.core import dispatcher
    from numba.core.registry import cpu_target

    ee = cpu_target.target_context.codegen()._engine._ee
    names = set()
    for obj in gc.get_objects():
        if isinstance(obj, dispatcher.Dispatcher):
            for cres in obj.overloads.values():
                for mod in (getattr(cres.library, "_shared_module", None), getattr(cres.library, "_final_module", None)):
                    if mod is not None:
                        names.update(f.name for f in mod.functions)
    addrs = {}
    for name in names:
        try:
            a = ee.get_function_address(name)
        except Exception:  # noqa: BLE001 (a declaration numba cannot resolve)
            a = 0
        if a:
            addrs[a] = name
    items = sorted(addrs.items())
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for i, (a, name) in enumerate(items):
            size = items[i + 1][0] - a if i + 1 < len(items) and items[i + 1][0] - a < 1 << 20 else 4096
            f.write(f"{a:x} {size:x} {name}\n")
    return len(items)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="chats (default 5)")
    ap.add_argument("--symmetry", action="store_true", help="with symmetry (default: without, ranks reduced)")
    ap.add_argument("--max-states", type=int, default=None, help="stop at this many states (a part of a large run)")
    ap.add_argument("--perf-map", action="store_true", help="write /tmp/perf-PID.map and wait for Enter")
    args = ap.parse_args()

    import explorer.strategies.arrays.engine as eng
    from serq.check.explore import explore
    from serq.check.model import SerqModel
    from serq.lang.load import load_text

    sym, red = args.symmetry, not args.symmetry
    small = load_text(TEMPLATE.replace("{N}", "2"), "small.sq", explorer=True).program
    explore(small, symmetry=sym, reduce_ranks=red)
    prog = load_text(TEMPLATE.replace("{N}", str(args.n)), "bench.sq", explorer=True).program
    explore(prog, symmetry=sym, reduce_ranks=red, max_states=50)

    spent: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()

    def timed(key, f):
        def g(*a, **k):
            c = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[key] += time.process_time() - c
                calls[key] += 1
        return g

    for name in ("_walk", "_touch", "_pack_new", "_unpack_pieces"):
        setattr(eng, name, timed(name, getattr(eng, name)))
    SerqModel.array_expand = timed("array_expand (kernel)", SerqModel.array_expand)
    if args.perf_map:
        print(f"pid {os.getpid()}: {perf_map()} functions in /tmp/perf-{os.getpid()}.map; Enter to start", flush=True)
        sys.stdin.readline()
    c = time.process_time()
    r = explore(prog, symmetry=sym, reduce_ranks=red, max_states=args.max_states)
    cpu = time.process_time() - c
    gen = max(r.stats.generated, 1)
    print(f"chat({args.n}) {'with' if sym else 'without'} symmetry{'' if sym else ', ranks reduced'}: {r.verdict}, "
          f"{r.stats.distinct:,} states, {r.stats.generated:,} successors, {cpu:.2f} s of CPU "
          f"({cpu / gen * 1e9:.0f} ns a successor)")
    for key, v in spent.most_common():
        print(f"  {key:22} {v:8.2f} s {calls[key]:8d} calls {v / gen * 1e9:7.0f} ns a successor")
    rest = cpu - sum(spent.values())
    print(f"  {'the rest':22} {rest:8.2f} s {'':14} {rest / gen * 1e9:7.0f} ns a successor")


if __name__ == "__main__":
    main()
