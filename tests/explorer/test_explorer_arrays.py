"""The array engine agrees with the sequential engine on the toys: pass,
invariant violation, deadlock, livelock (cycle and self-loop), limits."""

from __future__ import annotations

import pytest

from explorer import check
from explorer_toys import AsArrays, CounterPair, Spread, TwoLocks, retry_loop

CASES = [
    ("pass", lambda: CounterPair(4), 2),
    ("wide values", lambda: Spread(4), 4),  # unpacked levels widen from int8 to int32
    ("violation", lambda: CounterPair(4, limit=5), 2),
    ("deadlock", lambda: TwoLocks(), 4),
    ("livelock", lambda: retry_loop(), 1),
    ("self-loop", lambda: retry_loop(self_loop=True), 1),
]


def key(r):
    s = r.stats
    return (r.verdict, r.message, r.kind, r.replay_path, r.fingerprint, r.lasso_start, r.bound_reason,
            s.generated, s.distinct, s.queue, s.max_depth)


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kw", [{}, {"max_states": 7}, {"max_depth": 2}])
def test_array_engine_equals_sequential(name, make, width, kw):
    arrays = check(AsArrays(make(), width), **kw)
    seq = check(make(), **kw)
    assert key(arrays) == key(seq)
    assert [st.state for st in arrays.trace] == [st.state for st in seq.trace]


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
def test_array_engine_with_two_workers(name, make, width):
    assert key(check(AsArrays(make(), width), workers=2))[:-4] == key(check(make()))[:-4]


class _OnThreads(AsArrays):
    """The toy with `array_expander`: workers are threads of this process
    (the path serq takes), not processes."""

    def __init__(self, model, width):
        super().__init__(model, width)
        self.capabilities = self.capabilities | {"row_threads"}

    def array_expander(self):
        return self.array_expand


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
def test_array_engine_with_two_worker_threads(name, make, width):
    for kw in ({}, {"max_states": 7}, {"max_depth": 2}):
        assert key(check(_OnThreads(make(), width), workers=2, **kw)) == key(check(make(), **kw))


def test_packed_rows_round_trip():
    """Levels are packed by column into bits: every value comes back, at
    any range (64-bit extremes included) and for any slice."""
    import numpy as np

    from explorer.strategies.arrays.narrow import Packed

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, w = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        hi = 2 ** int(rng.integers(0, 63))
        rows = rng.integers(-hi, hi, size=(n, w))
        rows[:, ::3] = 5  # columns equal in every row
        assert (Packed(rows).rows(0, n) == rows).all()
        idx = rng.integers(0, n, size=int(rng.integers(1, 30)))
        p = Packed(rows, idx)
        a = int(rng.integers(0, len(idx)))
        assert (p.rows(a, len(idx)) == rows[idx][a:]).all()
    ext = np.array([[-2**63, 2**63 - 1], [2**63 - 1, -2**63]])
    assert (Packed(ext).rows(0, 2) == ext).all()


def test_packed_like_a_block_before():
    """A block packed in the layout of the one before (`like`): its own
    rows come back whether they fit that layout (shared) or not (a layout
    of both ranges), at any range, 64-bit extremes and another width
    included; a chain of such blocks too."""
    import numpy as np

    from explorer.strategies.arrays.narrow import Packed

    rng = np.random.default_rng(5)
    for _ in range(300):
        n, w = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        hi = 2 ** int(rng.integers(0, 63))
        like = None
        for _ in range(4):
            rows = rng.integers(-hi, hi, size=(n, w + int(rng.integers(0, 2))))
            rows[:, ::3] = int(rng.integers(-2, 3))
            if rng.integers(0, 4) == 0:
                rows[int(rng.integers(0, n)), 0] = [-2**63, 2**63 - 1][int(rng.integers(0, 2))]
            idx = rng.integers(0, n, size=int(rng.integers(1, 30)))
            p = Packed(rows, idx, like)
            assert (p.rows(0, len(idx)) == rows[idx]).all()
            again = Packed(rows, idx, p.layout())  # fits its own layout: shared
            assert again.const is p.const and (again.rows(0, len(idx)) == rows[idx]).all()
            like = p.layout()


