"""The array engine's disk mode (explorer/strategies/arrays/disk.py,
`Settings.disk`, `serq explore --disk`) gives what the engine gives in
memory: verdict, message, counts, queue figure, depth and the shortest
counterexample (a livelock's lasso too, and a starved session's under
`check eventually`: their edges go to disk and are made into the same
graph, `arrays/diskgraph.py`), on every instance of
the library, on random instances, on the toys of the array engine's own
tests and under limits, begun in the disk mode or moved there mid-search;
its files are gone after every run, an interrupted one included."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer import check
from serq.check.model import SerqModel
from serq.lang.load import load_path
from tests.fixtures import FOREVER, TWO_CHATS, liveness

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq")) + [ROOT / "tests" / "kernel_instances" / "constructs.sq"]
SAFE = [p for p in INSTANCES if not liveness(p)]


def same(a, b):
    assert (a.verdict, a.message, a.kind, a.replay_path, a.fingerprint, a.bound_reason) == \
        (b.verdict, b.message, b.kind, b.replay_path, b.fingerprint, b.bound_reason)
    sa, sb = a.stats, b.stats
    assert (sa.generated, sa.distinct, sa.queue, sa.max_depth) == (sb.generated, sb.distinct, sb.queue, sb.max_depth)
    assert [(s.action_index, s.fingerprint) for s in a.trace] == [(s.action_index, s.fingerprint) for s in b.trace]


def both(prog, tmp_path, symmetry=True, **kw):
    a = check(SerqModel(prog, symmetry=symmetry), **kw)
    b = check(SerqModel(prog, symmetry=symmetry), disk=str(tmp_path), **kw)
    assert os.listdir(tmp_path) == []  # the run's directory is gone
    return a, b


@pytest.fixture
def tiny(monkeypatch):
    """Every packed block spilled (from the first byte on), chunks of 7
    rows, sub-tables of 4 slots at first, the prefetch pass from the first
    state: each growth, relayout and spill of the disk mode is met."""
    from explorer.strategies.arrays import disk, diskstore

    monkeypatch.setattr(disk, "SPILL_FROM", 0)
    monkeypatch.setattr(disk, "CHUNK", 7)
    monkeypatch.setattr(disk, "TOUCH_FROM", 0)
    monkeypatch.setattr(diskstore, "SUB0", 4)


@pytest.mark.parametrize("path", SAFE, ids=lambda p: p.stem)
@pytest.mark.parametrize("symmetry", [True, False])
def test_disk_mode_matches_memory(path, symmetry, tmp_path):
    a, b = both(load_path(path).program, tmp_path, symmetry, max_states=20_000)
    same(a, b)


@pytest.mark.parametrize("name", ["vllm_chat", "hol_none", "join_in_hold", "agent_subagents", "self_preempt"])
def test_disk_mode_spilling_everything(name, tiny, tmp_path):
    a, b = both(load_path(ROOT / "instances" / f"{name}.sq").program, tmp_path, max_states=20_000)
    same(a, b)


@pytest.mark.parametrize("kw", [dict(max_states=50), dict(max_depth=3), dict(max_states=1), dict(max_depth=0)])
def test_disk_mode_limits(kw, tmp_path):
    same(*both(load_path(ROOT / "instances" / "vllm_chat.sq").program, tmp_path, **kw))


def test_fingerprint_table_holds_zero_and_colliding_homes(monkeypatch):
    from explorer.strategies.arrays import diskstore

    monkeypatch.setattr(diskstore, "SUB0", 4)
    t = diskstore.FpTable()
    fps = [0, 1, 2, 1 << 32, 3 << 32, (1 << 60) | 5, 2**64 - 1] + [int(x) for x in
                                                                 np.random.default_rng(7).integers(0, 2**63, 3000)]
    for f in fps:
        assert not t.has(f)
        assert t.insert(f)
        assert not t.insert(f)
    assert all(t.has(f) for f in fps) and not t.has(4)
    assert int(t.cnt.sum()) == len(fps) - 1 and t.zero[0] == 1  # (0: a flag of its own)


def test_disk_mode_refuses_what_it_cannot_honour(tmp_path):
    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    with pytest.raises(ValueError, match="one worker"):
        check(SerqModel(prog), disk=str(tmp_path), check_livelock=False, workers=2)
    with pytest.raises(ValueError, match="BFS"):
        check(SerqModel(prog), disk=str(tmp_path), check_livelock=False, strategy="dfs")
    assert os.listdir(tmp_path) == []


def test_interrupted_disk_run_leaves_no_file(tmp_path):
    """An interrupt (here raised from the progress callback, between two
    chunks, as a signal is) ends the run "interrupted" and removes its files."""
    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    seen = []

    def progress(stats):
        seen.append(os.listdir(tmp_path))
        raise KeyboardInterrupt

    r = check(SerqModel(prog), disk=str(tmp_path), check_livelock=False, progress=progress, progress_interval=0.0)
    assert r.verdict == "interrupted" and seen and seen[0]  # (its directory existed during the run)
    assert os.listdir(tmp_path) == []


def run_on(inst, *a):
    return subprocess.run([sys.executable, "-m", "serq", "explore", str(inst), "--no-timing", *a], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_cli_disk_flag(tmp_path):
    inst = ROOT / "instances" / "hol_none.sq"
    run = lambda *a: subprocess.run([sys.executable, "-m", "serq", "explore", str(inst), "--no-timing", *a],  # noqa: E731
                                    cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    mem = run("--check", "deadlock", "--check", "invariant")
    disk = run("--check", "deadlock", "--check", "invariant", "--disk", str(tmp_path))
    assert disk.returncode == mem.returncode and disk.stdout == mem.stdout
    assert os.listdir(tmp_path) == []
    for inst in (tmp_path.parent / "two.sq", ROOT / "instances" / "theorem_no_fit.sq"):
        if inst.name == "two.sq":
            inst.write_text(TWO_CHATS)  # no check line: the livelock check is selected
        mem, disk = run_on(inst), run_on(inst, "--disk", str(tmp_path))
        assert (disk.returncode, disk.stdout) == (mem.returncode, mem.stdout) and os.listdir(tmp_path) == []
    assert "livelock" in mem.stdout.splitlines()[0]
    refused = run("--check", "deadlock", "--disk", str(tmp_path), "--workers", "2")
    assert refused.returncode == 2 and "--workers" in refused.stderr


@pytest.mark.parametrize("name", ["vllm_chat", "hol_none", "join_in_hold", "agent_subagents", "decode_preempt"])
@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("livelock", [False, True])
def test_moving_to_disk_mid_search(name, spill, livelock, tmp_path, monkeypatch):
    """`disk_at`: the search begins in memory and goes on in the disk mode
    from the first level past that many resident bytes (0: the second
    level): the same result, its message saying so."""
    if spill:
        from explorer.strategies.arrays import disk

        monkeypatch.setattr(disk, "SPILL_FROM", 0)
    path = ROOT / "instances" / f"{name}.sq"
    if not path.exists():
        pytest.skip(f"no instance {name}")
    prog = load_path(path).program
    kw = dict(check_livelock=livelock, max_states=20_000)
    a = check(SerqModel(prog), **kw)
    b = check(SerqModel(prog), disk=str(tmp_path), disk_at=0, **kw)
    assert os.listdir(tmp_path) == []
    if a.stats.max_depth > 0:
        assert b.message.startswith(a.message) and "moved to the disk mode after" in b.message
        b.message = a.message
    same(a, b)


def test_explore_moves_to_disk_by_itself_where_it_can(monkeypatch, tmp_path):
    """serq's explore lets the array engine move to the disk mode past half
    the memory bound when the search allows it (one worker; the livelock
    check too), and never where it does not."""
    from explorer.settings import Settings
    from serq.check import explore as ex

    seen = []
    real = ex.check
    monkeypatch.setattr(ex, "check", lambda model, settings: seen.append(settings) or real(model, settings))
    monkeypatch.setenv("SERQ_DISK", str(tmp_path))
    prog = load_path(ROOT / "instances" / "hol_none.sq").program
    ex.explore(prog, checks=["deadlock"], memory_limit=8 << 30)
    ex.explore(prog, checks=["deadlock", "livelock"], memory_limit=8 << 30)
    ex.explore(prog, checks=["deadlock"], memory_limit=8 << 30, workers=2)
    assert [s.disk for s in seen] == [str(tmp_path), str(tmp_path), None] and 0 < seen[0].disk_at < 8 << 30
    assert isinstance(seen[0], Settings) and os.listdir(tmp_path) == []


def test_a_memory_bound_says_how_the_disk_mode_would_go_on(tmp_path, capsys):
    from serq.cli import main

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)  # no check line: livelock checked
    for flags in ([], ["--check", "deadlock"]):
        assert main(["explore", str(inst), "--memory", "1M", "--no-timing", *flags]) == 13
        captured = capsys.readouterr()
        assert captured.out.splitlines()[0] == ("bound: no violation within the bound (memory=1MiB); "
                                                "exploration incomplete")
        assert "note: --disk DIR keeps" in captured.err  # (already past the bound: nothing to move)
    assert main(["explore", str(inst), "--memory", "1M", "--no-timing", "--workers", "2"]) == 13
    assert "note: --disk DIR in one worker keeps" in capsys.readouterr().err


# ---------------------------------------------------------------- the livelock check on disk


LIVELOCKS = ["self_preempt", "theorem_no_fit", "theorem_no_lifo"]


@pytest.fixture
def buckets(monkeypatch):
    """The edges' targets resolved 8 states at a time (files of buckets of
    fingerprints), and read back 5 records at a time."""
    from explorer.strategies.arrays import diskgraph

    monkeypatch.setattr(diskgraph, "BUCKET", 8)
    monkeypatch.setattr(diskgraph, "STEP", 5)


@pytest.mark.parametrize("name", LIVELOCKS + ["vllm_chat", "agent_subagents", "decode_preempt"])
@pytest.mark.parametrize("at", [None, 0])
def test_livelock_on_disk_in_buckets(name, at, buckets, tiny, tmp_path):
    """The lasso (stem and cycle), or its absence, is the in-memory
    engine's, with every spill, growth and bucket of the disk mode met;
    begun on disk, or moved there after the first level."""
    prog = load_path(ROOT / "instances" / f"{name}.sq").program
    a = check(SerqModel(prog), max_states=20_000)
    b = check(SerqModel(prog), disk=str(tmp_path), disk_at=at, max_states=20_000)
    assert os.listdir(tmp_path) == []
    if at is not None and a.stats.max_depth > 0:
        assert "moved to the disk mode after" in b.message
        b.message = b.message.split(" (moved")[0]
    same(a, b)
    assert a.lasso_start == b.lasso_start
    assert (a.verdict == "livelock") == (name in LIVELOCKS)


def test_livelock_on_disk_on_the_array_toys(tmp_path):
    """The array engine's own toys (a cycle, a self-loop, states with
    hundreds of non-progress edges, whose counts pass a byte in memory):
    the same results on disk, and moved there from memory."""
    sys.path.insert(0, str(ROOT / "tests" / "explorer"))
    from explorer_toys import AsArrays
    from test_explorer_arrays import CASES, _hubs, key

    cases = [(name, make, width) for name, make, width in CASES] + \
        [(f"hubs {c}", lambda c=c: _hubs(c), 1) for c in (False, True)]
    for name, make, width in cases:
        for kw in ({}, {"max_states": 7}, {"max_depth": 2}):
            a = check(AsArrays(make(), width), **kw)
            for at in (None, 0):
                b = check(AsArrays(make(), width), disk=str(tmp_path), disk_at=at, **kw)
                if at is not None:
                    b.message = b.message.split(" (moved")[0]
                assert key(a) == key(b), (name, kw, at)
                assert [st.state for st in a.trace] == [st.state for st in b.trace]
    assert os.listdir(tmp_path) == []


def test_livelock_on_disk_on_random_instances(tmp_path):
    """Random instances (turns, prefixes, preemption, a slot around the
    session: tests/semantics/test_semantics_properties.py), their pool cut
    to 1-4 blocks so that sessions preempt one another or themselves: the
    same verdict, counts and lasso on disk, begun there or moved there."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from serq.lang.load import load_text
    from tests.semantics.test_semantics_properties import instances

    @st.composite
    def tight(draw):
        text = draw(instances())
        bs = int(re.search(r"pool kv \{ cap \d+; block (\d+)", text).group(1))
        return re.sub(r"pool kv \{ cap \d+", f"pool kv {{ cap {bs * draw(st.integers(1, 4))}", text)

    seen = []

    @settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(tight())
    def run(text):
        prog = load_text(text, "r.sq").program
        a = check(SerqModel(prog), max_states=3000)
        for at in (None, 0):
            b = check(SerqModel(prog), disk=str(tmp_path), disk_at=at, max_states=3000)
            b.message = b.message.split(" (moved")[0]
            same(a, b)
            assert a.lasso_start == b.lasso_start
        seen.append(a.verdict)

    run()
    assert "livelock" in seen and "pass" in seen, seen
    assert os.listdir(tmp_path) == []


