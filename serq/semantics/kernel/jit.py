"""How the kernel is compiled: two decorators, and two changes to how
numba compiles the functions they make.

- `exported`: a function Python calls (serq/semantics/entries.py names
  it with its argument types): only `call.call`, the kernel's one entry
  (each exported function optimises and emits again everything it calls:
  one entry per operation compiled the step once for the simulator and
  once more for the explorer). Cached (`cache=True`): its cached machine
  code holds every kernel function it calls, so a warm process loads only
  it.
- `internal`: a function called only from other kernel functions. No
  Python wrapper, no cache of its own, and no machine code of its own
  (below): it is optimised and compiled once, inside each exported
  function that calls it.

(Small functions are `internal` too, not numba's `inline="always"`: numba
would copy, type and lower their code again at each of their hundreds of
call sites, where LLVM inlines them once the exported function is linked:
the same speed (bench/bench_kernel.py), a third less compile time.)

numba compiles each function it is asked for into a library of its own,
links into it the libraries of every function it calls, optimises the
whole and emits its machine code. For a call tree such as the kernel's
(`run_step` -> `step` -> `iterate` -> `admit_plan` -> ...) each level
optimises and compiles again everything below it: 176 libraries, most of
them a large part of the kernel, 2 minutes of CPU. So (1) an internal
function's library only links its callees: no module optimisation, no
machine code (both come once, in the exported function that links it;
explorer/runtime/jit.py does this for every function compiled without a
Python wrapper, numba's own implementations of numpy calls too, and
makes numba's typing cheaper); and (2) a call with a constant argument (`fault(K, w, 19, x, 6, -1)`)
does not make a specialization of its own for that constant: numba would
type the constant as a literal and compile the callee again for it (24
specializations of `fault`), where one for int64 serves every call.
Neither changes what the code computes. Cold, the kernel compiles in
40 s of CPU instead of 127 s (bench/bench_cold_compile.py; less since,
docs/notes/compile.md). If numba's
internals differ from what this expects, nothing is changed: the kernel
then only compiles slower. With `NUMBA_DISABLE_JIT=1` the decorators leave the functions as
they are (plain Python)."""

from __future__ import annotations

from numba import njit

import explorer.runtime.jit  # noqa: F401  (numba compiles a function with no Python wrapper into its callers only)

__all__ = ["exported", "internal"]

_OPTS = dict(error_model="numpy", _nrt=False, nogil=True)
exported = njit(cache=True, **_OPTS)
internal = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **_OPTS)

_PACKAGE = __name__.rsplit(".", 1)[0]  # serq.semantics.kernel


def _one_specialization_per_function() -> None:
    """A kernel function called from compiled code is compiled for its
    arguments' types with literals made plain (int64, bool)."""
    try:
        from numba.core import dispatcher, types
    except ImportError:  # pragma: no cover
        return
    cls = dispatcher._DispatcherBase
    orig = getattr(cls, "get_call_template", None)
    if orig is None or getattr(orig, "_serq_kernel", False):
        return

    def get_call_template(self, args, kws):
        py = getattr(self, "py_func", None)
        if py is not None and getattr(py, "__module__", "").startswith(_PACKAGE + ".") and not kws:
            args = tuple(types.unliteral(a) for a in args)
        return orig(self, args, kws)

    get_call_template._serq_kernel = True
    cls.get_call_template = get_call_template


_one_specialization_per_function()
