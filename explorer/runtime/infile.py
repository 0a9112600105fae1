"""Reading a file that someone else may have written: only a regular file,
only up to a bound, and only what is on disk (a file whose size is not
what it says -- a /proc or /sys file, one growing while it is read -- is
refused, as are devices, pipes and directories, which could block or
never end)."""

from __future__ import annotations

import os
import stat

__all__ = ["NotReadable", "read_regular"]


class NotReadable(ValueError):
    """A file refused or unreadable: `reason` says why, in a few words;
    `opened`: False when it could not even be opened (missing, no
    permission), True when it was refused for what it is."""

    def __init__(self, path: str, reason: str, opened: bool = True) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.opened = str(path), reason, opened


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.3g} {unit}"
    return f"{n} bytes"


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them;
    NotReadable otherwise (missing: FileNotFoundError's words)."""
    path = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))  # a FIFO does not block
    except OSError as e:
        raise NotReadable(path, e.strerror or str(e), opened=False) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotReadable(path, "it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable(path, "not a regular file")
        if st.st_size > limit:
            raise NotReadable(path, f"too large ({_size(st.st_size)}; at most {_size(limit)})")
        chunks, got = [], 0
        while got <= st.st_size:
            b = os.read(fd, min(st.st_size + 1 - got, 1 << 20) or 1)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got != st.st_size:
            raise NotReadable(path, "not a regular file on disk (its size and its content differ)")
        return b"".join(chunks)
    except OSError as e:
        raise NotReadable(path, e.strerror or str(e)) from None
    finally:
        os.close(fd)
