"""Parallel, level-synchronous BFS over hash-partitioned workers.

Layout: worker ``w`` owns every state whose fingerprint ``fp % N == w`` and
keeps that shard of the seen-set (fp -> parent, action index, depth, rank).
Each worker builds its own model from a picklable ModelFactory.  The
coordinator (the calling process) only routes messages; per BFS level:

1. ``expand``: each worker expands the states of the current level it owns
   and buckets their successors by owner, keeping per successor the smallest
   *key* ``(rank of parent in the level, action index)``.
2. ``admit``: the coordinator forwards the buckets; each owner drops states it
   has already stored, keeps the smallest key per new state, stores them, and
   checks their invariants.

Why keys: sequential BFS discovers the states of level d+1 exactly in
increasing key order (parents are expanded in level order, actions in
``actions`` order), and stores as parent the first discoverer, i.e. the one
with the smallest key.  So after each level the coordinator merges the sorted
keys of all owners into global ranks, and the parallel run stores the very
same parent links and discovery order as one worker.  Every stop event
(deadlock of parent p: key ``(rank p, -1)``; violation or ``max_states``
overflow at a new state: its key) is ordered by key too, so the coordinator
picks the event sequential BFS would have hit first and derives the exact
distinct-state and queue counts at that point.  Hence same verdict, same
counts, same trace as ``workers=1``.  Only ``generated`` differs: it counts
every transition of the levels processed, and ``time_limit`` is checked
between levels only.  Traces are rebuilt in the coordinator by asking owners
for parent links and replaying (same replay check as sequentially).

Worker logs go through ``multiprocessing_logging`` (installed for the
duration of the run when the root logger has handlers and the start method
is 'fork').
"""

from __future__ import annotations

import bisect
import heapq
import logging
import multiprocessing
import time
import traceback
from contextlib import contextmanager
from typing import Any, Iterator

from explorer.fingerprint import state_fingerprint
from explorer.runtime.memory import MemoryGuard, mib
from explorer.model import ModelFactory
from explorer.runtime.interrupt import interrupt_of, worker_signals
from explorer.outcome import WorkerFailed, bounded, deadlock, failed, interrupted, livelock_or_pass, violation
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.stores.seen import chain_from
from explorer.runtime.supervise import last_line, await_answer, lost, reap

__all__ = ["check_parallel", "WorkerError", "WorkerFailed"]

log = logging.getLogger("explorer.strategies.parallel")

Key = tuple  # (parent rank, action index); deadlock of a parent: (rank, -1)


WorkerError = WorkerFailed  # the name this module used to give it

