"""Rows kept compactly: at the narrowest integer width their values allow
(`narrow`), and a block of a BFS level packed by column (`Packed`):
columns equal in every row are kept once, each other column as its offset
from its minimum in as many bits as its range needs, the columns of a row
side by side in 64-bit words. A level of the chat family (N = 5, rows of
135 int64 columns) packs to about 22 bytes a row."""

from __future__ import annotations

import mmap
import threading
import zlib

import numpy as np
from numba import njit

from explorer.runtime.memory import _anonymous


@njit(cache=True, nogil=True)
def _minmax(rows, idx):
    """Per column: the smallest and largest value of rows[idx]."""
    w = rows.shape[1]
    lo = rows[idx[0]].astype(np.int64)
    hi = rows[idx[0]].astype(np.int64)
    for r in idx[1:]:
        for j in range(w):
            v = rows[r, j]
            if v < lo[j]:
                lo[j] = v
            elif v > hi[j]:
                hi[j] = v
    return lo, hi


@njit(cache=True, nogil=True)
def _pack(rows, idx, var, base, wd, sh, spill, out):
    for i in range(idx.shape[0]):
        r = idx[i]
        for t in range(out.shape[1]):
            out[i, t] = 0
        for k in range(var.shape[0]):
            v = np.uint64(rows[r, var[k]] - base[k])
            out[i, wd[k]] |= v << sh[k]
            if spill[k]:
                out[i, wd[k] + 1] |= v >> (np.uint64(64) - sh[k])


@njit(cache=True, nogil=True)
def _pack_fit(rows, idx, fit, layout, out):
    """`_pack` in a layout made for other rows, each row checked first
    (every column j within lo[j]..lo[j] + span[j], modulo 2^64, so that
    any int64 range is exact; span 0: a column kept once): the rows packed
    before the first that does not fit (all: idx.shape[0]). One pass over
    the rows where `_minmax` and `_pack` make two. `fit`: (lo, span);
    `layout`: (var, base, wd, sh, spill), as `_pack` takes them."""
    lo, span = fit
    var, base, wd, sh, spill = layout
    w = rows.shape[1]
    nw = out.shape[1]
    for i in range(idx.shape[0]):
        r = rows[idx[i]]
        bad = False
        for j in range(w):
            bad = bad | (np.uint64(r[j] - lo[j]) > span[j])
        if bad:
            return i
        o = out[i]
        for t in range(nw):
            o[t] = 0
        for k in range(var.shape[0]):
            v = np.uint64(r[var[k]] - base[k])
            o[wd[k]] |= v << sh[k]
            if spill[k]:
                o[wd[k] + 1] |= v >> (np.uint64(64) - sh[k])
    return idx.shape[0]


@njit(cache=True, nogil=True)
def _unpack(data, layout, a, b, out):
    """Rows a..b of the packed words `data` into `out`; `layout`: (var,
    base, wd, sh, spill, mask, const), the columns' places (`Packed`).
    Column by column: each column's place read once, no test per value
    (twice as fast as row by row)."""
    var, base, wd, sh, spill, mask, const = layout
    n = b - a
    w = const.shape[0]
    for i in range(n):
        o = out[i]
        for j in range(w):
            o[j] = const[j]
    for k in range(var.shape[0]):
        c = var[k]
        q = wd[k]
        s = sh[k]
        m = mask[k]
        bs = base[k]
        if spill[k]:
            s2 = np.uint64(64) - s
            for i in range(n):
                d = data[a + i]
                out[i, c] = np.int64(((d[q] >> s) | (d[q + 1] << s2)) & m) + bs
        else:
            for i in range(n):
                out[i, c] = np.int64((data[a + i, q] >> s) & m) + bs


