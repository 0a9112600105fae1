"""BFS over packed rows: the engine for models that offer the array
protocol (see `explorer/model.py`), with the very semantics of the
sequential BFS in `strategies/sequential.py` (same verdict, counts, queue figure and
shortest trace), at a fraction of its cost per state.

Store (`arrays/table.py`), per state id (dense, in discovery order): its 64-bit fingerprint
and its parent's id (12 bytes); the ids are found through a hash table
split into 16 sub-tables by the fingerprint's top bits (4 bytes a slot, at
most 70 % full and at least 47 % once grown, each sub-table grown on its
own, so a growth never holds two copies of the whole table). No action and no row is stored: the path
to a state is its chain of parents, and its actions and rows are re-derived
by expanding each state of the chain again (`_Store.chain`). Rows are kept
only for the current and the next BFS level, packed by column
(`narrow.Packed`), or kept as they are (but in the narrowest
integer type their values allow, int8 first) while a level holds less
than RAW_LEVEL bytes of them (`narrow.Raw`: packing and unpacking
would cost more than they save), in two buffers the levels use in turn
(`narrow.Arena`).

A level is walked chunk by chunk: the model's successors of a chunk of
frontier rows (one call), then `_walk` (numba) over them in (parent,
action) order, exactly as the sequential loop would, returning to Python
only at an event: a state whose invariants must be checked, a deadlock, a
limit, a full sub-table. Non-progress edges are kept as the target ids of
each source's edges (4 bytes an edge) and a count per state (1 byte,
`Edges`); the livelock pass peels off the states no cycle leads to (Kahn), then, if any
are left, runs Pearce's compiled strongly-connected-components search over
them (4 bytes a state, plus its stacks).

With worker threads (a model that offers its rows on threads), the walk too is
split among them, by fingerprint, and a light ordered merge keeps the ids,
counts and traces those of one worker: `arrays/walkers.py`. A model without
it is expanded by worker processes (`arrays/workers.py`) and walked here."""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

import numpy as np
from numba import njit

from explorer.strategies.arrays.table import NO_ORDER, TOUCH_FROM, _Store, _find, _grow_sub, _next_size, _touch, _walker
from explorer.strategies.arrays.narrow import Arena, Packed, Raw, pack_rows
from explorer.graph.cycles import _acyclic_part, _cycle, _scc
from explorer.graph.fair import fair_lasso, fair_pass, fair_result
from explorer.strategies.arrays.fairrec import FairRecord
from explorer.runtime.memory import MemoryGuard, _reserve, _trim, mib, rss
from explorer.runtime.limits import LimitReached
from explorer.model import CHECK, DONE, FAIR, PROGRESS, has
from explorer.outcome import bounded, deadlock, livelock_result, passed, violation
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.strategies.arrays.watch import NS, STOPS, TRIM_EVERY, S_CUT, S_GEN, S_MAXD, S_N, S_NEW, S_NP, S_OVF, S_ROW0, S_SUB, Watch

__all__ = ["array_check", "array_check_on_processes"]

ST_DONE, ST_CHECK, ST_DEADLOCK, ST_MAXSTATES, ST_ROOM = 0, 1, 2, 3, 4
EDGES_MAX = (1 << 31) - 1  # the non-progress edges kept in memory at most: their offsets and targets are int32
ECNT_MAX = 255  # a state's count of non-progress edges in one byte; from this many on, the count is in the overflow
CHUNK = 1024  # rows a chunk has at most
SUCC_CHUNK = 1024  # successors a chunk should give (at least this many in a large run; see `chunk_rows`)
RAW_LEVEL = 2 << 20  # bytes of a level's rows kept unpacked, int8 where they fit (a small level is not worth packing)
# a walk's decisions when it makes its own (`_walk`): none
NO_DNEW, NO_DTGT, NO_WK = np.zeros((1, 0), np.int8), np.zeros((1, 0), np.int64), np.zeros(0, np.uint8)


# ---------------------------------------------------------------- the walk


