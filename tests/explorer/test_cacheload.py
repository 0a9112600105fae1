"""Loading from numba's cache for less (explorer/runtime/cacheload.py): the
names read from a cached function's machine code are those numba reads
from its bitcode; a function compiled after a cached one was loaded
without its bitcode parsed still links it, and computes the same; a
warm load sets up none of numba's registries (nor scipy)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NAMES = """
import json, pickle, sys
import llvmlite.binding as ll
from numba.core import codegen
import serq.semantics.entries  # noqa: F401 (registers the kernel's table)
from explorer.runtime import cacheload, compiled

cacheload.install()  # (then spied on: installing it again changes nothing)
seen = []
real = codegen.CPUCodeLibrary._unserialize.__func__

def spy(cls, cg, state):
    seen.append(state)
    return real(cls, cg, state)

codegen.CPUCodeLibrary._unserialize = classmethod(spy)
compiled.load()
out = []
for name, kind, data in seen:
    assert kind == "object", kind
    m = ll.parse_bitcode(data[1])
    numba_names = {g.name for gs in (m.functions, m.global_variables) for g in gs if not g.is_declaration}
    ours = cacheload.defined_symbols(data[0])
    out.append([name, ours is not None and ours == numba_names])
print(json.dumps({"libs": out, "rows": sum(len(sigs) for _m, _a, sigs in compiled._rows(None)), "arraymath": "numba.np.arraymath" in sys.modules, "scipy": "scipy.linalg" in sys.modules}))
"""


def _run(code: str, *args: str, cwd: Path = ROOT) -> dict:
    r = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                       env=_env(cwd))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _env(cwd: Path) -> dict:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)])}


def test_the_names_read_from_the_machine_code_are_those_of_the_bitcode():
    _run(NAMES)  # the cache filled, if it was cold (a compile then sets up numba's registries)
    out = _run(NAMES)
    assert len(out["libs"]) == out["rows"] >= 30  # every specialization of the tables (the kernel's one entry among them)
    assert all(same for _name, same in out["libs"]), [n for n, same in out["libs"] if not same]
    assert not out["arraymath"] and not out["scipy"]  # loading set up no registries


MODULE = '''
import numpy as np
from numba import njit

@njit(cache=True)
def callee(a):
    s = 0
    for x in a:
        s += x * x
    return s

@njit(cache=True)
def caller(a):
    return callee(a) + 1
'''

LINK = """
import json, sys
import numpy as np
from numba import types as nt
from explorer.runtime import cacheload
cacheload.install()
import toy
a = np.arange(5, dtype=np.int64)
toy.callee.compile((nt.Array(nt.int64, 1, "C"),))
hit = sum(toy.callee.stats.cache_hits.values())
print(json.dumps({"caller": int(toy.caller(a)), "callee_hits": hit,
                  "caller_misses": sum(toy.caller.stats.cache_misses.values())}))
"""


def test_a_function_compiled_after_a_cached_one_still_links_it(tmp_path):
    (tmp_path / "toy.py").write_text(textwrap.dedent(MODULE))
    fill = "import numpy as np, toy; print(toy.callee(np.arange(5, dtype=np.int64)))"
    assert subprocess.run([sys.executable, "-c", fill], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=_env(tmp_path)).stdout.strip() == "30"
    out = _run(LINK, cwd=tmp_path)  # callee from the cache (bitcode not parsed), caller compiled: links callee
    assert out == {"caller": 31, "callee_hits": 1, "caller_misses": 1}
    out = _run(LINK, cwd=tmp_path)  # both cached now
    assert out["caller"] == 31 and out["caller_misses"] == 0


def test_another_format_is_not_read():
    from explorer.runtime.cacheload import defined_symbols

    assert defined_symbols(b"\xcf\xfa\xed\xfe" + bytes(60)) is None  # Mach-O
    assert defined_symbols(b"\x7fELF\x01\x01" + bytes(58)) is None  # 32-bit
    assert defined_symbols(b"\x7fELF\x02\x01" + bytes(58)) == set()  # no sections


def test_an_array_is_typed_as_numba_types_it():
    import numpy as np
    from numba.core.typing import typeof as tf

    from explorer.runtime import cacheload

    cacheload.install()
    ours, numbas = tf.typeof_impl.dispatch(np.ndarray), tf._typeof_ndarray  # (numba's own, as its module keeps it)
    assert getattr(ours, "_serq_cacheload", False) and ours is not numbas
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    ro = np.zeros(3, np.uint8)
    ro.flags.writeable = False
    arrays = [base, base.T, base[:, ::2], np.zeros(5, np.int32), np.zeros((2, 2), np.float64, order="F"), ro,
              np.zeros(0, np.bool_), np.zeros(3, np.dtype([("a", np.int64)])), base[1], np.zeros((0, 3))]
    c = tf._TypeofContext(tf.Purpose.argument)
    for a in arrays:
        assert ours(a, c) == numbas(a, c), a
    for a in arrays + [np.zeros(2, object)]:
        assert tf.typeof(a) == numbas(a, c), a
    masked = np.ma.masked_array([1, 2])
    with pytest.raises(Exception) as ours_e:
        tf.typeof(masked)
    with pytest.raises(Exception) as numbas_e:
        numbas(masked, c)
    assert str(ours_e.value) == str(numbas_e.value)


WARM = """
import contextlib, io, json, sys
from serq.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["explore", sys.argv[1]])
print(json.dumps({m: m in sys.modules for m in ("numba.np.arraymath", "numpy.ma", "scipy.linalg", "numba.typed.typedset",
                                                 "cffi")}))
"""


def test_a_warm_explore_sets_up_nothing_for_compiling():
    """(numba's array code is imported all the same: the environments of
    the cached code name its module.)"""
    inst = str(ROOT / "instances" / "self_preempt.sq")
    _run(WARM, inst)  # (the cache filled, if it was cold)
    assert not any(_run(WARM, inst).values())
