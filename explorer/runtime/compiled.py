"""Compiled code loaded before the search: every specialization of every
compiled function a search calls from Python, loaded from numba's cache
(or compiled, once per install) by `load()`, which `explorer.check` calls
before the run's clock starts and before any worker (process or thread)
starts. No compilation and no loading then happens in the middle of a
search: under an address-space limit (`ulimit -v`) LLVM aborts the process
(SIGABRT) when one of its allocations fails, where Python would have
raised a MemoryError that ends the search with the "memory" bound and its
statistics. A worker forked afterwards inherits the code loaded. (One
exception: the disk mode's code, for a search the memory bound moves
there, is loaded at the move; see "disk" below.)

The table below names each function by module and attribute, with the
argument types it is called with (numba's types: a C-contiguous array of
int32 is `a(i32)`), and the uses that call it; a function called only
from other compiled code needs no entry (it is compiled into its
callers). A model brings its own compiled code the same way:
`register(name, entries)` (serq registers its kernel's entry points,
serq/semantics/entries.py), loaded by the same `load()`.

*Uses.* `load(uses)` loads what the named uses call, not the rest (each
function loaded costs a millisecond or more, and its module's import):

- "search": what every search and every analysis of a stored graph calls
  (the cycle search; a model's own step);
- "fair": liveness under fairness (graph/fair.py), loaded by the door once
  the model is built and declares FAIR, before its search (the load kept
  out of the run's clock);
- "rows": the array engine, in one process or with worker processes
  (strategies/arrays/);
- "disk": its disk mode (strategies/arrays/disk.py registers its table),
  loaded with "rows" when a search begins in the disk mode, and at the
  move by one the memory bound moves there (`disk_at`: the one load in
  the middle of a search, which most searches never make);
- "threads": the array engine's walkers on threads (with "rows");
- "partitions": the hash partitions (strategies/partitions/, the flat store);
- "step": what a simulation calls (a model's step, nothing of the explorer's).

A row names its uses as a fourth element; a row without one serves every
use. `explorer.check` loads the uses of the engine the settings choose
(`uses_for`); a model may load its own share when it is built.

`missing()` lists the specializations a process has compiled or loaded
that no `load()` loaded before: empty after any search (a test runs every
strategy, each in a process of its own, and checks it)."""

from __future__ import annotations

import importlib
import threading
from typing import Callable, Sequence

__all__ = ["load", "register", "missing", "loaded", "USES"]

USES = ("search", "rows", "threads", "partitions", "step", "disk", "fair")

_LOCK = threading.Lock()
# name -> (table, inner): table() gives [(module, attribute, [argument types...]) or (..., uses)]
_TABLES: dict[str, tuple] = {}
_LOADED: dict[str, set] = {}  # module.attribute -> the argument types of each specialization load() loaded
_ASKED: set[str] = set()  # the uses loaded in this process ("*": every one)


def _types():
    from numba import types as nt

    def a(dt, nd: int = 1):
        return nt.Array(dt, nd, "C")

    return nt, a