@njit(cache=True, nogil=True)
def _walk(j0, i0, chunk, table, S, out, bounds, given):
    """Walk successors from parent j0, successor i0; returns (status, j, i).
    ST_ROOM: sub-table S[S_SUB] must outgrow its region; the same successor
    is walked again once the table is laid out anew. The arguments, grouped:
    `chunk` (nrows, pofs, fps, flags, pid0, pdepth, pdone): the chunk's
    successors; `table` (tab, R, sz, cnt, fparr, parents): the store; `S`:
    the counters; `out` (newidx, ecnt, eovf, edst, cut): what the walk
    writes; `bounds` (max_states, max_depth, livelock, deadlock_check);
    `given` (decided, dnew, dtgt, wk, W).

    `decided`: the walkers (`arrays/walkers.py`) have already looked each
    successor up: dnew[t, i] (t: the successor's walker) 0 (stored before,
    as state dtgt[t, i]), 1 (new, now stored as state dtgt[t, i]) or 2 (new
    but past the depth bound), what the lookup below decides otherwise; this
    walk only gives the new states their ids, in order, and does the rest
    (the table is not read; `wk[id]`, if given: the walker of each new
    state)."""
    nrows, pofs, fps, flags, pid0, pdepth, pdone = chunk
    tab, R, sz, cnt, fparr, parents = table
    newidx, ecnt, eovf, edst, cut = out
    max_states, max_depth, livelock, deadlock_check = bounds
    decided, dnew, dtgt, wk, W = given
    for j in range(j0, nrows):
        a = pofs[j]
        b = pofs[j + 1]
        start = i0 if j == j0 else a
        src = pid0 + j
        if a == b and start == a:
            if livelock:
                _count(src, S, ecnt, eovf)
            if deadlock_check and pdone[j] == 0:
                return ST_DEADLOCK, j, a
            continue
        for i in range(start, b):
            fp = fps[i]
            t, p, slot = 0, 0, 0
            if decided:  # 0 seen as state tgt, 1 new (stored as tgt), 2 new past the depth bound
                t = _walker(fp, W)
                d = dnew[t, i]
                tgt = dtgt[t, i]
            else:
                tgt, p, slot = _find(tab, R, sz, fparr, fp)
                d = 0 if tgt >= 0 else 2 if max_depth >= 0 and pdepth >= max_depth else 1
            if d == 0:
                S[S_GEN] += 1
                if livelock and (flags[i] & PROGRESS) == 0:
                    edst[S[S_NP]] = tgt
                    S[S_NP] += 1
                continue
            if d == 2:
                S[S_GEN] += 1
                cut[S[S_CUT]] = fp
                S[S_CUT] += 1
                continue
            if max_states >= 0 and S[S_N] >= max_states:
                S[S_GEN] += 1
                return ST_MAXSTATES, j, i
            if decided:
                if wk.shape[0] > 0:
                    wk[S[S_N]] = t
            else:
                if 10 * (cnt[p] + 1) > 7 * sz[p]:
                    if _next_size(sz[p]) > R:
                        S[S_SUB] = p
                        return ST_ROOM, j, i
                    _grow_sub(tab, R, sz, p, fparr)
                    _, p, slot = _find(tab, R, sz, fparr, fp)
                tgt = S[S_N]
                fparr[tgt] = fp
                tab[slot] = tgt + 1
                cnt[p] += 1
                parents[tgt] = src
            S[S_GEN] += 1
            S[S_N] += 1
            if pdepth + 1 > S[S_MAXD]:
                S[S_MAXD] = pdepth + 1
            newidx[S[S_NEW]] = i
            S[S_NEW] += 1
            if livelock and (flags[i] & PROGRESS) == 0:
                edst[S[S_NP]] = tgt
                S[S_NP] += 1
            if flags[i] & CHECK:
                return ST_CHECK, j, i + 1  # the row's count is written when the walk comes back to end it
        if livelock:
            _count(src, S, ecnt, eovf)
    return ST_DONE, nrows, 0


@njit(cache=True, nogil=True, inline="always")
def _count(src, S, ecnt, eovf):
    """The row of state src is walked: its count of non-progress edges."""
    c = S[S_NP] - S[S_ROW0]
    if c < ECNT_MAX:
        ecnt[src] = c
    else:
        ecnt[src] = ECNT_MAX
        eovf[S[S_OVF]] = c
        S[S_OVF] += 1
    S[S_ROW0] = S[S_NP]


@njit(cache=True, nogil=True)
def _offsets(parent, nrows, out):
    """out[j]: the first successor of row j (successors in row order)."""
    k = parent.shape[0]
    i = 0
    for j in range(nrows + 1):
        while i < k and parent[i] < j:
            i += 1
        out[j] = i


