"""The array engine on worker threads (`--workers N` for a model with
rows on threads): every part of a BFS level, the walk included, runs on
N threads, with the verdict, counts, queue figure and trace of one worker.

The walk is split by fingerprint. Of the table's 16 sub-tables, walker t
of W (W: the largest power of two up to N, at most 8) owns those whose
number is t modulo W, and keeps their states in a store of its own
(`table._Store`: fingerprints, parents, sub-tables). The thread
that expands a chunk groups its successors by walker
(`table._by_walker`), and each walker looks up its own group of
every chunk, in order: a fingerprint always falls to the same walker, so whether a successor is
new is decided exactly as the one walk of one worker decides it, and a
walker stores its new states (fingerprint and parent) on its own. A state
is named there by a code, `local index * W + walker`.

What is left in order is light: the merge (`engine._walk` with `decided`)
reads the walkers' decisions of a chunk in (parent, action) order and
gives the new states their ids (dense, in discovery order, as one worker
numbers them), counts, finds a deadlock, stops at `max_states`, has the
invariants of a state checked, records the non-progress edges (their
targets as codes, turned into ids when the livelock pass needs them). The
merge of chunk c runs once every walker is done with it and chunk c - 1 is
merged, on whichever thread finished last, which then packs the chunk's
new rows into the next level, outside the merge's lock.

A thread walks the next chunk as soon as it is expanded; otherwise it
expands the next chunk no thread has taken (the model's expander for the
chunk's slot; the kernel does not hold the GIL), up to A = 3N chunks ahead
of the last chunk packed; otherwise it waits. The calling thread only
watches: the time limit, the memory bound, progress lines, signals, and a
worker that never returns from the model (named at the time limit plus a
grace period; it is abandoned, a daemon thread)."""

from __future__ import annotations

import gc
import threading
import time
import traceback
from typing import Any, Callable

import numpy as np
from numba import njit

from explorer.strategies.arrays.table import (NSUB, SUB_SHIFT, TOUCH_FROM, _Store, _by_walker, _codes, _codes_to_ids, _find, _grow_sub,
                          _ids_to_codes, _next_size, _touch, _walker, chain)
from explorer.strategies.arrays.engine import (CHUNK, NS, RAW_LEVEL, S_CUT, S_GEN, S_MAXD, S_N, S_NEW, S_NP,
                     ST_CHECK, ST_DEADLOCK, ST_DONE, ST_MAXSTATES, TRIM_EVERY, Edges, _Expanded,
                     _pack_new, _unpack, _walk, chunk_rows, complete)
from explorer.strategies.arrays.narrow import Arena, Packed
from explorer.runtime.interrupt import interrupt_of
from explorer.runtime.limits import LimitReached
from explorer.runtime.memory import MemoryGuard, _reserve, _trim, mib, thread_refused
from explorer.model import CHECK, DONE, ArrayFallback
from explorer.outcome import WorkerFailed, bounded, deadlock, failed, interrupted, violation
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.runtime.threads import GRACE

__all__ = ["walkers_check"]

ST_ROOM = 4
POLL = 0.05  # seconds between two looks of the calling thread at the clock, the memory and signals
WAIT = 0.5  # a worker's longest sleep before it looks at the run again
# the table a merge does not read (`_walk` with `decided`): none
NO_TAB, NO_COUNTS, NO_FPS = np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.uint64)


