"""Visitor benchmark: what the sequential search costs with and without a
visitor, and what the side analyses that ride on it cost (the stored
graph, the forward searches of the point of no return, the theorem's solo
runs, a worst case). CPU seconds, best of `--repeat` runs, warm kernel
cache, the compiled engine loaded before the first timing.

    python bench/bench_visitor.py
    python bench/bench_visitor.py --repeat 5 --instances multiturn_chat

- sequential: `check` of the instance's model on the sequential engine
  (the Python protocol; `strategy` bfs and dfs; "grid" is a model that
  costs almost nothing, where the search's own work shows), no visitor; then (when
  explorer.visitor exists) with a visitor that does nothing and one that
  counts states and edges;
- graph: `build_graph` of the instance (every state, every edge);
- forward: the point of no return of theorem_no_fit's counterexample by
  forward searches alone;
- solo: the theorem's solo runs (`measure`) of every instance of the library;
- worst: `find_worst` of ttft on vllm_chat."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer import Settings, check  # noqa: E402
from explorer.check import build_graph, forward_no_return  # noqa: E402
from serq.check.explore import Completion, explore  # noqa: E402
from serq.check.model import SerqModel  # noqa: E402
from serq.check.theorem import measure  # noqa: E402
from serq.check.worst import find_worst  # noqa: E402
from serq.lang.load import load_path  # noqa: E402

try:
    from explorer.visitor import Visitor
except ImportError:  # before the visitor protocol
    Visitor = None


class Objects:
    """A SerqModel seen through the Python protocol alone (no rows): the
    door gives it the sequential engine."""

    def __init__(self, sm: SerqModel) -> None:
        self.sm = sm
        self.capabilities = frozenset(sm.capabilities) - {"rows", "row_threads"}

    def __getattr__(self, name):
        return getattr(self.sm, name)


class Grid:
    """(x, y), 0 <= x, y <= n, one step right or up: (n + 1)**2 states of a
    model that costs almost nothing, so that the search's own work shows."""

    capabilities = frozenset({"fingerprint"})

    def __init__(self, n: int) -> None:
        self.n = n

    def initial_states(self):
        return [(0, 0)]

    def actions(self, state):
        return (0, 1)

    def step(self, state, action):
        x, y = state
        if action == 0:
            return (x + 1, y) if x < self.n else None
        return (x, y + 1) if y < self.n else None

    def fingerprint(self, state) -> int:
        return state[0] * (self.n + 1) + state[1] + 1

    def is_done(self, state) -> bool:
        return state == (self.n, self.n)

    def is_progress(self, state, action, nxt) -> bool:
        return True

    def invariants(self, state):
        return []


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return min(times), out


def load(name: str):
    return load_path(ROOT / "instances" / f"{name}.sq").program


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", nargs="*", default=["multiturn_chat", "vllm_chat"])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    visitors = {}
    if Visitor is not None:
        class Nothing(Visitor):
            pass

        class Counting(Visitor):
            def __init__(self) -> None:
                self.states = self.edges = 0

            def on_state(self, state, fp, parent, ai, depth):
                self.states += 1

            def on_edge(self, state, fp, ai, action, nxt, nfp, events):
                self.edges += 1

        visitors = {"nothing": Nothing, "counting": Counting}
    explore(load("vllm_chat"), max_states=10)  # the compiled engine loaded
    for name in ["grid"] + a.instances:
        sm = Grid(250) if name == "grid" else Objects(SerqModel(load(name)))
        for strategy in ("bfs", "dfs"):
            t, r = best(lambda: check(sm, Settings(strategy=strategy)), a.repeat)
            line = f"{name} {strategy} sequential: {r.stats.distinct} distinct, {t:.3f} s CPU, no visitor"
            for label, cls in visitors.items():
                tv, rv = best(lambda: check(sm, Settings(strategy=strategy, visitor=cls())), a.repeat)
                assert rv.stats.distinct == r.stats.distinct
                line += f"; {label} visitor {tv:.3f} s ({(tv / t - 1) * 100:+.1f}%)"
            print(line, flush=True)
        t, g = best(lambda: build_graph(sm if name == "grid" else SerqModel(load(name))), a.repeat)
        print(f"{name} build_graph: {len(g)} nodes, {g.edges} edges, {t:.3f} s CPU", flush=True)
    prog = load("theorem_no_fit")
    r = explore(prog, graph_limit=0)
    states = [s.state for s in r.trace]
    t, nr = best(lambda: forward_no_return(Completion(SerqModel(prog)), states), a.repeat)
    print(f"theorem_no_fit forward_no_return: {nr.status} {nr.step}, {nr.searched} states searched, "
          f"{t:.3f} s CPU", flush=True)
    progs = [load(p.stem) for p in sorted((ROOT / "instances").glob("*.sq"))]
    t, peaks = best(lambda: [measure(p)[0] for p in progs], a.repeat)
    print(f"solo runs (theorem's measure) of {len(progs)} instances: {sum(map(len, peaks))} peaks, {t:.3f} s CPU",
          flush=True)
    prog = load("vllm_chat")
    t, w = best(lambda: find_worst(prog, "ttft"), 1)
    print(f"vllm_chat find_worst ttft: value {w.value}, {w.states} states, {t:.3f} s CPU", flush=True)


if __name__ == "__main__":
    main()
