"""Level-synchronous BFS over hash partitions of the state space, in this
process or on a Ray cluster, with the results of the sequential array
engine (`arrays.py`): the same verdict, counts, queue figure, depth,
shortest trace and replay path.

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

Ray is imported only when a Ray cluster is asked for."""

from __future__ import annotations

import os
import pickle
import time
from typing import Any, Callable

import numpy as np
from numba import njit

from .arrays import CHECK, DONE, PROGRESS, ArrayFallback, _acyclic_part, _cycle, _scc
from .flat_store import _find, _Store
from .arrays_narrow import Packed
from .memory import MemoryGuard, mib
from .model import build_model
from .interrupt import interrupt_of
from .outcome import bounded, deadlock, interrupted, livelock_result, passed, violation
from .result import Result, Stats

__all__ = ["partitioned_check", "WorkerLost", "RayUnavailable", "PartitionError", "owner_of"]

SH = 24  # bits of a successor's rank in its order key
LOCAL_STORE = 256 * 2**20  # object store of a private Ray instance (`--ray local`), bytes
CHUNK = 4096


class WorkerLost(RuntimeError):
    """A partition's worker died or its node left: the run cannot go on."""


class RayUnavailable(RuntimeError):
    """Ray is not installed (it is an optional dependency)."""


class PartitionError(RuntimeError):
    """The partitioned engine cannot run this model (e.g. rows must grow)."""


def owner_of(fps: np.ndarray, k: int) -> np.ndarray:
    """The partition of each fingerprint: its high word modulo k (the table
    probes from the low bits, which stay spread within a partition)."""
    return ((fps >> np.uint64(32)) % np.uint64(k)).astype(np.int64)


@njit(cache=True, nogil=True)
def _merge_walk(order, keys, fps, flags, acts, tab, fparr, parents, actions, n0, cut_level, livelock,
                e_key, e_dst, out_new):
    """Walk received successors in key order against the table: returns
    (stored, edges, cut, new)."""
    n = n0
    ne = 0
    ncut = 0
    nn = 0
    for t in range(order.shape[0]):
        p = order[t]
        fp = fps[p]
        sid, slot = _find(tab, fparr, fp)
        if sid >= 0:
            if livelock and (flags[p] & PROGRESS) == 0:
                e_key[ne] = keys[p]
                e_dst[ne] = sid
                ne += 1
            continue
        if cut_level:
            ncut += 1
            continue
        fparr[n] = fp
        tab[slot] = n
        parents[n] = keys[p] >> SH
        actions[n] = acts[p]
        out_new[nn] = p
        nn += 1
        if livelock and (flags[p] & PROGRESS) == 0:
            e_key[ne] = keys[p]
            e_dst[ne] = n
            ne += 1
        n += 1
    return n, ne, ncut, nn


# ---------------------------------------------------------------- a partition