@njit(cache=True, nogil=True)
def _decide(t, W, q0, chunk, table, level, out):
    """Walker t's look at its own successors of a chunk (order[q0:
    starts[t + 1]], see `_by_walker`): dnew[t, i] 0 (stored before, as code
    dtgt[t, i]), 1 (new: stored now, parent pcode[parent[i]]) or 2 (new,
    past the depth bound: not stored). (A row of its own per walker: two
    walkers never write to one cache line.) Returns (status, q); ST_ROOM:
    a sub-table must outgrow its region (the same successor is looked at
    again once it is laid out anew); and the sum of `_touch` (unread), which
    goes over the group's slots first once the store has `touch_from` states."""
    (order, starts, parent, fps, pcode), (tab, R, sz, cnt, fparr, parents, n, shift) = chunk, table
    (depth, max_depth, touch_from), (dnew, dtgt) = level, out
    acc = 0
    if n[0] >= touch_from:
        acc = _touch(fps, (tab, R, sz, fparr), order, q0, starts[t + 1], shift)
    for q in range(q0, starts[t + 1]):
        i = order[q]
        fp = fps[i]
        lid, p, slot = _find(tab, R, sz, fparr, fp, shift)
        if lid >= 0:
            dnew[t, i] = 0
            dtgt[t, i] = lid * W + t
            continue
        if max_depth >= 0 and depth >= max_depth:
            dnew[t, i] = 2
            continue
        if 10 * (cnt[p] + 1) > 7 * sz[p]:
            if _next_size(sz[p]) > R:
                return ST_ROOM, q, acc
            _grow_sub(tab, R, sz, p, fparr)
            lid, p, slot = _find(tab, R, sz, fparr, fp, shift)
        lid = n[0]
        fparr[lid] = fp
        parents[lid] = pcode[parent[i]]
        tab[slot] = lid + 1
        cnt[p] += 1
        n[0] = lid + 1
        dnew[t, i] = 1
        dtgt[t, i] = lid * W + t
    return ST_DONE, 0, acc


class _Level:
    """One BFS level: its chunks `(position, rows, block, first, end, done
    flags, codes)` (None once merged), which are expanded (`ready`), how
    many walkers each still waits for (`left`), how many are merged, and
    the next level's blocks as they are packed; a chunk's slot is free
    once it and every chunk before it are packed (`freed`)."""

    __slots__ = ("errs", "gen0", "chunks", "C", "ready", "left", "merged", "mpos", "nlevel", "id0", "depth", "nxt",
                 "next_count", "packed", "freed", "done", "nexp")

    def __init__(self, blocks: list, W: int, id0: int, depth: int, size: int, gen0: int) -> None:
        self.chunks, pos = [], 0
        for block, done, codes in blocks:
            for c0 in range(0, block.n, size):
                c1 = min(c0 + size, block.n)
                self.chunks.append((pos, c1 - c0, block, c0, c1, done[c0:c1], codes[c0:c1]))
                pos += c1 - c0
        self.C, self.nlevel, self.id0, self.depth, self.gen0 = len(self.chunks), pos, id0, depth, gen0
        self.ready = [False] * self.C
        self.left = [W] * self.C
        self.packed = [False] * self.C
        self.merged = self.mpos = self.next_count = self.freed = 0  # freed: chunks packed, all before them too
        self.nexp = 0  # the next chunk to expand, by the first thread free for it
        self.errs: dict = {}  # chunk -> what its expansion raised (raised by the merge, in order)
        self.done = False
        self.nxt: list = []


