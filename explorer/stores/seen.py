"""The seen-set: fingerprint -> how the state was first reached.

Only fingerprints are stored, not states (like TLC): a record is
``(parent fingerprint or None, action index, depth)``.  For an initial state
the parent is None and the "action index" is the index in
``initial_states()``.  That is enough to rebuild a trace by replay.

Invariant: following parent links strictly decreases the stored depth, so a
chain always ends at an initial state (no cycles).  Dict insertion order is
the discovery order, which the livelock search uses to pick a deterministic
SCC.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

__all__ = ["Record", "Store"]


class Record(NamedTuple):
    parent: int | None
    action_index: int
    depth: int


class Store:
    def __init__(self) -> None:
        self._seen: dict[int, tuple] = {}  # Record's fields as a plain tuple (cheaper to build)
        self.has = self._seen.__contains__  # `fp in store` without a Python call (the search's inner loop)

    def __contains__(self, fp: int) -> bool:
        return fp in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self) -> Iterator[int]:
        """Fingerprints in discovery order."""
        return iter(self._seen)

    def add(self, fp: int, parent: int | None, action_index: int, depth: int) -> None:
        self._seen[fp] = (parent, action_index, depth)

    def get(self, fp: int) -> Record:
        return Record._make(self._seen[fp])

    def chain(self, fp: int) -> list[tuple[int, int]]:
        """[(fingerprint, action index)] from the initial state to ``fp``."""
        return chain_from(self._seen.__getitem__, fp, limit=len(self._seen))

    def first_of(self, fps: Iterable[int]) -> int:
        """The earliest-discovered fingerprint among ``fps``."""
        wanted = set(fps)
        for fp in self._seen:
            if fp in wanted:
                return fp
        raise KeyError("none of the fingerprints is stored")


def chain_from(lookup, fp: int, limit: int | None = None) -> list[tuple[int, int]]:
    """Walk parent links with ``lookup(fp) -> Record``; root first."""
    out: list[tuple[int, int]] = []
    cur: int | None = fp
    while cur is not None:
        rec = lookup(cur)
        out.append((cur, rec[1]))
        cur = rec[0]
        if limit is not None and len(out) > limit + 1:
            raise RuntimeError("cycle in parent links (store invariant broken)")
    out.reverse()
    return out
