"""Rows kept compactly: at the narrowest integer width their values allow
(`narrow`), and a block of a BFS level packed by column (`Packed`):
columns equal in every row are kept once, the others as offsets from their
minimum at the narrowest width. A level of the chat family packs to about
a sixth of its int16 size."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _minmax(rows):
    n, w = rows.shape
    lo = rows[0].astype(np.int64)
    hi = rows[0].astype(np.int64)
    for i in range(1, n):
        for j in range(w):
            v = rows[i, j]
            if v < lo[j]:
                lo[j] = v
            elif v > hi[j]:
                hi[j] = v
    return lo, hi


@njit(cache=True, nogil=True)
def _gather(rows, var, base, out):
    for i in range(rows.shape[0]):
        for k in range(var.shape[0]):
            out[i, k] = rows[i, var[k]] - base[k]


@njit(cache=True, nogil=True)
def _scatter(data, var, base, const, a, b, out):
    for i in range(b - a):
        for j in range(const.shape[0]):
            out[i, j] = const[j]
        for k in range(var.shape[0]):
            out[i, var[k]] = data[a + i, k] + base[k]


def _width(lo: int, hi: int):
    for t in (np.int8, np.int16, np.int32):
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return t
    return np.int64


def narrow(rows: np.ndarray) -> np.ndarray:
    """A copy of rows as int8, int16 or int32 when every value fits."""
    if rows.size == 0:
        return rows.copy()
    return rows.astype(_width(int(rows.min()), int(rows.max())))


class Packed:
    """A block of rows (2-D) packed by column; `rows(a, b)` unpacks rows
    a..b as int64."""

    __slots__ = ("n", "width", "const", "var", "base", "data")

    def __init__(self, rows: np.ndarray) -> None:
        self.n, self.width = rows.shape
        if self.n == 0:
            self.const = np.zeros(self.width, np.int64)
            self.var = np.zeros(0, np.int64)
            self.base = np.zeros(0, np.int64)
            self.data = np.zeros((0, 0), np.int8)
            return
        lo, hi = _minmax(rows)
        self.const = lo  # the value of every column equal in all rows (others: overwritten)
        self.var = np.nonzero(lo != hi)[0]
        self.base = lo[self.var]
        span = int((hi[self.var] - self.base).max()) if self.var.size else 0
        t = _width(0, span) if span <= np.iinfo(np.int32).max else np.int64
        self.data = np.empty((self.n, self.var.size), t)
        _gather(rows, self.var, self.base, self.data)

    @property
    def nbytes(self) -> int:
        return self.const.nbytes + self.var.nbytes + self.base.nbytes + self.data.nbytes

    def rows(self, a: int, b: int) -> np.ndarray:
        out = np.empty((b - a, self.width), np.int64)
        _scatter(self.data, self.var, self.base, self.const, a, b, out)
        return out
