"""The array engine's table of states (`explorer/strategies/arrays/engine.py`): per state id
(dense, in discovery order) its 64-bit fingerprint and its parent's id,
found through a hash table split into NSUB sub-tables by the
fingerprint's top bits (4 bytes a slot, at most 70 % full, each sub-table
grown by half or a third on its own, in a region of its own), and the chain of parents a
counterexample is rebuilt from."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from explorer.runtime.memory import LARGE_FROM, LARGE_TABLE, _large_pages, _reserve, _zeros, limited

__all__ = ["NSUB", "SUB_SHIFT", "SUB0", "TOUCH_FROM", "NO_ORDER", "_Store", "_by_walker", "_codes", "_codes_to_ids", "_find", "_grow_sub", "_ids_to_codes", "_next_size", "_touch", "_walker", "chain"]

NSUB = 16  # sub-tables: the top 4 bits of a fingerprint choose one
SUB_SHIFT = 60
SUB0 = 1 << 10  # the first size (and room) of a sub-table
FIRST = 1 << 16  # states a store has room for before its first growth


# ---------------------------------------------------------------- the table


@njit(cache=True, nogil=True, inline="always")
def _home(fp, n):
    """A fingerprint's first slot in a sub-table of n slots: its low 32
    bits scaled to n (n need not be a power of two)."""
    return np.int64(((fp & np.uint64(0xFFFFFFFF)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, nogil=True, inline="always")
def _next_size(n):
    """The size a sub-table of n slots grows to: x 1.5 from a power of two,
    x 4/3 to the next one, so that a grown table is 47 %-70 % full (where
    doubling would leave it 35 %-70 %)."""
    return n * 3 // 2 if n & (n - 1) == 0 else n * 4 // 3


@njit(cache=True, nogil=True)
def _find(tab, R, sz, fparr, fp, shift=SUB_SHIFT):
    """(id or -1, sub-table, slot): sub-table p (the fingerprint's bits
    from `shift` on) holds slots p*R .. p*R + sz[p]; a slot holds id + 1
    (0: empty); ids are compared through their fingerprints."""
    p = np.int64(fp >> np.uint64(shift))
    base = p * R
    n = sz[p]
    j = _home(fp, n)
    while True:
        v = tab[base + j]
        if v == 0:
            return -1, p, base + j
        if fparr[v - 1] == fp:
            return np.int64(v - 1), p, base + j
        j += 1
        if j == n:
            j = 0


@njit(cache=True, nogil=True)
def _grow_sub(tab, R, sz, p, fparr):
    """Sub-table p grown in place to its next size (its region has room):
    only its own slots are copied aside."""
    base = p * R
    old = tab[base: base + sz[p]].copy()
    n = _next_size(sz[p])
    sz[p] = n
    tab[base: base + n] = 0
    for v in old:
        if v != 0:
            k = _home(fparr[v - 1], n)
            while tab[base + k] != 0:
                k += 1
                if k == n:
                    k = 0
            tab[base + k] = v


# states stored (in a walker's store: by it) from which the table outgrows the caches: slots touched ahead
TOUCH_FROM = 1 << 18
NO_ORDER = np.zeros(0, np.int32)  # `_touch` of every successor in turn


TOUCH_RUN = 4  # occupied slots of a lookup's run whose fingerprints `_touch` loads


@njit(cache=True, nogil=True)
def _touch(fps, table, order, q0, q1, shift):
    """Load the table slot of successors q0..q1 (fps[order[q]] where order
    is given, a walker's group; fps[q] where it is empty), then the
    fingerprints the first TOUCH_RUN slots of its run name (up to an empty
    slot or its own): independent loads, so the memory system overlaps their misses,
    and the lookups that follow find them cached (a large table costs two
    misses a lookup otherwise, and one more for each occupied slot a new
    state's lookup passes). Returns a sum nobody reads (so that the loads
    are not optimized away). `table`: (tab, R, sz, fparr)."""
    tab, R, sz, fparr = table
    acc = 0
    by = order.shape[0] > 0
    for q in range(q0, q1):
        fp = fps[order[q]] if by else fps[q]
        p = np.int64(fp >> np.uint64(shift))
        acc += tab[p * R + _home(fp, sz[p])]
    for q in range(q0, q1):
        fp = fps[order[q]] if by else fps[q]
        p = np.int64(fp >> np.uint64(shift))
        base = p * R
        n = sz[p]
        j = _home(fp, n)
        for _ in range(TOUCH_RUN):
            v = tab[base + j]
            if v == 0:
                break
            f = fparr[v - 1]
            acc += np.int64(f & np.uint64(1))
            if f == fp:  # (found: the rest of the run is not read)
                break
            j += 1
            if j == n:
                j = 0
    return acc


# ---------------------------------------------------------------- codes of the walkers (arrays/walkers.py)


@njit(cache=True, nogil=True, inline="always")
def _walker(fp, W):
    """The walker of W (a power of two) that owns a fingerprint: the low
    bits of its sub-table's number."""
    return np.int64(fp >> np.uint64(SUB_SHIFT)) & (W - 1)


@njit(cache=True, nogil=True)
def _by_walker(fps, W, order, starts):
    """The successors grouped by walker: order[starts[t]:starts[t + 1]]
    are walker t's, in successor order (one counting pass, by the thread
    that expanded the chunk, so that a walker goes through its own only)."""
    cnt = np.zeros(W + 1, np.int64)
    for i in range(fps.shape[0]):
        cnt[_walker(fps[i], W) + 1] += 1
    for t in range(W):
        cnt[t + 1] += cnt[t]
    for t in range(W + 1):  # not starts[:] = cnt (its shapes' check: see cycles._grow32)
        starts[t] = cnt[t]
    for i in range(fps.shape[0]):
        t = _walker(fps[i], W)
        order[cnt[t]] = i
        cnt[t] += 1


@njit(cache=True, nogil=True)
def _codes(fps, idx, dtgt, W):
    """The codes of the successors idx (each in its walker's row)."""
    out = np.empty(idx.shape[0], np.int32)
    for k in range(idx.shape[0]):
        i = idx[k]
        out[k] = dtgt[_walker(fps[i], W), i]
    return out


@njit(cache=True)
def _codes_to_ids(wk, n, W, edst, ne):
    """The edges' targets, codes, turned into ids: wk[id] is the walker of
    state id, and a walker's states are numbered in the order of their ids."""
    cnt = np.zeros(W, np.int64)
    for g in range(n):
        cnt[wk[g]] += 1
    most = 1
    for w in range(W):  # not cnt.max(): numba's max compiles numba's own helpers (1 s)
        most = max(most, cnt[w])
    c2g = np.empty(most * W, np.int32)
    cnt[:] = 0
    for g in range(n):
        w = wk[g]
        c2g[cnt[w] * W + w] = g
        cnt[w] += 1
    for e in range(ne):
        edst[e] = c2g[edst[e]]


@njit(cache=True)
def _ids_to_codes(wk, W, ids, order):
    """The codes of the states `ids` (see `_codes_to_ids`); `order`:
    np.argsort(ids), numpy's (numba's sort compiles for 2.5 s)."""
    out = np.empty(ids.shape[0], np.int64)
    cnt = np.zeros(W, np.int64)
    k = 0
    for g in range(ids[order[ids.shape[0] - 1]] + 1 if ids.shape[0] else 0):  # ids.max(), without numba's max
        w = wk[g]
        while k < ids.shape[0] and ids[order[k]] == g:
            out[order[k]] = cnt[w] * W + w
            k += 1
        cnt[w] += 1
    return out


class _Store:
    """Per stored state: fingerprint (8 bytes) and parent id (4); the
    sub-tables of ids (4 bytes a slot, at most 70 % full). Depth and action
    are not stored: BFS gives ids level by level, and `chain` re-derives the
    actions."""

    def __init__(self, m: Any, first: int | None = None, nsub: int = NSUB, shift: int = SUB_SHIFT) -> None:
        self.m = m
        first = FIRST if first is None else first
        self.nsub, self.shift = nsub, shift  # sub-tables, and the fingerprint's bit that numbers them
        self.fp = np.zeros(first, np.uint64)
        self.parent = np.zeros(first, np.int32)
        self.n = np.zeros(1, np.int64)  # states stored (kept by a walker; the sequential walk counts its own)
        self.R = SUB0  # the room of each sub-table's region
        self.tab = np.zeros(nsub * self.R, np.int32)
        self.sz = np.full(nsub, SUB0, np.int64)
        self.cnt = np.zeros(nsub, np.int64)
        self.init_rows = None  # the model's initial rows and fingerprints
        self.init_fps = None
        self.large = None  # the arrays advised to be in large pages (`_large_pages`), once LARGE_FROM states

    def reserve(self, n: int, more: int) -> None:
        """Room for `more` states beyond the n stored. Each array is looked
        at on its own: one may have been given its reserve of BIG entries
        and the other, refused that much address space, only doubled.
        From LARGE_FROM states on, their pages still to be written are
        large ones (the fingerprints are read at random)."""
        self.fp = _reserve(self.fp, n + more, n)
        self.parent = _reserve(self.parent, n + more, n)
        if n + more >= LARGE_FROM and self.large != (id(self.fp), id(self.parent)):
            _large_pages(self.fp, n)
            _large_pages(self.parent, n)
            self.large = (id(self.fp), id(self.parent))

    def relayout(self) -> None:
        """Regions 16 times larger (the next ones are reserved address
        space: a region's pages become resident as its sub-table grows into
        them), twice as large where the address space is limited (`limited`)
        or refused; each sub-table copied over, slots unchanged. Regions of
        LARGE_TABLE bytes in all or more are in large pages (`_large_pages`:
        a sub-table then holds at least a sixteenth of its region, and a
        lookup misses the TLB less; at most a large page more is resident
        a sub-table)."""
        R = self.R * (2 if limited() else 16)
        try:
            tab = _zeros(self.nsub * R, np.int32)
        except MemoryError:
            if R == self.R * 2:  # refused already at twice: the "memory" bound
                raise
            R = self.R * 2
            tab = _zeros(self.nsub * R, np.int32)
        if tab.nbytes >= LARGE_TABLE:  # (written before the copy: its pages are large from the first)
            _large_pages(tab)
        for p in range(self.nsub):
            tab[p * R: p * R + self.sz[p]] = self.tab[p * self.R: p * self.R + self.sz[p]]
        self.tab, self.R = tab, R

    def id_of(self, fp: int) -> int:
        if self.tab is None:  # the search is over (`drop_table`): a scan, for the few states a trace needs
            at = np.flatnonzero(self.fp[: int(self.n[0])] == np.uint64(fp))
            return int(at[0]) if at.size else -1
        i, _, _ = _find(self.tab, self.R, self.sz, self.fp, np.uint64(fp), self.shift)
        return int(i)

    def drop_table(self, n: int) -> None:
        """The search is over, with n states: the hash table goes (the
        livelock pass needs its room); `id_of` scans the fingerprints."""
        self.n[0] = n
        self.tab = None

    def chain(self, fp: int) -> list[tuple[int, int]]:
        return chain(self.m, self.init_rows, self.init_fps, self.id_of(fp), lambda i: int(self.parent[i]),
                     lambda i: self.fp[i])


def chain(m: Any, init_rows: np.ndarray, init_fps: np.ndarray, i: int, parent_of, fp_of) -> list[tuple[int, int]]:
    """[(fingerprint, action index)] from the initial state to state i: the
    parents' ids (`parent_of`, -1 for an initial state), then each step's
    action found by expanding its parent's row again (the first successor
    with the state's fingerprint, `fp_of`, as the walk that stored it met
    it first)."""
    ids = []
    while i >= 0:
        ids.append(i)
        i = parent_of(i)
    ids.reverse()
    f0 = int(fp_of(ids[0]))
    i0 = int(np.nonzero(init_fps == np.uint64(f0))[0][0])
    out = [(f0, i0)]
    row = init_rows[i0: i0 + 1].copy()
    for step, i in enumerate(ids[1:], start=1):
        f = np.uint64(fp_of(i))
        succ, _, action, fps, _ = m.array_expand(row)
        at = np.nonzero(fps == f)[0]
        if at.size == 0:
            from explorer.trace import NondeterministicModel

            raise NondeterministicModel(
                f"nondeterministic model: no successor at step {step} has the stored fingerprint "
                f"{int(f):016x}", step, expected=int(f))
        k = int(at[0])
        out.append((int(f), int(action[k])))
        row = np.array(succ[k: k + 1], np.int64)
    return out
