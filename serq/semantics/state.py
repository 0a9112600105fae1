"""The state's layout, named once: what `serq.semantics.model`'s states hold, read by
field (`state.sessions`, `s.pc`, `h.own`, `pool.queue`) rather than by
position. Each is a NamedTuple, so a state is still a tuple: equality,
hashing, pickling and fingerprints are those of the plain tuple.

The kernel's row (`kernel/abi.py`) holds the same facts; `Engine.state`
decodes a row into these.

`seq` numbers every event; `arrived`, `admitted`, `released` are such
numbers (the explorer's canonical form replaces them by their ranks).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Hold(NamedTuple):
    """A hold of pool units by a session: the scope (an index in the
    program's scopes), the pool, the units owned, the units in use, the
    event number of its admission, and the units of its own copies of
    shared blocks (`copies keep`; part of `own`)."""

    scope: int
    pool: int
    own: int
    use: int
    admitted: int
    copies: int = 0


class Session(NamedTuple):
    """One session: program and state (pc), attributes (in the program's
    slot order), the current run's done and total units, its holds, its
    parent (-1: none), live children, arrival and admission event numbers,
    the last position (-1 or a (stage, position) pair), and whether it is
    stuck."""

    prog: int
    pc: int
    attrs: tuple
    run_done: int
    run_total: int
    holds: tuple  # of Hold
    parent: int
    live: int
    arrived: int
    admitted: int
    last_pos: Any
    stuck: int


class CacheEntry(NamedTuple):
    """Released units kept in a pool's cache: the session that released
    them, how many, the release's event number, and the simulator's time of
    the release (for `age`; 0 in the explorer)."""

    owner: int
    units: int
    released: int
    tick: int


class Pool(NamedTuple):
    """A pool: free units (None: unbounded), its cache (of CacheEntry) and
    its queue (session ids)."""

    free: Any
    cache: tuple
    queue: tuple


class State(NamedTuple):
    """A state: the sessions (by id), the pools (in the program's order), the
    event counter, and the fault ((kind, message)) or None."""

    sessions: tuple  # of Session
    pools: tuple  # of Pool
    seq: int
    fault: Any


def session_of(s) -> Session:
    """A session given as any tuple in the layout, as a Session (its holds
    as Holds)."""
    return Session(*s[:5], tuple(Hold._make(h) for h in s[5]), *s[6:])


def pool_of(p) -> Pool:
    """A pool given as any tuple in the layout, as a Pool (its cache as
    CacheEntries)."""
    return Pool(p[0], tuple(CacheEntry._make(c) for c in p[1]), tuple(p[2]))


def prefix_owner(program, owner: int) -> str | None:
    """The words for a cache entry's owner when it is a shared prefix's
    (`prefix SYS`, or `copies of prefix SYS`: released copies under `copies
    keep`); None for a session's entry (owners as the kernel writes them)."""
    from serq.semantics.kernel.abi import COPY_OWNER, SEG_OWNER
    if owner > SEG_OWNER:
        return None
    if owner <= COPY_OWNER:
        return f"copies of prefix {program.prefixes[COPY_OWNER - owner].name}"
    return f"prefix {program.prefixes[SEG_OWNER - owner].name}"
