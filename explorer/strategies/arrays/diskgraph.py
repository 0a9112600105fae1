"""The disk mode's non-progress edges (`arrays/disk.py`), for the livelock
check: written to files as the search goes, built into the in-memory
engine's graph (the same ids, the same edges in the same order) once it
is over, and searched by the same compiled passes (`graph/cycles.py`).

During the search (`EdgeFiles.append`, after each chunk's walk): each
state's count of non-progress edges (4 bytes, in id order) and each
edge's target fingerprint (8 bytes, sources in id order): the table of
fingerprints gives no id, and nothing in RAM grows with the edges.

After it (`EdgeFiles.graph`, the table of fingerprints dropped first):
the targets are resolved to ids a bucket of fingerprints at a time
(`_resolve`: the states' (fingerprint, id) and the edges' (fingerprint,
position) written to files by the fingerprints' top bits, then each
bucket's states put in a hash table and its edges looked up in it), into
a file of the edges' target ids (int32); the offsets, from the counts,
into another. Both are memory-mapped: the passes read them
through the page cache, so RAM holds only what the passes allocate per
state (`_acyclic_part`'s and `_scc`'s 4 bytes; when a livelock is found,
`_cycle_within`'s 13 bytes a state of its component) and a bucket at a
time (at most about 160 MiB). A search that began in memory
(`moved`) writes the edges it has, already ids, as the first ones.

Liveness under fairness (`check eventually`, `FairFiles`): every edge is
written, not only the non-progress ones, and beside it its byte (its
fairness class, bit 7 on a progress edge: `fairrec.FairRecord`'s), with
each state's mask of waiting subjects (8 bytes, id order); once the graph
is made, the livelock pass runs over its non-progress edges
(`_nonprogress`, into two more memory-mapped files), and the fair pass
(`graph/fair.py`) over the whole graph, the bytes and the masks, all
memory-mapped."""

from __future__ import annotations

import os

import numpy as np
from numba import njit

__all__ = ["EdgeFiles", "FairFiles", "BUCKET", "nonprogress"]

BUCKET = 1 << 21  # states hashed at once when the edges' targets are resolved (a table of at most 64 MiB)
MAX_BUCKETS = 256  # (two files each, open at once: past 256 x BUCKET states, the buckets grow instead)
STEP = 1 << 20  # records read from a file at once
I32 = 2**31 - 1


class EdgeFiles:
    """The edge files of a run, in its directory `d` (removed with it)."""

    def __init__(self, d: str) -> None:
        self.d = d
        self.cnt = open(os.path.join(d, "ecount"), "w+b")  # int32 per state, id order
        self.tgt = open(os.path.join(d, "etarget"), "w+b")  # uint64 per edge (a fingerprint), sources in id order
        self.n = 0  # states whose counts are written
        self.e0 = 0  # edges written as ids (`moved`), before those in `tgt`
        self.e1 = 0  # edges written as fingerprints

    def append(self, counts: np.ndarray, targets: np.ndarray) -> None:
        """The counts of the next len(counts) states and their edges' targets."""
        self.cnt.write(np.ascontiguousarray(counts, np.int32).tobytes())
        self.tgt.write(np.ascontiguousarray(targets, np.uint64).tobytes())
        self.n += counts.shape[0]
        self.e1 += targets.shape[0]

    def moved(self, counts: np.ndarray, dst: np.ndarray) -> None:
        """The edges of the in-memory engine's search, before any other:
        each state's count and the targets' ids."""
        assert self.n == 0 and self.e1 == 0
        self.append(counts, np.zeros(0, np.uint64))
        with open(os.path.join(self.d, "edst"), "wb") as f:
            f.write(np.ascontiguousarray(dst, np.int32).tobytes())
        self.e0 = dst.shape[0]

    @property
    def edges(self) -> int:
        return self.e0 + self.e1

    def graph(self, n: int, fps_path: str):
        """(n, the first edge of each state, the edges' target ids), memory-mapped."""
        assert self.n == n, (self.n, n)
        self.cnt.flush()
        self.tgt.close()  # (its file is removed once read: `_resolve`)
        E = self.edges
        wide = np.int64 if max(n, E) > I32 else np.int32  # (ids and edges past 2^31: another compiled specialization)
        path = os.path.join(self.d, "edst")
        with open(path, "ab") as f:
            f.truncate(E * np.dtype(wide).itemsize)
        if wide is np.int64 and self.e0:  # (the moved prefix was written as int32)
            pre = np.fromfile(path, np.int32, self.e0)
            with open(path, "r+b") as f:
                f.write(pre.astype(np.int64).tobytes())
        dst = _mapped(path, wide, E)
        _resolve(self.d, fps_path, n, self.tgt.name, self.e1, dst[self.e0:])
        dst.flush()
        ofs = _mapped(os.path.join(self.d, "eofs"), wide, n + 1)
        ofs[0] = 0
        at, total = 0, 0
        while at < n:
            c = np.fromfile(self.cnt.name, np.int32, min(STEP, n - at), offset=4 * at).astype(np.int64)
            cs = np.cumsum(c) + total
            ofs[at + 1: at + 1 + c.shape[0]] = cs
            total = int(cs[-1])
            at += c.shape[0]
        assert total == E, (total, E)
        ofs.flush()
        return n, ofs.view(np.ndarray), dst.view(np.ndarray)

    def close(self) -> None:
        for f in (self.cnt, self.tgt):  # (closing a closed file does nothing)
            try:
                f.close()
            except OSError:
                pass


