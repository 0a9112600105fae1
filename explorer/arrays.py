"""BFS over packed rows: the engine for models that offer the array
protocol (see `explorer/model.py`), with the very semantics of the
sequential BFS in `search.py` (same verdict, counts, queue figure and
shortest trace), at a fraction of its cost per state.

Store: per state id (dense, in discovery order) its 64-bit fingerprint,
parent id and action index, and an open-addressing table of ids (numpy,
grown by doubling, at most 70 % full): 16 bytes a state plus 6-11 for the
table, no Python object per state. Rows are kept only for the current and
the next BFS level, each at the narrowest integer width its values allow.
The successors of a chunk of frontier rows come from one call of the model;
`_process` (numba) walks them in (parent, action) order, exactly as the
sequential loop would, and returns to Python only at an event: a state whose
invariants must be checked, a deadlock, a limit. Non-progress edges are kept
as two id arrays; the livelock pass is a compiled strongly-connected-
components search over them."""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

import numpy as np
from numba import njit

from .arrays_narrow import Packed
from .memory import MemoryGuard, mib
from .outcome import bounded, deadlock, interrupted, livelock_result, passed, violation
from .result import Result, Stats

__all__ = ["ArrayFallback", "CHECK", "DONE", "PROGRESS", "array_check"]

CHECK, DONE, PROGRESS = 1, 2, 4  # per successor: check its invariants; it is done; its edge is progress
ST_DONE, ST_CHECK, ST_DEADLOCK, ST_MAXSTATES = 0, 1, 2, 3
# counters in S
S_N, S_GEN, S_MAXD, S_NP, S_CUT, S_NEW = range(6)
CHUNK = 4096


class ArrayFallback(Exception):
    """The model cannot go on with rows (e.g. a row must grow): the caller
    runs the sequential engine instead."""


# ---------------------------------------------------------------- the table