class Edges:
    """The non-progress edges, for the livelock pass: the target id of each
    (4 bytes an edge, sources in id order) and each state's count of them
    in one byte (a count of ECNT_MAX or more: ECNT_MAX, and the count in
    `ovf`, in id order). The offsets the pass needs (4 bytes a state) are
    made from the counts only once the search is over, in the room the hash
    table leaves."""

    def __init__(self, on: bool) -> None:
        self.cnt = np.zeros(1 << 16 if on else 1, np.uint8)
        self.ovf = np.zeros(64 if on else 1, np.int64)
        self.dst = np.zeros(1 << 16 if on else 1, np.int32)

    def reserve(self, S: np.ndarray, end: int, k: int) -> None:
        """Room for the counts of the states before id `end` and for k edges
        more (and their overflow). Past EDGES_MAX edges (their offsets are
        int32) the search stops with the memory bound, naming the disk mode,
        whose graph has no such bound, rather than wrap."""
        if int(S[S_NP]) + k > EDGES_MAX:
            raise LimitReached("memory", f"{EDGES_MAX:,} non-progress edges kept in memory for the livelock check; "
                                         "--disk keeps them on disk")
        self.cnt = _reserve(self.cnt, end, self.cnt.shape[0])
        self.dst = _reserve(self.dst, int(S[S_NP]) + k, int(S[S_NP]))
        need = int(S[S_OVF]) + k // ECNT_MAX + 1
        if need > self.ovf.shape[0]:  # (rare: doubled, not reserved as address space like the rest)
            ovf = np.zeros(max(2 * self.ovf.shape[0], need), np.int64)
            ovf[: int(S[S_OVF])] = self.ovf[: int(S[S_OVF])]
            self.ovf = ovf

    def graph(self, n: int, S: np.ndarray):
        """(n, the first edge of each state (n + 1), the edges' targets); the
        counts are gone after."""
        ofs = np.empty(n + 1, np.int32)
        _offsets_of(self.cnt, self.ovf, n, ofs)
        self.cnt = self.ovf = None
        return n, ofs, self.dst[: int(S[S_NP])]


@njit(cache=True)
def _offsets_of(cnt, ovf, n, ofs):
    """ofs[i]: the first edge of state i, from the counts."""
    ofs[0] = 0
    k = 0
    for i in range(n):
        c = np.int64(cnt[i])
        if c == ECNT_MAX:
            c = ovf[k]
            k += 1
        ofs[i + 1] = ofs[i] + c


# ---------------------------------------------------------------- the search


class _Expanded:
    """The successors of one chunk of frontier rows, ready to walk: rows,
    the row each comes from, fingerprints, flags, the first successor of
    each row (`pofs`) and the done flag of each row."""

    __slots__ = ("succ", "parent", "fps", "flags", "pofs", "pdone")

    def __init__(self, res, pdone) -> None:
        succ, parent, _, fps, flags = res
        self.succ, self.parent, self.fps, self.flags, self.pdone = succ, parent, fps, flags, pdone
        self.pofs = np.empty(pdone.shape[0] + 1, np.int64)
        _offsets(parent, pdone.shape[0], self.pofs)


def _unpack(block, c0: int, c1: int, buf: np.ndarray | None):
    """Rows c0..c1 of a block as int64, and the buffer they went into
    (`buf`, or a new one of the chunk's size where it is missing or too
    small: wide rows make it a large one, 1.5 MB for 1,024 rows of 183
    columns)."""
    if buf is None or buf.shape[1] != block.width or buf.shape[0] < c1 - c0:
        buf = np.empty((c1 - c0, block.width), np.int64)
    return block.rows(c0, c1, buf), buf


def _pack_new(x: _Expanded, newidx: np.ndarray, raw: np.ndarray | None, arena: Arena):
    """The block of the next level made of the new successors of a chunk
    (kept as they are, in the arena's rows `raw`, when given and when they
    fit its type; packed otherwise, and the arena told, and compressed too
    in a large level)."""
    rows = Raw.fit(x.succ, newidx, raw) if raw is not None else None
    if rows is None:
        if raw is not None:
            arena.widen(x.succ[newidx])
        rows = pack_rows(x.succ, newidx, arena.like)
        if rows.const is not getattr(arena.like, "const", None):  # a layout of its own: the next blocks' (`like`)
            arena.like = rows.layout()
        if arena.compresses(rows):
            rows.compress()
    done = (x.flags[newidx] & DONE).astype(np.int8)
    return rows, done


def _local(m):
    def expand(items):
        buf = None  # the chunk's rows, unpacked (read only by the expansion)
        for meta, pieces in items:
            rows, buf, pdone = _unpack_pieces(pieces, buf)
            yield meta, _Expanded(m.array_expand(rows), pdone)
    return expand