def test_livelock_pass_finds_the_smallest_node_on_a_cycle():
    """Peeling then Pearce's components give what networkx gives: the
    smallest node in a component of 2+ nodes or with a self-loop."""
    import networkx as nx
    import numpy as np

    from explorer.strategies.arrays.engine import _acyclic_part, _scc

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        m = int(rng.integers(0, 3 * n))
        src = np.sort(rng.integers(0, n, size=m))
        dst = rng.integers(0, n, size=m)
        if rng.random() < 0.5:  # mostly forward edges, as in a BFS: few cycles
            dst = np.where(rng.random(m) < 0.9, np.maximum(dst, np.minimum(src + 1, n - 1)), dst)
        ofs = np.searchsorted(src, np.arange(n + 1)).astype(np.int32)
        dst32 = dst.astype(np.int32)
        comp, left = _acyclic_part(n, ofs, dst32)
        got = _scc(n, ofs, dst32, comp) if left else -1
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(src.tolist(), dst.tolist()))
        cyclic = [v for c in nx.strongly_connected_components(g) for v in c if len(c) > 1]
        cyclic += [v for v in range(n) if g.has_edge(v, v)]
        assert got == (min(cyclic) if cyclic else -1)
        if got >= 0:  # the component ids: equal exactly within a component
            same = {v for v in range(n) if comp[v] == comp[got]}
            assert same == next(c for c in nx.strongly_connected_components(g) if got in c)


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_worker_threads_with_chunks_of_a_few_rows(name, make, width, chunk, monkeypatch):
    """Every chunk boundary: the walkers split each chunk's successors by
    fingerprint, the merge gives ids in order; with 2, 3 (2 walkers, 1
    more expander) and 4 threads, with and without limits."""
    from explorer.strategies.arrays import walkers as array_walkers

    monkeypatch.setattr(array_walkers, "CHUNK", chunk)
    for workers in (2, 3, 4):
        for kw in ({}, {"max_states": 7}, {"max_depth": 2}):
            r = check(_OnThreads(make(), width), workers=workers, **kw)
            assert key(r) == key(check(make(), **kw))
            assert r.stats.workers == workers


@pytest.mark.parametrize("workers", [8, 9, 16])
def test_many_worker_threads(workers):
    """Up to 8 walkers (each with 2 of the 16 sub-tables); threads past
    them only expand."""
    for name, make, width in CASES:
        assert key(check(_OnThreads(make(), width), workers=workers)) == key(check(make())), name


def _hubs(cycle: bool):
    """Node 0 has 600 non-progress edges and node 1 300 (counts past a
    byte: `engine.Edges` keeps them aside), the targets' own edges after
    them; with `cycle`, 599 and 1200 form a non-progress cycle, found only
    if every count before them is right."""
    from explorer_toys import Graph

    succ = {0: tuple(range(1, 601)), 1: tuple(range(1000, 1300)) + (601,), 601: ()}
    np_edges = {(0, v) for v in range(1, 601)} | {(1, v) for v in range(1000, 1300)}
    for v in range(2, 601):
        succ[v] = (601,)
    for v in range(1000, 1300):
        succ[v] = (601,)
    if cycle:
        succ[599] = (1200, 601)
        succ[1200] = (599,)
        np_edges |= {(599, 1200), (1200, 599)}
    return Graph(succ, done={601}, np_edges=np_edges)


@pytest.mark.parametrize("cycle", [False, True])
def test_states_with_hundreds_of_non_progress_edges(cycle):
    seq = check(_hubs(cycle))
    assert seq.verdict == ("livelock" if cycle else "pass")
    for arrays in (check(AsArrays(_hubs(cycle), 1)), check(_OnThreads(_hubs(cycle), 1), workers=2),
                   check(_OnThreads(_hubs(cycle), 1), workers=4)):
        assert key(arrays) == key(seq)
        assert [st.state for st in arrays.trace] == [st.state for st in seq.trace]


