"""The array engine's disk mode (`Settings.disk`, `serq explore --disk
DIR`): the BFS of `arrays/engine.py`, with the same distinct states, ids,
counts, verdicts and shortest counterexamples, holding about 10 bytes of
RAM a stored state instead of about 20: the hash table holds the
fingerprints themselves, and the parent links, the states' fingerprints
by id and the large levels' rows are on disk (`arrays/diskstore.py`;
docs/notes/disk-mode.md: the design, after TLC's).

A level is walked chunk by chunk as in `engine._array_check`: `_dwalk`
(numba) looks each successor up in (parent, action) order and stores the
new ones; Python then appends their records (fingerprint, parent id) to
the trace and packs their rows into the next level. With the livelock
check, the walk also gives each row's non-progress edges (their targets'
fingerprints), which go to files (`arrays/diskgraph.py`), to be made
into the in-memory engine's graph, with its ids, once the search is
over: the same livelock pass, the same lasso. With liveness under
fairness (`check eventually`, a model that declares FAIR) every edge goes
to those files, with its fairness class and each state's waiting
subjects (`diskgraph.FairFiles`), and the fair pass of the in-memory
engine runs over them once the search is over: the same starved subject,
the same lasso."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from explorer.model import CHECK, DONE, FAIR, PROGRESS, has
from explorer.graph.cycles import _acyclic_part, _cycle_within, _scc
from explorer.outcome import bounded, deadlock, livelock_result, passed, violation
from explorer.result import Result
from explorer.runtime import compiled
from explorer.runtime.limits import LimitReached
from explorer.runtime.memory import MemoryGuard, _trim, mib
from explorer.settings import Settings
from explorer.strategies.arrays.diskstore import (LOAD_DEN, LOAD_NUM, FpTable, Spilled, Trace, _ffind, _fgrow, _fnext,
                                                  _ftouch)
from explorer.strategies.arrays.diskgraph import EdgeFiles, FairFiles, nonprogress
from explorer.strategies.arrays.fairrec import FairRecord
from explorer.strategies.arrays.table import TOUCH_FROM
from explorer.strategies.arrays.watch import STOPS
from explorer.strategies.arrays.engine import (CHUNK, ECNT_MAX, NS, RAW_LEVEL, S_CUT, S_GEN, S_MAXD, S_N, S_NEW, S_NP,
                                               S_SUB,
                                               ST_CHECK, ST_DEADLOCK, ST_DONE, ST_MAXSTATES, ST_ROOM,
                                               Watch, _chunks, _local, _pack_new, chunk_rows, complete)
from explorer.strategies.arrays.narrow import Arena, Packed

__all__ = ["disk_check", "moved_to_disk", "Start", "refusal", "SPILL_FROM"]


def _compiled_table() -> list:
    """The disk mode's compiled functions called from Python, with their
    argument types (explorer/runtime/compiled.py): a table of their own,
    loaded when the disk mode begins (`disk_check`) or a search moves to
    it (`moved_to_disk`, with half the memory bound still free), so that
    searches that never use it do not load it."""
    from numba import types as nt

    def a(dt):
        return nt.Array(dt, 1, "C")

    i8, i32, i64, u64, b1, T = nt.int8, nt.int32, nt.int64, nt.uint64, nt.boolean, nt.Tuple
    d, st, g = "explorer.strategies.arrays.disk", "explorer.strategies.arrays.diskstore", \
        "explorer.strategies.arrays.diskgraph"
    rows = [
        (d, "_dwalk", [(i64, i64, T((i64, a(i64), a(u64), a(i64), i64, a(i8))),
                        T((a(u64), i64, a(i64), a(i64), a(i64), i64)), a(i64), T((a(i64), a(u64), a(i32), a(u64))),
                        T((i64, i64, b1, b1)))]),
        (st, "_ffind", [(a(u64), i64, a(i64), u64, i64)]),
        (st, "_finsert", [(a(u64), i64, a(i64), a(i64), a(i64), u64, i64)]),
        (st, "_finsert_all", [(a(u64), i64, a(i64), a(i64), a(i64), a(u64), i64, i64)]),
        (st, "_ftouch", [(a(u64), a(u64), i64, a(i64), i64)]),
        (g, "_by_bucket", [(a(u64), i64, u64, a(u64), a(i64), a(i64))]),
        (g, "_index", [(a(u64), a(i64), i64, a(u64), a(i64), i64)]),
        (g, "_lookup", [(a(u64), a(i64), i64, a(u64), a(i64), a(i32))]),
        (g, "_nonprogress", [(i64, a(i32), a(i32), a(nt.uint8), a(i32), a(i32))]),
        ("explorer.graph.cycles", "_cycle_within", [(i64, a(i32), a(i32), a(i32), i64)]),
    ]
    return [row + (("disk",),) for row in rows]


compiled.register("explorer disk", _compiled_table, inner=(
    "explorer.strategies.arrays.diskstore._fnext", "explorer.strategies.arrays.diskstore._fgrow"))

# bytes of packed rows a level keeps in RAM; its next blocks are written to disk as they are (deflating them,
# as the in-memory engine does past 32 MiB, would cost more CPU than the writes and reads they save)
SPILL_FROM = 4 << 20
STORED_CAP = 1 << 23  # the chunks' buffers stop growing with the states stored from here on (`chunk_rows`)


def refusal(s: Settings) -> str | None:
    """Why the disk mode cannot honour these settings (None: it can)."""
    return s.disk_refusal()


@njit(cache=True, nogil=True)
def _dwalk(j0, i0, chunk, table, S, out, bounds):
    """`engine._walk` over a table of fingerprints (`diskstore.FpTable`):
    walk successors from parent j0, successor i0; returns (status, j, i).
    `chunk` (nrows, pofs, fps, flags, pdepth, pdone); `table` (tab, R,
    sz, cnt, zero, shift); `out` (newidx, cut, ecnt, etgt): with the
    livelock check, each row's count of non-progress edges (ecnt[j], from
    0) and their targets' fingerprints (etgt, S[S_NP] of them, from 0);
    `bounds` (max_states, max_depth, deadlock_check, livelock)."""
    nrows, pofs, fps, flags, pdepth, pdone = chunk
    tab, R, sz, cnt, zero, shift = table
    newidx, cut, ecnt, etgt = out
    max_states, max_depth, deadlock_check, livelock = bounds
    for j in range(j0, nrows):
        a = pofs[j]
        b = pofs[j + 1]
        start = i0 if j == j0 else a
        if a == b and start == a:
            if deadlock_check and pdone[j] == 0:
                return ST_DEADLOCK, j, a
            continue
        for i in range(start, b):
            fp = fps[i]
            p, slot = -1, -1
            if fp == 0:
                found = zero[0] != 0
            else:
                found, p, slot = _ffind(tab, R, sz, fp, shift)
            S[S_GEN] += 1
            if found:
                if livelock and (flags[i] & PROGRESS) == 0:
                    etgt[S[S_NP]] = fp
                    S[S_NP] += 1
                    ecnt[j] += 1
                continue
            if max_depth >= 0 and pdepth >= max_depth:
                cut[S[S_CUT]] = fp
                S[S_CUT] += 1
                continue
            if max_states >= 0 and S[S_N] >= max_states:
                return ST_MAXSTATES, j, i
            if p < 0:
                zero[0] = 1
            else:
                if LOAD_DEN * (cnt[p] + 1) > LOAD_NUM * sz[p]:
                    if _fnext(sz[p]) > R:
                        S[S_SUB] = p
                        S[S_GEN] -= 1  # walked again once the table is laid out anew
                        return ST_ROOM, j, i
                    _fgrow(tab, R, sz, p)
                    _, p, slot = _ffind(tab, R, sz, fp, shift)
                tab[slot] = fp
                cnt[p] += 1
            S[S_N] += 1
            if pdepth + 1 > S[S_MAXD]:
                S[S_MAXD] = pdepth + 1
            newidx[S[S_NEW]] = i
            S[S_NEW] += 1
            if livelock and (flags[i] & PROGRESS) == 0:
                etgt[S[S_NP]] = fp
                S[S_NP] += 1
                ecnt[j] += 1
            if flags[i] & CHECK:
                return ST_CHECK, j, i + 1
    return ST_DONE, nrows, 0


def _initial(m, S, tb: FpTable, trace: Trace, ms: int, final, fair: FairFiles | None):
    """The initial states stored and their records written (with `fair`,
    their waiting subjects too): the first level's blocks, or the Result
    when the run ends there."""
    rows, fps, flags = m.array_initial()
    trace.init_rows, trace.init_fps = np.array(rows, np.int64), np.array(fps, np.uint64)
    first = []
    for i in range(len(fps)):
        S[S_GEN] += 1
        if tb.has(fps[i]):
            continue
        if ms >= 0 and S[S_N] >= ms:
            return bounded(final(len(first)), "max_states", ms)
        tb.insert(fps[i])
        trace.append(np.array([fps[i]], np.uint64), np.array([-1], np.int64))
        trace.known[int(fps[i])] = int(S[S_N])
        S[S_N] += 1
        if flags[i] & CHECK:
            bad = m.invariants(m.array_state(rows[i]))
            if bad:
                return violation(m, lambda fp: trace.chain(m, fp), int(fps[i]), bad[0][0], bad[0][1],
                                 final(len(first)))
        first.append(i)
    if fair is not None and first:
        fair.states(m.array_waiting(np.asarray(rows, np.int64)[first]))
    return [(Packed(np.asarray(rows, np.int64)[first]),
             (np.asarray(flags, np.int64)[first] & DONE).astype(np.int8))] if first else []


def _blocks(level: list):
    """A level's (block, done flags) in order, a spilled one read back
    when its turn comes; each freed once its chunks are handed out."""
    level.reverse()
    while level:
        item = level.pop()
        yield item.load() if isinstance(item, Spilled) else item


def disk_check(m: Any, factory: Any, s: Settings) -> Result:
    """`engine.array_check` in the disk mode: the run's files under
    `s.disk`, removed on every way out."""
    why = refusal(s)
    if why is not None:
        raise ValueError(why)
    compiled.load(("disk",))  # (loaded already by check.start: the settings name the disk mode)
    gc_was = gc.isenabled()
    gc.disable()
    trace = Trace(s.disk)
    try:
        return _disk_check(m, s, _local(m), MemoryGuard(s.memory_limit), trace)
    finally:
        trace.close()
        if gc_was:
            gc.enable()


@dataclass
class Start:
    """Where a search the in-memory engine began goes on in the disk mode
    (`moved_to_disk`): at the start of a level, its rows `level` (`nlevel`
    of them, ids from `id0`), `depth`, the counters `S`, the cuts of the
    depth bound and the chunks' size."""

    S: np.ndarray
    level: list
    nlevel: int
    id0: int
    depth: int
    cuts: list
    size: int
    tb: FpTable | None = None
    edges: Any = None  # with the livelock check: the engine's non-progress edges so far (`engine.Edges`)
    fair: Any = None  # with liveness under fairness: the engine's record (`fairrec.FairRecord`; edges: every edge)