def test_explore_moves_to_disk_with_the_default_checks(tmp_path, monkeypatch):
    """serq's explore with the instance's own checks (the livelock check
    among them) and a move at the second level: the verdict and lasso of
    the search in memory."""
    from serq.check import explore as ex

    real = ex.check
    monkeypatch.setattr(ex, "check", lambda model, settings: real(model, settings.but(disk_at=0)))
    monkeypatch.setenv("SERQ_DISK", str(tmp_path))
    prog = load_path(ROOT / "instances" / "theorem_no_fit.sq").program
    b = ex.explore(prog, memory_limit=8 << 30)
    monkeypatch.setattr(ex, "check", real)
    a = ex.explore(prog)
    assert "moved to the disk mode after" in b.message
    b.message = re.sub(r" \(moved to the disk mode after [^)]*\)", "", b.message)
    same(a, b)
    assert a.verdict == "livelock" and os.listdir(tmp_path) == []


def test_cycle_within_its_component_is_the_cycle():
    """`cycles._cycle_within` (arrays the size of the entry's component)
    gives `cycles._cycle`'s cycle, on random graphs."""
    from explorer.graph.cycles import _acyclic_part, _cycle, _cycle_within, _scc, csr

    rng = np.random.default_rng(3)
    small = 0
    for _ in range(400):
        n = int(rng.integers(1, 60))
        p = rng.uniform(0.01, 0.15)
        n, ofs, dst = csr([[int(v) for v in rng.integers(0, n, rng.binomial(n, p))] for _ in range(n)])
        comp, left = _acyclic_part(n, ofs, dst)
        entry = _scc(n, ofs, dst, comp) if left else -1
        if entry >= 0:
            assert list(_cycle_within(n, ofs, dst, comp, entry)) == list(_cycle(n, ofs, dst, comp, entry))
            small += 13 * int((comp == comp[entry]).sum()) < 9 * n
    assert small > 50


