"""The compiled kernel's entry points -- the functions of
`serq/semantics/kernel/` that Python calls -- with the argument types they
are called with, registered with the explorer's one table of compiled code
(`explorer.runtime.compiled`): loaded from numba's cache (or compiled)
before a search's clock starts, before any worker starts and before a
simulation's first step, never in the middle of one (under `ulimit -v`,
LLVM aborts the process when an allocation fails: SIGABRT instead of a
MemoryError). The kernel's other functions are compiled into these."""

from __future__ import annotations

from explorer.runtime import compiled

__all__ = ["table"]


def table() -> list:
    from numba import types as nt

    def a(dt, nd: int = 1):
        return nt.Array(dt, nd, "C")

    i64, b1 = nt.int64, nt.boolean
    K = w = a(i64)  # the lowered table and the working row
    return [
        # every operation of the kernel Python uses (serq/semantics/kernel/call.py)
        ("serq.semantics.kernel.call", "call", [(K, w, nt.UniTuple(i64, 7), a(i64), a(i64, 2))]),
        ("serq.semantics.rows", "explorer_flags", [(i64, a(i64), a(i64, 2), a(i64), b1, b1, a(i64), a(i64))],
         ("search",)),  # (the explorer's: a simulation does not load it)
    ]


compiled.register("serq kernel", table, inner=("serq.semantics.kernel.call", "serq.semantics.kernel.core",
                                                   "serq.semantics.kernel.canon",
                                                   "serq.semantics.kernel.entry", "serq.semantics.kernel.admission",
                                                   "serq.semantics.kernel.evaluate", "serq.semantics.kernel.iterate",
                                                   "serq.semantics.kernel.pools", "serq.semantics.kernel.session"))
