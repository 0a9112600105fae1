"""The memory bound of a search: the resident memory of this process and
the proportional share of its direct children (the workers), read from /proc at most every 0.2 s,
against a limit in bytes. The default limit leaves a fifth of the memory
available at the start to the rest of the machine, so a search stops with
the verdict "bound" (reason "memory") and its statistics before the
machine runs out, rather than being killed or swapping. Where /proc is
missing (not Linux) there is no default and no check; a `MemoryError`
still ends the search the same way."""

from __future__ import annotations

import mmap
import os
import time

import numpy as np

__all__ = ["rss", "available", "default_limit", "MemoryGuard", "parse_size", "mib", "thread_refused"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _statm(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _pss(pid: str) -> int:
    """A child's proportional share: forked workers share most of their pages
    with this process (copy on write), which their resident size would
    count again."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return _statm(pid)


def rss() -> int:
    """Resident bytes of this process and its direct children's
    proportional share (0 where unknown)."""
    total = _statm("self")
    try:
        pid = os.getpid()
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except OSError:
        kids = []
    return total + sum(_pss(k) for k in kids)


def available() -> int | None:
    """MemAvailable of /proc/meminfo, in bytes (None where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_limit() -> int | None:
    """What this process holds now plus four fifths of what is available."""
    a = available()
    return None if a is None else rss() + a * 4 // 5


def mib(n: int | None) -> str:
    """A limit as the verdict line shows it."""
    return "none" if n is None else f"{n / (1 << 20):.0f}MiB"


def parse_size(text: str) -> int:
    """`512M`, `4G`, `1.5G`, `800MB`, `2GiB` (binary units); a number needs
    its unit, so that `4000` is not silently 4000 bytes. ValueError otherwise."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    if not t or t[-1] not in _UNITS:
        raise ValueError(f"a memory size needs a unit: K, M, G or T (e.g. 512M, 4G), got {text!r}")
    try:
        v = float(t[:-1])
    except ValueError:
        raise ValueError(f"not a memory size: {text!r} (write e.g. 512M, 4G)") from None
    if not 0 <= v < 2**50:  # nan fails too
        raise ValueError(f"not a memory size: {text!r} (write e.g. 512M, 4G)")
    return int(v * _UNITS[t[-1]])


class MemoryGuard:
    """`over()`: True once the resident memory exceeds the limit."""

    INTERVAL = 0.2  # seconds between two readings of /proc

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._next = 0.0

    def over(self) -> bool:
        if self.limit is None:
            return False
        now = time.perf_counter()
        if now < self._next:
            return False
        self._next = now + self.INTERVAL
        return rss() > self.limit


def thread_refused(e: RuntimeError) -> MemoryError | None:
    """What a thread the system refused to start (`e`, "can't start new
    thread") means: a MemoryError when the address space has no room for
    its stack (`ulimit -v`: a mapping of the stack's size is refused now),
    so that the run ends with the memory bound as at any other allocation;
    None otherwise (a limit on threads: the worker is named as failed)."""
    import threading

    size = threading.stack_size() or 8 << 20
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
        if not threading.stack_size() and soft != resource.RLIM_INFINITY:
            size = max(soft, 1 << 20)
    except (ImportError, OSError, ValueError):
        pass
    try:
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, AttributeError, ValueError):
        return MemoryError(f"no room for a thread's stack ({e})")
    m.close()
    return None


# ---------------------------------------------------------------- the array engines' buffers

BIG = 1 << 27  # states reserved (address space only) once a run outgrows its first arrays


def _trim() -> None:
    """Freed heap memory (a level's blocks, a chunk's buffers) handed back
    to the system, where the C library can (glibc)."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None


def _anonymous(nbytes: int):
    """Private anonymous memory, an `mmap` (zeros, resident page by page as
    written, its pages can be handed back with madvise, unmapped when it
    goes), or None where mmap cannot do that. Raises MemoryError where the
    system refuses the address space: the search then ends with the
    "memory" bound."""
    if not hasattr(mmap, "MAP_PRIVATE") or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    try:
        return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError as e:
        raise MemoryError(f"cannot map {nbytes} bytes: {e}") from e


def _zeros(n: int, dtype) -> np.ndarray:
    """n zeros of that type in anonymous memory of their own (`_anonymous`),
    mapped in pages of the system's small size (4 KiB): numpy advises the
    system to back an array of 4 MiB or more with large pages (2 MiB),
    which makes a whole large page resident as soon as any byte of it is
    written, and the engine's large arrays are written from their start on
    (a BFS's ids) or by regions (the table's sub-tables). A large run's
    table asks for large pages itself (`_large_pages`)."""
    dt = np.dtype(dtype)
    buf = _anonymous(max(n, 1) * dt.itemsize)
    return np.zeros(n, dt) if buf is None else np.frombuffer(buf, dt, n)


LARGE_FROM = 1 << 20  # states from which the array engines' tables are kept in large pages (`_large_pages`)
LARGE_TABLE = 128 << 20  # bytes of hash-table regions from which they are (`_Store.relayout`)


def _large_pages(a: np.ndarray, used: int = 0) -> None:
    """Advise the system to back the entries of `a` from `used` on with
    large pages (2 MiB) as they are written, where `a` lies in an mmap of
    its own (`_zeros`) and the system can (Linux's transparent huge pages
    in their `madvise` mode or `always`). For a large table read at random
    (a fingerprint's slot, its state's fingerprint): a lookup then misses
    the TLB far less often (about a fifth less time a lookup measured at
    15 million states). Only where little is wasted: an array written
    from its start on wastes less than one large page, a region written
    from its start as far as its sub-table reaches, as much."""
    buf = a.base
    if isinstance(buf, memoryview):  # (np.frombuffer's base: a view of the mmap)
        buf = buf.obj
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_HUGEPAGE"):
        return
    start = -(-used * a.itemsize // mmap.PAGESIZE) * mmap.PAGESIZE
    if start >= len(buf):
        return
    try:
        buf.madvise(mmap.MADV_HUGEPAGE, start)
    except (OSError, ValueError):  # (a system without them)
        pass


LIMITED_BELOW = 256 << 30  # an address-space limit under which nothing is reserved ahead (`limited`)


def limited() -> bool:
    """Whether this process's address space is limited below LIMITED_BELOW
    bytes (`ulimit -v`, RLIMIT_AS, or `ulimit -d`, RLIMIT_DATA, which
    Linux applies to private anonymous mappings too): the engine then
    reserves none ahead (`_reserve`, `_Store.relayout`), since address
    space reserved by one array is refused to the next (a run would stop
    sooner under a larger limit). Read once a process."""
    global _LIMITED
    if _LIMITED is None:
        try:
            import resource

            soft = [resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)]
            _LIMITED = any(s != resource.RLIM_INFINITY and s < LIMITED_BELOW for s in soft)
        except (ImportError, OSError, ValueError, AttributeError):
            _LIMITED = False
    return _LIMITED


_LIMITED = None


def _reserve(a: np.ndarray, need: int, used: int) -> np.ndarray:
    """`a` with room for `need` entries, its first `used` kept: the first
    growth reserves BIG entries of address space (pages become resident only
    when written, so nothing is copied again before BIG); past it, or when
    the address space is limited (`limited`, or a reserve refused), by
    doubling."""
    if need <= a.shape[0]:
        return a
    size = max(BIG, need) if a.shape[0] < BIG and not limited() else max(2 * a.shape[0], need)
    try:
        b = _zeros(size, a.dtype)
    except MemoryError:
        size = max(2 * a.shape[0], need)
        b = _zeros(size, a.dtype)
    b[:used] = a[:used]
    return b
