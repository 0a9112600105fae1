"""The data files of a checkpoint (`checkpoint.py`): numpy arrays and
JSON, nothing that can run code when it is read.

A file is one line of JSON, its header, then its arrays one after the
other in numpy's `.npy` format (written and read with pickling refused):

    {"format": "serq-checkpoint", "version": 2, "kind": "states" | "frontier",
     "partition": P, "level": T, "instance": ..., "serq": ...,
     "arrays": [NAME, ...], "bytes": N, "sha256": HEX}

`bytes` and `sha256` are the length and the SHA-256 of what follows the
header; the manifest records each file's `sha256` too. Reading checks, in
order: the header (format, version, kind, partition, level, instance,
serq version), the checksum of the whole body, then every array's type and
shape before it is read (a forged header cannot make it allocate more than
the file holds). Any failure is a CheckpointError naming the file.

A frontier block (narrow.Packed) is kept as the smallest and the
largest value of each column (its layout is computed again from them on
reading, never read) and its packed words, deflated when the block is."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zlib

import numpy as np

from explorer.strategies.arrays.narrow import Packed, _layout
from explorer.errors import CheckpointError
from explorer.runtime.outfile import Output, OutputError, cause

__all__ = ["CheckpointError", "FORMAT", "VERSION", "write_arrays", "read_arrays", "frontier_arrays",
           "frontier_of"]

FORMAT = "serq-checkpoint"
VERSION = 2
MAX_HEADER = 1 << 16  # bytes of a header line
_CHUNK = 1 << 20
_ALLOWED = {np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.uint64)}


class _Hashing:
    def __init__(self, f) -> None:
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def write(self, b) -> int:
        b = memoryview(b).cast("B")
        self.h.update(b)
        self.n += len(b)
        return self.f.write(b)


def _header(stamp: dict, names: list[str], n: int, sha: str) -> bytes:
    doc = {"format": FORMAT, "version": VERSION, **stamp, "arrays": names, "bytes": f"{n:020d}", "sha256": sha}
    return (json.dumps(doc, sort_keys=True) + "\n").encode()


def write_arrays(path: str, stamp: dict, arrays: dict[str, np.ndarray]) -> str:
    """Write `arrays` (by name, in order) to `path` under a header with
    `stamp` (kind, partition, level, instance, serq); returns the body's
    SHA-256. Written under a temporary name (explorer.runtime.outfile): raises
    OutputError."""
    names = list(arrays)
    head = _header(stamp, names, 0, "0" * 64)
    out = Output(path, binary=True)
    try:
        out.write(head)
        w = _Hashing(out.file)
        for name in names:
            np.lib.format.write_array(w, np.ascontiguousarray(arrays[name]), allow_pickle=False)
        sha = w.h.hexdigest()
        out.file.seek(0)
        out.write(_header(stamp, names, w.n, sha))  # the same length: the placeholders' widths
    except OSError as e:
        out.abort()
        raise OutputError(path, cause(e)) from None
    except BaseException:
        out.abort()
        raise
    out.commit()
    return sha


def unresumable(path: str, why: str) -> CheckpointError:
    """What is wrong with a checkpoint's file `path`, as the error resuming it gives."""
    return CheckpointError(f"{path}: {why}; the checkpoint cannot be resumed")