# ---------------------------------------------------------------- worker side
class _Worker:
    def __init__(self, model: Any, wid: int, n: int, max_depth: int | None,
                 check_deadlock: bool, check_livelock: bool) -> None:
        self.m = model
        self.wid, self.n = wid, n
        self.max_depth = max_depth
        self.check_deadlock = check_deadlock
        self.check_livelock = check_livelock
        self.seen: dict[int, list] = {}  # fp -> [parent, action index, depth, rank]
        self.level: list[tuple[int, Any]] = []  # (fp, state) admitted last, in key order
        self.local: dict[int, tuple] = {}  # own-shard candidates from own expansion
        self.np_edges: dict[int, list[int]] = {}

    def admit(self, incoming: list[tuple], depth: int):
        """Store new states of level ``depth``; return (sorted keys, first violation, cut)."""
        best = self.local
        self.local = {}
        for cand in incoming:  # (fp, key, parent, action index, state)
            fp = cand[0]
            if fp in self.seen:
                continue
            cur = best.get(fp)
            if cur is None or cand[1] < cur[1]:
                best[fp] = cand
        if self.max_depth is not None and depth > self.max_depth:
            return [], None, bool(best)  # beyond the depth bound: only report the cut
        keys: list[Key] = []
        first_bad = None
        level = []
        for fp, key, parent, ai, state in sorted(best.values(), key=lambda c: c[1]):
            self.seen[fp] = [parent, ai, depth, None]
            keys.append(key)
            level.append((fp, state))
            if first_bad is None:
                bad = self.m.invariants(state)
                if bad:
                    first_bad = (key, fp, str(bad[0][0]), str(bad[0][1]))
        self.level = level
        return keys, first_bad, False

    def expand(self, ranks: list[int]):
        """Expand the last admitted level; return (buckets by owner, first deadlock, generated)."""
        m, n, wid = self.m, self.n, self.wid
        out: dict[int, dict[int, tuple]] = {}
        first_dead = None
        generated = 0
        for (fp, state), rank in zip(self.level, ranks, strict=True):
            self.seen[fp][3] = rank
            any_succ = False
            np_out: list[int] = []
            for ai, action in enumerate(m.actions(state)):
                nxt = m.step(state, action)
                if nxt is None:
                    continue
                any_succ = True
                generated += 1
                nfp = state_fingerprint(m, nxt)
                if self.check_livelock and not m.is_progress(state, action, nxt):
                    np_out.append(nfp)
                dest = nfp % n
                if dest == wid and nfp in self.seen:
                    continue
                bucket = out.setdefault(dest, {})
                # Ranks then action indices only increase in this loop, so
                # the first candidate for a fingerprint has the smallest key.
                if nfp not in bucket:
                    bucket[nfp] = (nfp, (rank, ai), fp, ai, nxt)
            if np_out:
                self.np_edges[fp] = np_out
            if (not any_succ and first_dead is None and self.check_deadlock
                    and not m.is_done(state)):
                first_dead = ((rank, -1), fp)
        log.debug("worker %d: expanded %d states, %d transitions", wid, len(self.level), generated)
        self.local = out.pop(wid, {})
        self.level = []
        return {d: list(b.values()) for d, b in out.items()}, first_dead, generated

    def lookup(self, fp: int):
        rec = self.seen[fp]
        return rec[0], rec[1], rec[2]

    def order(self, fps: list[int]):
        return {fp: (self.seen[fp][2], self.seen[fp][3]) for fp in fps}

    def edges(self):
        return self.np_edges


def _worker_main(conn, factory: ModelFactory, wid: int, n: int, opts: dict) -> None:
    worker_signals()
    try:
        worker = _Worker(factory(), wid, n, **opts)
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        conn.close()
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        op, args = msg[0], msg[1:]
        if op == "stop":
            break
        try:
            conn.send(("ok", getattr(worker, op)(*args)))
        except BaseException:
            conn.send(("error", traceback.format_exc()))
            break
    conn.close()


# ----------------------------------------------------------- coordinator side
@contextmanager
def _worker_logging() -> Iterator[None]:
    """Route worker log records through the parent's handlers while we run."""
    import multiprocessing_logging as mpl

    root = logging.getLogger()
    if (multiprocessing.get_start_method() != "fork" or not root.handlers
            or any(isinstance(h, mpl.MultiProcessingHandler) for h in root.handlers)):
        yield  # nothing to wrap, already installed by the application, or unsupported
        return
    mpl.install_mp_handler()
    wrappers = [h for h in root.handlers if isinstance(h, mpl.MultiProcessingHandler)]
    try:
        yield
    finally:
        mpl.uninstall_mp_handler()
        for h in wrappers:
            # Like MultiProcessingHandler.close() but without closing the
            # wrapped handler (it belongs to the application again) and
            # without joining: the receive thread drains the records still
            # queued into that handler and exits by itself (it polls every
            # 0.2 s, and waiting for it would add that to every run).
            h._is_closed = True
            logging.Handler.close(h)