class Partition:
    """One hash partition: its part of the table, of the frontier and of the
    non-progress edges. The same class runs in this process and as a Ray
    actor; `start` sets it up for a run (an actor serves several runs)."""

    def __init__(self) -> None:
        self.m = None

    def start(self, factory, index: int, k: int, livelock: bool, deadlock_check: bool) -> tuple[int, str]:
        if isinstance(factory, bytes):  # pickled by the driver: arrays in it arrive writable
            factory = pickle.loads(factory)
        self.m = factory()
        if not hasattr(self.m, "array_expand"):
            raise PartitionError("the model does not offer the array protocol")
        self.index, self.k = index, k
        self.livelock, self.deadlock_check = livelock, deadlock_check
        self.st = _Store()
        self.gid = np.zeros(self.st.cap, np.int64)
        self.n = 0  # states stored
        self.n_committed = 0  # states with their global id
        self.n_saved = 0  # states written to the checkpoint
        self.frontier: list = []  # (Packed rows, done int8, ids int64)
        self.edges: list = []  # (keys, destination ids), committed, in key order
        self.edges_saved = 0
        self.pending = None
        self.level_keys = np.zeros(0, np.int64)
        import socket

        return os.getpid(), socket.gethostname()

    def pid(self) -> int:
        return os.getpid()

    # -- seeding and lookups ---------------------------------------------------
    def seed(self, rows, fps, flags, gids, actions) -> None:
        """Initial states owned here (already deduplicated, in id order);
        an initial state's action is its index among the initial states."""
        n = len(fps)
        self._reserve(n)
        for i in range(n):
            sid, slot = _find(self.st.tab, self.st.fp, np.uint64(fps[i]))
            self.st.fp[self.n] = fps[i]
            self.st.tab[slot] = self.n
            self.st.parent[self.n] = -1
            self.st.action[self.n] = actions[i]
            self.gid[self.n] = gids[i]
            self.n += 1
        self.n_committed = self.n
        if n:
            self.frontier = [(Packed(np.asarray(rows, np.int64)), (np.asarray(flags) & DONE).astype(np.int8),
                              np.asarray(gids, np.int64))]

    def _reserve(self, more: int) -> None:
        self.st.reserve(self.n, more)
        if self.gid.shape[0] < self.st.cap:
            g = np.zeros(self.st.cap, np.int64)
            g[: self.n] = self.gid[: self.n]
            self.gid = g

    def entry_by_fp(self, fp: int):
        i = self.st.id_of(fp)
        if i < 0:
            return None
        return int(self.gid[i]), int(self.st.parent[i]), int(self.st.action[i])

    def entry_by_gid(self, g: int):
        i = int(np.searchsorted(self.gid[: self.n_committed], g))
        if i < self.n_committed and self.gid[i] == g:
            return int(self.st.fp[i]), int(self.st.parent[i]), int(self.st.action[i])
        return None

    def fps_of(self, gids):
        """{id: fingerprint} of the given ids that are stored here."""
        g = np.asarray(gids, np.int64)
        idx = np.searchsorted(self.gid[: self.n_committed], g)
        ok = idx < self.n_committed
        ok[ok] = self.gid[idx[ok]] == g[ok]
        return {int(a): int(self.st.fp[i]) for a, i in zip(g[ok], idx[ok])}

    def count_keys(self, key: int, inclusive: bool) -> int:
        """Successors received this level whose key is below (or at) key."""
        return int(np.searchsorted(self.level_keys, key, side="right" if inclusive else "left"))

    def frontier_size(self) -> int:
        return sum(b[0].n for b in self.frontier)

    # -- a level ---------------------------------------------------------------
    def expand(self, depth: int):
        """(summary, bundle for partition 0, ..., bundle for partition k-1);
        the summary: (successors, first parent without one or -1)."""
        m, k = self.m, self.k
        out: list[list] = [[] for _ in range(k)]
        nsucc = 0
        dead = -1
        for rows, done, gids in self._chunks():
            succ, parent, act, fps, flags = m.array_expand(rows)
            nk = len(fps)
            nrows = rows.shape[0]
            if self.deadlock_check:
                counts = np.bincount(parent[:nk], minlength=nrows) if nk else np.zeros(nrows, np.int64)
                dl = gids[(counts == 0) & (done == 0)]
                if dl.size and (dead < 0 or int(dl.min()) < dead):
                    dead = int(dl.min())
            if nk == 0:
                continue
            nsucc += nk
            parent = np.asarray(parent[:nk], np.int64)
            idx = np.arange(nk, dtype=np.int64) - np.searchsorted(parent, parent)
            if int(idx.max()) >= 1 << SH:
                raise PartitionError(f"a state has more than {1 << SH} successors")
            keys = (gids[parent] << SH) | idx
            own = owner_of(fps[:nk], k) if k > 1 else np.zeros(nk, np.int64)
            for d in range(k):
                sel = np.nonzero(own == d)[0] if k > 1 else slice(None)
                if k > 1 and sel.size == 0:
                    continue
                out[d].append((Packed(np.asarray(succ[:nk][sel])), keys[sel], np.array(fps[:nk][sel], np.uint64),
                               np.asarray(flags[:nk][sel]).astype(np.int8), np.asarray(act[:nk][sel], np.int32)))
        self.frontier = []
        return [(nsucc, dead)] + out

    def _chunks(self):
        """The frontier in chunks of about CHUNK rows (blocks joined), each
        block freed once taken."""
        buf_r, buf_d, buf_g, size = [], [], [], 0
        fr = self.frontier
        fr.reverse()
        while fr:
            block, done, gids = fr.pop()
            for a in range(0, block.n, CHUNK):
                b = min(a + CHUNK, block.n)
                buf_r.append(block.rows(a, b))
                buf_d.append(done[a:b])
                buf_g.append(gids[a:b])
                size += b - a
                if size >= CHUNK:
                    yield np.concatenate(buf_r), np.concatenate(buf_d), np.concatenate(buf_g)
                    buf_r, buf_d, buf_g, size = [], [], [], 0
        if size:
            yield np.concatenate(buf_r), np.concatenate(buf_d), np.concatenate(buf_g)

    def merge(self, depth: int, cut_level: bool, *bundles):
        """Store the first occurrence of every new state among the received
        successors (walked in key order); returns (keys of the new states,
        first violation as (key, kind, message) or None, successors
        received, successors cut by the depth bound)."""
        pieces = [p for b in bundles for p in b]
        if pieces:
            keys = np.concatenate([p[1] for p in pieces])
            fps = np.concatenate([p[2] for p in pieces])
            flags = np.concatenate([p[3] for p in pieces])
            acts = np.concatenate([p[4] for p in pieces])
            piece_of = np.repeat(np.arange(len(pieces)), [len(p[1]) for p in pieces])
            starts = np.cumsum([0] + [len(p[1]) for p in pieces])
        else:
            keys = np.zeros(0, np.int64)
            fps = np.zeros(0, np.uint64)
            flags = np.zeros(0, np.int8)
            acts = np.zeros(0, np.int32)
            piece_of = np.zeros(0, np.int64)
            starts = np.zeros(1, np.int64)
        order = np.argsort(keys, kind="stable")
        self.level_keys = keys[order]
        total = len(keys)
        self._reserve(total)
        e_key = np.zeros(max(total, 1), np.int64)
        e_dst = np.zeros(max(total, 1), np.int64)
        out_new = np.zeros(max(total, 1), np.int64)
        n1, ne, ncut, nn = _merge_walk(order, keys, fps, flags, acts, self.st.tab, self.st.fp, self.st.parent,
                                       self.st.action, self.n, cut_level, self.livelock, e_key, e_dst, out_new)
        self.n = int(n1)
        newpos = out_new[:nn]
        bad = None
        for p in newpos[(flags[newpos] & CHECK) != 0]:
            pc = pieces[piece_of[p]][0]
            off = int(p - starts[piece_of[p]])
            row = pc.rows(off, off + 1)[0]
            found = self.m.invariants(self.m.array_state(row))
            if found:
                bad = (int(keys[p]), str(found[0][0]), str(found[0][1]))
                break
        self.pending = (pieces, piece_of, starts, newpos, flags, e_key[:ne].copy(), e_dst[:ne].copy())
        return keys[newpos], bad, total, int(ncut)

    def commit(self, gids, build_frontier: bool) -> None:
        """The global ids of the states stored by the last merge (in key
        order); with build_frontier, they become the next frontier."""
        pieces, piece_of, starts, newpos, flags, e_key, e_dst = self.pending
        self.pending = None
        gids = np.asarray(gids, np.int64)
        self.gid[self.n_committed: self.n] = gids
        self.n_committed = self.n
        if e_key.size:
            self.edges.append((e_key, self.gid[e_dst]))
        if not build_frontier or newpos.size == 0:
            return
        which = piece_of[newpos]
        by_piece = np.argsort(which, kind="stable")
        bounds = np.searchsorted(which[by_piece], np.arange(len(pieces) + 1))
        for pi in range(len(pieces)):
            sel = by_piece[bounds[pi]: bounds[pi + 1]]
            if sel.size == 0:
                continue
            pc = pieces[pi][0]
            offs = newpos[sel] - starts[pi]
            rows = pc.rows(0, pc.n)[offs]
            self.frontier.append((Packed(rows), (flags[newpos[sel]] & DONE).astype(np.int8), gids[sel]))

    def edges_all(self):
        if not self.edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate([e[0] for e in self.edges]), np.concatenate([e[1] for e in self.edges])

    # -- checkpoints -----------------------------------------------------------
    def save(self, directory: str, tag: int) -> None:
        """Write the states and edges committed since the last save and the
        frontier, each file written then renamed."""
        a, b = self.n_saved, self.n_committed
        st = self.st
        states = (st.fp[a:b].copy(), st.parent[a:b].copy(), st.action[a:b].copy(), self.gid[a:b].copy())
        edges = self.edges[self.edges_saved:]
        _dump(os.path.join(directory, f"states-{self.index}-{tag}.pkl"), (states, edges))
        _dump(os.path.join(directory, f"frontier-{self.index}-{tag}.pkl"), self.frontier)
        self.n_saved, self.edges_saved = b, len(self.edges)

    def load(self, directory: str, tags: list[int], saved: bool = True) -> int:
        """Rebuild this partition from the files of a checkpoint; returns
        the states loaded. `saved`: they are in the directory the run goes
        on saving to (else the next save writes them all)."""
        parts, edges = [], []
        for t in tags:
            with open(os.path.join(directory, f"states-{self.index}-{t}.pkl"), "rb") as f:
                s, e = pickle.load(f)
            parts.append(s)
            edges.extend(e)
        fp = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint64)
        n = len(fp)
        self._reserve(n)
        st = self.st
        st.fp[:n] = fp
        st.parent[:n] = np.concatenate([p[1] for p in parts]) if parts else []
        st.action[:n] = np.concatenate([p[2] for p in parts]) if parts else []
        self.gid[:n] = np.concatenate([p[3] for p in parts]) if parts else []
        from .flat_store import _rehash

        st.tab = _rehash(st.tab, st.fp, n, st.tab.shape[0])
        self.n = self.n_committed = n
        self.n_saved = n if saved else 0
        self.edges = edges
        self.edges_saved = len(edges) if saved else 0
        with open(os.path.join(directory, f"frontier-{self.index}-{tags[-1]}.pkl"), "rb") as f:
            self.frontier = pickle.load(f)
        return n