def read_arrays(path: str, stamp: dict, sha: str | None) -> dict[str, np.ndarray]:
    """The arrays of the file `path`, after checking its header against
    `stamp` and its checksum against its header and `sha` (the manifest's);
    CheckpointError otherwise."""

    def bad(why: str) -> CheckpointError:
        return unresumable(path, why)

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a pipe put in its place does not block
    except OSError as e:
        raise bad(f"cannot read it ({e.strerror or e})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise bad("not a regular file")
    f = os.fdopen(fd, "rb")
    with f:
        try:
            line = f.readline(MAX_HEADER)
            try:
                head = json.loads(line)
            except (ValueError, RecursionError):
                head = None
            if not isinstance(head, dict) or head.get("format") != FORMAT:
                raise bad("not a serq checkpoint file")
            if head.get("version") != VERSION:
                raise bad(f"checkpoint version {head.get('version')!r}, this serq reads version {VERSION}")
            for key, want in stamp.items():
                if head.get(key) != want:
                    raise bad(f"its {key} is {json.dumps(head.get(key))}, expected {json.dumps(want)}")
            names, size, hexsum = head.get("arrays"), head.get("bytes"), head.get("sha256")
            if (not isinstance(names, list) or not all(isinstance(x, str) for x in names)
                    or not isinstance(size, str) or not size.isdigit() or not isinstance(hexsum, str)):
                raise bad("its header is malformed")
            if sha is not None and hexsum != sha:
                raise bad("it is not the file the manifest names (another checksum)")
            start = f.tell()
            h, n = hashlib.sha256(), 0
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                n += len(chunk)
            if n != int(size):
                raise bad(f"truncated or extended: {n} bytes of data, its header says {int(size)}")
            if h.hexdigest() != hexsum:
                raise bad("its checksum does not match its content (the file was altered or damaged)")
            f.seek(start)
            out = {}
            for name in names:
                out[name] = _read_one(f, start + n, bad)
            if f.tell() != start + n:
                raise bad("data after its last array")
            return out
        except OSError as e:
            raise bad(f"cannot read it ({e.strerror or e})") from None


def _read_one(f, end: int, bad) -> np.ndarray:
    fmt = np.lib.format
    try:
        at = f.tell()
        major, _ = fmt.read_magic(f)
        if major == 1:
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif major == 2:
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f"array format {major}")
    except (ValueError, SyntaxError, TypeError) as e:
        raise bad(f"an array is malformed ({e})") from None
    if dtype not in _ALLOWED or fortran or len(shape) > 2:
        raise bad(f"an array of type {dtype} and shape {shape}: not one a checkpoint holds")
    count = int(np.prod(shape, dtype=object))
    if count * dtype.itemsize > end - f.tell():
        raise bad(f"an array of shape {shape} is larger than the file")
    f.seek(at)
    return fmt.read_array(f, allow_pickle=False)


# ---------------------------------------------------------------- frontier blocks


def frontier_arrays(frontier: list) -> dict[str, np.ndarray]:
    """A partition's frontier, (Packed, done, ids) blocks, as named arrays."""
    out = {}
    for i, (block, done, gids) in enumerate(frontier):
        hi = block.const.copy()
        hi[block.var] = block.base + block.mask.astype(np.int64)  # a range whose layout is the block's
        out[f"{i}.lo"], out[f"{i}.hi"] = block.const, hi
        if block.z is not None:
            out[f"{i}.z"] = np.frombuffer(block.z, np.uint8)
        else:
            out[f"{i}.words"] = block.data
        out[f"{i}.done"], out[f"{i}.ids"] = np.asarray(done, np.int8), np.asarray(gids, np.int64)
    return out


def frontier_of(arrays: dict, width: int, bad) -> list:
    """The blocks `frontier_arrays` wrote, each checked (the width of the
    model's rows, the layout, the number of words); `bad(why)` makes the
    error."""
    blocks = []
    i = 0
    while f"{i}.lo" in arrays:
        lo, hi, done, ids = (arrays.get(f"{i}.{k}") for k in ("lo", "hi", "done", "ids"))
        if hi is None or done is None or ids is None or lo.dtype != np.int64 or hi.dtype != np.int64 \
                or lo.shape != (width,) or hi.shape != (width,):
            raise bad(f"frontier block {i} is malformed (rows of {width} values expected)")
        n = done.shape[0]
        if done.dtype != np.int8 or ids.dtype != np.int64 or done.ndim != 1 or ids.shape != (n,):
            raise bad(f"frontier block {i} is malformed")
        span = hi.astype(object) - lo.astype(object)
        if any(s < 0 or s >= 1 << 63 for s in span):
            raise bad(f"frontier block {i} has a column range out of bounds")
        b = object.__new__(Packed)
        b.n, b.width, b.const = n, width, lo.copy()
        b.var, b.base, b.wd, b.sh, b.spill, b.mask, off = _layout(lo, hi)
        b.words = (off + 63) // 64
        b.data, b.z = None, None
        z, words = arrays.get(f"{i}.z"), arrays.get(f"{i}.words")
        if words is not None:
            if words.dtype != np.uint64 or words.shape != (n, b.words):
                raise bad(f"frontier block {i}: its packed words do not fit its layout")
            b.data = words
        elif z is not None and z.dtype == np.uint8 and z.ndim == 1:
            want = 8 * b.words * n
            d = zlib.decompressobj()
            try:
                got = len(d.decompress(z.tobytes(), want + 1))
            except zlib.error as e:
                raise bad(f"frontier block {i}: its packed words do not inflate ({e})") from None
            if got != want or not d.eof:
                raise bad(f"frontier block {i}: its packed words do not fit its layout")
            b.z = z.tobytes()
        else:
            raise bad(f"frontier block {i} has no packed words")
        blocks.append((b, done, ids))
        i += 1
    if len(arrays) != 5 * i:
        raise bad("the frontier file holds arrays it should not")
    return blocks
