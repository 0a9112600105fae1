"""The one entry into the checker: `check(model, settings) -> Result`.

The engine is chosen here, in one place, by `ENGINES`: a table keyed on
the strategy asked for (`Settings.strategy`), on what the model declares
it offers (its rows, its rows on threads, or neither: `explorer.model`'s
capabilities) and on whether there are several workers. Every engine
takes (model, factory, settings) and returns a Result:

- sequential: BFS or DFS over the model's Python states (strategies/sequential.py)
- objects on processes: the same BFS over hash partitions of Python states, one on each worker
  process, run by the partitions driver (strategies/partitions/driver.py, objects.py)
- rows: BFS over packed rows, compiled (strategies/arrays/engine.py); its chunks expanded by
  worker processes (arrays/workers.py) or walked by worker threads (arrays/walkers.py)
- partitioned: BFS over hash partitions of rows, on threads or Ray actors, with checkpoints
  (strategies/partitions/driver.py)
- swarm: randomized depth-first searches, incomplete by design (strategies/swarm.py)

A rows engine that meets `ArrayFallback` (the model cannot go on with
rows) hands the run to the engine the table gives a model without rows.

A run with a visitor (`Settings.visitor`, explorer/visitor.py: hooks
called on each state and edge) needs the model's states as Python values:
the door reads the model as offering objects alone, so that the table
gives it the sequential engine, the one that calls a visitor (the same
states and counts as the rows engines). `Settings` refuses a visitor with
several workers or with the strategies "partitioned" and "swarm".

The side analyses are visitors over this one search, reached through this
module too, so that a caller imports no engine module: the stored graph
(`build_graph`, for the point of no return and the worst paths; its
`completable` states, those from which some run completes), the
forward searches of the point of no return (`forward_no_return`) and the
walk of a successor function (`walk`, the theorem's solo runs).

(`explorer.check`, the package's attribute, is this function: import
names from the module with `from explorer.check import ...`.)
"""

from __future__ import annotations

import time
from typing import Any, Callable

from explorer.graph.analysis import NoReturn, completable, highest, longest, no_return, point_of_no_return, sccs
from explorer.errors import CheckpointError, PartitionError, RayUnavailable, WorkerLost
from explorer.graph.cycles import find_livelock
from explorer.graph.forward import forward_no_return
from explorer.runtime import compiled
from explorer.runtime.interrupt import interrupt_of, signal_name
from explorer.runtime.limits import LimitReached, Limits, building, limits_on
from explorer.runtime.memory import MemoryGuard
from explorer.model import FAIR, ROW_THREADS, ROWS, ArrayFallback, ModelFactory, build_model, declared, has
from explorer.outcome import bounded, interrupted
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.stores.exact import Exact
from explorer.graph.stored import StateGraph, build_graph
from explorer.trace import follow
from explorer.graph.walk import WalkEnd, walk
from explorer.visitor import PRUNE, STOP, Visitor

__all__ = ["find_livelock", "check", "start", "uses_for", "build", "BUILDING", "Settings", "ENGINES", "engine_for", "CheckpointError", "PartitionError", "RayUnavailable",
           "WorkerLost", "NoReturn", "completable", "no_return", "point_of_no_return", "forward_no_return",
           "highest", "longest",
           "sccs", "build_graph", "StateGraph", "follow", "walk", "WalkEnd", "Visitor", "PRUNE", "STOP"]

Engine = Callable[[Any, ModelFactory, Settings], Result]


def check(model: Any, settings: Settings | None = None, **fields: Any) -> Result:
    """Check `model` (a Model or a ModelFactory) as `settings` say; keyword
    `fields` stand for `Settings(**fields)` (or change those of `settings`).

    May raise NondeterministicModel when a counterexample cannot be
    replayed, and (partitioned) WorkerLost, CheckpointError, PartitionError,
    RayUnavailable."""
    s = settings if settings is not None else Settings()
    if fields:
        s = s.but(**fields)
    s = start(s)
    built = build(model, s)
    if isinstance(built, Result):
        return built
    m, factory = built
    result = _run(m, factory, s)
    if s.exact:
        result.stats.exact = True
    return result


def start(s: Settings) -> Settings:
    """`s` with the run's clock started (`started`), unless it is: the
    compiled specializations the search may call (`uses_for`) are loaded
    first (explorer/runtime/compiled.py), before the clock and before any
    worker starts."""
    compiled.load(uses_for(s))
    return s if s.started is not None else s.but(started=time.perf_counter())