def _dump(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=5)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------- backends


class _Local:
    """Partitions as objects of this process."""

    name = "local"

    def __init__(self, k: int) -> None:
        self.k = k
        self.parts = [Partition() for _ in range(k)]

    def call(self, method: str, args_of: Callable[[int], tuple]) -> list:
        return [getattr(p, method)(*args_of(i)) for i, p in enumerate(self.parts)]

    def level(self, depth: int, cut: bool):
        outs = [p.expand(depth) for p in self.parts]
        merged = [p.merge(depth, cut, *[outs[s][1 + d] for s in range(self.k)]) for d, p in enumerate(self.parts)]
        return [o[0] for o in outs], merged

    def close(self, failed: bool = False) -> None:
        self.parts = []


_POOL: dict[int, list] = {}  # Ray actors kept for the next run of this process, by partition count


class _Ray:
    """Partitions as Ray actors (on whichever nodes Ray places them)."""

    name = "ray"

    def __init__(self, k: int, address: str) -> None:
        self.ray = connect(address)
        self.k = k
        actors = _POOL.pop(k, None)
        if actors is None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            remote = self.ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(Partition)
            # partition i on node i modulo the nodes alive now (hard: a soft placement
            # falls back to another node whenever this one answers late, which
            # happens on a loaded machine; a node gone since is a lost worker)
            nodes = sorted(n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
            actors = [remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                nodes[i % len(nodes)], soft=False)).remote() if nodes else remote.remote() for i in range(k)]
        self.actors = actors

    def _get(self, refs):
        ray = self.ray
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise
        except ray.exceptions.RayError as e:
            raise WorkerLost(self._who(e)) from None

    def _who(self, e) -> str:
        dead = getattr(e, "actor_id", None)
        for i, a in enumerate(self.actors):
            if dead is not None and a._actor_id.hex() == dead:
                return f"partition {i} of {self.k} was lost ({type(e).__name__})"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"a partition's worker was lost ({type(e).__name__}{': ' + first if first else ''})"

    def call(self, method: str, args_of: Callable[[int], tuple]) -> list:
        if method == "start":
            blob = self.ray.cloudpickle.dumps(args_of(0)[0])
            args_of = (lambda f: lambda i: (blob,) + f(i)[1:])(args_of)
        return self._get([getattr(a, method).remote(*args_of(i)) for i, a in enumerate(self.actors)])

    def level(self, depth: int, cut: bool):
        k = self.k
        outs = [a.expand.options(num_returns=k + 1).remote(depth) for a in self.actors]
        merged = [a.merge.remote(depth, cut, *[outs[s][1 + d] for s in range(k)]) for d, a in enumerate(self.actors)]
        return self._get([o[0] for o in outs]), self._get(merged)

    def close(self, failed: bool = False) -> None:
        if failed:
            for a in self.actors:
                try:
                    self.ray.kill(a)
                except Exception:
                    pass
        else:
            _POOL[self.k] = self.actors
        self.actors = []