def test_the_disk_modes_compiled_code_is_named(tmp_path):
    """After runs in the disk mode (begun there, moved there, the edges'
    targets in buckets), no specialization was loaded that a table of
    explorer/runtime/compiled.py (the disk mode's own, `disk._compiled_table`)
    does not name (`check eventually` and the livelock check's pass over
    its non-progress edges included)."""
    code = f"""
import contextlib, io, json
from explorer import check
from explorer.runtime import compiled
from explorer.strategies.arrays import disk, diskgraph, diskstore
from serq.check.model import SerqModel
from serq.lang.load import load_path
disk.TOUCH_FROM, diskstore.SUB0 = 0, 4
for name in ("theorem_no_fit", "vllm_chat", "starved_large"):
    prog = load_path({str(ROOT / "instances")!r} + "/" + name + ".sq").program
    for at in (None, 0):
        for b in (1 << 22, 8):
            diskgraph.BUCKET = b
            check(SerqModel(prog), disk={str(tmp_path)!r}, disk_at=at, max_states=5000)
print(json.dumps(compiled.missing()))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


# ---------------------------------------------------------------- `check eventually` on disk


def _fair_cases():
    from tests.check.test_liveness_brute import CHECKS, LIBRARY, TEXTS

    return [(name, c) for name in sorted(TEXTS) + LIBRARY for c in CHECKS]


@pytest.mark.parametrize("name,goal", _fair_cases())
def test_check_eventually_on_disk(name, goal, tmp_path):
    """Liveness under fairness (both goals, both fairness assumptions, on
    the instances of its brute-force cross-check: turn, spawn/join,
    preemption, prefixes, livelocks and deadlocks): begun in the disk
    mode, or moved there after the first level, the same verdict, counts,
    starved session and lasso as in memory, and no file left."""
    from serq.check.model import Checks
    from serq.check.slo import make_model
    from tests.check.test_liveness_brute import program

    prog = program(name)
    make = lambda: make_model(prog, checks=Checks.of_program(prog, [goal]))  # noqa: E731
    a = check(make(), check_livelock=False, check_deadlock=False)
    for at in (None, 0):
        b = check(make(), disk=str(tmp_path), disk_at=at, check_livelock=False, check_deadlock=False)
        assert ("moved to the disk mode after" in b.message) == (at is not None and a.stats.max_depth > 0)
        b.message = b.message.split(" (moved")[0]
        same(a, b)
        assert a.lasso_start == b.lasso_start
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("at", [None, 0])
def test_check_eventually_with_livelock_on_disk_everything_spilled(at, tiny, buckets, tmp_path):
    """With the livelock check too (its pass over the non-progress edges
    of the graph of every edge, `diskgraph.nonprogress`), every spill,
    growth and bucket met: the in-memory results, a livelock found first
    where there is one, a starved session or a pass where not."""
    from serq.check.model import Checks

    seen = set()
    for name in ("starved_large", "self_preempt", "theorem_no_fit", "agent_subagents"):
        prog = load_path(ROOT / "instances" / f"{name}.sq").program
        for goal in ("eventually admitted", "eventually done under strong"):
            checks = Checks.of_program(prog, ["livelock", "deadlock", goal])
            model = lambda: SerqModel(prog, checks=checks)  # noqa: E731
            a = check(model(), max_states=20_000)
            b = check(model(), disk=str(tmp_path), disk_at=at, max_states=20_000)
            assert ("moved to the disk mode after" in b.message) == (at is not None and a.stats.max_depth > 0)
            b.message = b.message.split(" (moved")[0]
            same(a, b)
            assert a.lasso_start == b.lasso_start
            seen.add(a.verdict if a.verdict != "violation" else a.kind)
    assert {"livelock", "eventually admitted"} <= seen, seen
    assert os.listdir(tmp_path) == []


def test_check_eventually_on_disk_on_random_instances(tmp_path):
    """Random instances (turns, prefixes, preemption: those of the
    livelock test above), with a goal of `check eventually` each: the
    same verdict, counts and lasso on disk, begun there or moved there."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from serq.check.model import Checks
    from serq.lang.load import load_text
    from tests.semantics.test_semantics_properties import instances

    seen = []

    @settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(instances(), st.integers(1, 4), st.sampled_from(["eventually admitted", "eventually done",
                                                            "eventually done under strong"]))
    def run(text, blocks, goal):  # (the pool cut to 1-4 blocks: sessions preempt one another, or wait for ever)
        text = re.sub(r"pool kv \{ cap \d+; block (\d+)", lambda g: f"pool kv {{ cap {blocks * int(g.group(1))}; "
                      f"block {g.group(1)}", text)
        prog = load_text(text, "r.sq").program
        checks = Checks.of_program(prog, [goal])
        kw = dict(max_states=3000, check_deadlock=False, check_livelock=False)  # (a deadlock: a starved session)
        a = check(SerqModel(prog, checks=checks), **kw)
        for at in (None, 0):
            b = check(SerqModel(prog, checks=checks), disk=str(tmp_path), disk_at=at, **kw)
            b.message = b.message.split(" (moved")[0]
            same(a, b)
            assert a.lasso_start == b.lasso_start
        how = 'cycle' if a.lasso_start is not None else 'end'
        seen.append(a.verdict if a.verdict != "violation" else f"{a.kind}, {how}")

    run()
    assert {"pass", "eventually done, cycle", "eventually done, end"} <= set(seen), seen
    assert os.listdir(tmp_path) == []


def test_cli_check_eventually_on_disk(tmp_path):
    """`serq explore --disk` of an instance with a `check eventually` line
    prints what the search in memory prints; the memory bound's note
    names --disk for it too."""
    inst = ROOT / "instances" / "starved_large.sq"
    mem, disk = run_on(inst), run_on(inst, "--disk", str(tmp_path))
    assert (disk.returncode, disk.stdout) == (mem.returncode, mem.stdout) and os.listdir(tmp_path) == []
    assert "eventually admitted" in mem.stdout.splitlines()[0]
    low = run_on(inst, "--memory", "1M")
    assert low.returncode == 13 and "note: --disk DIR keeps" in low.stderr