class FairFiles:
    """What liveness under fairness needs beside the edges (`EdgeFiles`,
    which then hold every edge): each edge's byte and each state's mask of
    waiting subjects, in files of the run's directory `d`."""

    def __init__(self, d: str) -> None:
        self.d = d
        self.cls = open(os.path.join(d, "eclass"), "w+b")  # uint8 per edge, in the order of `EdgeFiles`
        self.wait = open(os.path.join(d, "ewait"), "w+b")  # uint64 per state, id order
        self.nedges = 0
        self.n = 0

    def edges(self, flags: np.ndarray, fps: np.ndarray, cut: np.ndarray) -> None:
        """A walked chunk's edges (`FairRecord.edge_bytes`)."""
        from explorer.strategies.arrays.fairrec import FairRecord

        b = FairRecord.edge_bytes(flags, fps, cut)
        self.cls.write(b.tobytes())
        self.nedges += b.shape[0]

    def states(self, masks: np.ndarray) -> None:
        """The waiting masks of the next len(masks) states."""
        self.wait.write(np.ascontiguousarray(masks, np.uint64).tobytes())
        self.n += masks.shape[0]

    def moved(self, rec, n: int) -> None:
        """The in-memory engine's record (`FairRecord`) of states 0..n-1,
        before any other; its arrays freed."""
        assert self.n == 0 and self.nedges == 0
        self.cls.write(rec.cls[: rec.nedges].tobytes())
        self.nedges = rec.nedges
        self.states(rec.wait[:n])
        rec.cls = rec.wait = None

    def arrays(self, n: int, E: int):
        """(the edges' bytes, the states' masks), memory-mapped (writable,
        as the in-memory engine's arrays are: the same compiled
        specializations read them)."""
        assert (self.n, self.nedges) == (n, E), (self.n, n, self.nedges, E)
        for f in (self.cls, self.wait):
            f.flush()
        return (_mapped(self.cls.name, np.uint8, E).view(np.ndarray),
                _mapped(self.wait.name, np.uint64, n).view(np.ndarray))

    def close(self) -> None:
        for f in (self.cls, self.wait):
            try:
                f.close()
            except OSError:
                pass


def nonprogress(d: str, graph, cls: np.ndarray):
    """The livelock pass's graph: the non-progress edges of `graph` (n,
    offsets, targets: every edge), by their bytes `cls`, into two
    memory-mapped files of `d`."""
    n, ofs, dst = graph
    nofs = _mapped(os.path.join(d, "lofs"), ofs.dtype, n + 1)
    ndst = _mapped(os.path.join(d, "ldst"), dst.dtype, dst.shape[0])
    k = _nonprogress(n, ofs, dst, cls, nofs.view(np.ndarray), ndst.view(np.ndarray))
    nofs.flush()
    ndst.flush()
    return n, nofs.view(np.ndarray), ndst[:k].view(np.ndarray)


@njit(cache=True, nogil=True)
def _nonprogress(n, ofs, dst, cls, nofs, ndst):
    """nofs, ndst: the graph (ofs, dst) without its progress edges (bit 7
    of their byte in cls); returns their count."""
    k = 0
    nofs[0] = 0
    for u in range(n):
        for e in range(ofs[u], ofs[u + 1]):
            if (cls[e] & 0x80) == 0:
                ndst[k] = dst[e]
                k += 1
        nofs[u + 1] = k
    return k


def _mapped(path: str, dtype, n: int) -> np.memmap:
    with open(path, "ab") as f:
        if f.tell() < n * np.dtype(dtype).itemsize:
            f.truncate(n * np.dtype(dtype).itemsize)
    return np.memmap(path, dtype, "r+", shape=(max(n, 1),))[:n]