@njit(cache=True, nogil=True)
def _find(tab, fparr, fp):
    """(id or -1, slot): the table holds ids (-1: empty), compared through
    their fingerprints (4 bytes a slot)."""
    mask = np.uint64(tab.shape[0] - 1)
    j = fp & mask
    while True:
        i = tab[j]
        if i < 0:
            return -1, j
        if fparr[i] == fp:
            return i, j
        j = (j + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def _rehash(tab, fparr, n, size):
    nt = np.full(size, -1, np.int32)
    mask = np.uint64(size - 1)
    for i in range(n):
        k = fparr[i] & mask
        while nt[k] >= 0:
            k = (k + np.uint64(1)) & mask
        nt[k] = i
    return nt


@njit(cache=True, nogil=True)
def _insert_at(tab, slot, i):
    tab[slot] = i


# ---------------------------------------------------------------- the walk


@njit(cache=True, nogil=True)
def _process(j0, i0, nrows, pofs, fps, flags, acts, pid0, pdepth, pdone, tab, S, fparr, parents, actions,
             newidx, np_src, np_dst, cut, max_states, max_depth, livelock, deadlock_check):
    """Walk successors from parent j0, successor i0; returns (status, j, i)."""
    for j in range(j0, nrows):
        a = pofs[j]
        b = pofs[j + 1]
        start = i0 if j == j0 else a
        if a == b and start == a:
            if deadlock_check and pdone[j] == 0:
                return ST_DEADLOCK, j, a
            continue
        for i in range(start, b):
            S[S_GEN] += 1
            fp = fps[i]
            sid, slot = _find(tab, fparr, fp)
            src = pid0 + j
            if sid >= 0:
                if livelock and (flags[i] & PROGRESS) == 0:
                    np_src[S[S_NP]] = src
                    np_dst[S[S_NP]] = sid
                    S[S_NP] += 1
                continue
            if max_depth >= 0 and pdepth >= max_depth:
                cut[S[S_CUT]] = fp
                S[S_CUT] += 1
                continue
            if max_states >= 0 and S[S_N] >= max_states:
                return ST_MAXSTATES, j, i
            nid = S[S_N]
            fparr[nid] = fp
            _insert_at(tab, slot, nid)
            S[S_N] = nid + 1
            parents[nid] = src
            actions[nid] = acts[i]
            if pdepth + 1 > S[S_MAXD]:
                S[S_MAXD] = pdepth + 1
            newidx[S[S_NEW]] = i
            S[S_NEW] += 1
            if livelock and (flags[i] & PROGRESS) == 0:
                np_src[S[S_NP]] = src
                np_dst[S[S_NP]] = nid
                S[S_NP] += 1
            if flags[i] & CHECK:
                return ST_CHECK, j, i + 1
    return ST_DONE, nrows, 0


# ---------------------------------------------------------------- livelock


@njit(cache=True, nogil=True)
def _scc(n, ofs, dst):
    """Tarjan's algorithm, iteratively: the component of every node."""
    # int32 throughout: this pass runs over every stored state, at the end
    index = np.full(n, -1, np.int32)
    low = np.zeros(n, np.int32)
    onst = np.zeros(n, np.bool_)
    comp = np.full(n, -1, np.int32)
    stack = np.empty(n, np.int32)
    cs_node = np.empty(n, np.int32)
    cs_edge = np.empty(n, np.int32)
    sp = 0
    nxt = 0
    nc = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        d = 0
        cs_node[0] = root
        cs_edge[0] = ofs[root]
        index[root] = nxt
        low[root] = nxt
        nxt += 1
        stack[sp] = root
        sp += 1
        onst[root] = True
        while d >= 0:
            v = cs_node[d]
            e = cs_edge[d]
            if e < ofs[v + 1]:
                cs_edge[d] = e + 1
                u = dst[e]
                if index[u] < 0:
                    index[u] = nxt
                    low[u] = nxt
                    nxt += 1
                    stack[sp] = u
                    sp += 1
                    onst[u] = True
                    d += 1
                    cs_node[d] = u
                    cs_edge[d] = ofs[u]
                elif onst[u] and index[u] < low[v]:
                    low[v] = index[u]
            else:
                if low[v] == index[v]:
                    while True:
                        sp -= 1
                        x = stack[sp]
                        onst[x] = False
                        comp[x] = nc
                        if x == v:
                            break
                    nc += 1
                d -= 1
                if d >= 0:
                    p = cs_node[d]
                    if low[v] < low[p]:
                        low[p] = low[v]
    return comp, nc


@njit(cache=True, nogil=True)
def _first_cyclic(n, ofs, dst, comp, nc):
    """The smallest id on a cycle (a component of 2+ nodes or a self-loop)."""
    size = np.zeros(nc, np.int32)
    for v in range(n):
        size[comp[v]] += 1
    for v in range(n):
        if size[comp[v]] > 1:
            return v
        for e in range(ofs[v], ofs[v + 1]):
            if dst[e] == v:
                return v
    return -1


@njit(cache=True, nogil=True)
def _cycle(n, ofs, dst, comp, entry):
    """A shortest cycle entry -> ... -> entry inside entry's component,
    successors scanned in recorded order: the ids after entry, ending with
    entry."""
    par = np.full(n, -1, np.int32)
    seen = np.zeros(n, np.bool_)
    q = np.empty(n, np.int32)
    qh = 0
    qt = 1
    q[0] = entry
    seen[entry] = True
    while qh < qt:
        u = q[qh]
        qh += 1
        for e in range(ofs[u], ofs[u + 1]):
            v = dst[e]
            if v == entry:
                path = [entry]
                while u != entry:
                    path.append(u)
                    u = par[u]
                out = np.empty(len(path), np.int64)
                for i in range(len(path)):
                    out[i] = path[len(path) - 1 - i]
                return out
            if comp[v] == comp[entry] and not seen[v]:
                seen[v] = True
                par[v] = u
                q[qt] = v
                qt += 1
    return np.empty(0, np.int64)


# ---------------------------------------------------------------- the search


class _Store:
    """Per stored state: fingerprint (8 bytes), parent id and action index
    (4 each); the table: an id per slot (4 bytes), at most 70 % full. Depth
    is not stored: BFS gives ids level by level."""

    def __init__(self) -> None:
        self.cap = 1 << 16
        self.tab = np.full(1 << 17, -1, np.int32)
        self.fp = np.zeros(self.cap, np.uint64)
        self.parent = np.zeros(self.cap, np.int32)
        self.action = np.zeros(self.cap, np.int32)

    def reserve(self, n: int, more: int) -> None:
        """Room for `more` states beyond the n stored."""
        while n + more > self.cap:
            self.cap *= 2
            for name in ("fp", "parent", "action"):
                a = getattr(self, name)
                b = np.zeros(self.cap, a.dtype)
                b[: a.shape[0]] = a
                setattr(self, name, b)
        size = self.tab.shape[0]
        while 10 * (n + more) > 7 * size:
            size *= 2
        if size != self.tab.shape[0]:
            self.tab = _rehash(self.tab, self.fp, n, size)

    def nbytes(self) -> int:
        return self.tab.nbytes + self.fp.nbytes + self.parent.nbytes + self.action.nbytes

    def id_of(self, fp: int) -> int:
        i, _ = _find(self.tab, self.fp, np.uint64(fp))
        return int(i)

    def chain(self, fp: int) -> list[tuple[int, int]]:
        i = self.id_of(fp)
        out = []
        while i >= 0:
            out.append((int(self.fp[i]), int(self.action[i])))
            i = int(self.parent[i])
        out.reverse()
        return out


def _threaded(m, workers, memory, *args) -> Result:
    """Chunks expanded by `workers` threads, each with the model's own
    expander (`array_expander`: buffers of its own; the expansion must not
    hold the GIL to run in parallel), walked in order by this thread."""
    from concurrent.futures import ThreadPoolExecutor

    expanders = [m.array_expander() for _ in range(workers)]
    pool = ThreadPoolExecutor(workers)

    def expand(items):
        pending = []
        it = iter(items)
        free = list(range(workers))

        def submit():
            item = next(it, None)
            if item is None:
                return False
            k = free.pop()
            pending.append((item, k, pool.submit(_copy_of, expanders[k], item[1])))
            return True

        while free and submit():
            pass
        while pending:
            (meta, rows), k, fut = pending.pop(0)
            res = fut.result()
            free.append(k)
            submit()
            yield meta, rows, res

    gc_was = gc.isenabled()
    gc.disable()
    try:
        r = _array_check(m, *args, expand, memory)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if gc_was:
            gc.enable()
    r.stats.workers = workers
    return r


def _copy_of(expand, rows):
    """The expander's result, copied out of its buffers (it runs again
    while this one is walked)."""
    succ, parent, action, fps, flags = expand(rows)
    return succ.copy(), parent.copy(), action.copy(), fps.copy(), flags.copy()


def _local(m):
    def expand(items):
        for meta, rows in items:
            yield meta, rows, m.array_expand(rows)
    return expand


def array_check(m: Any, max_states: int | None, max_depth: int | None, time_limit: float | None,
                check_deadlock: bool, check_livelock: bool, progress: Callable | None,
                progress_interval: float, factory: Any = None, workers: int = 1,
                memory_limit: int | None = None) -> Result:
    """The sequential BFS's results, over the model's rows; with workers > 1
    the chunks are expanded by worker processes (array_workers.py)."""
    if workers > 1 and hasattr(m, "array_expander"):
        return _threaded(m, workers, MemoryGuard(memory_limit), max_states, max_depth, time_limit,
                         check_deadlock, check_livelock, progress, progress_interval)
    if workers > 1:
        from .array_workers import Expanders

        pool = Expanders(factory, workers)
        try:
            r = _array_check(m, max_states, max_depth, time_limit, check_deadlock, check_livelock, progress,
                             progress_interval, pool.expand, MemoryGuard(memory_limit))
        finally:
            pool.close()
        r.stats.workers = workers
        return r
    gc_was = gc.isenabled()
    gc.disable()  # no Python object per state: nothing for the collector but pauses
    try:
        return _array_check(m, max_states, max_depth, time_limit, check_deadlock, check_livelock, progress,
                            progress_interval, _local(m), MemoryGuard(memory_limit))
    finally:
        if gc_was:
            gc.enable()


def _array_check(m, max_states, max_depth, time_limit, check_deadlock, check_livelock, progress,
                 progress_interval, expand, memory) -> Result:
    t0 = time.perf_counter()
    stats = Stats(strategy="bfs")
    st = _Store()
    S = np.zeros(6, np.int64)
    ms = -1 if max_states is None else max_states
    md = -1 if max_depth is None else max_depth
    next_report = t0 + progress_interval

    def final(pending: int) -> Stats:
        stats.generated, stats.distinct, stats.max_depth = int(S[S_GEN]), int(S[S_N]), int(S[S_MAXD])
        stats.queue, stats.elapsed = pending, time.perf_counter() - t0
        return stats

    queue_now = 0  # the queue at the last chunk, for an interrupt
    try:
        rows, fps, flags = m.array_initial()
        level_rows, level_flags, level_ids = [], [], []
        st.reserve(0, len(fps))
        for i in range(len(fps)):
            S[S_GEN] += 1
            sid, slot = _find(st.tab, st.fp, np.uint64(fps[i]))
            if sid >= 0:
                continue
            if ms >= 0 and S[S_N] >= ms:
                return bounded(final(len(level_ids)), "max_states", max_states)
            nid = int(S[S_N])
            st.fp[nid], st.parent[nid], st.action[nid] = fps[i], -1, i
            _insert_at(st.tab, slot, nid)
            S[S_N] += 1
            if flags[i] & CHECK:
                bad = m.invariants(m.array_state(rows[i]))
                if bad:
                    return violation(m, st.chain, int(fps[i]), bad[0][0], bad[0][1], final(len(level_ids)))
            level_rows.append(rows[i])
            level_flags.append(flags[i])
            level_ids.append(nid)
        # a level: blocks of (rows, done flags), consumed (and freed) as expanded
        cur = [(Packed(np.array(level_rows)), (np.array(level_flags, np.int64) & DONE).astype(np.int8))] if level_rows else []
        cur_id0 = 0  # ids of a level are consecutive
        depth = 0
        cut_all: list[np.ndarray] = []
        np_src = np.zeros(1 << 16, np.int32)
        np_dst = np.zeros(1 << 16, np.int32)
        while cur:
            nxt: list = []
            nlevel = sum(b[0].n for b in cur)
            next_count = 0
            def chunks(cur=cur):
                pos = 0  # index in the level of the chunk's first row
                cur.reverse()
                while cur:
                    block, bdone = cur.pop()
                    for c0 in range(0, block.n, CHUNK):
                        rows = block.rows(c0, min(c0 + CHUNK, block.n))
                        yield (pos, bdone[c0: c0 + rows.shape[0]]), rows
                        pos += rows.shape[0]
                    del block, bdone

            for (pos, pdone), chunk, (succ, parent, sacts, sfps, sflags) in expand(chunks()):
                queue_now = nlevel - pos + next_count
                now = time.perf_counter()
                if time_limit is not None and now - t0 >= time_limit:
                    return bounded(final(nlevel - pos + next_count), "time_limit", time_limit)
                if memory.over():
                    return bounded(final(queue_now), "memory", mib(memory.limit))
                if progress is not None and now >= next_report:
                    next_report = now + progress_interval
                    progress(final(nlevel - pos + next_count).snapshot())
                nrows = chunk.shape[0]
                k = len(sfps)
                pofs = np.searchsorted(parent, np.arange(nrows + 1)).astype(np.int64)
                st.reserve(int(S[S_N]), k)
                if check_livelock and int(S[S_NP]) + k > np_src.shape[0]:
                    size = np_src.shape[0]
                    while int(S[S_NP]) + k > size:
                        size *= 2
                    np_src = np.concatenate([np_src, np.zeros(size - np_src.shape[0], np.int32)])
                    np_dst = np.concatenate([np_dst, np.zeros(size - np_dst.shape[0], np.int32)])
                newidx = np.zeros(max(k, 1), np.int64)
                cut = np.zeros(max(k, 1), np.uint64)
                S[S_NEW] = 0
                S[S_CUT] = 0
                j, i = 0, 0
                while True:
                    status, j, i = _process(j, i, nrows, pofs, sfps, sflags, sacts, cur_id0 + pos, depth,
                                            pdone, st.tab, S, st.fp, st.parent,
                                            st.action, newidx, np_src, np_dst, cut, ms, md,
                                            check_livelock, check_deadlock)
                    pending = (nlevel - pos - j - 1) + next_count + int(S[S_NEW])
                    if status == ST_DONE:
                        break
                    if status == ST_DEADLOCK:
                        fp = int(st.fp[cur_id0 + pos + j])
                        return deadlock(m, st.chain, fp, final(pending))
                    if status == ST_MAXSTATES:
                        return bounded(final(pending), "max_states", max_states)
                    # ST_CHECK: the state just stored (successor i - 1)
                    bad = m.invariants(m.array_state(np.asarray(succ[i - 1], np.int64)))
                    if bad:
                        fp = int(sfps[i - 1])
                        return violation(m, st.chain, fp, bad[0][0], bad[0][1], final(pending - 1))
                nnew = int(S[S_NEW])
                if nnew:
                    nxt.append((Packed(succ[newidx[:nnew]]), (sflags[newidx[:nnew]] & DONE).astype(np.int8)))
                next_count += nnew
                if S[S_CUT]:
                    cut_all.append(cut[: int(S[S_CUT])].copy())
            cur_id0 += nlevel
            depth += 1
            cur = nxt
        stats = final(0)
        for cut in cut_all:
            for fp in cut.tolist():
                if st.id_of(fp) < 0:
                    return bounded(stats, "max_depth", max_depth)
        if check_livelock and S[S_NP]:
            n = int(S[S_N])
            e = int(S[S_NP])
            src, dst = np_src[:e], np_dst[:e]  # grouped by source already (sources in id order)
            ofs = np.searchsorted(src, np.arange(n + 1, dtype=np.int32)).astype(np.int32)
            comp, nc = _scc(n, ofs, dst)
            entry = int(_first_cyclic(n, ofs, dst, comp, nc))
            if entry >= 0:
                cycle = _cycle(n, ofs, dst, comp, entry)
                fps_of = st.fp
                stats = final(0)
                return livelock_result(m, st.chain, int(fps_of[entry]), [int(fps_of[x]) for x in cycle], stats)
        return passed(final(0))
    except KeyboardInterrupt as e:  # SIGINT/SIGTERM: S holds the counts of every state walked so far
        return interrupted(final(queue_now), e)
    except MemoryError:  # the tables could not grow: what was stored so far
        return bounded(final(queue_now), "memory", "MemoryError")
