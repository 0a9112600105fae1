"""Stable 64-bit state fingerprints.

Why not ``hash()``: Python salts str/bytes hashes per process
(PYTHONHASHSEED), so fingerprints would differ between the workers of a
parallel run and between runs.  Here the canonical value is first encoded to
bytes by a small deterministic, type-tagged, length-prefixed encoder (so
``("ab", "c")`` and ``("a", "bc")``, ``1`` and ``True``, ``()`` and ``[]`` all
differ) and then hashed with BLAKE2b truncated to 8 bytes.

Invariant: ``fingerprint(v)`` depends only on the value ``v`` -- never on the
process, the run, the platform's byte order or the hash seed.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any, Callable

from explorer.model import CANONICAL_BYTES, FINGERPRINT

__all__ = ["encode", "fingerprint", "state_fingerprint", "format_fp"]

_PACK_DOUBLE = struct.Struct(">d").pack


def _enc_none(v: Any, out: bytearray) -> None:
    out += b"N"


def _enc_bool(v: bool, out: bytearray) -> None:
    out += b"T" if v else b"F"


def _enc_int(v: int, out: bytearray) -> None:
    # Decimal text is unbounded and byte-order free; ';' terminates it.
    out += b"i"
    out += str(int(v)).encode("ascii")
    out += b";"


def _enc_float(v: float, out: bytearray) -> None:
    out += b"f"
    out += _PACK_DOUBLE(v)


def _enc_str(v: str, out: bytearray) -> None:
    data = v.encode("utf-8", "surrogatepass")
    out += b"s%d:" % len(data)
    out += data


def _enc_bytes(v: bytes, out: bytearray) -> None:
    out += b"b%d:" % len(v)
    out += v


def _enc_tuple(v: tuple, out: bytearray) -> None:
    out += b"t%d:" % len(v)
    for item in v:
        _encode_into(item, out)


def _enc_list(v: list, out: bytearray) -> None:
    out += b"l%d:" % len(v)
    for item in v:
        _encode_into(item, out)


def _enc_frozenset(v: frozenset, out: bytearray) -> None:
    # Iteration order of a set depends on the hash seed, so sort the
    # element encodings: the result is a function of the set's contents only.
    parts = sorted(encode(item) for item in v)
    out += b"z%d:" % len(parts)
    for p in parts:
        out += p


_DISPATCH: dict[type, Callable[[Any, bytearray], None]] = {
    type(None): _enc_none,
    bool: _enc_bool,
    int: _enc_int,
    float: _enc_float,
    str: _enc_str,
    bytes: _enc_bytes,
    tuple: _enc_tuple,
    list: _enc_list,
    frozenset: _enc_frozenset,
}


def _encode_into(v: Any, out: bytearray) -> None:
    enc = _DISPATCH.get(type(v))
    if enc is None:
        # Subclasses (IntEnum, NamedTuple, str enums) encode as their base
        # value; bool must be tested before int since bool is an int.
        for base in (bool, int, float, str, bytes, tuple, list, frozenset):
            if isinstance(v, base):
                enc = _DISPATCH[base]
                break
        else:
            raise TypeError(
                f"cannot fingerprint a value of type {type(v).__name__}: {v!r:.80}; "
                "canonical() must return nested tuples/lists of int, str, bool, None, "
                "float, bytes or frozenset"
            )
    enc(v, out)


def encode(value: Any) -> bytes:
    """Deterministic byte encoding of a canonical value."""
    out = bytearray()
    _encode_into(value, out)
    return bytes(out)


def fingerprint(value: Any) -> int:
    """64-bit fingerprint (an int in [0, 2**64)) of a canonical value."""
    return int.from_bytes(hashlib.blake2b(encode(value), digest_size=8).digest(), "big")


def state_fingerprint(model: Any, state: Any) -> int:
    """Fingerprint of ``model.canonical(state)``: the identity of a state.

    A model may instead provide ``canonical_bytes(state)``: its own stable
    encoding (e.g. the ``repr`` of nested tuples of ints and strings, which
    is the same in every process and much faster than the generic encoder).
    It must be injective on canonical forms, like ``encode``. A model may
    also give the fingerprint itself, ``fingerprint(state) -> int`` in
    [1, 2**64): a stable 64-bit hash of its canonical form (a compiled
    model hashes its packed rows without building Python values)."""
    caps = getattr(model, "capabilities", ())  # declared (explorer/model.py)
    if FINGERPRINT in caps:
        return model.fingerprint(state)
    if CANONICAL_BYTES in caps:
        return int.from_bytes(hashlib.blake2b(model.canonical_bytes(state), digest_size=8).digest(), "big")
    return fingerprint(model.canonical(state))


def format_fp(fp: int) -> str:
    """Fixed-width hex rendering used in reports and error messages."""
    return f"{fp:016x}"
