"""One hash partition of a partitioned exploration over a model's Python
states (a model that offers no rows, or one whose states outgrew them):
the object counterpart of `partition.py`'s `Partition`, with the same
methods, so that the same driver (`driver.py`) runs it, one partition on
each worker process (`backends._Processes`).

A partition owns the states whose fingerprint is its index modulo K: for
each, its global id, parent id and action index; its part of the frontier
(the states themselves, with their ids); the non-progress edges from its
states. Expanding a state gives each successor the key (parent id << SH)
| action index, the place where the sequential BFS meets it, so the
driver's order and stop events are those of the rows. A bundle carries
every successor's key, fingerprint, progress flag and action (the
generated count and the non-progress edges are exact), but a state only
for the first occurrence of its fingerprint in the bundle and not for one
this partition already stores: the first occurrence over all bundles, the
one stored, always comes with its state. The bundle for the partition
itself stays where it is.

No checkpoints: the states are Python values, with no file format."""

from __future__ import annotations

import bisect
import logging
import os

import numpy as np

from explorer.errors import PartitionError
from explorer.fingerprint import state_fingerprint
from explorer.model import CHECK, LIMITS, NOTES, has
from explorer.strategies.partitions.partition import SH

__all__ = ["ObjectPartition"]

log = logging.getLogger("explorer.strategies.partitions.objects")

NO_CHECKPOINT = "a model without rows cannot be checkpointed: its states are Python values, with no file format"