class _Run:
    """One search: the walkers' stores, the slots, the level under way,
    the counts (`S`, written by the merge only) and how it ended."""

    def __init__(self, m: Any, T: int, memory, s: Settings) -> None:
        max_states, max_depth, time_limit = s.max_states, s.max_depth, s.time_limit
        check_deadlock, check_livelock, progress = s.check_deadlock, s.check_livelock, s.progress
        progress_interval = s.progress_interval
        self.m, self.T, self.memory = m, T, memory
        self.W = W = 1 << min(T.bit_length() - 1, 3)  # (16 walkers would shift a fingerprint by 64 bits)
        lw = W.bit_length() - 1
        self.stores = [_Store(m, nsub=NSUB >> lw, shift=SUB_SHIFT + lw) for _ in range(W)]
        self.ms = -1 if max_states is None else max_states
        self.md = -1 if max_depth is None else max_depth
        self.max_states, self.max_depth, self.time_limit = max_states, max_depth, time_limit
        self.check_deadlock, self.livelock = bool(check_deadlock), bool(check_livelock)
        self.progress, self.progress_interval = progress, progress_interval
        self.A = A = 3 * T  # chunks between the merge and the farthest expansion: an expander (and buffers) each
        self.expanders = [m.array_expander() for _ in range(A)]
        self.inbuf: list = [None] * A
        self.X: list = [None] * A
        self.dnew = [np.zeros((W, 4 * CHUNK), np.int8) for _ in range(A)]  # per slot, per walker: decisions
        self.order = [np.zeros(4 * CHUNK, np.int32) for _ in range(A)]  # per slot: successors by walker
        self.starts = [np.zeros(W + 1, np.int64) for _ in range(A)]
        self.dtgt = [np.zeros((W, 4 * CHUNK), np.int64) for _ in range(A)]
        self.cv = threading.Condition()
        self.mlock = threading.Lock()  # held by the thread merging
        self.lv: _Level | None = None
        self.stop = False
        self.stopped = threading.Event()  # what the calling thread waits for
        self.timed_out = False  # stopped by the time limit (a worker still in the model's code past it is hung)
        self.end: tuple | None = None  # (Result from Stats, pending) once the run has its answer
        self.error: BaseException | None = None
        self.busy: list = [None] * T  # per worker: since when it runs the model's code
        self.S = np.zeros(NS, np.int64)
        self.arena = Arena(RAW_LEVEL, np.int8)
        self.edges = Edges(self.livelock)
        self.wk = np.zeros(1 << 16 if self.livelock and W > 1 else 0, np.uint8)
        self.newidx = np.zeros(CHUNK, np.int64)
        self.cut = np.zeros(CHUNK, np.uint64)
        self.cuts: list = []
        self.nchunks = 0
        self.t0 = s.clock()  # the check's start: building the model counted (explorer/check.py)
        self.stats = Stats(strategy="bfs")
        self.init_rows = self.init_fps = None

    def fp_of(self, code: int) -> np.uint64:
        return self.stores[code % self.W].fp[code // self.W]

    def parent_of(self, code: int) -> int:
        return int(self.stores[code % self.W].parent[code // self.W])

    def code_of(self, fp: int) -> int:
        fp = np.uint64(fp)
        t = int(_walker(fp, self.W))
        lid = self.stores[t].id_of(fp)
        return -1 if lid < 0 else lid * self.W + t

    def chain(self, fp: int) -> list[tuple[int, int]]:
        return chain(self.m, self.init_rows, self.init_fps, self.code_of(fp), self.parent_of, self.fp_of)

    def final(self, pending: int) -> Stats:
        S, st = self.S, self.stats
        st.generated, st.distinct, st.max_depth = int(S[S_GEN]), int(S[S_N]), int(S[S_MAXD])
        st.queue, st.elapsed = pending, time.perf_counter() - self.t0
        return st

    def queue_now(self) -> int:
        lv = self.lv
        return 0 if lv is None else lv.nlevel - lv.mpos + lv.next_count

    def _store_initial(self, fp: np.uint64) -> int:
        """An initial state stored by its walker (new: checked before);
        its code."""
        t = int(_walker(fp, self.W))
        st = self.stores[t]
        lid = int(st.n[0])
        st.reserve(lid, 1)
        while True:
            _, q, slot = _find(st.tab, st.R, st.sz, st.fp, fp, st.shift)
            if 10 * (st.cnt[q] + 1) <= 7 * st.sz[q]:
                break
            if _next_size(int(st.sz[q])) > st.R:
                st.relayout()
            else:
                _grow_sub(st.tab, st.R, st.sz, q, st.fp)
        st.fp[lid], st.parent[lid], st.tab[slot] = fp, -1, lid + 1
        st.cnt[q] += 1
        st.n[0] = lid + 1
        return lid * self.W + t

    def initial(self) -> Result | None:
        """The initial states stored, the first level laid out; a Result
        if the run ends there."""
        m, S = self.m, self.S
        rows, fps, flags = m.array_initial()
        self.init_rows, self.init_fps = np.array(rows, np.int64), np.array(fps, np.uint64)
        first, codes = [], []
        for i in range(len(fps)):
            S[S_GEN] += 1
            fp = np.uint64(fps[i])
            if self.code_of(fp) >= 0:
                continue
            if self.ms >= 0 and S[S_N] >= self.ms:
                return bounded(self.final(len(first)), "max_states", self.max_states)
            code = self._store_initial(fp)
            if self.wk.shape[0]:
                self.wk = _reserve(self.wk, int(S[S_N]) + 1, int(S[S_N]))
                self.wk[S[S_N]] = code % self.W
            S[S_N] += 1
            if flags[i] & CHECK:
                bad = m.invariants(m.array_state(rows[i]))
                if bad:
                    return violation(m, self.chain, int(fp), bad[0][0], bad[0][1], self.final(len(first)))
            first.append(i)
            codes.append(code)
        blocks = [(Packed(np.asarray(rows, np.int64)[first]), (np.asarray(flags, np.int64)[first] & DONE)
                   .astype(np.int8), np.array(codes, np.int32))] if first else []
        self._install(blocks, 0, 0)
        return None

    def _install(self, blocks: list, id0: int, depth: int) -> None:
        """The next level (the first: id0 = depth = 0), or the end."""
        if not blocks:
            with self.cv:
                if self.end is None:
                    self.end = (self._finish, 0)
                self.stop = True
                self.stopped.set()
                self.cv.notify_all()
            return
        self.arena.next_level()  # the level's unpacked rows (at most RAW_LEVEL bytes)
        gen, last = int(self.S[S_GEN]), self.lv
        size = CHUNK if last is None else chunk_rows(CHUNK, gen - last.gen0, last.nlevel, blocks[0][0].width,
                                                     int(self.S[S_N]))
        lv = _Level(blocks, self.W, id0, depth, size, gen)
        blocks.clear()
        with self.cv:
            self.lv = lv
            self.cv.notify_all()

    # ------------------------------------------------------------ the workers' steps

    def _expand(self, lv: _Level, c: int, tid: int) -> None:
        s = c % self.A
        _, _, block, c0, c1, pdone, _ = lv.chunks[c]
        self.busy[tid] = time.perf_counter()
        try:
            rows, self.inbuf[s] = _unpack(block, c0, c1, self.inbuf[s])
            res = self.expanders[s](rows)
        except (ArrayFallback, LimitReached, MemoryError) as e:
            lv.errs[c] = e  # raised when the merge reaches this chunk: a verdict met before it comes first
            return
        except Exception as e:  # noqa: BLE001 - reported with the worker's id and cause
            lv.errs[c] = WorkerFailed(tid, f"raised {type(e).__name__}: {e}", detail=traceback.format_exc())
            return
        finally:
            self.busy[tid] = None
        x = _Expanded(res, pdone)
        k = x.fps.shape[0]
        if self.dnew[s].shape[1] < k:
            self.dnew[s], self.dtgt[s] = np.zeros((self.W, 2 * k), np.int8), np.zeros((self.W, 2 * k), np.int64)
            self.order[s] = np.zeros(2 * k, np.int32)
        _by_walker(x.fps, self.W, self.order[s], self.starts[s])
        self.X[s] = x

    def _decide(self, lv: _Level, c: int, t: int) -> None:
        if c in lv.errs:  # its expansion failed: nothing to look up
            return
        s = c % self.A
        x, st = self.X[s], self.stores[t]
        pcode = lv.chunks[c][6]
        order, starts = self.order[s], self.starts[s]
        st.reserve(int(st.n[0]), int(starts[t + 1] - starts[t]))
        q = int(starts[t])
        while True:
            status, q, _ = _decide(t, self.W, q, (order, starts, x.parent, x.fps, pcode),
                                   (st.tab, st.R, st.sz, st.cnt, st.fp, st.parent, st.n, st.shift),
                                   (lv.depth, self.md, TOUCH_FROM), (self.dnew[s], self.dtgt[s]))
            if status == ST_DONE:
                return
            st.relayout()

    def _merge_ready(self, lv: _Level, tid: int) -> None:
        """Merge the chunks every walker is done with, in order (one thread
        at a time; a thread finding the lock taken leaves the work to its
        holder, who looks again after letting it go), each packed after."""
        while True:
            if not self.mlock.acquire(blocking=False):
                return
            c, job = -1, None
            try:
                if not self.stop and lv.merged < lv.C and lv.left[lv.merged] == 0:
                    c = lv.merged
                    job = self._merge(lv, c, tid)
            finally:
                self.mlock.release()
            if c >= 0 and not self.stop:
                self._pack(lv, c, job)
            if self.stop or not (lv.merged < lv.C and lv.left[lv.merged] == 0):
                return

    def _stop_with(self, result: Callable[[Stats], Result], pending: int, timed: bool = False) -> None:
        """The run's answer, unless one came first; `timed`: the time limit's
        (a worker then still in the model's code is hung)."""
        with self.cv:
            if self.end is None and self.error is None:
                self.end = (result, pending)
                self.timed_out = timed
            self.stop = True
            self.stopped.set()
            self.cv.notify_all()

    def _merge(self, lv: _Level, c: int, tid: int) -> tuple | None:
        err = lv.errs.get(c)
        if err is not None:  # the chunk's expansion failed: every chunk before it is merged
            raise err
        m, S, s = self.m, self.S, c % self.A
        x = self.X[s]
        pos, nrows, _, _, _, _, pcode = lv.chunks[c]
        k, n = x.fps.shape[0], int(S[S_N])
        if self.livelock:
            self.edges.reserve(S, lv.id0 + pos + nrows, k)
            if self.wk.shape[0]:
                self.wk = _reserve(self.wk, n + k, n)
        if self.newidx.shape[0] < k:
            self.newidx, self.cut = np.zeros(2 * k, np.int64), np.zeros(2 * k, np.uint64)
        newidx, dtgt = self.newidx, self.dtgt[s]
        S[S_NEW] = S[S_CUT] = 0
        j, i = 0, 0
        while True:
            status, j, i = _walk(j, i, (nrows, x.pofs, x.fps, x.flags, lv.id0 + pos, lv.depth, x.pdone),
                                 (NO_TAB, 0, NO_COUNTS, NO_COUNTS, NO_FPS, NO_TAB), S,
                                 (newidx, self.edges.cnt, self.edges.ovf, self.edges.dst, self.cut),
                                 (self.ms, self.md, self.livelock, self.check_deadlock),
                                 (True, self.dnew[s], dtgt, self.wk, self.W))
            pending = (lv.nlevel - pos - j - 1) + lv.next_count + int(S[S_NEW])
            if status == ST_DONE:
                break
            if status == ST_DEADLOCK:
                fp = int(self.fp_of(int(pcode[j])))
                return self._stop_with(lambda st: deadlock(m, self.chain, fp, st), pending)
            if status == ST_MAXSTATES:
                return self._stop_with(lambda st: bounded(st, "max_states", self.max_states), pending)
            assert status == ST_CHECK  # the state just stored (successor i - 1)
            self.busy[tid] = time.perf_counter()  # the model's code
            try:
                bad = m.invariants(m.array_state(np.asarray(x.succ[i - 1], np.int64)))
            finally:
                self.busy[tid] = None
            if bad:
                fp, (kind, msg) = int(x.fps[i - 1]), bad[0]
                return self._stop_with(lambda st: violation(m, self.chain, fp, kind, msg, st), pending - 1)
        nnew = int(S[S_NEW])
        job = None
        if nnew:  # packed out of the merge lock, by this thread (`_pack`)
            job = (len(lv.nxt), newidx[:nnew].copy(), self.arena.take(nnew, x.succ.shape[1]))
            lv.nxt.append(None)
        if S[S_CUT]:
            self.cuts.append(self.cut[: int(S[S_CUT])].copy())
        self.arena.consumed(pos + nrows)
        self.nchunks += 1
        if self.nchunks % TRIM_EVERY == 0:
            _trim()
        with self.cv:
            lv.next_count += nnew
            lv.mpos = pos + nrows
            lv.merged = c + 1
        return job

    def _pack(self, lv: _Level, c: int, job) -> None:
        """Chunk c's new rows packed into the next level (in their place
        among its blocks); then its slot is free once every chunk before it
        is packed too, and the level, once packed, makes way for the next."""
        s = c % self.A
        if job is not None:
            k, idx, raw = job
            x = self.X[s]
            rows, done = _pack_new(x, idx, raw, self.arena)
            lv.nxt[k] = (rows, done, _codes(x.fps, idx, self.dtgt[s], self.W))
        with self.cv:
            lv.packed[c] = True
            while lv.freed < lv.C and lv.packed[lv.freed]:
                self.X[lv.freed % self.A] = lv.chunks[lv.freed] = None
                lv.freed += 1
            self.cv.notify_all()
            if lv.freed < lv.C or lv.done:
                return
            lv.done = True  # one thread lays out the next level
        nxt, lv.nxt = lv.nxt, []
        _trim()
        self._install(nxt, lv.id0 + lv.nlevel, lv.depth + 1)

    def worker(self, tid: int) -> None:
        try:
            self._work(tid)
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            with self.cv:
                if self.error is None and self.end is None:
                    self.error = e
                self.stop = True
                self.stopped.set()
                self.cv.notify_all()

    def _work(self, tid: int) -> None:
        walker, A = tid < self.W, self.A
        lv = None
        while True:
            with self.cv:
                while not self.stop and self.lv is lv:
                    self.cv.wait(WAIT)
                if self.stop:
                    return
                lv = self.lv
            cur = 0  # the next chunk this thread walks
            while not self.stop:
                if walker and cur < lv.C and lv.ready[cur]:
                    self._decide(lv, cur, tid)
                    with self.cv:
                        lv.left[cur] -= 1
                        last = lv.left[cur] == 0
                    cur += 1
                    if last:
                        self._merge_ready(lv, tid)
                    continue
                with self.cv:
                    e = lv.nexp
                    if e < lv.C and e < lv.freed + A:  # the next chunk to expand is this thread's
                        lv.nexp = e + 1
                    elif (not walker or cur >= lv.C) and e >= lv.C:
                        break  # this thread's part of the level is done
                    else:
                        if not self.stop and not (walker and cur < lv.C and lv.ready[cur]):
                            self.cv.wait(WAIT)
                        continue
                self._expand(lv, e, tid)
                with self.cv:
                    lv.ready[e] = True
                    self.cv.notify_all()

    # ------------------------------------------------------------ the calling thread

    def run(self) -> Result:
        threads: list = []
        deadline = None if self.time_limit is None else self.t0 + self.time_limit
        next_report = self.t0 + self.progress_interval
        try:
            r = self.initial()
            if r is not None:
                return r
            threads = [threading.Thread(target=self.worker, args=(t,), name=f"worker_{t}", daemon=True)
                       for t in range(self.T)]
            for wid, t in enumerate(threads):
                try:
                    t.start()
                except RuntimeError as e:  # the system refused a thread: its memory (a MemoryError), its limits
                    raise thread_refused(e) or WorkerFailed(wid, f"could not be started: {e}") from None
            while True:
                if self.stopped.wait(POLL):
                    break
                now = time.perf_counter()
                if deadline is not None and now >= deadline:
                    self._stop_with(lambda st: bounded(st, "time_limit", self.time_limit), -1, timed=True)
                elif self.memory.over():
                    self._stop_with(lambda st: bounded(st, "memory", mib(self.memory.limit)), -1)
                elif self.progress is not None and now >= next_report:
                    next_report = now + self.progress_interval
                    self.progress(self.final(self.queue_now()).snapshot())
            hung = self._wind_down(threads, deadline)
            return self._answer(hung)  # (the livelock pass and a trace too: an interrupt there is seen)
        except WorkerFailed as e:  # a thread not started: those started stop
            self._stop_with(lambda st: st, -1)
            self._wind_down(threads, None)
            return failed(self.final(self.queue_now()), e)
        except (KeyboardInterrupt, SystemError) as e:  # SIGINT/SIGTERM: the counts of every chunk merged so far
            self._stop_with(lambda st: st, -1)
            self._wind_down(threads, None)
            return interrupted(self.final(self.queue_now()), interrupt_of(e))

    def _answer(self, hung: WorkerFailed | None) -> Result:
        if hung is not None:
            return failed(self.final(self.queue_now()), hung)
        e = self.error
        if e is not None:
            if isinstance(e, LimitReached):  # inside one expansion (explorer/runtime/limits.py)
                return bounded(self.final(self.queue_now()), e.reason, e.value)
            if isinstance(e, MemoryError):  # the tables could not grow: what was stored so far
                return bounded(self.final(self.queue_now()), "memory", "MemoryError")
            if isinstance(e, WorkerFailed):
                return failed(self.final(self.queue_now()), e)
            raise e
        result, pending = self.end
        return result(self.final(self.queue_now() if pending < 0 else pending))

    def _wind_down(self, threads: list, deadline: float | None) -> WorkerFailed | None:
        """The workers stopped: each one not in the model's code ends within
        a step. One still in it past the time limit and the grace period
        (with a time limit, stopped by it) is hung: named, and abandoned."""
        with self.cv:
            self.stop = True
            self.stopped.set()
            self.cv.notify_all()
        timed = deadline is not None and self.timed_out
        while True:
            alive = [(b, w) for w, (t, b) in enumerate(zip(threads, self.busy)) if t.is_alive()]
            if not alive:
                break
            now = time.perf_counter()
            if all(b is not None for b, _ in alive):  # the rest is in the model's code
                if not timed:
                    break
                if now >= deadline + GRACE:
                    since, wid = min(alive)
                    return WorkerFailed(wid, f"had not answered for {now - since:.1f} s when the time limit "
                                             f"({self.time_limit} s) came", hung=("time_limit", self.time_limit))
            time.sleep(0.01)
        self.mlock.acquire(timeout=GRACE)  # a merge under way (the model's invariants) ends first
        return None

    def _finish(self, stats: Stats) -> Result:
        """The search is complete (`engine.complete`): the depth bound's
        cuts, then the livelock pass, its edges' codes turned into ids."""
        S, W = self.S, self.W

        def graph():
            for st in self.stores:
                st.drop_table(int(st.n[0]))
            _trim()
            n, ofs, dst = self.edges.graph(int(S[S_N]), S)
            if W > 1:
                _codes_to_ids(self.wk, n, W, dst, dst.shape[0])
            return n, ofs, dst

        def fps_of(ids):
            codes = _ids_to_codes(self.wk, W, ids, np.argsort(ids)) if W > 1 else ids
            return [int(self.fp_of(int(c))) for c in codes]

        return complete(self.m, lambda: self.final(0), self.cuts, lambda fp: self.code_of(fp) >= 0, self.max_depth,
                        graph if self.livelock and S[S_NP] else None, fps_of, self.chain)


def walkers_check(m: Any, s: Settings) -> Result:
    """`engine.array_check` on `s.workers` threads (see the module's text)."""
    workers = s.workers
    gc_was = gc.isenabled()
    gc.disable()  # no Python object per state: nothing for the collector but pauses
    try:
        run = _Run(m, workers, MemoryGuard(s.memory_limit), s)
        try:
            r = run.run()
        except MemoryError:
            r = bounded(run.final(run.queue_now()), "memory", "MemoryError")
        finally:  # whatever the calling thread met (an error of a progress callback...), the workers stop
            with run.cv:
                run.stop = True
                run.stopped.set()
                run.cv.notify_all()
    finally:
        if gc_was:
            gc.enable()
    r.stats.workers = workers
    return r