def _resolve(d: str, fps_path: str, n: int, tgt_path: str, E: int, out: np.ndarray) -> None:
    """out[e]: the id of the state whose fingerprint is the e-th of
    `tgt_path` (ids: positions in `fps_path`, n of them): the states'
    fingerprints hashed a bucket at a time (`_index`), each edge of the
    bucket looked up (`_lookup`)."""
    if E == 0:
        return
    bits = 0
    while (n >> bits) > BUCKET and (1 << bits) < MAX_BUCKETS:
        bits += 1
    none = np.zeros(0, np.int64)
    if bits == 0:  # one bucket: no files
        keys, vals, zero = _table(n)
        for a in range(0, n, STEP):
            f = np.fromfile(fps_path, np.uint64, min(STEP, n - a), offset=8 * a)
            zero = _index(f, none, a, keys, vals, zero)
        for a in range(0, E, STEP):
            t = np.fromfile(tgt_path, np.uint64, min(STEP, E - a), offset=8 * a)
            _check(_lookup(keys, vals, zero, t, none, out[a: a + t.shape[0]]))
        os.unlink(tgt_path)
        return
    shift = np.uint64(64 - bits)
    nb = 1 << bits
    for kind, path, total in (("s", fps_path, n), ("e", tgt_path, E)):
        files = [(open(os.path.join(d, f"bucket-{kind}{b}-fp"), "wb"), open(os.path.join(d, f"bucket-{kind}{b}-at"), "wb"))
                 for b in range(nb)]
        try:
            for a in range(0, total, STEP):
                f = np.fromfile(path, np.uint64, min(STEP, total - a), offset=8 * a)
                fo, at, ends = np.empty_like(f), np.empty(f.shape[0], np.int64), np.zeros(nb, np.int64)
                _by_bucket(f, a, shift, fo, at, ends)
                for b in range(nb):
                    lo = 0 if b == 0 else int(ends[b - 1])
                    if ends[b] > lo:
                        files[b][0].write(fo[lo: int(ends[b])].tobytes())
                        files[b][1].write(at[lo: int(ends[b])].tobytes())
        finally:
            for fp, at in files:
                fp.close()
                at.close()
    os.unlink(tgt_path)  # (split into the buckets' files)
    for b in range(nb):
        paths = [os.path.join(d, f"bucket-{k}{b}-{x}") for k in "se" for x in ("fp", "at")]
        sf, sid, ef, eat = (np.fromfile(p, np.uint64 if p.endswith("fp") else np.int64) for p in paths)
        for p in paths:
            os.unlink(p)
        if ef.shape[0]:
            keys, vals, zero = _table(sf.shape[0])
            zero = _index(sf, sid, 0, keys, vals, zero)
            _check(_lookup(keys, vals, zero, ef, eat, out))


def _table(n: int):
    """An empty hash table for n fingerprints (at most 2/3 full)."""
    size = 1 << max(4, (3 * n // 2).bit_length())
    return np.zeros(size, np.uint64), np.zeros(size, np.int64), -1


def _check(bad: int) -> None:
    if bad >= 0:
        raise RuntimeError("the disk mode's edges name a state its trace does not hold")


@njit(cache=True, nogil=True)
def _by_bucket(f, a, shift, fo, at, ends):
    """f in order of bucket (the top bits, f >> shift), in order within
    each (a counting sort): fo, their positions a + i (at), and where each
    bucket ends (ends, zeros given)."""
    nb = ends.shape[0]
    for i in range(f.shape[0]):
        ends[np.int64(f[i] >> shift)] += 1
    put = np.zeros(nb, np.int64)
    for b in range(1, nb):
        ends[b] += ends[b - 1]
        put[b] = ends[b - 1]
    for i in range(f.shape[0]):
        b = np.int64(f[i] >> shift)
        fo[put[b]] = f[i]
        at[put[b]] = a + i
        put[b] += 1


@njit(cache=True, nogil=True)
def _index(fps, ids, id0, keys, vals, zero):
    """Each of fps put in the table (keys: the fingerprints, 0 for an
    empty slot; vals: their ids, ids[i], or id0 + i where ids is empty);
    returns the id of the fingerprint 0 (`zero`, -1: not seen)."""
    mask = keys.shape[0] - 1
    for i in range(fps.shape[0]):
        f = fps[i]
        v = ids[i] if ids.shape[0] else id0 + i
        if f == 0:
            zero = v
            continue
        h = np.int64(f & np.uint64(mask))
        while keys[h] != 0:
            h = (h + 1) & mask
        keys[h] = f
        vals[h] = v
    return zero


@njit(cache=True, nogil=True)
def _lookup(keys, vals, zero, fps, at, out):
    """out[at[e]] (out[e] where at is empty): the id of fps[e]; -1, or
    the first e not in the table."""
    mask = keys.shape[0] - 1
    for e in range(fps.shape[0]):
        f = fps[e]
        if f == 0:
            v = zero
            if v < 0:
                return e
        else:
            h = np.int64(f & np.uint64(mask))
            while keys[h] != f:
                if keys[h] == 0:
                    return e
                h = (h + 1) & mask
            v = vals[h]
        if at.shape[0]:
            out[at[e]] = v
        else:
            out[e] = v
    return -1
