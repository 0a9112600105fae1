"""A partial view of a state for code that reads a few sessions of a large
state (step coalescing): the pools' free units, queue lengths and cached
units, the sessions asked for, the residents of a stage, and a patched
copy; over a packed row nothing else is decoded (a row of a thousand
sessions is 300 KB: decoding its pools whole on every coalesced block
was most of a block's cost)."""

from __future__ import annotations

import numpy as np

from serq.semantics.kernel.abi import (
    CE_REL, CE_UNITS, CW, F_PC, F_PROG, F_RD, F_RT, P_CN, P_FREE, P_Q, P_QN, R_NSESS, R_SEQ, RHDR,
)
from serq.semantics.rowstate import F_FAULT, RowState
from serq.semantics.state import State, pool_of, session_of


class StateView:
    def __init__(self, engine, state):
        self.e = engine
        self.state = state
        self.packed = isinstance(state, RowState) and state.cap == engine.cap
        self._pools = None
        if self.packed:
            self.arr = np.frombuffer(state.row, np.int64)
            self.fault = state.fault if state.flags & F_FAULT else None
            self.n = int(self.arr[R_NSESS])
            self.seq = int(self.arr[R_SEQ])
        else:
            self.fault = state.fault
            self.n = len(state.sessions)
            self.seq = state.seq
            self._pools = state.pools

    @property
    def pools(self) -> tuple:
        """Every pool as its tuple (decoded once, when first read)."""
        if self._pools is None:
            e = self.e
            lst = self.arr[e.PB: e.W].tolist()
            self._pools = tuple(e.dec_pool(lst, p, 0) for p in range(len(e.program.pools)))
        return self._pools

    def _pb(self, p: int) -> int:
        return self.e.PB + p * self.e.PW

    def free(self, p: int):
        """Pool p's free units (None: an unbounded pool)."""
        if not self.packed:
            return self.state.pools[p].free
        return None if self.e.program.pools[p].cap is None else int(self.arr[self._pb(p) + P_FREE])

    def queued(self, p: int) -> int:
        """The length of pool p's queue."""
        if not self.packed:
            return len(self.state.pools[p].queue)
        return int(self.arr[self._pb(p) + P_QN])

    def cached(self, p: int) -> int:
        """Units in pool p's cache."""
        if not self.packed:
            return sum(c.units for c in self.state.pools[p].cache)
        b = self._pb(p)
        c = b + P_Q + self.e.cap
        return int(self.arr[c + CE_UNITS: c + CW * int(self.arr[b + P_CN]): CW].sum())

    def session(self, sid: int):
        if not self.packed:
            return self.state.sessions[sid]
        e = self.e
        b = RHDR + sid * e.SF
        return e.dec_session(self.arr[b: b + e.SF].tolist(), sid, 0)

    def residents(self, si: int) -> list[int]:
        """Sessions in a run of stage si with work left, in id order."""
        stage = self.e.run_stage_table
        if not self.packed:
            return [sid for sid, s in enumerate(self.state.sessions) if stage[s.prog, s.pc] == si and s.run_done < s.run_total]
        e = self.e
        m = self.arr[RHDR: RHDR + self.n * e.SF].reshape(self.n, e.SF)
        mask = (stage[m[:, F_PROG], m[:, F_PC]] == si) & (m[:, F_RD] < m[:, F_RT])
        return np.nonzero(mask)[0].tolist()

    def patched(self, sessions: dict, free: dict, evict: dict):
        """The state with these sessions replaced, these pools' free units
        set (`free`: pool -> units) and, per pool of `evict` (pool ->
        (units, desc)), `units` evicted from its cache as the model's
        `free_block` does under a key-less evict order (`evicted`)."""
        if not self.packed:
            ss = list(self.state.sessions)
            for sid, s in sessions.items():
                ss[sid] = session_of(s)
            ps = list(self.state.pools)
            for p in set(free) | set(evict):
                pool = ps[p]
                if p in free:
                    pool = pool._replace(free=free[p])
                if p in evict:
                    pool = pool._replace(cache=evicted(pool.cache, *evict[p]))
                ps[p] = pool_of(pool)
            return State(tuple(ss), tuple(ps), self.state.seq, self.state.fault)
        e = self.e
        buf = bytearray(self.state.row)
        row = np.frombuffer(buf, np.int64)
        for sid, s in sessions.items():
            e.enc_session(row, sid, s)
        for p, units in free.items():
            row[self._pb(p) + P_FREE] = units
        for p, (units, desc) in evict.items():
            self._evict_row(row, p, units, desc)
        return RowState(self.state.rows, bytes(buf), self.state.cap, 0, self.state.flags)

    def _evict_row(self, row, p: int, units: int, desc: bool) -> None:
        """`evicted` on pool p's cache in the row (entries in place, the
        slots left cleared, as the engine writes a pool)."""
        b = self._pb(p)
        c = b + P_Q + self.e.cap
        cn = int(row[b + P_CN])
        ent = row[c: c + CW * cn].reshape(cn, CW)
        have = ent[:, CE_UNITS]
        rel = ent[:, CE_REL]
        order = np.argsort(-rel if desc else rel, kind="stable")  # as `sorted` (stable) by the release number
        u = have[order]
        take = np.clip(units - (np.cumsum(u) - u), 0, u)
        assert int(take.sum()) == units, "eviction beyond the cache (checked by plan_block)"
        left = have.copy()
        left[order] = u - take
        keep = left > 0
        new = ent[keep].copy()
        new[:, CE_UNITS] = left[keep]
        k = new.shape[0]
        row[c: c + CW * k] = new.ravel()
        row[c + CW * k: c + CW * cn] = 0
        row[b + P_CN] = k


def evicted(cache: tuple, units: int, desc: bool) -> tuple:
    """The cache after the model's `free_block` freed `units` (whole blocks,
    one at a time) under a key-less evict order: always from the entry with
    the smallest (largest, if `desc`) release sequence number, which leaves
    when it is empty. Entries keep their places in the list."""
    left = {i: e.units for i, e in enumerate(cache)}
    order = sorted(range(len(cache)), key=lambda i: -cache[i].released if desc else cache[i].released)
    for i in order:
        if units <= 0:
            break
        t = min(units, left[i])
        left[i] -= t
        units -= t
    assert units == 0, "eviction beyond the cache (checked by plan_block)"
    return tuple(e._replace(units=left[i]) for i, e in enumerate(cache) if left[i] > 0)
