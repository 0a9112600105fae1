"""The disk mode's non-progress edges (`arrays/disk.py`), for the livelock
check: written to files as the search goes, built into the in-memory
engine's graph (the same ids, the same edges in the same order) once it
is over, and searched by the same compiled passes (`graph/cycles.py`).

During the search (`EdgeFiles.append`, after each chunk's walk): each
state's count of non-progress edges (4 bytes, in id order) and each
edge's target fingerprint (8 bytes, sources in id order): the table of
fingerprints gives no id, and nothing in RAM grows with the edges.

After it (`EdgeFiles.graph`, the table of fingerprints dropped first):
the targets are resolved to ids by sorting, a bucket of fingerprints at
a time (`_resolve`: the states' (fingerprint, id) and the edges'
(fingerprint, position) written to BUCKETS files by the fingerprints'
top bits, then each bucket's states sorted and its edges looked up in
them), into a file of the edges' target ids (int32); the offsets, from
the counts, into another. Both are memory-mapped: the passes read them
through the page cache, so RAM holds only what the passes allocate per
state (`_acyclic_part`'s and `_scc`'s 4 bytes; `_cycle`'s 9 more when a
livelock is found) and a bucket at a time. A search that began in memory
(`moved`) writes the edges it has, already ids, as the first ones."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["EdgeFiles", "BUCKET"]

BUCKET = 1 << 22  # states sorted at once when the edges' targets are resolved (about 100 MiB with the edges')
MAX_BUCKETS = 256
STEP = 1 << 22  # records read from a file at once
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
        self.tgt.flush()
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
        for f in (self.cnt, self.tgt):
            try:
                f.close()
            except OSError:
                pass


def _mapped(path: str, dtype, n: int) -> np.memmap:
    with open(path, "ab") as f:
        if f.tell() < n * np.dtype(dtype).itemsize:
            f.truncate(n * np.dtype(dtype).itemsize)
    return np.memmap(path, dtype, "r+", shape=(max(n, 1),))[:n]


def _resolve(d: str, fps_path: str, n: int, tgt_path: str, E: int, out: np.ndarray) -> None:
    """out[e]: the id of the state whose fingerprint is the e-th of
    `tgt_path` (ids: positions in `fps_path`, n of them)."""
    if E == 0:
        return
    bits = 0
    while (n >> bits) > BUCKET and (1 << bits) < MAX_BUCKETS:
        bits += 1
    if bits == 0:  # one bucket: no files
        fps = np.fromfile(fps_path, np.uint64, n)
        order = np.argsort(fps, kind="stable")
        sf = fps[order]
        del fps
        for a in range(0, E, STEP):
            t = np.fromfile(tgt_path, np.uint64, min(STEP, E - a), offset=8 * a)
            out[a: a + t.shape[0]] = order[_found(sf, t)]
        return
    shift = np.uint64(64 - bits)
    nb = 1 << bits
    rec = np.dtype([("fp", np.uint64), ("at", np.int64)])
    for kind, path, total in (("s", fps_path, n), ("e", tgt_path, E)):
        files = [open(os.path.join(d, f"bucket-{kind}{b}"), "wb") for b in range(nb)]
        try:
            for a in range(0, total, STEP):
                f = np.fromfile(path, np.uint64, min(STEP, total - a), offset=8 * a)
                bk = (f >> shift).astype(np.int64)
                o = np.argsort(bk, kind="stable")
                r = np.empty(f.shape[0], rec)
                r["fp"], r["at"] = f[o], a + o
                ends = np.cumsum(np.bincount(bk, minlength=nb))
                for b in range(nb):
                    lo = 0 if b == 0 else int(ends[b - 1])
                    if ends[b] > lo:
                        files[b].write(r[lo: int(ends[b])].tobytes())
        finally:
            for f in files:
                f.close()
    for b in range(nb):
        sp, ep = os.path.join(d, f"bucket-s{b}"), os.path.join(d, f"bucket-e{b}")
        s = np.fromfile(sp, rec)
        e = np.fromfile(ep, rec)
        os.unlink(sp)
        os.unlink(ep)
        if e.shape[0]:
            o = np.argsort(s["fp"], kind="stable")
            sf, sid = s["fp"][o], s["at"][o]
            out[e["at"]] = sid[_found(sf, e["fp"])]


def _found(sorted_fps: np.ndarray, fps: np.ndarray) -> np.ndarray:
    """Where each of fps is in sorted_fps (each is there: an edge's target is stored)."""
    pos = np.searchsorted(sorted_fps, fps)
    if pos.shape[0] and (pos.max() >= sorted_fps.shape[0] or (sorted_fps[pos] != fps).any()):
        raise RuntimeError("the disk mode's edges name a state its trace does not hold")
    return pos
