"""The step kernel: numba-compiled functions over integer rows, the same
for every instance (`cache=True`: compiled once per install). With
`NUMBA_DISABLE_JIT=1` the very same code runs as plain Python.

numba keys a cached function on its own file only, and the kernel's
modules inline each other's functions and `abi.py`'s constants: a cache
compiled from other kernel sources would be wrong. So the cache lives in a
directory named after a hash of every kernel source file (unless
`NUMBA_CACHE_DIR` says where): any change to the kernel compiles afresh.

The kernel is compiled without negative-index wraparound (see
`_no_wraparound_in_the_kernel`); `SERQ_KERNEL_WRAPAROUND=1` compiles it
with numba's usual indexing, in a cache of its own."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

_HERE = Path(__file__).resolve().parent
_HASH = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(_HERE.glob("*.py")))).hexdigest()[:16]

_WRAP = bool(os.environ.get("SERQ_KERNEL_WRAPAROUND"))  # numba's usual indexing (see below)

if not os.environ.get("NUMBA_CACHE_DIR"):
    _base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    numba.config.CACHE_DIR = str(_base / "serq" / f"kernel-{_HASH}{'-wrap' if _WRAP else ''}")


def _no_wraparound_in_the_kernel() -> None:
    """numba gives every array access with a signed index Python's
    negative-index wrap (a compare and a select per access, and it turns
    small copy loops into gathers and scatters): a quarter of the kernel's
    time. The kernel never indexes from the end (every index is an offset
    from a table base; tests/semantics/test_kernel.py runs the instances with bounds
    checked to prove it), so code generated for the kernel's own functions
    (their symbols carry the package's mangled name) uses the index as it
    is. Everything else numba compiles keeps the wrap. If numba's internals
    differ from what this expects, nothing is changed: the kernel is then
    only slower."""
    try:
        from numba.core import types
        from numba.np import arrayobj
    except ImportError:  # pragma: no cover
        return
    import inspect

    orig = getattr(arrayobj, "fix_integer_index", None)
    if orig is None or getattr(orig, "_serq_kernel", False):
        return
    try:
        if list(inspect.signature(orig).parameters) != ["context", "builder", "idxty", "idx", "size"]:
            return
    except (TypeError, ValueError):  # pragma: no cover
        return
    mark = "4serq9semantics6kernel"

    def fix_integer_index(context, builder, idxty, idx, size):
        if idxty.signed and mark in getattr(builder.function, "name", ""):
            return context.cast(builder, idx, idxty, types.intp)
        return orig(context, builder, idxty, idx, size)

    fix_integer_index._serq_kernel = True
    arrayobj.fix_integer_index = fix_integer_index


if not _WRAP:
    _no_wraparound_in_the_kernel()