@njit(cache=True, nogil=True)
def _layout(lo, hi):
    """The packed layout of columns whose range is lo..hi: the varying
    columns, their base, word, shift, whether they spill into the next
    word, their mask; and the bits of a row."""
    nv = 0
    for j in range(lo.shape[0]):
        if lo[j] != hi[j]:
            nv += 1
    var = np.empty(nv, np.int64)
    base = np.empty(nv, np.int64)
    wd = np.empty(nv, np.int64)
    sh = np.empty(nv, np.uint64)
    spill = np.empty(nv, np.bool_)
    mask = np.empty(nv, np.uint64)
    off = 0
    k = 0
    for j in range(lo.shape[0]):
        if lo[j] == hi[j]:
            continue
        span = np.uint64(hi[j] - lo[j])
        nb = 0
        while span:
            nb += 1
            span >>= np.uint64(1)
        var[k] = j
        base[k] = lo[j]
        wd[k] = off >> 6
        sh[k] = np.uint64(off & 63)
        spill[k] = (off & 63) + nb > 64
        mask[k] = (np.uint64(1) << np.uint64(nb)) - np.uint64(1) if nb < 64 else ~np.uint64(0)
        off += nb
        k += 1
    return var, base, wd, sh, spill, mask, off


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


def pack_rows(rows: np.ndarray, idx: np.ndarray, like: "Packed | None" = None) -> "Packed":
    """rows[idx] packed, without copying them out first; in the layout of
    the block `like` where every row fits it (see `Packed`)."""
    return Packed(rows, idx, like)


@njit(cache=True, nogil=True)
def _take_fit(rows, idx, out, lo, hi):
    """out[i] = rows[idx[i]] while every value lies in lo..hi (out's
    type); False at the first that does not (out then partly written)."""
    w = rows.shape[1]
    for i in range(idx.shape[0]):
        r = idx[i]
        for j in range(w):
            v = rows[r, j]
            if v < lo or v > hi:
                return False
            out[i, j] = v
    return True