def connect(address: str):
    """Ray, connected: to the cluster at `address` ("auto": the one running
    on this machine), or to a private one started here ("local"). An
    existing connection of this process is used as it is."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed") from None
    if ray.is_initialized():
        now = ray.get_runtime_context().gcs_address
        if address not in ("auto", "local", now):
            raise ConnectionError(f"this process is connected to the Ray cluster at {now}, not {address}")
        return ray
    import logging

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}
    if address == "local":
        ray.init(num_cpus=os.cpu_count() or 1, object_store_memory=LOCAL_STORE, include_dashboard=False,
                 logging_level=logging.WARNING, runtime_env=env)
    else:
        _probe(address)
        ray.init(address=address, logging_level=logging.WARNING, runtime_env=env)
    return ray


def _probe(address: str) -> None:
    """ConnectionError, at once, when nothing listens at the cluster's
    address (Ray itself would retry for minutes)."""
    import socket

    target = address
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address("auto")
        except Exception as e:  # no cluster started on this machine
            raise ConnectionError(f"no Ray cluster runs on this machine ({e}); start one with `ray start --head`") \
                from None
        if target is None:
            raise ConnectionError("no Ray cluster runs on this machine; start one with `ray start --head`")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"{address!r} is not a Ray cluster address (HOST:PORT, auto or local)")
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise ConnectionError(f"nothing answers at {target} ({e.strerror or e})") from None


# ---------------------------------------------------------------- the driver


def partitioned_check(model: Any, *, partitions: int | None = None, ray: str | None = None,
                      max_states: int | None = None, max_depth: int | None = None,
                      time_limit: float | None = None, check_deadlock: bool = True, check_livelock: bool = True,
                      progress: Callable | None = None, progress_interval: float = 1.0,
                      memory_limit: int | None = None, checkpoint: str | None = None,
                      resume: str | None = None, identity: dict | None = None) -> Result:
    """The sequential array engine's result, computed by `partitions` hash
    partitions in this process (`ray` None) or as Ray actors (`ray`: a
    cluster address, "auto" or "local"). `checkpoint`: a directory to write
    the run into at each level boundary; `resume`: a directory to continue
    from (the same run: `identity` -- what the caller knows of the model --
    and the search flags must match). Raises WorkerLost when a partition's
    worker is lost, CheckpointError for a checkpoint that does not fit."""
    from .checkpoint import Checkpoint

    if partitions is not None and partitions < 1:
        raise ValueError("partitions must be >= 1")
    m, factory = build_model(model)
    flags = {"max_states": max_states, "max_depth": max_depth, "deadlock": check_deadlock,
             "livelock": check_livelock}
    ident = {"model": dict(identity or {}), "search": flags}
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
    backend = _Ray(partitions, ray) if ray is not None else _Local(partitions)
    failed = True
    try:
        r = _Driver(m, factory, backend, max_states, max_depth, time_limit, check_deadlock, check_livelock,
                    progress, progress_interval, MemoryGuard(memory_limit), cp, state).run()
        failed = False
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
        backend.close(failed=failed)


class _Driver:
    def __init__(self, m, factory, backend, max_states, max_depth, time_limit, check_deadlock, check_livelock,
                 progress, progress_interval, memory, cp, state) -> None:
        self.m, self.factory, self.b = m, factory, backend
        self.k = backend.k
        self.ms = -1 if max_states is None else max_states
        self.md = -1 if max_depth is None else max_depth
        self.max_states, self.max_depth, self.time_limit = max_states, max_depth, time_limit
        self.check_deadlock, self.check_livelock = check_deadlock, check_livelock
        self.progress, self.interval = progress, progress_interval
        self.memory, self.cp, self.state = memory, cp, state
        self.t0 = time.perf_counter()
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
        own = int(owner_of(np.array([fp], np.uint64), self.k)[0])
        e = self.b.call("entry_by_fp", lambda i: (fp,))[own]
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
        try:
            return self._run()
        except (KeyboardInterrupt, SystemError) as e:
            return interrupted(self.stats(self.queue), interrupt_of(e))
        except MemoryError:
            return bounded(self.stats(self.queue), "memory", "MemoryError")

    def _initial(self) -> Result | None:
        """The initial states, as the sequential engine takes them."""
        m = self.m
        rows, fps, flags = m.array_initial()
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
                bad = m.invariants(m.array_state(rows[i]))
                if bad:
                    chain = {fp: [(fp, i)]}
                    return violation(m, chain.__getitem__, fp, bad[0][0], bad[0][1], self.stats(len(keep) - 1))
        keep_a = np.array(keep, np.int64)
        own = owner_of(np.asarray(fps, np.uint64)[keep_a], self.k) if keep else np.zeros(0, np.int64)
        gids = np.arange(len(keep), dtype=np.int64)

        def args(d):
            sel = own == d
            return (np.asarray(rows)[keep_a[sel]], np.asarray(fps, np.uint64)[keep_a[sel]],
                    np.asarray(flags)[keep_a[sel]], gids[sel], keep_a[sel])

        self.b.call("seed", args)
        self.level0, self.nlevel, self.depth = 0, len(keep), 0
        return None

    def _run(self) -> Result:
        b = self.b
        if self.state is not None:
            s = self.state
            same = self.cp is not None and self.cp.dir == s["dir"]
            b.call("load", lambda i: (s["dir"], s["tags"], same))
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
        self.b.call("save", lambda i: (cp.dir, tag))
        cp.commit(tag, {"distinct": self.n, "generated": self.generated, "max_depth": self.maxd,
                        "level0": self.level0, "nlevel": self.nlevel, "depth": self.depth,
                        "any_cut": bool(getattr(self, "any_cut", False))})