def _explorer_table() -> list:
    nt, a = _types()
    i8, i16, i32, i64, u8, u64, b1 = nt.int8, nt.int16, nt.int32, nt.int64, nt.uint8, nt.uint64, nt.boolean
    T = nt.Tuple
    store = T((a(i32), i64, a(i64), a(u64)))  # the array engine's table: (tab, R, sz, fparr)
    graph = (i64, a(i32), a(i32))  # a graph's (n, ofs, dst)
    rows = [
        # the partitions' flat store (stores/flat.py)
        ("explorer.stores.flat", "_find", [(a(i32), a(u64), u64)]),
        ("explorer.stores.flat", "_rehash", [(a(i32), a(u64), i64, i64)]),
        # the one search for a cycle (graph/cycles.py): every engine's livelock check, the graph analyses
        ("explorer.graph.cycles", "_acyclic_part", [graph]),
        ("explorer.graph.cycles", "_scc", [graph + (a(i32),)]),
        ("explorer.graph.cycles", "_cycle", [graph + (a(i32), i64)]),
        # liveness under fairness over the same graphs (graph/fair.py)
        ("explorer.graph.fair", "_enabled", [(i64, a(i32), a(u8))]),
        ("explorer.graph.fair", "_judge", [graph + (a(u8), a(i32), a(u64), b1, a(b1))]),
        ("explorer.graph.fair", "_peel_within", [graph + (a(i32),)]),
        ("explorer.graph.fair", "_leg", [graph + (a(i32), i64, i64)]),
        # the array engine (strategies/arrays/)
        ("explorer.strategies.arrays.engine", "_walk", [(
            i64, i64, T((i64, a(i64), a(u64), a(i64), i64, i64, a(i8))),
            T((a(i32), i64, a(i64), a(i64), a(u64), a(i32))), a(i64),
            T((a(i64), a(u8), a(i64), a(i32), a(u64))), T((i64, i64, b1, b1)),
            T((b1, a(i8, 2), a(i64, 2), a(u8), i64)))]),
        ("explorer.strategies.arrays.engine", "_offsets", [(a(i64), i64, a(i64))]),
        ("explorer.strategies.arrays.engine", "_offsets_of", [(a(u8), a(i64), i64, a(i32))]),
        ("explorer.strategies.arrays.narrow", "_minmax", [(a(i64, 2), a(i64))]),
        ("explorer.strategies.arrays.narrow", "_pack", [(a(i64, 2), a(i64), a(i64), a(i64), a(i64), a(u64), a(b1),
                                                          a(u64, 2))]),
        ("explorer.strategies.arrays.narrow", "_pack_fit", [(a(i64, 2), a(i64), T((a(i64), a(u64))),
                                                              T((a(i64), a(i64), a(i64), a(u64), a(b1))), a(u64, 2))]),
        ("explorer.strategies.arrays.narrow", "_unpack", [(a(u64, 2), T((a(i64), a(i64), a(i64), a(u64), a(b1),
                                                                          a(u64), a(i64))), i64, i64, a(i64, 2))]),
        ("explorer.strategies.arrays.narrow", "_layout", [(a(i64), a(i64))]),
        # a level's rows kept in the narrowest type they fit
        ("explorer.strategies.arrays.narrow", "_take_fit", [(a(i64, 2), a(i64), a(t, 2), i64, i64)
                                                             for t in (i8, i16, i32)]),
        ("explorer.strategies.arrays.table", "_find", [(a(i32), i64, a(i64), a(u64), u64, nt.Omitted(60)),
                                                        (a(i32), i64, a(i64), a(u64), u64, i64)]),
        ("explorer.strategies.arrays.table", "_grow_sub", [(a(i32), i64, a(i64), i64, a(u64))]),
        ("explorer.strategies.arrays.table", "_touch", [(a(u64), store, a(i32), i64, i64, i64)]),
        ("explorer.strategies.arrays.table", "_walker", [(u64, i64)]),
        ("explorer.strategies.arrays.table", "_by_walker", [(a(u64), i64, a(i32), a(i64))]),
        ("explorer.strategies.arrays.table", "_codes", [(a(u64), a(i64), a(i64, 2), i64)]),
        ("explorer.strategies.arrays.table", "_codes_to_ids", [(a(u8), i64, i64, a(i32), i64)]),
        ("explorer.strategies.arrays.table", "_ids_to_codes", [(a(u8), i64, a(i64), a(i64))]),
        ("explorer.strategies.arrays.walkers", "_decide", [(
            i64, i64, i64, T((a(i32), a(i64), a(i64), a(u64), a(i32))),
            T((a(i32), i64, a(i64), a(i64), a(u64), a(i32), a(i64), i64)), nt.UniTuple(i64, 3),
            T((a(i8, 2), a(i64, 2))))]),
        # the hash partitions (strategies/partitions/)
        ("explorer.strategies.partitions.partition", "_merge_walk", [(
            a(i64), T((a(i64), a(u64), a(i8), a(i32))), T((a(i32), a(u64), a(i32), a(i32))), i64, b1, b1,
            nt.UniTuple(a(i64), 3))]),
    ]
    return [row + (_EXPLORER_USES[row[0]],) for row in rows]


# the uses of each of the explorer's modules with compiled functions
_EXPLORER_USES = {
    "explorer.graph.cycles": ("search",),  # every engine's livelock check, the analyses of a stored graph
    "explorer.graph.fair": ("fair",),  # liveness under fairness: the array engine's or over a stored graph
    "explorer.stores.flat": ("partitions",),
    "explorer.strategies.arrays.engine": ("rows",),
    "explorer.strategies.arrays.narrow": ("rows", "partitions"),  # (a partition keeps its levels packed too)
    "explorer.strategies.arrays.table": ("rows",),
    "explorer.strategies.arrays.walkers": ("threads",),
    "explorer.strategies.partitions.partition": ("partitions",),
}