def moved_to_disk(m: Any, s: Settings, st: Any, start: Start, expand) -> Result:
    """The in-memory engine's search (its store `st`, `table._Store`) goes
    on in the disk mode from the start of a level: the records of the
    states stored so far written to the trace, their fingerprints put in
    a table of fingerprints, the store freed (the table of ids first:
    the move holds at most 22 bytes a state at once, where the store held
    20); with the livelock check, the edges so far written as the first
    of the edge files (`_moved_edges`), and with liveness under fairness
    their bytes and the states' waiting subjects (`FairFiles.moved`). The verdict's message says so.
    The disk mode's compiled code is loaded here, at the move (the one
    load in the middle of a search: from numba's cache, 13 ms, or
    compiled there once per install), not by every search the memory
    bound might move."""
    compiled.load(("disk",))
    n = int(start.S[S_N])
    trace = Trace(s.disk)
    try:
        trace.init_rows, trace.init_fps = st.init_rows, st.init_fps
        if start.edges is not None:
            start.edges = _moved_edges(EdgeFiles(trace.dir), start.edges, start.id0, int(start.S[S_NP]))
        if start.fair is not None:
            fair, start.fair = start.fair, FairFiles(trace.dir)
            start.fair.moved(fair, n)
            del fair
        st.drop_table(n)
        _trim()
        step = 1 << 20
        for a in range(0, n, step):
            trace.append(st.fp[a: min(n, a + step)], st.parent[a: min(n, a + step)].astype(np.int64))
        start.tb = FpTable()
        start.tb.insert_all(st.fp[:n])
        st.fp = st.parent = None
        _trim()
        r = _disk_check(m, s, expand, MemoryGuard(s.memory_limit), trace, start)
        r.message += f" (moved to the disk mode after {n:,} states, past {mib(s.disk_at)} of memory)"
        return r
    finally:
        trace.close()