def _unpack_pieces(pieces, buf: np.ndarray | None):
    """A chunk's rows as int64 (its pieces, (block, first, end, done
    flags), one after the other), the buffer they went into, and their
    done flags."""
    if len(pieces) == 1:
        block, c0, c1, pdone = pieces[0]
        rows, buf = _unpack(block, c0, c1, buf)
        return rows, buf, pdone
    n = sum(c1 - c0 for _, c0, c1, _ in pieces)
    width = pieces[0][0].width
    if buf is None or buf.shape[1] != width or buf.shape[0] < n:
        buf = np.empty((n, width), np.int64)
    at = 0
    for block, c0, c1, _ in pieces:
        got = block.rows(c0, c1, buf[at:])
        if not np.may_share_memory(got, buf):  # (a view of rows kept as int64: copied in)
            buf[at: at + c1 - c0] = got
        at += c1 - c0
    return buf[:n], buf, np.concatenate([d for *_, d in pieces])


def _procs(pool):
    def expand(items):
        def plain():
            for meta, pieces in items:
                rows = [block.rows(c0, c1) for block, c0, c1, _ in pieces]
                pdone = [d for *_, d in pieces]
                yield ((meta, pdone[0] if len(pieces) == 1 else np.concatenate(pdone)),
                       rows[0] if len(rows) == 1 else np.concatenate(rows))
        for (meta, pdone), res in pool.expand(plain()):
            yield meta, _Expanded(res, pdone)
    return expand


def array_check(m: Any, factory: Any, s: Settings) -> Result:
    """The sequential BFS's results, over the model's rows, expanded in
    this process."""
    gc_was = gc.isenabled()
    gc.disable()  # no Python object per state: nothing for the collector but pauses
    try:
        return _array_check(m, s, _local(m), MemoryGuard(s.memory_limit))
    finally:
        if gc_was:
            gc.enable()


def array_check_on_processes(m: Any, factory: Any, s: Settings) -> Result:
    """`array_check` with the chunks expanded by `s.workers` worker
    processes (arrays/workers.py; a model that offers its rows on threads
    is walked by arrays/walkers.py instead)."""
    from explorer.strategies.arrays.workers import Expanders

    pool = Expanders(factory, s.workers, s.time_limit, s.clock())
    try:
        r = _array_check(m, s, _procs(pool), MemoryGuard(s.memory_limit))
    finally:
        pool.close()
    r.stats.workers = s.workers
    return r


