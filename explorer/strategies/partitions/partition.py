"""One hash partition of a partitioned exploration (`strategies/partitions/driver.py`):
its part of the fingerprint table, of the frontier and of the
non-progress edges, the order keys of successors, and the walk that
stores a level's first occurrences. The same class runs in this process
and as a Ray actor."""

from __future__ import annotations

import os
import pickle

import numpy as np
from numba import njit

from explorer.errors import PartitionError, RayUnavailable, WorkerLost
from explorer.model import CHECK, DONE, LIMITS, NOTES, PROGRESS, ROWS, has
from explorer.stores.flat import _find, _Store
from explorer.strategies.arrays.narrow import Packed
from explorer.strategies.partitions.checkfile import unresumable

__all__ = ["Partition", "WorkerLost", "RayUnavailable", "PartitionError", "owner_of", "SH", "CHUNK"]

SH = 24  # bits of a successor's rank in its order key
CHUNK = 4096


def owner_of(fps: np.ndarray, k: int) -> np.ndarray:
    """The partition of each fingerprint: its high word modulo k (the table
    probes from the low bits, which stay spread within a partition)."""
    return ((fps >> np.uint64(32)) % np.uint64(k)).astype(np.int64)


@njit(cache=True, nogil=True)
def _merge_walk(order, got, table, n0, cut_level, livelock, out):
    """Walk received successors in key order against the table: returns
    (stored, edges, cut, new). Grouped: `got` (keys, fps, flags, acts), the
    successors received; `table` (tab, fparr, parents, actions); `out`
    (e_key, e_dst, out_new), what the walk writes."""
    (keys, fps, flags, acts), (tab, fparr, parents, actions), (e_key, e_dst, out_new) = got, table, out
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

    # -- what the driver asks of the partition class ----------------------------
    @staticmethod
    def initial(m):
        """(rows, fingerprints, flags, state of index) of the initial states."""
        rows, fps, flags = m.array_initial()
        return rows, fps, flags, lambda i: m.array_state(rows[i])

    @staticmethod
    def take(items, idx) -> np.ndarray:
        return np.asarray(items)[idx]

    owner = staticmethod(owner_of)

    def start(self, factory, index: int, k: int, livelock: bool, deadlock_check: bool) -> tuple[int, str]:
        if isinstance(factory, bytes):  # pickled by the driver: arrays in it arrive writable
            factory = pickle.loads(factory)
        self.m = factory()
        if not has(self.m, ROWS):
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

    def notes(self) -> list:
        """What this partition's model noted beside the verdict (`notes`, a
        list a model may keep: the first stuck session under `completes`),
        for the driver to gather from other processes."""
        return list(self.m.notes) if has(self.m, NOTES) else []

    def set_limits(self, limits) -> None:
        """The run's time and memory limits (`explorer.runtime.limits.Limits`),
        checked between two chunks of a level and inside the model's
        expansions; a partition in this process only (a Ray actor is
        stopped between levels)."""
        self.limits = limits
        if has(self.m, LIMITS):
            self.m.set_limits(limits)

    def _check(self) -> None:
        if getattr(self, "limits", None) is not None:
            self.limits.check()

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
            self._check()
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
        self._check()
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
        n1, ne, ncut, nn = _merge_walk(order, (keys, fps, flags, acts),
                                       (self.st.tab, self.st.fp, self.st.parent, self.st.action), self.n, cut_level,
                                       self.livelock, (e_key, e_dst, out_new))
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
        return self._edges_of(self.edges)

    # -- checkpoints -----------------------------------------------------------
    def save(self, directory: str, tag: int, stamp: dict) -> dict[str, str]:
        """Write the states and edges committed since the last save and the
        frontier (checkfile.py: numpy arrays behind a header, each file
        written then renamed); returns {file name: checksum}. `stamp`: the
        run's instance and serq version for the headers."""
        from explorer.strategies.partitions.checkfile import frontier_arrays, write_arrays
        from explorer.strategies.partitions.checkpoint import file_name

        a, b = self.n_saved, self.n_committed
        st = self.st
        keys, dst = self._edges_of(self.edges[self.edges_saved:])
        states = {"fp": st.fp[a:b], "parent": st.parent[a:b], "action": st.action[a:b], "ids": self.gid[a:b],
                  "edge_keys": keys, "edge_ids": dst}
        out = {}
        for kind, arrays in (("states", states), ("frontier", frontier_arrays(self.frontier))):
            name = file_name(kind, self.index, tag)
            out[name] = write_arrays(os.path.join(directory, name),
                                     {**stamp, "kind": kind, "partition": self.index, "level": tag}, arrays)
        self.n_saved, self.edges_saved = b, len(self.edges)
        return out

    @staticmethod
    def _edges_of(edges: list):
        if not edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate([e[0] for e in edges]), np.concatenate([e[1] for e in edges])

    def load(self, directory: str, tags: list[int], saved: bool, stamp: dict, files: dict[str, str],
             distinct: int) -> int:
        """Rebuild this partition from the files of a checkpoint, each
        checked (checkfile.py; `files`: the manifest's checksums, `distinct`:
        its state count); returns the states loaded. `saved`: they are in
        the directory the run goes on saving to (else the next save writes
        them all). CheckpointError for a file that does not fit."""
        from explorer.strategies.partitions.checkfile import frontier_of, read_arrays
        from explorer.strategies.partitions.checkpoint import file_name
        from explorer.stores.flat import _rehash

        def read(kind: str, t: int):
            name = file_name(kind, self.index, t)
            path = os.path.join(directory, name)
            got = read_arrays(path, {**stamp, "kind": kind, "partition": self.index, "level": t}, files.get(name))
            return path, got

        parts, edges = [], []
        for t in tags:
            path, s = read("states", t)
            _check_states(path, s, distinct)
            parts.append(s)
            if s["edge_keys"].size:
                edges.append((s["edge_keys"], s["edge_ids"]))
        ids = np.concatenate([p["ids"] for p in parts]) if parts else np.zeros(0, np.int64)
        if ids.size > 1 and not (np.diff(ids) > 0).all():
            raise unresumable(os.path.join(directory, file_name("states", self.index, tags[-1])),
                              "its state ids are not in increasing order")
        n = len(ids)
        self._reserve(n)
        st = self.st
        for name, arr in (("fp", st.fp), ("parent", st.parent), ("action", st.action)):
            arr[:n] = np.concatenate([p[name] for p in parts]) if parts else []
        self.gid[:n] = ids
        st.tab = _rehash(st.tab, st.fp, n, st.tab.shape[0])
        self.n = self.n_committed = n
        self.n_saved = n if saved else 0
        self.edges = edges
        self.edges_saved = len(edges) if saved else 0
        path, fr = read("frontier", tags[-1])
        width = np.asarray(self.m.array_initial()[0]).shape[1]
        self.frontier = frontier_of(fr, width, lambda why: unresumable(path, why))
        for _, _, g in self.frontier:
            if g.size and (g.min() < 0 or g.max() >= distinct):
                raise unresumable(path, "a frontier state's id is out of range")
        return n




_STATES = {"fp": np.uint64, "parent": np.int32, "action": np.int32, "ids": np.int64, "edge_keys": np.int64,
           "edge_ids": np.int64}


def _check_states(path: str, s: dict, distinct: int) -> None:
    """The arrays of a states file: their names, types and lengths, ids and
    parents within the run's count."""
    if set(s) != set(_STATES) or any(s[k].dtype != np.dtype(t) or s[k].ndim != 1 for k, t in _STATES.items()):
        raise unresumable(path, "its arrays are not those of a states file")
    n, e = s["fp"].shape[0], s["edge_keys"].shape[0]
    if any(s[k].shape[0] != n for k in ("parent", "action", "ids")) or s["edge_ids"].shape[0] != e:
        raise unresumable(path, "its arrays have different lengths")
    for k, lo in (("ids", 0), ("parent", -1), ("edge_ids", 0)):
        if s[k].size and (s[k].min() < lo or s[k].max() >= distinct):
            raise unresumable(path, f"a value of `{k}` is out of range")
    if (s["edge_keys"] < 0).any() or (s["action"] < 0).any():
        raise unresumable(path, "a negative key or action")