def _livelock(m, final, trace: Trace, graph) -> Result | None:
    """`engine._livelock` over the graph made of the edge files: the same
    passes and the same lasso, the cycle searched with arrays the size of
    its component (`cycles._cycle_within`); None: no livelock."""
    n, ofs, dst = graph
    comp, left = _acyclic_part(n, ofs, dst)
    entry = _scc(n, ofs, dst, comp) if left else -1
    if entry < 0:
        return None
    ids = [entry] + [int(v) for v in _cycle_within(n, ofs, dst, comp, entry)]
    del comp
    fps = [int(trace.fp_of(x)) for x in ids]
    trace.known.update(zip(fps, ids))
    return livelock_result(m, lambda fp: trace.chain(m, fp), fps[0], fps[1:], final(0))


def _moved_edges(files: EdgeFiles, edges, id0: int, nedges: int) -> EdgeFiles:
    """The in-memory engine's non-progress edges (`engine.Edges`: a count
    a state in a byte, the larger ones in its overflow, and the targets'
    ids), of the states before id0, written to `files`; the engine's
    arrays freed."""
    counts = np.empty(id0, np.int32)
    k = 0
    for a in range(0, id0, 1 << 22):
        c = edges.cnt[a: min(id0, a + (1 << 22))].astype(np.int32)
        big = np.flatnonzero(c == ECNT_MAX)
        c[big] = edges.ovf[k: k + big.shape[0]]
        k += big.shape[0]
        counts[a: a + c.shape[0]] = c
    files.moved(counts, edges.dst[:nedges])
    edges.cnt = edges.ovf = edges.dst = None
    return files


