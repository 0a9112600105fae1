"""The step kernel: numba-compiled functions over integer rows, the same
for every instance (`cache=True`: compiled once per install). With
`NUMBA_DISABLE_JIT=1` the very same code runs as plain Python.

numba keys a cached function on its own file only, and the kernel's
modules inline each other's functions and `abi.py`'s constants: a cache
compiled from other kernel sources would be wrong. So the cache lives in a
directory named after a hash of every kernel source file (unless
`NUMBA_CACHE_DIR` says where): any change to the kernel compiles afresh."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

_HERE = Path(__file__).resolve().parent
_HASH = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(_HERE.glob("*.py")))).hexdigest()[:16]

if not os.environ.get("NUMBA_CACHE_DIR"):
    _base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    numba.config.CACHE_DIR = str(_base / "serq" / f"kernel-{_HASH}")
