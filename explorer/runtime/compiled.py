"""Compiled code loaded before the search: every specialization of every
compiled function a search calls from Python, loaded from numba's cache
(or compiled, once per install) by `load()`, which `explorer.check` calls
before the run's clock starts and before any worker (process or thread)
starts. No compilation and no loading then happens in the middle of a
search: under an address-space limit (`ulimit -v`) LLVM aborts the process
(SIGABRT) when one of its allocations fails, where Python would have
raised a MemoryError that ends the search with the "memory" bound and its
statistics. A worker forked afterwards inherits the code loaded.

The table below names each function by module and attribute, with the
argument types it is called with (numba's types: a C-contiguous array of
int32 is `a(i32)`); a function called only from other compiled code needs
no entry (it is compiled into its callers). A model brings its own
compiled code the same way: `register(name, entries)` (serq registers its
kernel's entry points, serq/semantics/entries.py), loaded by the same
`load()`.

`missing()` lists the specializations a process has compiled or loaded
that the table does not name: empty after any search (a test runs every
strategy on the instance library and checks it)."""

from __future__ import annotations

import importlib
import threading
from typing import Callable, Sequence

__all__ = ["load", "register", "missing", "loaded"]

_LOCK = threading.Lock()
_TABLES: dict[str, tuple] = {}  # name -> (table, inner): table() gives [(module, attribute, [argument types...])]
_DONE: set[str] = set()  # tables loaded in this process


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
    return [
        # the partitions' flat store (stores/flat.py)
        ("explorer.stores.flat", "_find", [(a(i32), a(u64), u64)]),
        ("explorer.stores.flat", "_rehash", [(a(i32), a(u64), i64, i64)]),
        # the one search for a cycle (graph/cycles.py): every engine's livelock check, the graph analyses
        ("explorer.graph.cycles", "_acyclic_part", [graph]),
        ("explorer.graph.cycles", "_scc", [graph + (a(i32),)]),
        ("explorer.graph.cycles", "_cycle", [graph + (a(i32), i64)]),
        # liveness under fairness over the same graphs (graph/fair.py)
        ("explorer.graph.fair", "_enabled", [(i64, a(i32), a(u8))]),
        ("explorer.graph.fair", "_judge", [graph + (a(u8), a(i32), a(u64), b1)]),
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


# explorer's functions called only from other compiled code (compiled into their callers)
_INNER = ("explorer.graph.cycles._grow32", "explorer.strategies.arrays.engine._count",
          "explorer.strategies.arrays.table._home", "explorer.strategies.arrays.table._next_size")


def register(name: str, table: Callable[[], list], inner: Sequence[str] = ()) -> None:
    """Add a table of compiled functions, `table()` giving [(module,
    attribute, [argument types...])], that `load()` loads too (called
    then: a registration imports nothing); `inner`: names (`module.attr`,
    or a module's name for all of its functions the table does not name)
    of functions called only from compiled code. A name registered again
    replaces its table."""
    with _LOCK:
        _TABLES[name] = (table, tuple(inner))
        _DONE.discard(name)


_TABLES["explorer"] = (_explorer_table, _INNER)


def _dispatcher(module: str, attr: str):
    return getattr(importlib.import_module(module), attr)


def _no_scipy_for_numba() -> None:
    """numba's CPU target, set up when the first function is compiled or
    loaded, imports `numba.np.arraymath`, which imports all of
    `scipy.linalg` (a quarter of a second) only to learn whether a BLAS is
    there for `np.dot` on floats; nothing compiled here calls BLAS. The
    answer is taken from whether scipy is installed instead (what numba
    concludes when scipy is there); a function that does use BLAS still
    imports scipy when it is compiled. If numba's internals differ from
    what this expects, nothing is changed."""
    import sys

    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    try:
        from importlib.util import find_spec

        from numba.np import linalg
    except ImportError:  # pragma: no cover
        return
    real = getattr(linalg, "ensure_blas", None)
    if real is None:  # pragma: no cover
        return

    def ensure_blas():
        if find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = ensure_blas  # what arraymath binds and asks once, as it is imported
    try:
        import numba.np.arraymath  # noqa: F401
    except Exception:  # pragma: no cover (numba's own setup reports it again when it needs the module)
        pass
    finally:
        linalg.ensure_blas = real
    arraymath = sys.modules.get("numba.np.arraymath")
    if arraymath is not None and getattr(arraymath, "ensure_blas", None) is ensure_blas:
        arraymath.ensure_blas = real  # any later question asks the real one


def load(only: Sequence[str] | None = None) -> None:
    """Every registered table's specializations (or those of the tables
    named in `only`), loaded in this process (from numba's cache, or
    compiled): at once the first time, nothing after (about a millisecond
    a specialization when the cache is warm)."""
    _no_scipy_for_numba()
    import explorer.runtime.jit  # noqa: F401  (how what is not cached yet is compiled)

    with _LOCK:
        for name, (table, _inner) in _TABLES.items():
            if name in _DONE or (only is not None and name not in only):
                continue
            for module, attr, sigs in table():
                d = _dispatcher(module, attr)
                if not hasattr(d, "compile"):  # NUMBA_DISABLE_JIT=1: plain Python functions, nothing to load
                    continue
                for sig in sigs:
                    d.compile(tuple(sig))
            _DONE.add(name)


def loaded() -> set[str]:
    """The tables loaded in this process."""
    return set(_DONE)


def missing() -> list[str]:
    """`module.attribute(types)` of each specialization this process holds
    (of a module under `explorer` or a registered table's package) that no
    table names, save those of the functions called only from compiled
    code: those a search would have compiled or loaded as it ran."""
    import sys

    from numba.core.registry import CPUDispatcher

    with _LOCK:
        named: dict[str, set] = {}
        inner: list[str] = []
        for table, inn in _TABLES.values():
            inner += inn
            for module, attr, sigs in table():
                named.setdefault(f"{module}.{attr}", set()).update(tuple(s) for s in sigs)
    roots = {n.split(".")[0] for n in named}
    out = []
    for mod_name, mod in sorted(sys.modules.items()):
        if mod_name.split(".")[0] not in roots:
            continue
        for attr, d in sorted(vars(mod).items()):
            if not isinstance(d, CPUDispatcher) or d.__module__ != mod_name:
                continue
            full = f"{mod_name}.{attr}"
            if full not in named and any(full == i or mod_name == i for i in inner):
                continue
            have = named.get(full, set())
            out += [f"{full}{tuple(s)}" for s in d.signatures if tuple(s) not in have]
    return out