def _disk_check(m, s: Settings, expand, memory, trace: Trace, start: Start | None = None) -> Result:
    max_states, max_depth = s.max_states, s.max_depth
    check_deadlock = s.check_deadlock
    fair = None  # liveness under fairness: every edge is written, with its class, and the waiting subjects
    if has(m, FAIR):
        fair = start.fair if start is not None and start.fair is not None else FairFiles(trace.dir)
    livelock = bool(s.check_livelock) or fair is not None  # (the walk writes the edges)
    if not livelock:
        edges = None
    elif start is not None and start.edges is not None:
        edges = start.edges
    else:
        edges = EdgeFiles(trace.dir)
    ecnt = np.zeros(CHUNK if livelock else 1, np.int32)  # a chunk's counts of non-progress edges, by row
    etgt = np.zeros(CHUNK if livelock else 1, np.uint64)  # and their targets' fingerprints
    tb = FpTable() if start is None else start.tb
    S = np.zeros(NS, np.int64) if start is None else start.S
    ms = -1 if max_states is None else max_states
    md = -1 if max_depth is None else max_depth
    watch = Watch(s, memory, S)
    final = watch.final
    chain = lambda fp: trace.chain(m, fp)  # noqa: E731

    queue_now = 0
    arena = Arena(RAW_LEVEL, np.int8, compress_from=1 << 62)  # (spilled blocks are not compressed: see SPILL_FROM)
    try:
        if start is None:
            r = _initial(m, S, tb, trace, ms, final, fair)
            if isinstance(r, Result):
                return r
            level, level_n, level_id0, depth, cuts, size = r, sum(b[0].n for b in r), 0, 0, [], CHUNK
        else:
            level, level_n, level_id0, depth, cuts, size = (start.level, start.nlevel, start.id0, start.depth,
                                                            start.cuts, start.size)
            start.level = []
        newidx = np.zeros(CHUNK, np.int64)
        cut = np.zeros(CHUNK, np.uint64)
        width = 1
        while level:
            gen0 = int(S[S_GEN])
            nxt: list = []
            nlevel = level_n
            next_count = 0
            in_ram = 0  # bytes of packed rows of the next level kept in RAM
            arena.next_level()
            for (pos, nrows), x in expand(_chunks(level, size, _blocks(level))):
                queue_now = nlevel - pos + next_count
                end = watch.chunk(queue_now)
                if end is not None:
                    return end
                k = x.fps.shape[0]
                width = x.succ.shape[1]
                if newidx.shape[0] < k:
                    newidx = np.zeros(2 * k, np.int64)
                    cut = np.zeros(2 * k, np.uint64)
                S[S_NEW] = 0
                S[S_CUT] = 0
                if livelock:
                    if etgt.shape[0] < k:
                        etgt = np.zeros(2 * k, np.uint64)
                    if ecnt.shape[0] < nrows:
                        ecnt = np.zeros(2 * nrows, np.int32)
                    ecnt[:nrows] = 0
                    S[S_NP] = 0
                pid0 = level_id0 + pos
                written = 0  # the chunk's new states whose records are written

                def records(upto: int) -> None:
                    nonlocal written
                    if upto > written:
                        idx = newidx[written:upto]
                        trace.append(x.fps[idx], pid0 + x.parent[idx])
                        written = upto

                if int(S[S_N]) >= TOUCH_FROM:
                    _ftouch(x.fps, tb.tab, tb.R, tb.sz, tb.shift)
                j, i = 0, 0
                wflags = x.flags if fair is None else FairRecord.walk_flags(x.flags)  # (fair: every edge written)
                while True:
                    status, j, i = _dwalk(j, i, (nrows, x.pofs, x.fps, wflags, depth, x.pdone), tb.parts(), S,
                                          (newidx, cut, ecnt, etgt), (ms, md, check_deadlock, livelock))
                    pending = (nlevel - pos - j - 1) + next_count + int(S[S_NEW])
                    if status == ST_DONE:
                        break
                    if status == ST_ROOM:
                        tb.relayout()
                        continue
                    if status == ST_DEADLOCK:
                        records(int(S[S_NEW]))
                        fp = int(trace.fp_of(pid0 + j))
                        trace.known[fp] = pid0 + j
                        return deadlock(m, chain, fp, final(pending))
                    if status == ST_MAXSTATES:
                        return bounded(final(pending), "max_states", max_states)
                    bad = m.invariants(m.array_state(np.asarray(x.succ[i - 1], np.int64)))
                    if bad:
                        records(int(S[S_NEW]))
                        fp = int(x.fps[i - 1])
                        trace.known[fp] = int(S[S_N]) - 1
                        return violation(m, chain, fp, bad[0][0], bad[0][1], final(pending - 1))
                nnew = int(S[S_NEW])
                records(nnew)
                if livelock:
                    edges.append(ecnt[:nrows], etgt[: int(S[S_NP])])
                if fair is not None:
                    fair.edges(x.flags, x.fps, cut[: int(S[S_CUT])])
                    if nnew:
                        fair.states(m.array_waiting(x.succ[newidx[:nnew]]))
                if nnew:
                    block, done = _pack_new(x, newidx[:nnew], arena.take(nnew, width), arena)
                    if isinstance(block, Packed) and in_ram + block.nbytes > SPILL_FROM:  # on disk
                        nxt.append(trace.spill(depth + 1, block, done))
                        del block, done
                    else:
                        in_ram += block.nbytes if isinstance(block, Packed) else 0
                        nxt.append((block, done))
                next_count += nnew
                del x
                watch.chunk_done(cut, cuts, arena, pos + nrows)
            trace.drop_level(depth)
            size = chunk_rows(CHUNK, int(S[S_GEN]) - gen0, nlevel, width, min(int(S[S_N]), STORED_CAP))
            level_id0 += nlevel
            depth += 1
            level, level_n = nxt, next_count
            _trim()
        r = complete(m, lambda: final(0), cuts, tb.has, max_depth, None, lambda ids: [], chain, livelock=False)
        if r.verdict != "pass" or not livelock or not (edges.edges or fair is not None):
            return r
        tb.drop()  # the table's memory handed back before the edges' graph is made
        _trim()
        trace.fps.flush()
        graph = edges.graph(int(S[S_N]), trace.fps.name)
        if fair is None:
            return _livelock(m, final, trace, graph) or r
        return _fair(m, s, final, trace, graph, fair, watch.t0, memory)
    except STOPS as e:  # SIGINT/SIGTERM, tables that could not grow, a limit inside an expansion, a worker lost
        return watch.stopped(e, queue_now)
    finally:
        for f in (edges, fair):
            if f is not None:
                f.close()