class _Pool:
    def __init__(self, factory: ModelFactory, n: int, opts: dict) -> None:
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.conns, self.procs = [], []
        for w in range(n):
            parent_end, child_end = ctx.Pipe()
            p = ctx.Process(target=_worker_main, args=(child_end, factory, w, n, opts),
                            name=f"explorer-worker-{w}", daemon=True)
            p.start()
            child_end.close()
            self.conns.append(parent_end)
            self.procs.append(p)

    deadline: float | None = None  # perf_counter time of the time limit, set by the coordinator
    time_limit: float | None = None

    def _recv(self, w: int) -> Any:
        """Worker w's answer; a death, an error or (past the deadline) no
        answer is a WorkerFailed naming it. The wait polls, so a signal or
        the time limit is seen while a worker is busy."""
        try:
            await_answer(self.conns[w], self.procs[w], w, self.deadline, self.time_limit)
            status, payload = self.conns[w].recv()
        except (EOFError, OSError):
            raise lost(self.procs[w], w) from None
        if status == "error":
            raise WorkerFailed(w, "raised " + last_line(payload), detail=payload)
        return payload

    def _send(self, w: int, msg: tuple) -> None:
        try:
            self.conns[w].send(msg)
        except (OSError, ValueError):
            raise lost(self.procs[w], w) from None

    def call(self, w: int, op: str, *args: Any) -> Any:
        self._send(w, (op, *args))
        return self._recv(w)

    def call_all(self, op: str, per_worker_args: list[tuple]) -> list[Any]:
        # Send everything first so workers run concurrently; no deadlock: a
        # worker only writes its reply after reading its whole request.
        for w, args in enumerate(per_worker_args):
            self._send(w, (op, *args))
        return [self._recv(w) for w in range(len(self.conns))]

    def close(self, wait: float = 1.0) -> None:
        """Stop every worker; one that does not stop is terminated, then
        killed: no process is left behind (an idle worker stops at once;
        a busy or hung one is not waited for)."""
        for conn in self.conns:
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        reap(self.procs, wait * len(self.procs))
        for conn in self.conns:
            conn.close()


def check_parallel(m: Any, factory: ModelFactory, s: Settings) -> Result:
    """The sequential BFS's result, the states partitioned among
    `s.workers` worker processes (each builds its model from `factory`)."""
    opts = dict(max_depth=s.max_depth, check_deadlock=s.check_deadlock, check_livelock=s.check_livelock)
    with _worker_logging():
        pool = _Pool(factory, s.workers, opts)
        try:
            return _Coordinator(m, pool, s.workers, s, MemoryGuard(s.memory_limit)).run()
        finally:
            pool.close()


