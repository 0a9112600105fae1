"""Writing an output file so that a failure is named and a partial file
never looks complete.

`output(path)` is a context manager giving a file object. A regular file
(or a path that does not exist yet) is written under a temporary name in
the same directory, flushed to disk and renamed into place when the block
ends without an error: a reader sees the old file or the whole new one,
never a part. A path that exists and is not a regular file (a terminal,
`/dev/null`, `/dev/full`, a pipe) is written as it is: there is nothing to
rename onto. A symbolic link is followed: the file it names is replaced.
Any failure -- the directory missing or read-only, no space left, an I/O
error when the data is flushed -- raises `OutputError` naming the file
and the cause, and removes the temporary file."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import IO, Iterator

__all__ = ["Output", "OutputError", "Stdout", "output", "write_output", "cause"]


class OutputError(OSError):
    """An output file that could not be written: `path` and `reason`."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.path, self.reason = str(path), reason

    def __str__(self) -> str:
        return self.args[0]


def cause(e: BaseException) -> str:
    """The system's words for an error: `No space left on device`."""
    if isinstance(e, OutputError):
        return e.reason
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Output:
    """An output file being written: `file` to write to, then `commit()`
    (raises OutputError) or `abort()` (the temporary file removed)."""

    def __init__(self, path: str, binary: bool = False) -> None:
        self.path = path = str(path)
        mode = "wb" if binary else "w"
        enc = None if binary else "utf-8"
        self.tmp = self.real = self.file = None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise OutputError(path, cause(e)) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError(path, "it is a directory")
        if st is None or stat.S_ISREG(st.st_mode):
            self.real = os.path.realpath(path)
            folder = os.path.dirname(self.real)
            try:
                fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.real)}.", suffix=".tmp",
                                                dir=folder)
            except OSError as e:
                if not os.path.isdir(folder):
                    raise OutputError(path, f"no directory {os.path.dirname(path) or '.'}") from None
                if st is None:
                    raise OutputError(path, cause(e)) from None
                # a file in a folder that takes no new file (/proc/version): written in place
        if self.tmp is None:  # a device or a pipe (/dev/full, /dev/null), or the case above
            try:
                self.file = open(path, mode, encoding=enc)
            except OSError as e:
                raise OutputError(path, cause(e)) from None
            return
        try:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            self.file = os.fdopen(fd, mode, encoding=enc)
        except OSError as e:
            os.close(fd)
            self.abort()
            raise OutputError(path, cause(e)) from None

    def write(self, data) -> None:
        try:
            self.file.write(data)
        except OSError as e:
            self.abort()
            raise OutputError(self.path, cause(e)) from None

    def commit(self) -> None:
        """The file complete: flushed to disk and renamed into place."""
        try:
            self.file.flush()
            if self.tmp is not None:
                os.fsync(self.file.fileno())
            self.file.close()
            if self.tmp is not None:
                os.replace(self.tmp, self.real)
                self.tmp = None
        except OSError as e:
            self.abort()
            raise OutputError(self.path, cause(e)) from None

    def abort(self) -> None:
        """Give the file up: a temporary file is removed."""
        if self.file is not None:
            with contextlib.suppress(OSError, ValueError):
                self.file.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(self.tmp)
            self.tmp = None


@contextlib.contextmanager
def output(path: str, binary: bool = False) -> Iterator[IO]:
    """An output file at `path`, written whole or not at all (see the
    module): its writes and its completion raise OutputError."""
    out = Output(path, binary)
    try:
        yield out.file
    except OSError as e:
        out.abort()
        if isinstance(e, OutputError):
            raise
        raise OutputError(out.path, cause(e)) from None
    except BaseException:
        out.abort()
        raise
    out.commit()


def write_output(path: str, data: str | bytes) -> None:
    """Write `data` (text or bytes) whole to `path`; raises OutputError."""
    with output(path, binary=isinstance(data, bytes)) as f:
        f.write(data)


class Stdout:
    """Standard output whose failures (no space left on the file it goes
    to, an I/O error) raise OutputError naming it; a closed pipe stays a
    BrokenPipeError (the reader went away: nothing to report)."""

    NAME = "standard output"

    def __init__(self, inner) -> None:
        self.inner = inner

    def write(self, data):
        try:
            return self.inner.write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(self.NAME, cause(e)) from None

    def flush(self) -> None:
        try:
            self.inner.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(self.NAME, cause(e)) from None

    def __getattr__(self, name):
        return getattr(self.inner, name)