# explorer's functions called only from other compiled code (compiled into their callers)
_INNER = ("explorer.graph.cycles._grow32", "explorer.graph.cycles._position", "explorer.strategies.arrays.engine._count",
          "explorer.strategies.arrays.table._home", "explorer.strategies.arrays.table._next_size")


def register(name: str, table: Callable[[], list], inner: Sequence[str] = ()) -> None:
    """Add a table of compiled functions, `table()` giving [(module,
    attribute, [argument types...])] or [(module, attribute, [argument
    types...], uses)] (`uses`: the names in USES that call it; without
    them, every use), that `load()` loads too (called then: a registration
    imports nothing); `inner`: names (`module.attr`, or a module's name
    for all of its functions the table does not name) of functions called
    only from compiled code. A name registered again replaces its table
    (loaded again by the next `load()`)."""
    with _LOCK:
        _TABLES[name] = (table, tuple(inner))
        _ASKED.clear()


_TABLES["explorer"] = (_explorer_table, _INNER)


def _dispatcher(module: str, attr: str):
    return getattr(importlib.import_module(module), attr)


def _rows(uses) -> list:
    """(module, attribute, [argument types...]) of each row of every table
    that serves one of `uses` (None: every row)."""
    out = []
    for table, _inner in _TABLES.values():
        for row in table():
            module, attr, sigs = row[:3]
            serves = row[3] if len(row) > 3 else None
            unknown = set(serves or ()) - set(USES)
            if unknown:
                raise ValueError(f"{module}.{attr}: unknown uses {sorted(unknown)} (known: {', '.join(USES)})")
            if uses is None or serves is None or set(serves) & set(uses):
                out.append((module, attr, sigs))
    return out


def load(uses: Sequence[str] | None = None) -> None:
    """The specializations the named `uses` call (USES; None: every one),
    of every registered table, loaded in this process (from numba's cache,
    or compiled): at once the first time, nothing after (about a
    millisecond a specialization when the cache is warm)."""
    import explorer.runtime.jit  # noqa: F401  (how what is not cached yet is compiled)
    from explorer.runtime import cacheload

    if uses is not None:
        if isinstance(uses, str):
            raise TypeError("load(uses): a sequence of names, not one string")
        unknown = set(uses) - set(USES)
        if unknown:
            raise ValueError(f"unknown uses {sorted(unknown)} (known: {', '.join(USES)})")
    with _LOCK:
        if "*" in _ASKED or (uses is not None and set(uses) <= _ASKED):
            return
        cacheload.install()  # (how what is cached is loaded)
        for module, attr, sigs in _rows(uses):
            have = _LOADED.setdefault(f"{module}.{attr}", set())
            todo = [tuple(sig) for sig in sigs if tuple(sig) not in have]
            if not todo:
                continue
            d = _dispatcher(module, attr)
            if hasattr(d, "compile"):  # (NUMBA_DISABLE_JIT=1: plain Python functions, nothing to load)
                for sig in todo:
                    d.compile(sig)
            have.update(todo)
        _ASKED.update(["*"] if uses is None else uses)


def loaded() -> set[str]:
    """The uses loaded in this process ("*": every one)."""
    with _LOCK:
        return set(_ASKED)


def missing() -> list[str]:
    """`module.attribute(types)` of each specialization this process holds
    (of a module under `explorer` or a registered table's package) that
    no `load()` loaded, save those of the functions called only from
    compiled code: those a search compiled or loaded as it ran."""
    import sys

    from numba.core.registry import CPUDispatcher

    with _LOCK:
        inner: list[str] = []
        roots = {"explorer"}
        for table, inn in _TABLES.values():
            inner += inn
            roots |= {row[0].split(".")[0] for row in table()}
        have = {k: set(v) for k, v in _LOADED.items()}
    out = []
    for mod_name, mod in sorted(sys.modules.items()):
        if mod_name.split(".")[0] not in roots:
            continue
        for attr, d in sorted(vars(mod).items()):
            if not isinstance(d, CPUDispatcher) or d.__module__ != mod_name:
                continue
            full = f"{mod_name}.{attr}"
            if full not in have and any(full == i or mod_name == i for i in inner):
                continue
            out += [f"{full}{tuple(s)}" for s in d.signatures if tuple(s) not in have.get(full, set())]
    return out
