"""Compiled code is loaded before the search (explorer/runtime/compiled.py):
after each strategy has run on instances of the library, in a process of
its own, the process holds no specialization of a compiled function that
the `load()` of its uses did not load (one the search would have compiled
or loaded as it ran), nor any of a use it does not have; and under an
address-space limit (`ulimit -v`) every strategy ends with the memory bound
(exit 13, `memory=MemoryError`), never with LLVM's abort (SIGABRT) when a
function is first loaded late in the run."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import FOREVER

ROOT = Path(__file__).resolve().parents[2]

RUNS = """
import contextlib, io, json, sys
from numba.core.registry import CPUDispatcher
from serq.cli import main
from explorer.runtime import compiled
flags, insts = json.loads(sys.argv[1]), sys.argv[2:]
codes = []
for inst in insts:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main([flags[0], inst, *flags[1:]]))
held = sorted(f"{n}.{a}" for n, mod in list(sys.modules.items()) if n.startswith("explorer.")
              for a, d in vars(mod).items() if isinstance(d, CPUDispatcher) and d.__module__ == n and d.signatures)
print(json.dumps({"codes": codes, "missing": compiled.missing(), "loaded": sorted(compiled.loaded()), "held": held}))
"""

# each command and flags, in a process of its own: the uses it loaded, and a module of the explorer whose compiled
# functions it must not even load (a use it does not have)
RUNS_OF = {
    "bfs": (["explore", "--max-states", "3000"], ["rows", "search"], ("partitions", "graph.fair")),
    "dfs": (["explore", "--max-states", "3000", "--strategy", "dfs"], ["search"], ("arrays", "graph.fair")),
    "workers2": (["explore", "--max-states", "3000", "--workers", "2"], ["rows", "search", "threads"], "partitions"),
    "partitions2": (["explore", "--max-states", "3000", "--partitions", "2"], ["partitions", "search"], "engine"),
    "partitions2-workers2": (["explore", "--max-states", "3000", "--partitions", "2", "--workers", "2"],
                             ["partitions", "search"], "engine"),
    "exact": (["explore", "--max-states", "3000", "--exact"], ["search"], "arrays"),
    "no-symmetry": (["explore", "--max-states", "3000", "--no-symmetry"], ["rows", "search"], "partitions"),
    "swarm": (["explore", "--max-states", "3000", "--swarm", "2", "--seed", "1"], ["search"], "arrays"),
    "worst": (["explore", "--worst", "ttft", "--max-states", "3000"], ["search"], "arrays"),  # a stored graph
    "fair": (["explore", "--max-states", "3000"], ["fair", "rows", "search"], "partitions"),  # liveness under fairness
    "fair-dfs": (["explore", "--max-states", "3000", "--strategy", "dfs"], ["fair", "search"], "arrays"),
    "run": (["run", "--time-limit", "1", "--no-progress"], ["step"], "explorer."),
}
# rows whose values outgrow int8 and int16 (a level kept in a wider type)
FOREVER_RUNS = {"bfs": ["--max-states", "40000"], "dfs": ["--max-states", "40000"],
                "workers2": ["--max-states", "40000"]}


@pytest.mark.parametrize("name", list(RUNS_OF))
def test_no_specialization_is_loaded_in_the_middle_of_a_search(tmp_path, name):
    """Each strategy (and `serq run`) in a fresh process: after it ran on
    instances of the library, the process holds no specialization that
    the `load()` before it did not load (one the search would have
    compiled or loaded as it ran), and it loaded only its uses."""
    flags, uses, unused = RUNS_OF[name]
    insts = [str(ROOT / "instances" / n) for n in ("agent_subagents.sq", "decode_preempt.sq", "multiturn_chat.sq",
                                                   "theorem_no_nesting.sq")]
    if name.startswith("fair"):
        insts = [str(ROOT / "instances" / "starved_large.sq")]  # `check eventually admitted`
    if name in FOREVER_RUNS:
        forever = tmp_path / "forever.sq"
        forever.write_text(FOREVER)
        insts.append(str(forever))
    r = subprocess.run([sys.executable, "-c", RUNS, json.dumps(flags), *insts], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(c in (0, 10, 11, 12, 13, 17) for c in out["codes"]), out["codes"]
    assert out["missing"] == [], "specializations no load() loaded:\n" + "\n".join(out["missing"])
    assert out["loaded"] == uses
    unused = (unused,) if isinstance(unused, str) else unused
    assert not [h for h in out["held"] if any(u in h for u in unused)], out["held"]


def test_the_tables_load_and_name_what_they_load():
    import serq.semantics.entries  # noqa: F401 (registers the kernel's table)
    from explorer.runtime import compiled

    compiled.load()
    assert "*" in compiled.loaded()
    compiled.load()  # once loaded, nothing more
    compiled.load(("rows",))  # (every use loaded already)
    assert "*" in compiled.loaded()


def test_every_row_names_known_uses():
    import serq.semantics.entries  # noqa: F401
    from explorer.runtime import compiled

    rows = [row for table, _inner in compiled._TABLES.values() for row in table()]
    assert all(set(row[3]) <= set(compiled.USES) for row in rows if len(row) > 3)
    # every use of the explorer's loads something of its own, and no module of the explorer serves every use
    explorer_rows = [row for row in rows if row[0].startswith("explorer.")]
    assert all(len(row) > 3 for row in explorer_rows)
    for use in ("search", "rows", "threads", "partitions", "fair"):
        assert any(use in row[3] for row in explorer_rows), use
    assert not any("step" in row[3] for row in explorer_rows)  # a simulation calls none of the explorer's code
    with pytest.raises(ValueError, match="unknown uses"):
        compiled.load(("bogus",))
    with pytest.raises(TypeError):
        compiled.load("rows")


# ---------------------------------------------------------------- under `ulimit -v`

PEAK = ("import sys\nfrom serq.cli import main\ncode = main(sys.argv[1:])\n"
        "print(open('/proc/self/status').read().split('VmPeak:')[1].split()[0], file=sys.stderr)\nsys.exit(code)")

STRATEGIES = [[], ["--strategy", "dfs"], ["--workers", "2"], ["--partitions", "2", "--workers", "2"]]


@pytest.mark.parametrize("flags", STRATEGIES, ids=["bfs", "dfs", "workers2", "partitions2-workers2"])
def test_every_strategy_under_ulimit_ends_with_the_memory_bound(tmp_path, flags, room=10):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    # one malloc arena in both runs: glibc reserves 64 MiB of address space for each arena a thread contends for,
    # as many as timing makes (the start of a run on threads measured 596-649 MiB in two runs), and the search then
    # fills those reservations (4 million states, half a minute) before it reaches the limit; with one arena the
    # start measures the same to 1 MiB and the room is what this test gives
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    # the address space the run needs to start (unlimited: the compiled code is then in numba's cache; compiling it
    # under the limit would need more than it leaves, as on a clean machine), and a little more
    r = subprocess.run([sys.executable, "-c", PEAK, "explore", str(inst), "--max-states", "50", *flags], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 13, r.stderr
    limit = (int(r.stderr.split()[-1]) << 10) + (room << 20)
    if not 300 << 20 <= limit <= 700 << 20:
        pytest.skip(f"a run starts in {limit >> 20} MiB here, not within 300-700 MiB")

    def low():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    r = subprocess.run([sys.executable, "-m", "serq", "explore", str(inst), "--memory", "100G", "--no-timing", *flags],
                       cwd=ROOT, capture_output=True, text=True, preexec_fn=low, timeout=900, env=env)
    assert r.returncode != -signal.SIGABRT, f"aborted under {limit >> 20} MiB: {r.stderr[-500:]}"
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 13, (limit >> 20, r.returncode, r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("bound: no violation within the bound (memory=MemoryError); exploration incomplete")
    assert lines[-1].startswith("stats: generated=")
