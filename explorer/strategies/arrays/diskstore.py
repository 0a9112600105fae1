"""What the array engine's disk mode (`arrays/disk.py`, `Settings.disk`)
keeps, and where.

In RAM, per stored state, only its 64-bit fingerprint, in a hash table of
fingerprints (`FpTable`): 16 sub-tables chosen by the fingerprint's top
bits (256 of them), linear probing from a home slot given by its low
bits, 0 for an empty slot (the fingerprint 0 itself is a flag of its
own), each sub-table grown on its own by a quarter once it is 85 % full,
so 68 %-85 % full, and their first sizes staggered so that they do not
all grow at once: about 76 % full, 10.5 bytes a state. A state has no id in RAM: nothing during the
search needs one (the livelock check's edges are written with their targets' fingerprints, resolved to
ids once the search is over: `arrays/diskgraph.py`).

On disk (`Trace`), in a directory of its own under the one given,
removed on every exit (`close`): per state id (dense, level by level, in
discovery order, exactly the in-memory engine's ids) its fingerprint and
its parent's id, 8 bytes each, appended as the search stores them; a
counterexample reads back only its own chain, one record per step. The
BFS levels' rows, past a few MiB of packed rows a level, go there too, as
their packed blocks (`Spilled`), read back once each as the level is
expanded, and the level's file removed once it is."""

from __future__ import annotations

import mmap
import os
import pickle
import shutil
import tempfile
from typing import Any

import numpy as np
from numba import njit

from explorer.runtime.memory import _zeros, limited
from explorer.strategies.arrays.table import SUB0, _home, chain

__all__ = ["FpTable", "Trace", "Spilled", "_ffind", "_fgrow", "_fnext", "_ftouch", "LOAD_NUM", "LOAD_DEN"]

LOAD_NUM, LOAD_DEN = 17, 20  # a sub-table grows once it would be more than 85 % full
# 256 sub-tables (the fingerprint's top 8 bits): a growth copies 1/256 of the table aside, not 1/16
FP_NSUB, FP_SHIFT = 256, 56