class ObjectPartition:
    """One hash partition over Python states. `factory`: the model's, for a
    partition built in a worker process (then `start` is given None)."""

    def __init__(self, factory=None) -> None:
        self.factory, self.m = factory, None

    # -- what the driver asks of the partition class ----------------------------
    @staticmethod
    def initial(m):
        """(states, fingerprints, flags, state of index) of the initial states,
        every one to be checked."""
        states = list(m.initial_states())
        return states, [state_fingerprint(m, s) for s in states], [CHECK] * len(states), states.__getitem__

    @staticmethod
    def take(items, idx) -> list:
        return [items[int(i)] for i in idx]

    @staticmethod
    def owner(fps, k: int) -> np.ndarray:
        return np.array([int(f) % k for f in fps], np.int64)

    # -- a run -------------------------------------------------------------------
    def start(self, factory, index: int, k: int, livelock: bool, deadlock_check: bool) -> tuple[int, str]:
        import socket

        self.m = (factory if factory is not None else self.factory)()
        self.index, self.k = index, k
        self.livelock, self.deadlock_check = livelock, deadlock_check
        self.ids: dict[int, int] = {}  # fingerprint -> local index
        self.fp: list[int] = []  # per local index: fingerprint, parent id, action, global id
        self.parent: list[int] = []
        self.action: list[int] = []
        self.gid: list[int] = []
        self.n_committed = 0
        self.frontier: list = []  # (state, id), in id order
        self.edges: list = []  # (keys, destination ids), committed, in key order
        self.kept = None  # this partition's own bundle, between expand and merge
        self.pending = None
        self.level_keys = np.zeros(0, np.int64)
        return os.getpid(), socket.gethostname()

    def notes(self) -> list:
        return list(self.m.notes) if has(self.m, NOTES) else []

    def set_limits(self, limits) -> None:
        if has(self.m, LIMITS):
            self.m.set_limits(limits)

    def _store(self, fp: int, parent: int, action: int) -> None:
        self.ids[fp] = len(self.fp)
        self.fp.append(fp)
        self.parent.append(parent)
        self.action.append(action)

    def seed(self, states, fps, flags, gids, actions) -> None:
        for s, fp, g, a in zip(states, fps, gids, actions):
            self._store(int(fp), -1, int(a))
            self.gid.append(int(g))
            self.frontier.append((s, int(g)))
        self.n_committed = len(self.fp)

    # -- lookups -------------------------------------------------------------------
    def entry_by_fp(self, fp: int):
        i = self.ids.get(int(fp))
        if i is None or i >= self.n_committed:
            return None
        return self.gid[i], self.parent[i], self.action[i]

    def _by_gid(self, g: int) -> int:
        i = bisect.bisect_left(self.gid, g, 0, self.n_committed)  # ids only grow, level after level
        return i if i < self.n_committed and self.gid[i] == g else -1

    def entry_by_gid(self, g: int):
        i = self._by_gid(int(g))
        return None if i < 0 else (self.fp[i], self.parent[i], self.action[i])

    def fps_of(self, gids) -> dict[int, int]:
        return {int(g): self.fp[i] for g in gids if (i := self._by_gid(int(g))) >= 0}

    def count_keys(self, key: int, inclusive: bool) -> int:
        return int(np.searchsorted(self.level_keys, key, side="right" if inclusive else "left"))

    def frontier_size(self) -> int:
        return len(self.frontier)

    # -- a level -------------------------------------------------------------------
    def expand(self, depth: int):
        """(summary, bundle for partition 0, ..., k-1); the summary:
        (successors, first id without one (not done) or -1). A bundle:
        (keys, fingerprints, progress flags, actions, states or None)."""
        m, k = self.m, self.k
        out = [([], [], [], [], []) for _ in range(k)]
        firsts: list[set] = [set() for _ in range(k)]
        nsucc, dead = 0, -1
        for state, g in self.frontier:
            any_succ = False
            for ai, action in enumerate(m.actions(state)):
                nxt = m.step(state, action)
                if nxt is None:
                    continue
                if ai >= 1 << SH:
                    raise PartitionError(f"a state has more than {1 << SH} actions")
                any_succ = True
                nsucc += 1
                nfp = state_fingerprint(m, nxt)
                d = nfp % k
                keys, fps, progress, acts, states = out[d]
                keys.append((g << SH) | ai)
                fps.append(nfp)
                progress.append(not self.livelock or m.is_progress(state, action, nxt))
                acts.append(ai)
                first = nfp not in firsts[d] and not (d == self.index and nfp in self.ids)
                if first:
                    firsts[d].add(nfp)
                states.append(nxt if first else None)
            if not any_succ and dead < 0 and self.deadlock_check and not m.is_done(state):
                dead = g  # the frontier is in id order: the first is the smallest
        log.debug("partition %d: expanded %d states, %d transitions", self.index, len(self.frontier), nsucc)
        self.frontier = []
        bundles = [(np.array(b[0], np.int64), b[1], b[2], b[3], b[4]) for b in out]
        self.kept, bundles[self.index] = bundles[self.index], None
        return [(nsucc, dead)] + bundles

    def merge(self, depth: int, cut_level: bool, *bundles):
        """Store the first occurrence of every new state among the received
        successors (walked in key order); returns (keys of the new states,
        first violation as (key, kind, message) or None, successors
        received, successors cut by the depth bound)."""
        got = [self.kept if b is None else b for b in bundles]
        self.kept = None
        keys = np.concatenate([b[0] for b in got]) if got else np.zeros(0, np.int64)
        fps = [f for b in got for f in b[1]]
        progress = [p for b in got for p in b[2]]
        acts = [a for b in got for a in b[3]]
        states = [s for b in got for s in b[4]]
        order = np.argsort(keys, kind="stable")
        self.level_keys = keys[order]
        new, edges, ncut = [], [], 0  # new: (position, local index); edges: (key, local index)
        for p in order.tolist():
            fp, key = fps[p], int(keys[p])
            i = self.ids.get(fp)
            if i is None:
                if cut_level:
                    ncut += 1
                    continue
                i = len(self.fp)
                self._store(fp, key >> SH, acts[p])
                new.append(p)
            if not progress[p]:
                edges.append((key, i))
        bad = None
        for p in new:
            found = self.m.invariants(states[p])
            if found:
                bad = (int(keys[p]), str(found[0][0]), str(found[0][1]))
                break
        self.pending = ([states[p] for p in new], edges)
        return keys[new] if new else np.zeros(0, np.int64), bad, len(fps), ncut

    def commit(self, gids, build_frontier: bool) -> None:
        """The global ids of the states stored by the last merge (in key
        order); with build_frontier, they become the next frontier."""
        states, edges = self.pending
        self.pending = None
        gids = [int(g) for g in gids]
        self.gid.extend(gids)
        self.n_committed = len(self.fp)
        if edges:
            self.edges.append((np.array([e[0] for e in edges], np.int64),
                               np.array([self.gid[e[1]] for e in edges], np.int64)))
        if build_frontier:
            self.frontier = list(zip(states, gids))

    def edges_all(self):
        if not self.edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate([e[0] for e in self.edges]), np.concatenate([e[1] for e in self.edges])

    def save(self, *args):
        raise PartitionError(NO_CHECKPOINT)

    def load(self, *args):
        raise PartitionError(NO_CHECKPOINT)