def uses_for(s: Settings) -> tuple[str, ...]:
    """The compiled code's uses (`compiled.USES`) of every engine `ENGINES`
    may give a run with these settings, whatever the model offers (a
    model without rows, or one that gives them up, takes the sequential
    engine, whose compiled code is every search's; so does a run with a
    visitor or exact identities, whose model offers no rows)."""
    if s.visitor is not None or s.exact:
        return ("search",)
    if s.strategy == "bfs":
        # begun in the disk mode: its code loaded before the search; a search the memory bound may move there
        # (disk_at) loads it at the move, which most never make (2.6 s of a cold first compile, 13 ms warm)
        disk = ("disk",) if s.disk is not None and s.disk_at is None else ()
        return ("search", "rows", "threads") + disk if s.workers > 1 else ("search", "rows") + disk
    if s.strategy == "partitioned":
        return ("search", "partitions")
    return ("search",)


def build(model: Any, s: Settings) -> tuple[Any, ModelFactory] | Result:
    """(model, factory), the model built (when given a factory) within the
    check's limits, counted from `s.clock()`: a model too large to build
    in time or memory (a workload of a million sessions), or a signal
    while it is built, is the check's verdict ("bound" or "interrupted",
    nothing explored), not a wait for the whole build (its long loops call
    `explorer.runtime.limits.tick`)."""
    t0 = s.clock()
    try:
        with building(Limits(s.time_limit, MemoryGuard(s.memory_limit), t0)):
            m, factory = build_model(model)
            if s.exact and not isinstance(m, Exact):
                m = Exact(m)  # every state by its whole canonical form (rows carry fingerprints only: not used)
    except MemoryError:  # the model itself (a huge workload's rows) does not fit
        r = bounded(Stats(strategy=_named(s)), "memory", "MemoryError")
    except LimitReached as e:
        r = bounded(Stats(strategy=_named(s)), e.reason, e.value)
    except (KeyboardInterrupt, SystemError) as e:
        sig = signal_name(interrupt_of(e))
        r = interrupted(Stats(strategy=_named(s)), interrupt_of(e))
        r.message = f"stopped by {sig} {BUILDING}; exploration incomplete"
    else:
        return m, factory
    if r.verdict == "bound":
        r.message += f": reached {BUILDING}"
    r.stats.elapsed = time.perf_counter() - t0
    r.stats.workers = s.workers
    return r


BUILDING = "while the model was being built (nothing explored)"  # a verdict met before the search


def _run(m: Any, factory: Any, s: Settings) -> Result:
    engine = engine_for(m, s)
    if has(m, FAIR) and s.visitor is None:  # (a visited search is an analysis's, which judges states itself)
        t0 = time.perf_counter()
        compiled.load(("fair",))  # (a model that declares FAIR: known once built; the time kept out of the clock)
        s = s.but(started=s.clock() + (time.perf_counter() - t0))
        return _fair_run(m, factory, s, engine)
    try:
        return engine(m, factory, s)
    except ArrayFallback:
        if offers(m) == "objects":
            raise
        if s.disk is not None and s.disk_at is None:  # (never a silent search in memory)
            raise ValueError("the model gave up its rows during the search, and the disk mode is the array "
                             "engine's: drop the disk mode") from None
        s = s.but(disk=None, disk_at=None)  # (a move to the disk mode when memory runs short: rows only)
        fallback = ENGINES.get((s.strategy, "objects", s.workers > 1))
        if fallback is None:
            raise
        return fallback(m, factory, s)


