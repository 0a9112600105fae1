"""How compiled functions are compiled: the decorator of a compiled
function called only from other compiled code (`inner`), and changes to
numba that make a cold compile (an empty cache: once per install)
cheaper without changing what the compiled code computes. Installed when this
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
- Library calls cached by what the options hold. The same cache of typed
  library calls, keyed (here) by the options set to other than their
  default instead of the options object: a lookup hashes to its entry
  instead of comparing options with every entry of the same call.
- Operators on scalars skip numpy's rules. numba types every `a + b` by
  trying, among others, numpy's ufunc rules, which match a ufunc loop for
  the operands and then answer "no" unless one operand is an array
  (17,000 times in a cold `serq explore`); here they answer "no" first.
- LLVM lock events only when listened to. numba broadcasts an event on
  each of the ~90,000 calls into LLVM, for a timer per compile in progress
  that only fills a figure of the compile's metadata (numba's
  `llvm_lock` time); that timer is not installed, and the event is sent
  only when someone listens to it.
- One module pipeline for a library without reference counts. numba runs
  LLVM's module pipeline twice on each library it finalizes, a first
  pass that gathers reference-count operations for numba's pruning, then
  the full one; a library that calls none of numba's runtime (the
  kernel's: compiled without it) gets the full one only.
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


def _one_module_pipeline_without_refcounts() -> None:
    try:
        from numba.core import codegen
    except ImportError:  # pragma: no cover
        return
    lib_cls = getattr(codegen, "CPUCodeLibrary", None)
    opt = getattr(lib_cls, "_optimize_final_module", None)
    if opt is None or getattr(opt, _MARK, False):
        return
    probe = getattr(getattr(codegen, "JITCPUCodegen", None), "_module_pass_manager", None)
    if probe is None:
        return

    def refcounts(mod) -> bool:
        for fn in mod.functions:
            if fn.name.startswith("NRT_"):  # numba's runtime: reference counts, allocations
                return True
        return False

    def _optimize_final_module(self):
        mod = getattr(self, "_final_module", None)
        cg = getattr(self, "_codegen", None)
        timings = getattr(self, "_recorded_timings", None)
        if mod is None or cg is None or timings is None or refcounts(mod):
            return opt(self)
        mpm, mpb = cg._module_pass_manager()
        with timings.record("Module passes (full optimization)", mpb):
            mpm.run(mod, mpb)

    _optimize_final_module._serq_quick = True
    lib_cls._optimize_final_module = _optimize_final_module


def _library_calls_keyed_by_what_the_options_hold() -> None:
    try:
        from numba.core import targetconfig
        from numba.core.typing import templates
    except ImportError:  # pragma: no cover
        return
    cls = getattr(templates, "_OverloadFunctionTemplate", None)
    get_impl = getattr(cls, "_get_impl", None)
    stack = getattr(getattr(targetconfig, "ConfigStack", None), "top_or_none", None)
    if get_impl is None or stack is None or getattr(get_impl, _MARK, False) \
            or not hasattr(cls, "_build_impl") or get_impl.__code__.co_argcount != 3:
        return

    memo: dict = {}  # id(options) -> (the options, what they held, their key): one compile's options, asked often

    def held(flags):
        """The options set to other than their default, with the class: equal
        exactly when numba's comparison finds the options equal; None when
        a value cannot be a key."""
        c = type(flags)
        values, opts = getattr(flags, "_values", None), getattr(c, "options", None)
        if type(values) is not dict or opts is None:
            return None
        m = memo.get(id(flags))
        if m is not None and m[0] is flags and m[1] == values:
            return m[2]
        key = keyed(c, values, opts)
        if key is not None:
            if len(memo) > 4096:
                memo.clear()
            memo[id(flags)] = (flags, dict(values), key)
        return key

    def keyed(c, values, opts):
        out = []
        for name, v in values.items():
            opt = opts.get(name)
            if opt is None:
                return None
            if v != opt.default:
                out.append((name, v))
        try:
            key = (c, frozenset(out))
            hash(key)
        except TypeError:
            return None
        return key

    def _get_impl(self, args, kws):
        flags = targetconfig.ConfigStack.top_or_none()
        f = held(flags) if flags is not None else None
        if f is None and flags is not None:
            return get_impl(self, args, kws)
        cache_key = self.context, tuple(args), tuple(kws.items()), f
        try:
            return self._impl_cache[cache_key]
        except KeyError:
            pass
        return self._build_impl(cache_key, args, kws)

    _get_impl._serq_quick = True
    cls._get_impl = _get_impl


def _scalar_operators_skip_numpy_rules() -> None:
    try:
        from numba.core import types
        from numba.core.typing import npydecl
    except ImportError:  # pragma: no cover
        return
    cls = getattr(npydecl, "NumpyRulesArrayOperator", None)
    generic = getattr(cls, "generic", None)
    array, optional = getattr(types, "ArrayCompatible", None), getattr(types, "Optional", None)
    if generic is None or array is None or optional is None or getattr(generic, _MARK, False):
        return

    def generic_(self, args, kws):
        for a in args:
            if isinstance(a.type if isinstance(a, optional) else a, array):
                return generic(self, args, kws)
        for a in kws.values():
            if isinstance(a, (array, optional)):
                return generic(self, args, kws)
        return None  # what numba concludes, after matching a ufunc loop, for operands none of which is an array

    generic_._serq_quick = True
    cls.generic = generic_


def _llvm_lock_events_only_when_listened() -> None:
    try:
        from llvmlite.binding import ffi
        from numba.core import base, event  # noqa: F401  (base registers numba's callbacks)
    except ImportError:  # pragma: no cover
        return
    lock = getattr(getattr(ffi, "lib", None), "_lock", None)
    cblist = getattr(lock, "_cblist", None)
    install_timer, registered = getattr(event, "install_timer", None), getattr(event, "_registered", None)
    if type(cblist) is not list or install_timer is None or not isinstance(registered, dict) \
            or getattr(install_timer, _MARK, False):
        return
    kind = "numba:llvm_lock"
    ours = [i for i, (acq, rel) in enumerate(cblist)
            if "_initialize_llvm_lock_event" in getattr(acq, "__qualname__", "")
            and "_initialize_llvm_lock_event" in getattr(rel, "__qualname__", "")]
    if len(ours) != 1:
        return
    acq, rel = cblist[ours[0]]
    import contextlib

    @contextlib.contextmanager
    def install_timer_(k, callback):
        if k != kind:
            with install_timer(k, callback) as tl:
                yield tl
            return
        yield event.TimingListener()  # never fires: the compile's metadata has no "llvm_lock" time

    def acquired():
        if registered.get(kind):
            acq()

    def released():
        if registered.get(kind):
            rel()

    install_timer_._serq_quick = True
    event.install_timer = install_timer_
    cblist[ours[0]] = (acquired, released)


_options_compared_by_what_they_hold()
_messages_without_colour_setup()
_link_only_without_wrapper()
_one_module_pipeline_without_refcounts()
_library_calls_keyed_by_what_the_options_hold()
_scalar_operators_skip_numpy_rules()
_llvm_lock_events_only_when_listened()
