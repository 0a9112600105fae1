"""Loading compiled code from numba's cache for less: changes to how
numba loads a cached function (and sets up its CPU target), installed by
`explorer.runtime.compiled.load()` before it loads anything. None changes
the machine code loaded or what it computes; if numba's internals differ
from what they expect, nothing is changed and loading is only slower.

- No refresh of the contexts to load. numba refreshes its typing and
  target contexts before it looks in its cache: the first time, that
  imports and registers every implementation numba has (its typed
  containers, cffi, the random generators, ...), about 0.2 s, which only
  compiling needs (a compile refreshes them itself, as does a lowering
  that finds nothing). Loading needs the runtime (NRT) the cached code
  calls: only that is set up.
- The bitcode of a cached library parsed only when a compile links it.
  Each cached function comes with its machine code and the LLVM bitcode
  of its module, which numba parses at once (for a later compile that
  inlines it) and walks for the names it defines: two thirds of the load
  of a function, and the kernel's entry points carry the whole kernel.
  The names are read from the machine code's symbol table instead (an
  ELF object: the same names, checked by a test; another format is
  loaded as numba loads it), and the bitcode is parsed when a compile
  first asks for it to link.
- numba's CPU target without scipy (`_no_scipy_for_numba`), when its
  implementations are first registered (by a compile), and when a cached
  function's environment is the module `numba.np.arraymath` (numba's
  array functions: `np.cumsum`, say), which loading it imports.
- A numpy array typed without `numpy.ma`. numba types an array passed
  from Python (in a tuple, say) after asking whether it is a masked
  array, which imports `numpy.ma` (30 ms) the first time; a plain
  `np.ndarray` is not one, and is typed as numba types it.
"""

from __future__ import annotations

import struct
import sys

__all__ = ["install", "defined_symbols"]

_MARK = "_serq_cacheload"  # set on each replaced function, so that nothing is replaced twice
_BITCODE = "_serq_bitcode"  # a loaded library's bitcode, not parsed yet
_INSTALLED: list[bool] = []


def install() -> None:
    """The changes (once per process)."""
    if _INSTALLED:
        return
    _INSTALLED.append(True)
    _load_without_refresh()
    _bitcode_parsed_when_linked()
    _scipy_spared_at_first_refresh()
    _scipy_spared_for_an_environment()
    _arrays_typed_without_numpy_ma()


def _load_without_refresh() -> None:
    try:
        from numba.core import caching
        from numba.core.runtime import nrt
    except ImportError:  # pragma: no cover
        return
    cache = getattr(caching, "Cache", None)
    real = getattr(cache, "load_overload", None)
    rtsys = getattr(nrt, "rtsys", None)
    needed = ("_load_overload", "_guard_against_spurious_io_errors")
    if real is None or getattr(real, _MARK, False) or not all(hasattr(cache, n) for n in needed) \
            or not hasattr(rtsys, "initialize"):
        return

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)  # the runtime the cached code calls (what the refresh set up first)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    load_overload._serq_cacheload = True
    cache.load_overload = load_overload


def defined_symbols(obj: bytes) -> set[str] | None:
    """The names an ELF64 little-endian relocatable object defines (its
    symbol table's entries with a section, save the sections' and files'
    own), or None for another format."""
    if obj[:4] != b"\x7fELF" or len(obj) < 64 or obj[4] != 2 or obj[5] != 1:
        return None
    try:
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
        out = set()
        for _name, kind, _f, _a, off, size, link, _i, _al, entsize in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
            strtab = sections[link][4]
            for at in range(off, off + size, entsize or 24):
                name, info, _other, shndx = struct.unpack_from("<IBBH", obj, at)
                if shndx == 0 or name == 0 or info & 15 in (3, 4):  # undefined, unnamed, STT_SECTION, STT_FILE
                    continue
                start = strtab + name
                out.add(obj[start:obj.index(b"\0", start)].decode())
        return out
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None