@njit(cache=True, nogil=True, inline="always")
def _fnext(n):
    """The size a sub-table of n slots grows to: a quarter more (85 % full
    becomes 68 %)."""
    return n + max(n // 4, 1)


@njit(cache=True, nogil=True)
def _ffind(tab, R, sz, fp, shift):
    """(stored, sub-table, slot) of a fingerprint other than 0: sub-table p
    holds slots p*R .. p*R + sz[p], each a fingerprint or 0 (empty)."""
    p = np.int64(fp >> np.uint64(shift))
    base = p * R
    n = sz[p]
    j = _home(fp, n)
    while True:
        v = tab[base + j]
        if v == fp:
            return True, p, base + j
        if v == 0:
            return False, p, base + j
        j += 1
        if j == n:
            j = 0


@njit(cache=True, nogil=True)
def _fgrow(tab, R, sz, p):
    """Sub-table p grown in place to its next size (its region has room)."""
    base = p * R
    old = tab[base: base + sz[p]].copy()
    n = _fnext(sz[p])
    sz[p] = n
    tab[base: base + n] = 0
    for v in old:
        if v != 0:
            k = _home(v, n)
            while tab[base + k] != 0:
                k += 1
                if k == n:
                    k = 0
            tab[base + k] = v


@njit(cache=True, nogil=True)
def _ftouch(fps, tab, R, sz, shift):
    """Load the home slot of every successor of a chunk first:
    independent loads, whose misses the memory system overlaps, so that
    the lookups that follow find them cached (`table._touch`, for a table
    of fingerprints: one miss a lookup, not two). Returns a sum nobody
    reads."""
    acc = np.uint64(0)
    for q in range(fps.shape[0]):
        fp = fps[q]
        p = np.int64(fp >> np.uint64(shift))
        acc += tab[p * R + _home(fp, sz[p])]
    return acc


@njit(cache=True, nogil=True)
def _finsert(tab, R, sz, cnt, zero, fp, shift):
    """Store fp if new (the initial states; the walk stores its own):
    0 stored before, 1 stored now, 2 its sub-table must outgrow its region."""
    if fp == 0:
        if zero[0]:
            return 0
        zero[0] = 1
        return 1
    found, p, slot = _ffind(tab, R, sz, fp, shift)
    if found:
        return 0
    if LOAD_DEN * (cnt[p] + 1) > LOAD_NUM * sz[p]:
        if _fnext(sz[p]) > R:
            return 2
        _fgrow(tab, R, sz, p)
        _, p, slot = _ffind(tab, R, sz, fp, shift)
    tab[slot] = fp
    cnt[p] += 1
    return 1


@njit(cache=True, nogil=True)
def _finsert_all(tab, R, sz, cnt, zero, fps, k0, shift):
    """Store fps[k0:] (no two alike); -1, or where a sub-table must outgrow its region."""
    for k in range(k0, fps.shape[0]):
        if _finsert(tab, R, sz, cnt, zero, fps[k], shift) == 2:
            return k
    return -1


class FpTable:
    """The fingerprints stored (see the module's text): `tab` (NSUB
    regions of R slots, each sub-table at its region's start), `sz`, `cnt`,
    and `zero` (whether the fingerprint 0 is stored)."""

    def __init__(self, nsub: int = FP_NSUB, shift: int = FP_SHIFT) -> None:
        self.nsub, self.shift = nsub, shift
        self.R = 2 * SUB0
        self.tab = _zeros(nsub * self.R, np.uint64)
        # first sizes staggered over one growth (x 1.25): the sub-tables, which fill alike, grow at different
        # times, so that the table as a whole stays about 76 % full instead of swinging from 68 % to 85 %
        self.sz = np.array([int(SUB0 * 1.25 ** (p / nsub)) for p in range(nsub)], np.int64)
        self.cnt = np.zeros(nsub, np.int64)
        self.zero = np.zeros(1, np.int64)

    def parts(self) -> tuple:
        return self.tab, self.R, self.sz, self.cnt, self.zero, self.shift

    def relayout(self) -> None:
        """Regions 16 times larger (twice where the address space is
        limited), reserved address space; each sub-table copied over, and
        the pages of its old region handed back at once, so that the
        table is never held twice (one sub-table more at most)."""
        R = self.R * (2 if limited() else 16)
        try:
            tab = _zeros(self.nsub * R, np.uint64)
        except MemoryError:
            if R == self.R * 2:
                raise
            R = self.R * 2
            tab = _zeros(self.nsub * R, np.uint64)
        old, m = self.tab, getattr(self.tab, "base", None)
        m = getattr(m, "obj", m)  # (np.frombuffer of an mmap: a memoryview of it)
        for p in range(self.nsub):
            tab[p * R: p * R + self.sz[p]] = old[p * self.R: p * self.R + self.sz[p]]
            if isinstance(m, mmap.mmap):
                a = p * self.R * 8
                a += -a % mmap.PAGESIZE
                b = (p * self.R + self.sz[p]) * 8
                b -= b % mmap.PAGESIZE
                if b > a:
                    m.madvise(mmap.MADV_DONTNEED, a, b - a)
        self.tab, self.R = tab, R

    def insert(self, fp: int) -> bool:
        """Store fp; whether it was new."""
        while True:
            r = _finsert(self.tab, self.R, self.sz, self.cnt, self.zero, np.uint64(fp), self.shift)
            if r != 2:
                return r == 1
            self.relayout()

    def insert_all(self, fps: np.ndarray) -> None:
        """Store every fingerprint of fps (distinct)."""
        k = 0
        while True:
            k = _finsert_all(self.tab, self.R, self.sz, self.cnt, self.zero, fps, k, self.shift)
            if k < 0:
                return
            self.relayout()

    def drop(self) -> None:
        """The table's memory handed back (the search is over; `has` no longer answers)."""
        self.tab = None

    def has(self, fp: int) -> bool:
        fp = np.uint64(fp)
        if fp == 0:
            return bool(self.zero[0])
        return bool(_ffind(self.tab, self.R, self.sz, fp, self.shift)[0])

    @property
    def nbytes(self) -> int:
        return int(self.sz.sum()) * 8


class Trace:
    """The run's directory under `root` (made here, removed by `close`),
    its records of every state (fingerprint, parent id) in id order, and
    the files of the levels spilled (`spill`)."""

    def __init__(self, root: str) -> None:
        os.makedirs(root, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="serq-disk-", dir=root)
        self.fps = open(os.path.join(self.dir, "fps"), "w+b")
        self.parents = open(os.path.join(self.dir, "parents"), "w+b")
        self.n = 0  # records written
        self.known: dict[int, int] = {}  # fingerprint -> id, of the states a verdict names
        self.init_rows: np.ndarray | None = None
        self.init_fps: np.ndarray | None = None
        self.levels: dict[int, Any] = {}  # depth -> the open file of its spilled blocks

    def append(self, fps: np.ndarray, parents: np.ndarray) -> None:
        """The records of the next len(fps) states."""
        self.fps.write(np.ascontiguousarray(fps, np.uint64).tobytes())
        self.parents.write(np.ascontiguousarray(parents, np.int64).tobytes())
        self.n += fps.shape[0]

    def _read(self, f, i: int) -> int:
        f.flush()
        return int(np.frombuffer(os.pread(f.fileno(), 8, 8 * i), np.int64)[0])

    def fp_of(self, i: int) -> np.uint64:
        return np.uint64(self._read(self.fps, i) & 0xFFFFFFFFFFFFFFFF)

    def parent_of(self, i: int) -> int:
        return self._read(self.parents, i)

    def id_of(self, fp: int) -> int:
        """The id of a stored fingerprint: the ones a verdict names are
        known; any other is looked for in the file, a block at a time."""
        fp = int(fp)
        if fp in self.known:
            return self.known[fp]
        self.fps.flush()
        step = 1 << 20
        for a in range(0, self.n, step):
            block = np.frombuffer(os.pread(self.fps.fileno(), 8 * min(step, self.n - a), 8 * a), np.uint64)
            at = np.flatnonzero(block == np.uint64(fp))
            if at.size:
                return a + int(at[0])
        return -1

    def chain(self, m: Any, fp: int) -> list[tuple[int, int]]:
        """The shortest path to the stored state fp, as `table.chain`
        gives it: its parents read back from the file, one a step."""
        return chain(m, self.init_rows, self.init_fps, self.id_of(fp), self.parent_of, self.fp_of)

    # ------------------------------------------------------------ the levels

    def spill(self, depth: int, block, done: np.ndarray) -> "Spilled":
        """A block of level `depth` and its done flags written to the
        level's file; what reads them back."""
        f = self.levels.get(depth)
        if f is None:
            f = self.levels[depth] = open(os.path.join(self.dir, f"level-{depth}"), "w+b")
        data = pickle.dumps((block, done), protocol=pickle.HIGHEST_PROTOCOL)
        off = f.seek(0, os.SEEK_END)
        f.write(data)
        return Spilled(f, off, len(data), block.n, block.width)

    def drop_level(self, depth: int) -> None:
        """Level `depth` is expanded: its file goes."""
        f = self.levels.pop(depth, None)
        if f is not None:
            f.close()
            os.unlink(f.name)

    def close(self) -> None:
        """Every file closed and the run's directory removed."""
        for f in [self.fps, self.parents, *self.levels.values()]:
            try:
                f.close()
            except OSError:
                pass
        self.levels.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


class Spilled:
    """A block of a level on disk: `load()` gives (block, done flags)."""

    __slots__ = ("f", "off", "size", "n", "width")

    def __init__(self, f, off: int, size: int, n: int, width: int) -> None:
        self.f, self.off, self.size, self.n, self.width = f, off, size, n, width

    def load(self):
        self.f.flush()
        return pickle.loads(os.pread(self.f.fileno(), self.size, self.off))