def _fair_run(m: Any, factory: Any, s: Settings, engine: Engine) -> Result:
    """A model that declares FAIR (liveness under fairness, graph/fair.py):
    the rows engine in one process records every edge and looks for a
    starved subject itself; any other engine (the sequential one: DFS, a
    visitor, a model without rows or one that gives them up) searches
    first, then the stored graph (graph/stored.py) is built and searched
    for one. Several workers, partitions and swarms are refused."""
    if s.workers > 1 or s.strategy in ("partitioned", "swarm"):
        raise ValueError("liveness under fairness is checked by one process (strategy 'bfs' or 'dfs', one worker)")
    if engine is rows:
        try:
            return engine(m, factory, s)
        except ArrayFallback:
            engine = sequential
    r = sequential(m, factory, s) if engine is rows else engine(m, factory, s)
    if r.verdict != "pass":
        return r
    from explorer.graph.fair import fair_pass, fair_result, graph_lasso

    g = build_graph(m, max_states=s.max_states, time_limit=s.time_limit, memory_limit=s.memory_limit,
                    edge_info=lambda state, action, nxt: m.fair_class(state, action), node_info=m.waiting)
    if not g.complete:
        limit = {"max_states": s.max_states, "time_limit": s.time_limit, "memory": s.memory_limit}
        return bounded(r.stats, g.bound_reason, limit.get(g.bound_reason, g.bound_reason))
    limits = Limits(s.time_limit, MemoryGuard(s.memory_limit), s.clock())
    try:
        lasso = graph_lasso([[(c, v) for (_ai, v), c in zip(out, info)] for out, info in zip(g.succ, g.info)],
                            g.value, m.fair_strong, limits.check)
    except LimitReached as e:
        return bounded(r.stats, e.reason, e.value)
    if lasso is None:
        return fair_pass(m, r, g.value)
    paths = {g.fps[u]: [(g.fps[v], ai) for v, ai in g.path_to(u)] for u in (lasso.entry,)}
    return fair_result(m, paths.__getitem__, lasso, [g.fps[u] for u in [lasso.entry] + lasso.cycle], r.stats)


def _named(s: Settings) -> str:
    return "bfs" if s.strategy == "partitioned" else s.strategy


def offers(m: Any, s: Settings | None = None) -> str:
    """What the model offers the engines: "row_threads", "rows" or "objects"
    (objects alone for a run with a visitor, which sees Python states)."""
    caps = declared(m)
    if s is not None and s.visitor is not None:
        return "objects"
    return ROW_THREADS if ROW_THREADS in caps else ROWS if ROWS in caps else "objects"


def engine_for(m: Any, s: Settings) -> Engine:
    """The engine `ENGINES` gives the model and the settings."""
    key = (s.strategy, offers(m, s), s.workers > 1)
    if s.disk is not None and key[1] == "objects" and s.disk_at is None:
        raise ValueError("the disk mode is the array engine's: this model does not offer rows; drop the disk mode")
    engine = ENGINES.get(key)
    if engine is None:
        raise ValueError(f"no engine for the strategy {s.strategy!r} with a model offering {key[1]}"
                         f"{' and several workers' if key[2] else ''}")
    return engine


# ---------------------------------------------------------------- the engines


def sequential(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.sequential import sequential_check

    return sequential_check(m, s)


def objects_on_processes(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.partitions.driver import objects_check  # lazy: keeps processes out of the sequential path

    return objects_check(m, factory, s)


def rows(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.arrays.engine import array_check

    with limits_on(m, Limits(s.time_limit, MemoryGuard(s.memory_limit), s.clock())):  # inside an expansion too
        if s.disk is not None and s.disk_at is None:
            from explorer.strategies.arrays.disk import disk_check

            return disk_check(m, factory, s)
        return array_check(m, factory, s)


def rows_on_processes(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.arrays.engine import array_check_on_processes

    with limits_on(m, Limits(s.time_limit, MemoryGuard(s.memory_limit), s.clock())):
        return array_check_on_processes(m, factory, s)


def rows_on_threads(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.arrays.walkers import walkers_check

    with limits_on(m, Limits(s.time_limit, MemoryGuard(s.memory_limit), s.clock())):
        return walkers_check(m, s)


def partitioned(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.partitions.driver import partitioned_check

    return partitioned_check(m, factory, s)


def swarm(m: Any, factory: ModelFactory, s: Settings) -> Result:
    from explorer.strategies.swarm import swarm_check

    return swarm_check(m, factory, s)


def _no_rows(m: Any, factory: ModelFactory, s: Settings) -> Result:
    raise PartitionError("the model does not offer the array protocol")


# (strategy, what the model offers, several workers) -> engine
ENGINES: dict[tuple[str, str, bool], Engine] = {
    ("bfs", "objects", False): sequential,
    ("bfs", "objects", True): objects_on_processes,
    ("bfs", ROWS, False): rows,
    ("bfs", ROWS, True): rows_on_processes,
    ("bfs", ROW_THREADS, False): rows,
    ("bfs", ROW_THREADS, True): rows_on_threads,
    ("dfs", "objects", False): sequential,
    ("dfs", ROWS, False): sequential,
    ("dfs", ROW_THREADS, False): sequential,
    **{("partitioned", offer, many): partitioned for offer in (ROWS, ROW_THREADS) for many in (False, True)},
    ("partitioned", "objects", False): _no_rows,
    ("partitioned", "objects", True): _no_rows,
    **{("swarm", offer, many): swarm for offer in (ROWS, ROW_THREADS) for many in (False, True)},
}