def _bitcode_parsed_when_linked() -> None:
    try:
        import llvmlite.binding as ll
        from numba.core import codegen
    except ImportError:  # pragma: no cover
        return
    lib = getattr(codegen, "CPUCodeLibrary", None)
    engine = getattr(codegen, "JitEngine", None)
    real = getattr(lib, "_unserialize", None)
    for_linking = getattr(lib, "_get_module_for_linking", None)
    needed = ("enable_object_caching", "_set_compiled_object", "_finalize_final_module")
    if real is None or for_linking is None or getattr(for_linking, _MARK, False) \
            or not all(hasattr(lib, n) for n in needed) or not hasattr(engine, "_load_defined_symbols"):
        return
    real = real.__func__  # (a classmethod: bound to the class the call names)

    def _unserialize(cls, codegen_, state):
        name, kind, data = state
        names = defined_symbols(data[0]) if kind == "object" else None
        ee = getattr(codegen_, "_engine", None)
        if names is None or not isinstance(getattr(ee, "_defined_symbols", None), set):
            return real(cls, codegen_, state)
        object_code, shared_bitcode = data
        self = codegen_.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        setattr(self, _BITCODE, shared_bitcode)
        self._finalize_final_module()
        ee._defined_symbols |= names  # what numba reads from the parsed bitcode
        return self

    def _get_module_for_linking(self):
        bitcode = self.__dict__.pop(_BITCODE, None)
        if bitcode is not None and getattr(self, "_shared_module", None) is None:
            self._shared_module = ll.parse_bitcode(bitcode)
        return for_linking(self)

    _get_module_for_linking._serq_cacheload = True
    lib._unserialize = classmethod(_unserialize)
    lib._get_module_for_linking = _get_module_for_linking


def _scipy_spared_at_first_refresh() -> None:
    try:
        from numba.core import cpu
    except ImportError:  # pragma: no cover
        return
    ctx = getattr(cpu, "CPUContext", None)
    real = getattr(ctx, "load_additional_registries", None)
    if real is None or getattr(real, _MARK, False):
        return

    def load_additional_registries(self):
        _no_scipy_for_numba()
        return real(self)

    load_additional_registries._serq_cacheload = True
    ctx.load_additional_registries = load_additional_registries


def _scipy_spared_for_an_environment() -> None:
    """A cached function's environment is rebuilt by importing its module
    (`numba.core.environment._rebuild_env`, named in the cache's pickle):
    for numba's own array functions, `numba.np.arraymath`, spared scipy."""
    try:
        from numba.core import environment
    except ImportError:  # pragma: no cover
        return
    real = getattr(environment, "_rebuild_env", None)
    if real is None or getattr(real, _MARK, False):
        return

    def _rebuild_env(modname, consts, env_name):
        if modname == "numba.np.arraymath":
            _no_scipy_for_numba()
        return real(modname, consts, env_name)

    _rebuild_env._serq_cacheload = True
    environment._rebuild_env = _rebuild_env


def _arrays_typed_without_numpy_ma() -> None:
    try:
        import numpy as np
        from numba.core import types
        from numba.core.typing import typeof
        from numba.np import numpy_support
    except ImportError:  # pragma: no cover
        return
    impl = getattr(typeof, "typeof_impl", None)
    real = impl.dispatch(np.ndarray) if hasattr(impl, "dispatch") else None
    if real is None or getattr(real, _MARK, False) or not all(
            hasattr(numpy_support, n) for n in ("from_dtype", "map_layout")):
        return

    def typeof_ndarray(val, c):
        if type(val) is not np.ndarray:  # (a subclass: a masked array is refused there)
            return real(val, c)
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except Exception:  # an unsupported dtype: numba's own words
            return real(val, c)
        return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)

    typeof_ndarray._serq_cacheload = True
    impl.register(np.ndarray)(typeof_ndarray)


def _no_scipy_for_numba() -> None:
    """numba's CPU target, set up when the first function is compiled,
    imports `numba.np.arraymath`, which imports all of `scipy.linalg` (a
    quarter of a second) only to learn whether a BLAS is there for `np.dot`
    on floats; nothing compiled here calls BLAS. The answer is taken from
    whether scipy is installed instead (what numba concludes when scipy is
    there); a function that does use BLAS still imports scipy when it is
    compiled. If numba's internals differ from what this expects, nothing
    is changed."""
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