class Raw:
    """A block of rows kept as they are, but in the narrowest integer type
    their level allows (`Arena`): for a level small enough that packing it
    and unpacking it again would cost more than it saves. `rows` gives
    them back as int64."""

    __slots__ = ("n", "width", "data")

    def __init__(self, rows: np.ndarray, idx: np.ndarray, out: np.ndarray | None = None) -> None:
        """rows[idx], copied into `out` (idx rows) when given; ValueError
        if a value does not fit out's type (see `fit`)."""
        if out is None:
            self.data = rows[idx]
        elif out.dtype == rows.dtype:
            self.data = np.take(rows, idx, axis=0, out=out, mode="clip")  # ("raise" would buffer)
        else:
            info = np.iinfo(out.dtype)
            if not _take_fit(rows, np.asarray(idx, np.int64), out, info.min, info.max):
                raise ValueError(f"a value of these rows does not fit {out.dtype}")
            self.data = out
        self.n, self.width = self.data.shape

    @classmethod
    def fit(cls, rows: np.ndarray, idx: np.ndarray, out: np.ndarray) -> "Raw | None":
        """rows[idx] in `out`, or None if a value does not fit its type."""
        try:
            return cls(rows, idx, out)
        except ValueError:
            return None

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    def rows(self, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows a..b as int64: a view when they are kept so, else written
        into `out` (at least b - a rows of this width) when given."""
        d = self.data[a:b]
        if d.dtype == np.int64:
            return d
        if out is None:
            return d.astype(np.int64)
        out = out[: b - a]
        np.copyto(out, d)
        return out


_WIDEN = threading.Lock()  # an arena's type widened, its packed bytes counted: by one thread at a time
COMPRESS_FROM = 32 << 20  # bytes of packed rows a level holds from which its next blocks are compressed


class Arena:
    """Two buffers of `size` bytes that the BFS levels use in turn for
    their unpacked rows (`Raw` blocks are views into them): level d + 1 is
    written while level d is read, and level d - 1 is no longer needed.
    While levels fit, the rows' pages are touched once per run instead of
    being allocated, zeroed by the system and handed back at every level.
    A level that outgrew its buffer (a large run: the rest of it is packed)
    hands the pages of its rows back as they are read (`consumed`), so a
    large run holds no more than one buffer's worth of unpacked rows
    beside the level being written."""

    __slots__ = ("size", "bufs", "maps", "full", "cur", "used", "freed", "dtype", "want", "packed", "compress_from",
                 "like")

    def __init__(self, size: int, dtype=np.int64, compress_from: int | None = None) -> None:
        self.size = size
        # bytes of a level's packed rows past which its blocks are compressed (the disk mode: never)
        self.compress_from = COMPRESS_FROM if compress_from is None else compress_from
        self.dtype = np.dtype(dtype)  # the type of this level's unpacked rows
        self.want = self.dtype  # the narrowest type every level's rows met so far fit (from the next level on)
        self.bufs: list = [None, None]
        self.maps: list = [None, None]
        self.full = [False, False]
        self.cur = 0
        self.used = 0
        self.freed = 0  # bytes handed back of the buffer being read
        self.packed = 0  # bytes of the blocks of this level packed so far (before any compression)
        self.like = None  # the layout of the last block packed (`Packed.layout`): the next one's, where its rows fit

    def next_level(self) -> None:
        self.dtype = self.want
        self.cur ^= 1
        self.used = 0
        self.full[self.cur] = False
        self.freed = 0
        self.packed = 0
        self.like = None

    def compresses(self, block: "Packed") -> bool:
        """A block of this level was packed: whether to compress it, as
        every block of the level from the one that takes its packed rows
        past COMPRESS_FROM bytes on (a small or middling level is not
        worth the time: packed, it is a few bytes a state). (Worker
        threads pack blocks at once: the count is kept under a lock.)"""
        with _WIDEN:
            self.packed += block.nbytes
            return self.packed > self.compress_from

    def take(self, n: int, width: int, dtype=None) -> np.ndarray | None:
        """Room for n more rows of this level (of that width, and of that
        type or else the level's), or None, then for the rest of the
        level: its unpacked rows stay its first ones (`consumed` counts on
        it). None too once a block of the level did not fit the level's
        type (`widen`)."""
        if self.full[self.cur] or (dtype is None and self.want != self.dtype):
            return None
        if dtype is None:
            dtype = self.dtype
        b = self.bufs[self.cur]
        if b is None or b.shape[1] != width or b.dtype != dtype:
            dt = np.dtype(dtype)
            rows = max(self.size // (dt.itemsize * width), 1)
            m = _anonymous(rows * width * dt.itemsize)
            self.maps[self.cur] = m
            b = np.frombuffer(m, dt).reshape(rows, width) if m is not None else np.empty((rows, width), dt)
            self.bufs[self.cur] = b
            self.used = 0  # (blocks in a buffer replaced keep it alive)
        if self.used + n > b.shape[0]:
            self.full[self.cur] = True
            return None
        self.used += n
        return b[self.used - n:self.used]

    def widen(self, rows: np.ndarray) -> None:
        """A block's rows did not fit the level's type: the rest of the
        level is packed, and the next levels' rows take a type they fit
        (from any thread: a stale read of `want` costs one more block
        packed)."""
        t = np.dtype(_width(int(rows.min()), int(rows.max()))) if rows.size else self.dtype
        with _WIDEN:  # two workers widening at once keep the wider type
            if t.itemsize > self.want.itemsize:
                self.want = t

    def consumed(self, rows: int) -> None:
        """The level being read is expanded up to its row `rows` (its
        unpacked rows come first): if it outgrew its buffer, the pages of
        those rows go back to the system."""
        r = self.cur ^ 1
        m = self.maps[r]
        if not self.full[r] or m is None:
            return
        b = self.bufs[r]
        end = min(rows, b.shape[0]) * b.shape[1] * b.itemsize
        end -= end % mmap.PAGESIZE
        if end > self.freed:
            m.madvise(mmap.MADV_DONTNEED, self.freed, end - self.freed)
            self.freed = end


class Packed:
    """A block of rows (2-D) packed by column; `rows(a, b)` unpacks rows
    a..b as int64. `compress()` keeps its packed words deflated (zlib,
    fastest level), byte by byte across the rows: the k-th byte of every
    row, then the k + 1-th, so that the bytes of a column that barely
    changes from row to row, most of them, come together (a level of the
    chat family at N = 7 without symmetry: 19 times smaller, where the rows
    as they are deflate 5 times); a compressed block is inflated on its
    first read (`_words`)."""

    __slots__ = ("n", "width", "const", "var", "base", "wd", "sh", "spill", "mask", "data", "z", "words", "span")

    def __init__(self, rows: np.ndarray, idx: np.ndarray | None = None, like: "Packed | None" = None) -> None:
        """rows (2-D), or the rows rows[idx] when idx is given. With `like`
        (a block of rows of the same width, the last one packed), the rows
        are packed in its layout, sharing its arrays, when every one fits
        it (`_pack_fit`: one pass over the rows instead of two; the
        blocks of one BFS level mostly have the same ranges), and
        otherwise in a layout of their ranges joined to its (so that the
        next blocks fit it more often)."""
        if idx is None:
            idx = np.arange(rows.shape[0], dtype=np.int64)
        self.n, self.width = idx.shape[0], rows.shape[1]
        self.z = None
        idx = idx.astype(np.int64, copy=False)
        similar = like is not None and like.width == self.width and getattr(like, "span", None) is not None
        if similar and self.n:
            self.const, self.span, self.var, self.base, self.wd, self.sh, self.spill, self.mask, self.words = \
                like.const, like.span, like.var, like.base, like.wd, like.sh, like.spill, like.mask, like.words
            self.data = np.empty((self.n, self.words), np.uint64)
            if _pack_fit(rows, idx, (self.const, self.span), (self.var, self.base, self.wd, self.sh, self.spill),
                         self.data) == self.n:
                return
        if self.n == 0:
            lo = hi = np.zeros(self.width, np.int64)
        else:
            lo, hi = _minmax(rows, idx)
            if similar:  # (the range of `like` in int64: lo + span modulo 2^64)
                lo, hi = np.minimum(lo, like.const), np.maximum(hi, (like.const.view(np.uint64) + like.span).view(np.int64))
        self.const = lo  # the value of every column equal in all rows (others: overwritten)
        self.span = (hi - lo).view(np.uint64)  # each column's range (modulo 2^64), for the next blocks (`like`)
        # column k: bits off .. off + nb of the row, in word off // 64 (and the next)
        self.var, self.base, self.wd, self.sh, self.spill, self.mask, off = _layout(lo, hi)
        self.words = (off + 63) // 64
        self.data = np.empty((self.n, self.words), np.uint64)
        if self.n and off:
            _pack(rows, idx, self.var, self.base, self.wd, self.sh, self.spill, self.data)

    def layout(self) -> "Packed":
        """A block of no rows in this block's layout (for `like`: it holds
        none of this block's words)."""
        t = object.__new__(Packed)
        t.n, t.width, t.data, t.z, t.words = 0, self.width, None, None, self.words
        t.const, t.span, t.var, t.base, t.wd, t.sh, t.spill, t.mask = \
            self.const, self.span, self.var, self.base, self.wd, self.sh, self.spill, self.mask
        return t

    @property
    def nbytes(self) -> int:
        body = len(self.z) if self.z is not None else self.data.nbytes
        return self.const.nbytes + body + 33 * self.var.size

    def __setstate__(self, state) -> None:
        """Unpickled (a checkpoint's frontier): a block pickled before
        blocks could be compressed has no `z`, nor `span` before they could
        share a layout."""
        self.z, self.words, self.span = None, 0, None
        for k, v in (state[1] if isinstance(state, tuple) else state).items():
            setattr(self, k, v)

    def compress(self) -> None:
        if self.z is None and self.data.size:
            by_byte = np.ascontiguousarray(self.data.view(np.uint8).T)
            self.z = zlib.compress(by_byte, 1)
            self.data = None

    def _words(self) -> np.ndarray:
        """The packed words: a compressed block is inflated on its first
        read and kept so while it lives (a block spans several chunks; it
        is freed once they are expanded). Two threads inflating it at
        once both get the same words."""
        data = self.data
        if data is None:
            by_byte = np.frombuffer(zlib.decompress(self.z), np.uint8).reshape(8 * self.words, self.n)
            data = self.data = np.ascontiguousarray(by_byte.T).view(np.uint64)
        return data

    def rows(self, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows a..b as int64, written into `out` (at least b - a rows of
        this width) when given."""
        out = np.empty((b - a, self.width), np.int64) if out is None else out[: b - a]
        _unpack(self._words(), (self.var, self.base, self.wd, self.sh, self.spill, self.mask, self.const), a, b, out)
        return out
