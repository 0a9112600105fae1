"""Exact state identity: `Exact(model)` stores every state's full canonical
bytes and numbers them, so two different states never share an identity
(a 64-bit fingerprint can collide; see `Stats.collision_probability`).

The numbers stand in for fingerprints: the engine, its store and its traces
are unchanged. They are given in the order states are first seen, so they
mean something in this process only: an exact search runs in one process,
on the sequential engine (the rows engine keeps fingerprints alone), and
holds each state's bytes: for small runs, to rule collisions out."""

from __future__ import annotations

from typing import Any

from explorer.fingerprint import encode
from explorer.model import CANONICAL_BYTES, EXACT_KEY, FINGERPRINT, ROW_THREADS, ROWS, has

__all__ = ["Exact"]

_ROWS = ("array_expand", "array_expander", "array_initial", "array_state")


class Exact:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.ids: dict[bytes, int] = {}
        if has(model, EXACT_KEY):
            key = model.exact_key
        else:
            key = model.canonical_bytes if has(model, CANONICAL_BYTES) else (lambda s: encode(model.canonical(s)))
        self._key = key
        # its own fingerprints; rows carry fingerprints only: not used exactly
        self.capabilities = (frozenset(getattr(model, "capabilities", ())) - {ROWS, ROW_THREADS}) | {FINGERPRINT}

    def fingerprint(self, state: Any) -> int:
        k = self._key(state)
        n = self.ids.get(k)
        if n is None:
            n = self.ids[k] = len(self.ids) + 1
        return n

    def stored_bytes(self) -> int:
        """Bytes of canonical state held (the keys alone)."""
        return sum(len(k) for k in self.ids)

    def __getattr__(self, name: str) -> Any:
        if name in _ROWS:  # rows carry fingerprints only: not used exactly
            raise AttributeError(name)
        return getattr(self.model, name)
