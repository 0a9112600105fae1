"""A flat fingerprint table for the hash partitions (`strategies/partitions/driver.py`):
per state id (dense, in the partition's discovery order) its fingerprint,
parent id and action index, and an open-addressing table of ids (-1:
empty) doubled whole at 70 %. The partitions store the action because a
trace is rebuilt from their entries; the array engine keeps its own,
smaller store (`strategies/arrays/engine.py`)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["_Store", "_find", "_rehash"]


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
        cap = self.cap
        while n + more > cap:
            cap *= 2
        if cap != self.cap:  # all three grown, or none (a MemoryError leaves them as they were)
            grown = {}
            for name in ("fp", "parent", "action"):
                a = getattr(self, name)
                grown[name] = b = np.zeros(cap, a.dtype)
                b[: a.shape[0]] = a
            for name, b in grown.items():
                setattr(self, name, b)
            self.cap = cap
        size = self.tab.shape[0]
        while 10 * (n + more) > 7 * size:
            size *= 2
        if size != self.tab.shape[0]:
            self.tab = _rehash(self.tab, self.fp, n, size)

    def id_of(self, fp: int) -> int:
        i, _ = _find(self.tab, self.fp, np.uint64(fp))
        return int(i)
