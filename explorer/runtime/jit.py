"""How compiled functions are compiled: the decorator of a compiled
function called only from other compiled code (`inner`), and three
changes to numba that make a cold compile (an empty cache: once per
install) cheaper without changing what is compiled. Installed when this
module is imported (serq's kernel imports it too:
serq/semantics/kernel/jit.py); if numba's internals differ from what
they expect, nothing is changed and compiling is only slower.

- Options compared by what they hold. numba looks up each typed call of
  a library function (`np.empty`, `arr.copy()`, ...) in a cache keyed by,
  among others, the compile's options (a `Flags`), whose hash is the same
  for every set of options and whose equality builds two dicts of all 22
  options through their properties: 300,000 comparisons in a cold `serq
  explore`, a quarter of its compile time. Here they compare the options
  set on either side (the others hold their defaults on both), and the
  hash (unchanged: the same for every set of options) is computed once
  per class.
- Error messages without the terminal's colour set-up. While typing,
  numba formats a message for every candidate that does not fit a call
  (40,000); each went through colorama's init and deinit of the standard
  streams, for a string that is the same without them.
- A function with no Python wrapper is only linked. numba compiles each
  function into a library of its own, optimises it and emits its machine
  code, and links a copy of it into each caller, which optimises and
  emits the whole again. A library with no Python wrapper (a function
  compiled with `inner`, the kernel's internal functions, numba's own
  implementations of numpy calls), finalized because a caller links it
  or because it was just compiled, now only links its own callees: its
  code is optimised and emitted once, in each function Python calls (the
  cached ones, whose cached machine code holds everything they call).
"""

from __future__ import annotations

import threading

from numba import njit

__all__ = ["inner"]

# a function called only from compiled code: no Python wrapper, no cache of its own, compiled into its callers
inner = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, nogil=True)

_MARK = "_serq_quick"  # set on each replaced function, so that nothing is replaced twice


def _options_compared_by_what_they_hold() -> None:
    try:
        from numba.core import targetconfig
    except ImportError:  # pragma: no cover
        return
    cls = getattr(targetconfig, "TargetConfig", None)
    eq, hash_ = getattr(cls, "__eq__", None), getattr(cls, "__hash__", None)
    if eq is None or hash_ is None or getattr(eq, _MARK, False):
        return
    plain: dict = {}  # class -> (its options are the plain properties numba makes, its hash)

    def known(c):
        k = plain.get(c)
        if k is None:
            opts = getattr(c, "options", None)
            ok = opts is not None and all(
                getattr(getattr(c, n, None), "fget", None) is not None
                and getattr(c, n).fget.__qualname__.endswith("make_prop.<locals>.getter") for n in opts)
            k = plain[c] = (ok, hash(tuple(sorted(opts))) if ok else 0)
        return k

    def __eq__(self, other):
        if self is other:
            return True
        c = type(self)
        if type(other) is not c or not known(c)[0]:
            return eq(self, other)
        a, b, opts = self._values, other._values, c.options
        if a == b:
            return True
        for name in a.keys() | b.keys():
            opt = opts.get(name)
            if opt is None:
                return eq(self, other)
            if a.get(name, opt.default) != b.get(name, opt.default):
                return False
        return True

    def __hash__(self):  # numba's: the same for every set of options of a class
        ok, h = known(type(self))
        return h if ok else hash_(self)

    __eq__._serq_quick = __hash__._serq_quick = True
    cls.__eq__, cls.__hash__ = __eq__, __hash__


def _messages_without_colour_setup() -> None:
    try:
        from numba.core import errors
    except ImportError:  # pragma: no cover
        return
    scheme = getattr(errors, "HighlightColorScheme", None)  # only when colorama is installed
    style = getattr(errors, "Style", None)
    markup = getattr(scheme, "_markup", None)
    if markup is None or style is None or getattr(markup, _MARK, False):
        return
    bright, reset = style.BRIGHT, style.RESET_ALL

    def _markup(self, msg, color=None, style=bright):
        return (color or "") + (style or "") + msg + reset  # what the original returns, without init()/deinit()

    _markup._serq_quick = True
    scheme._markup = _markup


def _link_only_without_wrapper() -> None:
    try:
        from numba.core import codegen, cpu
        from numba.core.compiler_lock import require_global_compiler_lock
    except ImportError:  # pragma: no cover
        return
    lib_cls, ctx_cls = getattr(codegen, "CPUCodeLibrary", None), getattr(cpu, "CPUContext", None)
    jit_cls = getattr(codegen, "JITCPUCodegen", None)
    names = ("finalize", "_get_module_for_linking", "_raise_if_finalized")
    if lib_cls is None or ctx_cls is None or jit_cls is None or not all(hasattr(lib_cls, n) for n in names):
        return
    if not hasattr(ctx_cls, "get_executable") or not hasattr(jit_cls, "set_env"):
        return
    if getattr(lib_cls.finalize, _MARK, False):
        return
    finalize, for_linking, get_executable = lib_cls.finalize, lib_cls._get_module_for_linking, ctx_cls.get_executable
    set_env = jit_cls.set_env
    needed = ("_linking_libraries", "_final_module", "_reload_init", "_finalized")  # a library's attributes
    state = threading.local()  # .linking: a finalize here is for linking, or for a function just compiled

    def no_wrapper(lib) -> bool:
        own = False
        for fn in lib._final_module.functions:
            if fn.is_declaration:
                continue
            if fn.name.startswith(("cpython.", "_ZN7cpython")):  # numba's Python wrapper (its name mangled or not)
                return False
            own = True
        return own

    def quick_finalize(self):
        if not getattr(state, "linking", False) or not all(hasattr(self, n) for n in needed) \
                or not no_wrapper(self):
            saved, state.linking = getattr(state, "linking", False), False
            try:
                return finalize(self)
            finally:
                state.linking = saved
        require_global_compiler_lock()
        self._raise_if_finalized()
        seen = set()
        for lib in self._linking_libraries:
            if lib not in seen:
                seen.add(lib)
                self._reload_init.update(lib._reload_init)
                self._final_module.link_in(lib._get_module_for_linking(), preserve=True)
        self._finalized = True

    def linking(fn):
        def run(*args):
            saved, state.linking = getattr(state, "linking", False), True
            try:
                return fn(*args)
            finally:
                state.linking = saved
        setattr(run, _MARK, True)
        return run

    # the environment of a function with no machine code has no address to set (and needs none: a cached function's
    # callees have none either once loaded from the cache)
    def set_env_if_defined(self, env_name, env):
        engine = getattr(self, "_engine", None)
        if engine is not None and not engine.get_global_value_address(env_name):
            return
        set_env(self, env_name, env)

    quick_finalize._serq_quick = set_env_if_defined._serq_quick = True
    lib_cls.finalize = quick_finalize
    lib_cls._get_module_for_linking = linking(for_linking)
    ctx_cls.get_executable = linking(get_executable)
    jit_cls.set_env = set_env_if_defined


_options_compared_by_what_they_hold()
_messages_without_colour_setup()
_link_only_without_wrapper()
