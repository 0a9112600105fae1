"""Level-synchronous BFS over hash partitions of the state space, in this
process or on a Ray cluster, with the results of the sequential array
engine (`strategies/arrays/engine.py`): the same verdict, counts, queue figure, depth,
shortest trace and replay path. The same driver runs the partitions of a
model's Python states (`objects.py`, one on each worker process:
`objects_check`), with the results of the sequential engine; where the
partitions run is the backend's (`backends.py`).

K partitions each own the states whose fingerprint's high word is their
index modulo K: their part of the fingerprint table (fingerprint, global id,
parent id and action of each stored state) and of the frontier (the rows,
packed by column, with their ids and done flags). A level runs in three
steps:

1. `expand`: every partition expands its frontier through the model's
   array protocol; each successor gets an order key, (parent id << 24) |
   its rank among the parent's successors, the place where the sequential
   walk meets it. Successors leave as packed rows, one bundle per owning
   partition (on Ray: numpy arrays through the object store, straight from
   partition to partition).
2. `merge`: every partition sorts what it received by key and walks it
   against its table (compiled): a known state is a non-progress edge at
   most, the first occurrence of an unknown one is stored. It returns the
   keys of its new states, the first of them (in key order) that violates
   an invariant, and the first of its parents without a successor.
3. The driver merges the new keys of all partitions in key order -- the
   order in which the sequential engine numbers them -- and hands out the
   global ids (`commit`). The first event in key order over all partitions
   (a deadlock, a violation, the state past `max_states`) is the one the
   sequential walk stops at; the figures at that point are counted from the
   sorted keys.

A trace is rebuilt from parent links, each asked of the partition that owns
the state. The livelock pass gathers the non-progress edges (sorted by key:
the sequential engine's order) at the driver and runs the same compiled
strongly-connected-components search.

With a checkpoint directory every partition writes the states it stored in
a level, its edges and its frontier at each level boundary, and the driver
commits the level by renaming a manifest into place (`checkpoint.py`).

Partitions of Python states are not checkpointed (refused)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from explorer.graph.cycles import _acyclic_part, _cycle, _scc
from explorer.runtime.limits import LimitReached, Limits
from explorer.runtime.memory import MemoryGuard, mib
from explorer.model import CHECK, NOTES, ArrayFallback, has
from explorer.runtime.interrupt import interrupt_of
from explorer.outcome import WorkerFailed, bounded, deadlock, failed, interrupted, livelock_result, passed, violation
from explorer.result import Result, Stats
from explorer.settings import Settings

from explorer.strategies.partitions.backends import _Local, _Processes, _Ray
from explorer.strategies.partitions.checkpoint import Checkpoint
from explorer.errors import CheckpointError, PartitionError, RayUnavailable, WorkerLost
from explorer.strategies.partitions.objects import NO_CHECKPOINT, ObjectPartition
from explorer.strategies.partitions.partition import SH, Partition, owner_of

__all__ = ["partitioned_check", "objects_check", "WorkerLost", "RayUnavailable", "PartitionError", "owner_of"]

# ---------------------------------------------------------------- the driver


def partitioned_check(m: Any, factory: Any, s: Settings) -> Result:
    """The sequential array engine's result, computed by `s.partitions` hash
    partitions in this process (`s.ray` None; on `s.workers` threads) or as Ray
    actors (`s.ray`: a cluster address, "auto" or "local"). `s.checkpoint`: a directory to write
    the run into at each level boundary; `s.resume`: a directory to continue
    from (the same run: `s.identity` -- what the caller knows of the model --
    and the search flags must match). Raises WorkerLost when a partition's
    worker is lost, CheckpointError for a checkpoint that does not fit."""
    partitions, ray, checkpoint, resume = s.partitions, s.ray, s.checkpoint, s.resume
    workers = 1 if ray is not None else s.workers  # a Ray actor is one partition
    flags = {"max_states": s.max_states, "max_depth": s.max_depth, "deadlock": s.check_deadlock,
             "livelock": s.check_livelock}
    ident = {"model": dict(s.identity or {}), "search": flags}
    state = None
    if resume is not None:
        state = Checkpoint.read(resume, ident, partitions)
        partitions = state["partitions"]
        if checkpoint is None:
            checkpoint = resume  # a resumed run goes on saving where it left off
    partitions = partitions or 1
    cp = Checkpoint(checkpoint, ident, partitions) if checkpoint is not None else None
    if cp is not None and state is None:
        cp.require_fresh()
    try:
        backend = _Ray(partitions, ray) if ray is not None else _Local(partitions, workers)
    except WorkerFailed as e:  # a worker thread the system refused: nothing explored
        return failed(Stats(strategy="bfs", workers=workers), e)
    except MemoryError:  # no room for a worker thread's stack (`ulimit -v`): nothing explored
        return bounded(Stats(strategy="bfs", workers=workers), "memory", "MemoryError")
    broke = True
    try:
        r = _Driver(m, factory, backend, s, MemoryGuard(s.memory_limit), cp, state).run()
        r.stats.workers = getattr(backend, "threads", 1)
        broke = False
        return r
    except ArrayFallback as e:
        raise PartitionError(f"the model cannot go on with rows ({e})") from None
    except WorkerLost as e:
        where = cp.describe_last() if cp is not None else (
            Checkpoint.describe(resume) if resume is not None else None)
        msg = f"{e}: the run stopped"
        msg += f"; last checkpoint: {where}" if where else "; no checkpoint was written (--checkpoint DIR keeps one)"
        raise WorkerLost(msg) from None
    finally:
        backend.close(failed=broke)


def objects_check(m: Any, factory: Any, s: Settings) -> Result:
    """The sequential BFS's result over the model's Python states (a model
    without rows, or one that fell back from them), computed by `s.workers`
    hash partitions, one on each worker process (objects.py; each builds
    its model from `factory`): the same verdict, counts, queue figure and
    trace as one process. No checkpoints: refused."""
    if s.checkpoint is not None or s.resume is not None:
        raise PartitionError(NO_CHECKPOINT)
    deadline = None if s.time_limit is None else s.clock() + s.time_limit
    backend = _Processes(s.workers, factory, ObjectPartition, deadline, s.time_limit)
    try:
        r = _Driver(m, factory, backend, s, MemoryGuard(s.memory_limit), None, None, ObjectPartition).run()
        r.stats.workers = backend.threads
        return r
    finally:
        backend.close()


class _Driver:
    """The level loop over a backend's partitions, of the class `kind`
    (`Partition`: rows; `ObjectPartition`: Python states)."""

    def __init__(self, m, factory, backend, s: Settings, memory, cp, state, kind: type = Partition) -> None:
        self.m, self.factory, self.b, self.kind = m, factory, backend, kind
        self.k = backend.k
        max_states, max_depth, time_limit = s.max_states, s.max_depth, s.time_limit
        check_deadlock, check_livelock, progress_interval = s.check_deadlock, s.check_livelock, s.progress_interval
        progress = s.progress
        self.ms = -1 if max_states is None else max_states
        self.md = -1 if max_depth is None else max_depth
        self.max_states, self.max_depth, self.time_limit = max_states, max_depth, time_limit
        self.check_deadlock, self.check_livelock = check_deadlock, check_livelock
        self.progress, self.interval = progress, progress_interval
        self.memory, self.cp, self.state = memory, cp, state
        self.t0 = s.clock()  # the check's start: building the model counted (explorer/check.py)
        self.next_report = self.t0 + progress_interval
        self.n = self.generated = self.maxd = 0
        self.queue = 0

    def stats(self, queue: int, distinct: int | None = None, generated: int | None = None,
              maxd: int | None = None) -> Stats:
        s = Stats(strategy="bfs", workers=self.k)
        s.generated = self.generated if generated is None else generated
        s.distinct = self.n if distinct is None else distinct
        s.max_depth = self.maxd if maxd is None else maxd
        s.queue = queue
        s.elapsed = time.perf_counter() - self.t0
        return s

    # -- traces ----------------------------------------------------------------
    def chain(self, fp: int) -> list[tuple[int, int]]:
        e = [x for x in self.b.call("entry_by_fp", lambda i: (fp,)) if x is not None][0]
        out = [(fp, e[2])]
        parent = e[1]
        while parent >= 0:
            got = [x for x in self.b.call("entry_by_gid", lambda i: (parent,)) if x is not None][0]
            out.append((got[0], got[2]))
            parent = got[1]
        out.reverse()
        return out

    # -- the run ---------------------------------------------------------------
    def run(self) -> Result:
        b = self.b
        b.call("start", lambda i: (self.factory, i, self.k, self.check_livelock, self.check_deadlock))
        b.set_limits(Limits(self.time_limit, self.memory, self.t0))  # partitions in this process: inside a level too
        try:
            r = self._run()
            self._gather_notes()
            return r
        except LimitReached as e:  # inside a level: the counts are those of the levels finished
            return bounded(self.stats(self.queue), e.reason, e.value)
        except (KeyboardInterrupt, SystemError) as e:
            return interrupted(self.stats(self.queue), interrupt_of(e))
        except WorkerFailed as e:  # a worker process died, raised or hung: the levels merged so far
            return failed(self.stats(self.queue), e)
        except MemoryError:
            return bounded(self.stats(self.queue), "memory", "MemoryError")

    def _gather_notes(self) -> None:
        """The partitions' notes into the driver's model (Ray actors keep
        their own; threads share the driver's list), in partition order."""
        if not has(self.m, NOTES):
            return
        mine = self.m.notes
        for part in self.b.call("notes", lambda i: ()):
            mine.extend(n for n in part if n not in mine)

    def _initial(self) -> Result | None:
        """The initial states, as the sequential engine takes them."""
        m, kind = self.m, self.kind
        rows, fps, flags, state_of = kind.initial(m)
        seen: set[int] = set()
        keep = []
        for i in range(len(fps)):
            self.generated += 1
            fp = int(fps[i])
            if fp in seen:
                continue
            if self.ms >= 0 and self.n >= self.ms:
                return bounded(self.stats(len(keep)), "max_states", self.max_states)
            seen.add(fp)
            self.n += 1
            keep.append(i)
            if flags[i] & CHECK:
                bad = m.invariants(state_of(i))
                if bad:
                    chain = {fp: [(fp, i)]}
                    return violation(m, chain.__getitem__, fp, bad[0][0], bad[0][1], self.stats(len(keep) - 1))
        keep_a = np.array(keep, np.int64)
        own = kind.owner(np.asarray(fps, np.uint64)[keep_a], self.k) if keep else np.zeros(0, np.int64)
        gids = np.arange(len(keep), dtype=np.int64)

        def args(d):
            sel = own == d
            return (kind.take(rows, keep_a[sel]), np.asarray(fps, np.uint64)[keep_a[sel]],
                    np.asarray(flags)[keep_a[sel]], gids[sel], keep_a[sel])

        self.b.call("seed", args)
        self.level0, self.nlevel, self.depth = 0, len(keep), 0
        return None

    def _run(self) -> Result:
        b = self.b
        if self.state is not None:
            s = self.state
            same = self.cp is not None and self.cp.dir == s["dir"]
            stamp = Checkpoint.stamp_of(s["identity"])
            loaded = b.call("load", lambda i: (s["dir"], s["tags"], same, stamp, s["files"], s["distinct"]))
            if sum(loaded) != s["distinct"]:
                raise CheckpointError(f"the checkpoint in {s['dir']} holds {sum(loaded)} states, its manifest "
                                      f"says {s['distinct']}; it cannot be resumed")
            self.n, self.generated, self.maxd = s["distinct"], s["generated"], s["max_depth"]
            self.level0, self.nlevel, self.depth = s["level0"], s["nlevel"], s["depth"]
            if self.cp is not None:
                self.cp.continue_from(s)
                if not same:
                    self._save()  # the loaded run, whole, in the new directory
        else:
            r = self._initial()
            if r is not None:
                return r
            if self.cp is not None:
                self._save()
        while self.nlevel:
            self.queue = self.nlevel
            now = time.perf_counter()
            if self.time_limit is not None and now - self.t0 >= self.time_limit:
                return bounded(self.stats(self.nlevel), "time_limit", self.time_limit)
            if self.memory.over():
                return bounded(self.stats(self.nlevel), "memory", mib(self.memory.limit))
            if self.progress is not None and now >= self.next_report:
                self.next_report = now + self.interval
                self.progress(self.stats(self.nlevel))
            r = self._level()
            if r is not None:
                return r
        return self._finish()

    def _level(self) -> Result | None:
        b, depth = self.b, self.depth
        cut = self.md >= 0 and depth >= self.md
        summaries, merged = b.level(depth, cut)
        new_keys = [mk[0] for mk in merged]
        allkeys = np.concatenate(new_keys) if new_keys else np.zeros(0, np.int64)
        order = np.argsort(allkeys, kind="stable")
        sorted_keys = allkeys[order]
        total_new = len(allkeys)
        rank = np.empty(total_new, np.int64)
        rank[order] = np.arange(total_new, dtype=np.int64)
        # the first event in key order
        events = []
        deads = [s[1] for s in summaries if s[1] >= 0]
        if deads:
            events.append((min(deads) << SH, 0, "deadlock"))
        if self.ms >= 0 and self.n + total_new > self.ms:
            events.append((int(sorted_keys[self.ms - self.n]), 1, "max_states"))
        bads = [mk[1] for mk in merged if mk[1] is not None]
        if bads:
            first = min(bads)
            events.append((first[0], 2, first))
        gid_of = self.n + rank
        offs = np.cumsum([0] + [len(x) for x in new_keys])
        stop = min(events) if events else None
        b.call("commit", lambda d: (gid_of[offs[d]: offs[d + 1]], stop is None))
        if stop is not None:
            return self._stop(stop, sorted_keys)
        self.generated += sum(mk[2] for mk in merged)
        self.n += total_new
        if total_new:
            self.maxd = depth + 1
        self.level0 += self.nlevel
        self.nlevel = total_new
        self.depth += 1
        self.any_cut = getattr(self, "any_cut", False) or any(mk[3] for mk in merged)
        if self.cp is not None and self.nlevel:
            self._save()
        return None

    def _stop(self, stop, sorted_keys) -> Result:
        key, _, what = stop
        parent = key >> SH
        level_end = self.level0 + self.nlevel
        if what == "deadlock":
            before = int(np.searchsorted(sorted_keys, key, side="left"))
            gen = sum(self.b.call("count_keys", lambda i: (key, False)))
            st = self.stats((level_end - parent - 1) + before, self.n + before, self.generated + gen,
                            self.depth + 1 if before else self.maxd)
            fp = [x for x in self.b.call("entry_by_gid", lambda i: (parent,)) if x is not None][0][0]
            return deadlock(self.m, self.chain, fp, st)
        gen = sum(self.b.call("count_keys", lambda i: (key, True)))
        if what == "max_states":
            r = self.ms - self.n
            st = self.stats((level_end - parent - 1) + r, self.ms, self.generated + gen,
                            self.depth + 1 if r else self.maxd)
            return bounded(st, "max_states", self.max_states)
        _, kind, msg = what
        incl = int(np.searchsorted(sorted_keys, key, side="right"))
        st = self.stats((level_end - parent - 1) + incl - 1, self.n + incl, self.generated + gen, self.depth + 1)
        own = self.b.call("entry_by_gid", lambda i: (self.n + incl - 1,))
        fp = [x for x in own if x is not None][0][0]
        return violation(self.m, self.chain, fp, kind, msg, st)

    def _finish(self) -> Result:
        stats = self.stats(0)
        if getattr(self, "any_cut", False):
            return bounded(stats, "max_depth", self.max_depth)
        if self.check_livelock:
            got = self.b.call("edges_all", lambda i: ())
            keys = np.concatenate([g[0] for g in got])
            dst = np.concatenate([g[1] for g in got])
            if keys.size:
                order = np.argsort(keys, kind="stable")
                src = (keys[order] >> SH).astype(np.int32)
                dst = dst[order].astype(np.int32)
                n = self.n
                ofs = np.searchsorted(src, np.arange(n + 1, dtype=np.int32)).astype(np.int32)
                comp, left = _acyclic_part(n, ofs, dst)
                entry = int(_scc(n, ofs, dst, comp)) if left else -1
                if entry >= 0:
                    cycle = [int(x) for x in _cycle(n, ofs, dst, comp, entry)]
                    fps: dict[int, int] = {}
                    for part in self.b.call("fps_of", lambda i: ([entry] + cycle,)):
                        fps.update(part)
                    return livelock_result(self.m, self.chain, fps[entry], [fps[x] for x in cycle],
                                           self.stats(0))
        return passed(stats)

    def _save(self) -> None:
        cp = self.cp
        tag = self.depth
        files: dict[str, str] = {}
        for got in self.b.call("save", lambda i: (cp.dir, tag, Checkpoint.stamp_of(cp.identity))):
            files.update(got)
        cp.commit(tag, files=files, info={"distinct": self.n, "generated": self.generated, "max_depth": self.maxd,
                        "level0": self.level0, "nlevel": self.nlevel, "depth": self.depth,
                        "any_cut": bool(getattr(self, "any_cut", False))})
