"""The array engine (explorer/strategies/arrays/engine.py) gives what the sequential engine
gives: verdict, message, counts, queue figure, depth and replay path, on
every instance of the library and under limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import check
from serq.check.model import SerqModel
from serq.lang.load import load_path
from tests.fixtures import liveness

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq")) + [ROOT / "tests" / "kernel_instances" / "constructs.sq"]
# several workers: not the instances with `check eventually`, looked for by one process
MANY = [p for p in INSTANCES if not liveness(p)]


class Sequential:
    """The same model without the array protocol: the sequential engine."""

    def __init__(self, m):
        self._m = m
        self.capabilities = m.capabilities - {"rows", "row_threads"}

    def __getattr__(self, name):
        if name.startswith("array_"):
            raise AttributeError(name)
        return getattr(self._m, name)


def same(a, b):
    assert (a.verdict, a.message, a.kind, a.replay_path, a.fingerprint, a.bound_reason) == \
        (b.verdict, b.message, b.kind, b.replay_path, b.fingerprint, b.bound_reason)
    sa, sb = a.stats, b.stats
    assert (sa.generated, sa.distinct, sa.queue, sa.max_depth) == (sb.generated, sb.distinct, sb.queue, sb.max_depth)
    assert len(a.trace) == len(b.trace) and a.lasso_start == b.lasso_start


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
@pytest.mark.parametrize("symmetry", [True, False])
def test_array_engine_matches_sequential(path, symmetry):
    prog = load_path(path).program
    kw = dict(max_states=20_000)
    a = check(SerqModel(prog, symmetry=symmetry), **kw)
    b = check(Sequential(SerqModel(prog, symmetry=symmetry)), **kw)
    same(a, b)


@pytest.mark.parametrize("kw", [dict(max_states=50), dict(max_depth=3), dict(max_states=1)])
def test_array_engine_limits(kw):
    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    same(check(SerqModel(prog), **kw), check(Sequential(SerqModel(prog)), **kw))


@pytest.mark.parametrize("name", ["vllm_chat", "self_preempt", "join_in_hold", "hol_none", "agent_subagents"])
def test_two_workers_give_the_same_result(name):
    prog = load_path(ROOT / "instances" / f"{name}.sq").program
    a = check(SerqModel(prog), workers=2, max_states=20_000)
    b = check(Sequential(SerqModel(prog)), max_states=20_000)
    same(a, b)
    assert a.stats.workers == 2


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 5 rows on the worker threads: a level spans many chunks,
    so the walkers, the ordered merge and the packing meet every case (a
    state first met in a later chunk, a deadlock or a violation in the
    middle of a level, the limits). The prefetch pass (`_touch`) from the
    first state on, in the walkers and in the single walk: it only loads,
    so the results stay those of the engine without it."""
    from explorer.strategies.arrays import walkers as array_walkers
    from explorer.strategies.arrays import engine as arrays

    monkeypatch.setattr(array_walkers, "CHUNK", 5)
    monkeypatch.setattr(array_walkers, "TOUCH_FROM", 0)
    monkeypatch.setattr(arrays, "TOUCH_FROM", 0)


@pytest.mark.parametrize("path", MANY, ids=lambda p: p.stem)
@pytest.mark.parametrize("workers", [2, 3, 4])
def test_worker_threads_with_small_chunks_give_one_workers_result(path, workers, small_chunks):
    prog = load_path(path).program
    for kw in (dict(max_states=3_000), dict(max_states=137), dict(max_depth=4)):
        a = check(SerqModel(prog, symmetry=False), workers=workers, **kw)
        b = check(SerqModel(prog, symmetry=False), **kw)
        same(a, b)
        assert [s.state for s in a.trace] == [s.state for s in b.trace]
        assert a.stats.workers == workers


def test_worker_threads_store_a_large_table(small_chunks):
    """vllm_chat without symmetry (94,278 states): every walker's
    sub-tables outgrow their first region and are laid out anew."""
    from explorer.strategies.arrays import walkers as array_walkers

    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    seen = []
    real = array_walkers._Store.relayout

    def relayout(self):
        seen.append(self.nsub)
        real(self)

    array_walkers._Store.relayout = relayout
    try:
        a = check(SerqModel(prog, symmetry=False), workers=2)
    finally:
        array_walkers._Store.relayout = real
    same(a, check(SerqModel(prog, symmetry=False)))
    assert a.stats.distinct == 94278 and seen and set(seen) == {8}


@pytest.mark.parametrize("path", MANY, ids=lambda p: p.stem)
def test_compressed_levels_give_the_same_result(path, monkeypatch):
    """Every level packed (no unpacked rows kept) and every packed block
    compressed (`Packed.compress`), with 1 worker and with 2 worker
    threads on chunks of 5 rows: the results of the engine as it is."""
    from explorer.strategies.arrays import walkers as array_walkers
    from explorer.strategies.arrays import engine as arrays
    from explorer.strategies.arrays import narrow as arrays_narrow

    prog = load_path(path).program
    kw = dict(max_states=3_000)
    plain = check(SerqModel(prog, symmetry=False), **kw)
    made = []
    real = arrays_narrow.Packed.compress

    def compress(self):
        real(self)
        if self.z is not None:  # (a block whose columns are all equal has nothing to deflate)
            made.append(self.n)

    monkeypatch.setattr(arrays_narrow.Packed, "compress", compress)
    monkeypatch.setattr(arrays_narrow, "COMPRESS_FROM", 0)
    monkeypatch.setattr(arrays, "RAW_LEVEL", 0)
    monkeypatch.setattr(array_walkers, "RAW_LEVEL", 0)
    same(check(SerqModel(prog, symmetry=False), **kw), plain)
    monkeypatch.setattr(array_walkers, "CHUNK", 5)
    two = check(SerqModel(prog, symmetry=False), workers=2, **kw)
    same(two, plain)
    assert [s.state for s in two.trace] == [s.state for s in plain.trace]
    assert plain.stats.distinct < 10 or made  # (join_in_hold, 3 states, and self_preempt, 5: no block varies)


def test_stores_grow_each_array_when_address_space_is_short(monkeypatch):
    """The fingerprints may be given their reserve of BIG entries while the
    parents, refused that much address space, are only doubled: each
    array keeps growing as it needs (one grown past the other once wrote
    past the parents' end). vllm_chat without symmetry, stores of 1,024
    states at first, with 1 worker and with 2 worker threads."""
    import numpy as np

    from explorer.strategies.arrays import table as array_table
    from explorer.runtime import memory

    real = memory._zeros

    def short(n, dtype):
        if np.dtype(dtype) == np.int32 and n >= memory.BIG:
            raise MemoryError("refused")
        return real(n, dtype)

    prog = load_path(ROOT / "instances" / "vllm_chat.sq").program
    plain = check(SerqModel(prog, symmetry=False))
    monkeypatch.setattr(memory, "_zeros", short)
    monkeypatch.setattr(memory, "_LIMITED", False)  # (reserves tried, whatever limit the suite runs under)
    monkeypatch.setattr(array_table, "FIRST", 1 << 10)
    st = array_table._Store(None)
    st.reserve(1 << 10, 1)
    assert st.fp.shape[0] >= memory.BIG and st.parent.shape[0] == 1 << 11
    st.reserve(1 << 11, 5)
    assert st.parent.shape[0] >= (1 << 11) + 5 and st.fp.shape[0] >= memory.BIG
    for workers in (1, 2):
        same(check(SerqModel(prog, symmetry=False), workers=workers), plain)