def test_large_arrays_in_small_pages():
    """The table and the per-state arrays are not advised into large pages
    (a large page is resident whole once one byte of it is written): the
    mapping that holds them has no `hg` flag, where numpy's own array of
    that size has it (when the system offers large pages at all)."""
    import os

    import numpy as np

    from explorer.runtime.memory import _anonymous, _reserve, _zeros

    if not os.path.exists("/proc/self/smaps"):
        pytest.skip("no /proc")

    def flags(a):
        addr, cur = a.ctypes.data + a.nbytes // 2, None  # (numpy advises from a large page boundary on)
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split()[0]
                if "-" in head and not head.endswith(":"):
                    lo, hi = (int(x, 16) for x in head.split("-"))
                    cur = lo <= addr < hi
                elif cur and line.startswith("VmFlags:"):
                    return line.split()[1:]
        raise AssertionError("no mapping holds the array")

    a = _zeros(1 << 24, np.int32)
    a[:5] = 7
    assert a.dtype == np.int32 and a.shape == (1 << 24,) and int(a.sum()) == 35
    assert "hg" not in flags(a)
    b = _reserve(np.arange(10, dtype=np.uint64), 100, 10)
    assert (b[:10] == np.arange(10)).all() and (b[10:100] == 0).all()
    assert "hg" not in flags(b)
    with pytest.raises(MemoryError):  # past any address space: the search's "memory" bound, not a crash
        _zeros(1 << 50, np.int8)
    with pytest.raises(MemoryError):
        _anonymous(1 << 50)
    numpy_own = np.zeros(1 << 24, np.int32)
    if "hg" not in flags(numpy_own):
        pytest.skip("numpy does not advise large pages here: the test would prove nothing")


def test_compressed_blocks_round_trip_and_pickle():
    """A compressed block gives back every row, also after a pickle (a
    checkpoint's frontier); a block pickled before blocks could be
    compressed (no `z` in its state) still reads."""
    import pickle

    import numpy as np

    from explorer.strategies.arrays.narrow import Packed

    rng = np.random.default_rng(11)
    for _ in range(100):
        n, w = int(rng.integers(1, 60)), int(rng.integers(1, 40))
        rows = rng.integers(-2 ** int(rng.integers(0, 62)), 2 ** int(rng.integers(0, 62)), size=(n, w))
        rows[:, ::4] = -3
        p = Packed(rows)
        p.compress()
        pickled = pickle.dumps(p)  # still deflated: rows not read yet
        a = int(rng.integers(0, n))
        assert (p.rows(a, n) == rows[a:]).all()
        assert (p.rows(0, a) == rows[:a]).all()  # inflated once, kept
        back = pickle.loads(pickled)
        assert back.data is None or not back.data.size
        assert (back.rows(0, n) == rows).all()
    plain = Packed(rows)
    old = Packed.__new__(Packed)
    old.__setstate__((None, {k: getattr(plain, k) for k in Packed.__slots__ if k not in ("z", "words")}))
    assert (old.rows(0, n) == rows).all()


@pytest.mark.parametrize("kw", [{}, {"workers": 2}])
def test_more_edges_than_int32_offsets_stop_with_the_memory_bound(kw, monkeypatch):
    """The livelock pass's offsets and targets are int32: past EDGES_MAX
    non-progress edges the search stops with the memory bound and names
    the disk mode, never wraps (here the bound is made small)."""
    from explorer.strategies.arrays import engine

    full = check(AsArrays(retry_loop(), 1), **kw)
    assert full.verdict == "livelock"
    monkeypatch.setattr(engine, "EDGES_MAX", 1)
    r = check(_OnThreads(retry_loop(), 1) if kw else AsArrays(retry_loop(), 1), **kw)
    assert r.verdict == "bound" and r.bound_reason == "memory", r.message
    assert "non-progress edges kept in memory" in r.message and "--disk" in r.message
