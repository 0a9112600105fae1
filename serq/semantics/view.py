"""A partial view of a state for code that reads a few sessions of a large
state (step coalescing): the pools, the sessions asked for, the residents
of a stage, and a patched copy; over a packed row nothing else is decoded."""

from __future__ import annotations

import numpy as np

from serq.semantics.kernel.abi import F_PC, F_PROG, F_RD, F_RT, R_NSESS, R_SEQ, RHDR
from serq.semantics.rowstate import F_FAULT, RowState
from serq.semantics.state import State, pool_of, session_of


class StateView:
    def __init__(self, engine, state):
        self.e = engine
        self.state = state
        self.packed = isinstance(state, RowState) and state.cap == engine.cap
        if self.packed:
            self.arr = np.frombuffer(state.row, np.int64)
            self.w = None  # the row as a list, made when a session is read
            self.fault = state.fault if state.flags & F_FAULT else None
            self.n = int(self.arr[R_NSESS])
            self.seq = int(self.arr[R_SEQ])
            lst = self.arr[engine.PB: engine.W].tolist()
            self.pools = tuple(engine.dec_pool(lst, p, 0) for p in range(len(engine.program.pools)))
        else:
            self.fault = state.fault
            self.n = len(state.sessions)
            self.seq = state.seq
            self.pools = state.pools

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

    def patched(self, sessions: dict, pools: dict):
        """The state with these sessions and pools replaced."""
        if not self.packed:
            ss = list(self.state.sessions)
            for sid, s in sessions.items():
                ss[sid] = session_of(s)
            ps = list(self.state.pools)
            for p, pool in pools.items():
                ps[p] = pool_of(pool)
            return State(tuple(ss), tuple(ps), self.state.seq, self.state.fault)
        e = self.e
        row = self.arr.copy()
        for sid, s in sessions.items():
            e.enc_session(row, sid, s)
        for p, pool in pools.items():
            e.enc_pool(row, p, pool)
        return RowState(self.state.rows, row.tobytes(), self.state.cap, 0, self.state.flags)