def chunk_rows(cap: int, gen: int, rows: int, width: int, stored: int) -> int:
    """Rows a chunk of the next level has: `cap`, or fewer where the level
    just walked gave many successors a row (`gen` successors of `rows`
    rows): the model's buffers for a chunk's successors (`width` int64
    columns each) grow to the largest chunk's and stay that size, so a
    chunk should give no more successors than SUCC_CHUNK or, in a larger
    run, than about 1 byte of buffer per state `stored` (fewer rows a
    chunk also means smaller packed blocks, each with a header)."""
    succ = max(SUCC_CHUNK, stored // (8 * max(width, 1)))
    if rows <= 0 or gen * cap <= succ * rows:
        return cap
    return max(min(cap, 16), succ * rows // gen)


def complete(m: Any, final: Callable[[], Stats], cuts: list, stored: Callable[[int], bool], max_depth: int | None,
             graph: Callable | None, fps_of: Callable, chain: Callable, *, fair: FairRecord | None = None,
             livelock: bool = True, check: Callable[[], None] | None = None) -> Result:
    """The verdict of a search that ran out of states: "bound" if a state
    the depth bound cut was never reached within it (`stored(fp)` false);
    else the livelock pass over `graph()` (None: no non-progress edge),
    (states, first edge of each, edges' targets); `fps_of(ids)`: their
    fingerprints, for the lasso. `final()`: the statistics. With `fair`
    (a model that declares FAIR), `graph()` has every edge: the livelock
    pass (when `livelock`) keeps the non-progress ones, then a starved
    subject is looked for (explorer/graph/fair.py), cut by `check()` (the
    run's limits: it raises LimitReached)."""
    for c in cuts:
        for fp in c.tolist():
            if not stored(fp):
                return bounded(final(), "max_depth", max_depth)
    if fair is not None:
        n, ofs, dst = graph()
        if livelock:
            r = _livelock(m, final, *fair.livelock_graph(n, ofs, dst), fps_of, chain)
            if r is not None:
                return r
        lasso = fair_lasso(n, ofs, dst, fair.cls[: fair.nedges], fair.wait[:n], m.fair_strong, check)
        if lasso is None:
            return fair_pass(m, passed(final()), fair.wait[:n])
        fps = fps_of(np.array([lasso.entry] + lasso.cycle, np.int64))
        return fair_result(m, chain, lasso, fps, final())
    if graph is not None:
        r = _livelock(m, final, *graph(), fps_of, chain)
        if r is not None:
            return r
    return passed(final())


def _livelock(m, final, n, ofs, dst, fps_of, chain) -> Result | None:
    """The livelock pass over the non-progress edges; None: no livelock."""
    comp, left = _acyclic_part(n, ofs, dst)
    entry = _scc(n, ofs, dst, comp) if left else -1
    if entry < 0:
        return None
    fps = fps_of(np.array([entry] + list(_cycle(n, ofs, dst, comp, entry)), np.int64))
    return livelock_result(m, chain, fps[0], fps[1:], final())


def _taken(level: list):
    """A level's (block, done flags) in order, each dropped from the list
    as it is taken."""
    level.reverse()
    while level:
        yield level.pop()


def _chunks(level, size: int = CHUNK, blocks=None):
    """The chunks of a level (blocks of (rows, done flags); or `blocks`, an
    iterator of them: the disk mode's, reading spilled ones back), of
    `size` rows at most, a chunk taking rows of the next blocks where a
    block ends before it is full (a level's blocks are the new states of
    the last level's chunks: small ones where that level gave few, and
    each chunk costs a few calls): ((position in the level, rows in the
    chunk), pieces (block, first, end, done flags)); each block is freed
    once its chunks are handed out."""
    pos = 0
    pieces: list = []
    n = 0
    for block, bdone in (_taken(level) if blocks is None else blocks):
        c0 = 0
        while c0 < block.n:
            c1 = min(c0 + size - n, block.n)
            pieces.append((block, c0, c1, bdone[c0:c1]))
            n += c1 - c0
            c0 = c1
            if n == size:
                yield (pos, n), pieces
                pos += n
                pieces, n = [], 0
        del block, bdone
    if pieces:
        yield (pos, n), pieces


def _array_check(m, s: Settings, expand, memory) -> Result:
    max_states, max_depth, time_limit = s.max_states, s.max_depth, s.time_limit
    check_deadlock, check_livelock = s.check_deadlock, s.check_livelock
    st = _Store(m)
    S = np.zeros(NS, np.int64)
    ms = -1 if max_states is None else max_states
    md = -1 if max_depth is None else max_depth
    watch = Watch(s, memory, S)
    t0, final = watch.t0, watch.final

    def limits() -> None:  # the analyses after the search are cut by the same limits
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            raise LimitReached("time_limit", time_limit)
        if memory.over():
            raise LimitReached("memory", mib(memory.limit))

    queue_now = 0  # the queue at the last chunk, for an interrupt
    arena = Arena(RAW_LEVEL, np.int8)  # rows as int8 while their values allow
    try:
        rows, fps, flags = m.array_initial()
        st.init_rows, st.init_fps = np.array(rows, np.int64), np.array(fps, np.uint64)
        first = []
        st.reserve(0, len(fps))
        for i in range(len(fps)):
            S[S_GEN] += 1
            sid, p, slot = _find(st.tab, st.R, st.sz, st.fp, np.uint64(fps[i]))
            if sid >= 0:
                continue
            if ms >= 0 and S[S_N] >= ms:
                return bounded(final(len(first)), "max_states", max_states)
            nid = int(S[S_N])
            st.fp[nid], st.parent[nid] = fps[i], -1
            st.tab[slot] = nid + 1
            st.cnt[p] += 1
            S[S_N] += 1
            if flags[i] & CHECK:
                bad = m.invariants(m.array_state(rows[i]))
                if bad:
                    return violation(m, st.chain, int(fps[i]), bad[0][0], bad[0][1], final(len(first)))
            first.append(i)
        level = [(Packed(np.asarray(rows, np.int64)[first]),
                  (np.asarray(flags, np.int64)[first] & DONE).astype(np.int8))] if first else []
        level_id0 = 0  # ids of a level are consecutive
        depth = 0
        cuts: list[np.ndarray] = []
        fair = FairRecord() if has(m, FAIR) else None  # every edge, its class, each state's waiting subjects
        livelock = bool(check_livelock) or fair is not None
        edges = Edges(livelock)
        if fair is not None and first:
            fair.states(0, m.array_waiting(np.asarray(rows, np.int64)[first]))
        newidx = np.zeros(CHUNK, np.int64)
        cut = np.zeros(CHUNK, np.uint64)
        size, width = CHUNK, 1  # rows a chunk of the level has; the rows' width
        while level:
            gen0 = int(S[S_GEN])
            nxt: list = []
            nlevel = sum(b[0].n for b in level)
            next_count = 0
            arena.next_level()  # the next level's unpacked rows (at most RAW_LEVEL bytes)
            for (pos, nrows), x in expand(_chunks(level, size)):
                queue_now = nlevel - pos + next_count
                end = watch.chunk(queue_now)
                if end is not None:
                    return end
                k = x.fps.shape[0]
                n = int(S[S_N])
                width = x.succ.shape[1]
                st.reserve(n, k)
                if livelock:
                    edges.reserve(S, level_id0 + pos + nrows, k)
                if newidx.shape[0] < k:
                    newidx = np.zeros(2 * k, np.int64)
                    cut = np.zeros(2 * k, np.uint64)
                S[S_NEW] = 0
                S[S_CUT] = 0
                if n >= TOUCH_FROM:
                    _touch(x.fps, (st.tab, st.R, st.sz, st.fp), NO_ORDER, 0, x.fps.shape[0], st.shift)
                j, i = 0, 0
                wflags = x.flags if fair is None else fair.walk_flags(x.flags)
                while True:
                    status, j, i = _walk(j, i, (nrows, x.pofs, x.fps, wflags, level_id0 + pos, depth, x.pdone),
                                         (st.tab, st.R, st.sz, st.cnt, st.fp, st.parent), S,
                                         (newidx, edges.cnt, edges.ovf, edges.dst, cut),
                                         (ms, md, livelock, check_deadlock), (False, NO_DNEW, NO_DTGT, NO_WK, 1))
                    pending = (nlevel - pos - j - 1) + next_count + int(S[S_NEW])
                    if status == ST_DONE:
                        break
                    if status == ST_ROOM:
                        st.relayout()
                        continue
                    if status == ST_DEADLOCK:
                        fp = int(st.fp[level_id0 + pos + j])
                        return deadlock(m, st.chain, fp, final(pending))
                    if status == ST_MAXSTATES:
                        return bounded(final(pending), "max_states", max_states)
                    # ST_CHECK: the state just stored (successor i - 1)
                    bad = m.invariants(m.array_state(np.asarray(x.succ[i - 1], np.int64)))
                    if bad:
                        fp = int(x.fps[i - 1])
                        return violation(m, st.chain, fp, bad[0][0], bad[0][1], final(pending - 1))
                nnew = int(S[S_NEW])
                if fair is not None:
                    fair.edges(x.flags, x.fps, cut[: int(S[S_CUT])])
                    if nnew:
                        fair.states(n, m.array_waiting(x.succ[newidx[:nnew]]))
                if nnew:
                    nxt.append(_pack_new(x, newidx[:nnew], arena.take(nnew, x.succ.shape[1]), arena))
                next_count += nnew
                del x
                watch.chunk_done(cut, cuts, arena, pos + nrows)
            size = chunk_rows(CHUNK, int(S[S_GEN]) - gen0, nlevel, width, int(S[S_N]))
            level_id0 += nlevel
            depth += 1
            level = nxt
            _trim()
            if s.disk_at is not None and level and rss() > s.disk_at:  # on in the disk mode
                from explorer.strategies.arrays.disk import Start, moved_to_disk

                return moved_to_disk(m, s, st, Start(S, level, next_count, level_id0, depth, cuts, size,
                                                     edges=edges if livelock else None, fair=fair), expand)
        def graph():  # the non-progress edges, the table's room handed back first
            n = int(S[S_N])
            st.drop_table(n)
            _trim()
            return edges.graph(n, S)

        return complete(m, lambda: final(0), cuts, lambda fp: st.id_of(fp) >= 0, max_depth,
                        graph if livelock and (S[S_NP] or fair is not None) else None,
                        lambda ids: [int(st.fp[x]) for x in ids], st.chain, fair=fair, livelock=bool(check_livelock),
                        check=limits)
    except STOPS as e:  # SIGINT/SIGTERM, tables that could not grow, a limit inside an expansion, a worker lost
        return watch.stopped(e, queue_now)