class _Coordinator:
    def __init__(self, model, pool: _Pool, n: int, s: Settings, memory: MemoryGuard | None = None) -> None:
        max_states, max_depth, time_limit = s.max_states, s.max_depth, s.time_limit
        progress, progress_interval = s.progress, s.progress_interval
        self.m, self.pool, self.n = model, pool, n
        self.memory = memory or MemoryGuard(None)
        self.max_states, self.max_depth, self.time_limit = max_states, max_depth, time_limit
        self.progress, self.interval = progress, progress_interval
        self.stats = Stats(workers=n, strategy="bfs")
        self.t0 = self._last = time.perf_counter()
        if time_limit is not None:
            pool.deadline, pool.time_limit = self.t0 + time_limit, time_limit

    def chain_of(self, fp: int) -> list[tuple[int, int]]:
        return chain_from(lambda f: self.pool.call(f % self.n, "lookup", f), fp)

    def first_of(self, fps) -> int:
        # Discovery order of sequential BFS is (depth, rank in level).
        per: list[list[int]] = [[] for _ in range(self.n)]
        for fp in fps:
            per[fp % self.n].append(fp)
        order: dict[int, tuple] = {}
        for part in self.pool.call_all("order", [(p,) for p in per]):
            order.update(part)
        return min(order, key=order.__getitem__)

    def run(self) -> Result:
        try:
            return self._run()
        except (KeyboardInterrupt, SystemError) as e:  # SIGINT/SIGTERM: the levels merged so far
            return interrupted(self._final(self.stats.queue), interrupt_of(e))
        except WorkerFailed as e:  # died, raised or hung: the levels merged so far
            return failed(self._final(self.stats.queue), e)
        except MemoryError:
            return bounded(self._final(self.stats.queue), "memory", "MemoryError")

    def _run(self) -> Result:
        n, st = self.n, self.stats
        incoming: list[list[tuple]] = [[] for _ in range(n)]
        firsts: dict[int, int] = {}
        for i, state in enumerate(self.m.initial_states()):
            st.generated += 1
            fp = state_fingerprint(self.m, state)
            if fp not in firsts:  # the first index has the smallest key (0, i)
                firsts[fp] = i
                incoming[fp % n].append((fp, (0, i), None, i, state))
        depth, parents_in_level, dead = 0, 1, None  # initial "level" has one virtual parent
        cut = False
        while True:
            replies = self.pool.call_all("admit", [(inc, depth) for inc in incoming])
            incoming = [[] for _ in range(n)]
            cut = cut or any(r[2] for r in replies)
            merged = list(heapq.merge(*[[(k, w) for k in r[0]] for w, r in enumerate(replies)]))
            keys = [k for k, _ in merged]
            stop = self._first_event(keys, [r[1] for r in replies], dead)
            if stop is not None:
                return self._stopped(stop, keys, depth, parents_in_level)
            if not keys:
                break  # level empty (or beyond max_depth): exploration complete
            st.distinct += len(keys)
            st.max_depth = depth
            ranks: list[list[int]] = [[] for _ in range(n)]
            for rank, (_, w) in enumerate(merged):
                ranks[w].append(rank)
            st.queue = len(keys)
            self._tick()
            if self.time_limit is not None and time.perf_counter() - self.t0 >= self.time_limit:
                return bounded(self._final(len(keys)), "time_limit", self.time_limit)
            if self.memory.over():  # this process and the workers, which hold the stores
                return bounded(self._final(len(keys)), "memory", mib(self.memory.limit))
            dead = None
            for buckets, first_dead, gen in self.pool.call_all("expand", [(r,) for r in ranks]):
                st.generated += gen
                if first_dead is not None and (dead is None or first_dead[0] < dead[0]):
                    dead = first_dead
                for dest, cands in buckets.items():
                    incoming[dest].extend(cands)
            parents_in_level = len(keys)
            depth += 1
        st = self._final(0)
        if cut:
            return bounded(st, "max_depth", self.max_depth)
        edges: dict[int, list[int]] = {}
        for part in self.pool.call_all("edges", [() for _ in range(n)]):
            edges.update(part)
        return livelock_or_pass(self.m, self.chain_of, edges, self.first_of, st)

    def _first_event(self, keys: list[Key], bads: list, dead) -> tuple | None:
        """The stop event sequential BFS meets first in this round, if any.

        Events are (key, priority, kind, payload); at equal keys the
        max_states check precedes storing (and checking) the state.
        """
        events = []
        if dead is not None:
            events.append((dead[0], 0, "deadlock", dead[1]))
        for bad in bads:
            if bad is not None:
                events.append((bad[0], 2, "violation", bad[1:]))
        if self.max_states is not None and self.stats.distinct + len(keys) > self.max_states:
            events.append((keys[self.max_states - self.stats.distinct], 1, "bound", None))
        return min(events, key=lambda e: (e[0], e[1])) if events else None

    def _stopped(self, event: tuple, keys: list[Key], depth: int, parents_in_level: int) -> Result:
        key, _, kind, payload = event
        before = bisect.bisect_left(keys, key)  # new states stored before the event
        st = self.stats
        if before > 0 or kind == "violation":
            st.max_depth = depth
        stored_now = before + (1 if kind == "violation" else 0)
        # Sequential BFS had popped the parent of rank key[0] and enqueued the
        # `before` new states when it stopped.
        st = self._final(parents_in_level - key[0] - 1 + before)
        st.distinct += stored_now
        if kind == "bound":
            return bounded(st, "max_states", self.max_states)
        if kind == "deadlock":
            return deadlock(self.m, self.chain_of, payload, st)
        fp, vkind, msg = payload
        return violation(self.m, self.chain_of, fp, vkind, msg, st)

    def _final(self, queue: int) -> Stats:
        self.stats.queue = queue
        self.stats.elapsed = time.perf_counter() - self.t0
        return self.stats

    def _tick(self) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self.stats.elapsed = now - self.t0
            self.progress(self.stats.snapshot())
