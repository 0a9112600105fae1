"""Rows kept compactly: at the narrowest integer width their values allow
(`narrow`), and a block of a BFS level packed by column (`Packed`):
columns equal in every row are kept once, the others as offsets from their
minimum at the narrowest width. A level of the chat family packs to about
a sixth of its int16 size."""

from __future__ import annotations

import numpy as np


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
        lo = rows.min(axis=0).astype(np.int64)
        hi = rows.max(axis=0).astype(np.int64)
        self.const = lo  # the value of every column equal in all rows (others: overwritten)
        self.var = np.nonzero(lo != hi)[0]
        self.base = lo[self.var]
        span = int((hi[self.var] - self.base).max()) if self.var.size else 0
        t = _width(0, span) if span <= np.iinfo(np.int32).max else np.int64
        self.data = (rows[:, self.var].astype(np.int64) - self.base).astype(t)

    @property
    def nbytes(self) -> int:
        return self.const.nbytes + self.var.nbytes + self.base.nbytes + self.data.nbytes

    def rows(self, a: int, b: int) -> np.ndarray:
        out = np.empty((b - a, self.width), np.int64)
        out[:] = self.const
        if self.var.size:
            out[:, self.var] = self.data[a:b].astype(np.int64) + self.base
        return out
