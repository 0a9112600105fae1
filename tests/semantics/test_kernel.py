"""The kernel pinned by exact counts on the constructs the two chat
instances do not use, and the same counts with `NUMBA_DISABLE_JIT=1` (the
very same code run as plain Python)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from serq.check.explore import explore
from serq.lang.load import load_path

HERE = Path(__file__).resolve().parents[1]
CONSTRUCTS = HERE / "kernel_instances" / "constructs.sq"


@pytest.mark.parametrize("symmetry,ties,distinct,generated", [
    (False, "all", 268, 503),
    (True, "all", 264, 499),
    (False, "seq", 33, 45),
])
def test_constructs_exact_counts(symmetry, ties, distinct, generated):
    r = explore(load_path(CONSTRUCTS).program, symmetry=symmetry, ties=ties)
    assert r.verdict == "pass"
    assert (r.stats.distinct, r.stats.generated) == (distinct, generated)


_COUNT = """
import json, sys
from serq.check.explore import explore
from serq.lang.load import load_path
out = []
for path, sym in json.loads(sys.argv[1]):
    r = explore(load_path(path).program, symmetry=sym)
    out.append([r.verdict, r.stats.distinct, r.stats.generated])
print(json.dumps(out))
"""


def test_plain_python_kernel_gives_the_same_counts():
    root = HERE.parent
    runs = [[str(CONSTRUCTS), False], [str(root / "instances" / "multiturn_chat.sq"), True],
            [str(root / "instances" / "agent_subagents.sq"), False]]
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    p = subprocess.run([sys.executable, "-c", _COUNT, json.dumps(runs)], capture_output=True, text=True,
                       env=env, cwd=root, timeout=600)
    assert p.returncode == 0, p.stderr
    plain = json.loads(p.stdout)
    jit = []
    for path, sym in runs:
        r = explore(load_path(path).program, symmetry=sym)
        jit.append([r.verdict, r.stats.distinct, r.stats.generated])
    assert plain == jit
    assert plain[0][1:] == [268, 503]


_BOUNDS = """
import json, sys
from serq.check.explore import explore
from serq.lang.load import load_path
from serq.sim.simulator import simulate
out = []
for path in json.loads(sys.argv[1]):
    prog = load_path(path).program
    for sym in (False, True):
        r = explore(prog, symmetry=sym, max_states=30000)
        out.append([path, sym, r.verdict, r.stats.distinct])
    s = simulate(prog, seed=1, max_steps=3000)
    s2 = simulate(prog, seed=1, max_steps=3000, coalesce=False)
    out.append([path, "run", s.now, s2.now])
print(json.dumps(out))
"""


def test_the_kernel_never_indexes_from_the_end():
    """The kernel is compiled without negative-index wraparound
    (serq/semantics/kernel/__init__.py): with numba's bounds checks on, a
    negative index would raise IndexError. Every instance, explored with
    and without symmetry and simulated with and without coalescing, runs
    to the same results as the kernel without bounds checks (its own
    cache, compiled once per kernel)."""
    import serq.semantics.kernel as kernel

    root = HERE.parent
    paths = sorted(str(p) for p in (root / "instances").glob("*.sq")) + \
        sorted(str(p) for p in (HERE / "kernel_instances").glob("*.sq"))
    cache = Path(kernel.numba.config.CACHE_DIR + "-boundscheck")
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", _BOUNDS, json.dumps(paths)], capture_output=True, text=True,
                       env=env, cwd=root, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    checked = json.loads(p.stdout)
    # the kernel without bounds checks: this process's own (the same code as the script's, run here)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), mock.patch.object(sys, "argv", ["-c", json.dumps(paths)]):
        exec(compile(_BOUNDS, "<bounds>", "exec"), {"__name__": "bounds"})
    assert checked == json.loads(out.getvalue())


def test_a_loop_that_draws_without_blocking_is_one_located_fault():
    # each pass of the loop is a question for the oracle: past the kernel's
    # limit the step faults, and the enumeration stops there (before, it
    # tried 2^4096 answer sequences)
    from serq.lang.load import load_text

    text = """
pool kv { cap 8; block 4; admit via gpu; }
stage gpu { budget 8; }
session s { while true { draw y in {1, 2}; } }
workload { 1 x s; }
"""
    r = explore(load_text(text).program)
    assert r.verdict == "violation"
    assert "more than 4096 draws, chooses and ties in one step" in r.message
    assert r.stats.distinct == 2


def test_a_wide_range_draw_fits_the_working_array():
    # a range domain may have up to 100,000 values: the scratch for values,
    # keys and questions is sized for that, not for the widest value set
    from serq.lang.load import load_text

    text = """
pool kv { cap 4096; block 4; admit via gpu; }
stage gpu { budget 8; }
session s {
  draw o in 1..3000;
  choose c in 1..2000 by (abs(c - o) * 1.0);
  hold kv need 4 take 4 { prefill 4 growing kv; }
  end;
}
workload { 1 x s; }
"""
    r = explore(load_text(text).program)
    assert r.verdict == "pass"
    # the initial state, 3,000 queued sessions (one per o, c its nearest
    # value in 1..2000), and one end state (a finished session is blanked)
    assert r.stats.distinct == 1 + 3000 + 1