def _fair(m, s: Settings, final, trace: Trace, graph, fair: FairFiles, t0: float, memory) -> Result:
    """`engine.complete`'s passes for a model that declares FAIR, over the
    graph of every edge made of the edge files (`graph`) and the bytes and
    masks of `fair`, memory-mapped: with the livelock check, the livelock
    pass over the non-progress edges (`diskgraph.nonprogress`, two more
    files); then a starved subject looked for (explorer/graph/fair.py),
    cut by the run's limits as in memory."""
    import time

    from explorer.graph.fair import fair_lasso, fair_pass, fair_result

    n, ofs, dst = graph
    cls, wait = fair.arrays(n, dst.shape[0])
    if s.check_livelock:
        r = _livelock(m, final, trace, nonprogress(trace.dir, graph, cls))
        if r is not None:
            return r

    def limits() -> None:
        if s.time_limit is not None and time.perf_counter() - t0 >= s.time_limit:
            raise LimitReached("time_limit", s.time_limit)
        if memory.over():
            raise LimitReached("memory", mib(memory.limit))

    lasso = fair_lasso(n, ofs, dst, cls, wait, m.fair_strong, limits)
    if lasso is None:
        return fair_pass(m, passed(final(0)), wait)
    ids = [lasso.entry] + [int(v) for v in lasso.cycle]
    fps = [int(trace.fp_of(x)) for x in ids]
    trace.known.update(zip(fps, ids))
    return fair_result(m, lambda fp: trace.chain(m, fp), lasso, fps, final(0))
