"""States per second of the partitioned BFS on Ray with 1, 2 and 4
partitions, against the in-process array engine on the same instance (the
chat family of bench_chat_family.py, N chats, symmetry on), and the
partitioned engine in this process. Every run must give the array engine's
verdict and counts. Ray's actors are started (and the kernel loaded in
them) by a warm-up run on a small instance first; that start-up is printed
apart.

    python bench/bench_ray.py                      # N = 6, a private Ray instance (2 CPUs, 200 MB store)
    python bench/bench_ray.py --n 5 --ray auto     # the cluster started with `ray start --head`
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_chat_family import TEMPLATE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6, help="chats (default 6: 282,547 states)")
    ap.add_argument("--ray", default="local", help="local (a private Ray instance), auto or HOST:PORT")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args()

    import ray

    from explorer import check
    from explorer.strategies.partitions.backends import connect
    from explorer.model import ModelFactory
    from serq.check.model import SerqModel
    from serq.lang.load import load_text

    if args.ray == "local":
        ray.init(num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False, logging_level="ERROR",
                 runtime_env={"env_vars": {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}})
    else:
        connect(args.ray)
    prog = load_text(TEMPLATE.replace("{N}", str(args.n)), "bench.sq", explorer=True).program
    small = load_text(TEMPLATE.replace("{N}", "3"), "small.sq", explorer=True).program
    f = ModelFactory(SerqModel, (prog,), {})
    check(f(), max_states=50)  # the kernel loaded from numba's cache

    t = time.perf_counter()
    base = check(f())
    t_arr = time.perf_counter() - t
    want = (base.verdict, base.stats.distinct, base.stats.generated)
    print(f"chat family N={args.n}: {base.verdict}, {base.stats.distinct} states, "
          f"{base.stats.max_depth} levels (machine: {os.cpu_count()} cores; figures are noisy on a shared machine)")
    print(f"{'engine':<28} {'seconds':>8} {'states/s':>10} {'time/array':>10}")
    print(f"{'array engine (in process)':<28} {t_arr:8.2f} {base.stats.distinct / t_arr:10.0f} {1.0:8.2f}x")
    for k in args.partitions:
        t = time.perf_counter()
        r = check(f, strategy="partitioned", partitions=k)
        dt = time.perf_counter() - t
        assert (r.verdict, r.stats.distinct, r.stats.generated) == want
        print(f"{f'partitions={k} (in process)':<28} {dt:8.2f} {r.stats.distinct / dt:10.0f} {dt / t_arr:8.2f}x")
    for k in args.partitions:
        t = time.perf_counter()
        check(ModelFactory(SerqModel, (small,), {}), strategy="partitioned", partitions=k, ray=args.ray)
        start = time.perf_counter() - t
        t = time.perf_counter()
        r = check(f, strategy="partitioned", partitions=k, ray=args.ray)
        dt = time.perf_counter() - t
        assert (r.verdict, r.stats.distinct, r.stats.generated) == want
        print(f"{f'partitions={k} (Ray)':<28} {dt:8.2f} {r.stats.distinct / dt:10.0f} {dt / t_arr:8.2f}x"
              f"   (actors started in {start:.1f} s)")
        # Ray's cost per level: a small instance (few states, all levels) on Ray and in process
        sf = ModelFactory(SerqModel, (small,), {})
        t = time.perf_counter()
        rs = check(sf, strategy="partitioned", partitions=k, ray=args.ray)
        on_ray = time.perf_counter() - t
        t = time.perf_counter()
        check(sf, strategy="partitioned", partitions=k)
        here = time.perf_counter() - t
        levels = rs.stats.max_depth + 1
        print(f"{'':<28} Ray's overhead per level: {(on_ray - here) / levels * 1000:.0f} ms "
              f"(N=3: {levels} levels, {on_ray:.2f} s on Ray, {here:.2f} s in process)")
    ray.shutdown()


if __name__ == "__main__":
    main()
