"""The kernel driven from Python: rows to and from the model's state
tuples, one step with any oracle, events and faults in words.

A state tuple (see `serq.semantics.model`) and a row hold the same facts; the row
is what the kernel steps. The simulator and the explorer both step through
`Engine.run`: one semantics."""

from __future__ import annotations

from functools import partial

import numpy as np

from explorer.runtime.limits import tick
from serq import ir
from serq.semantics import entries  # noqa: F401 (registers the kernel's entry points: explorer.runtime.compiled)
from serq.ir.fold import const_eval
from serq.semantics import events, words
from serq.semantics.kernel.abi import (
    R_HALT,
    A_ARRIVE, A_ITERATE, A_TURN, CE_UNITS, CW, EVW, F_ADM, F_ARR, F_ATTR, F_LIVE, F_LP0, F_LP1, F_NH, F_PARENT,
    F_PC, F_PROG, F_RD, F_RT, F_STUCK, FT_EXTERNAL, H_INVO, HALT_ASK, HALT_CAP, HALT_EVFULL, HALT_FAULT,
    HALT_ULOG, HW, CALL_EVAL_AT, CALL_EVAL_SHAPE, CALL_EVICTABLE, CALL_EXPLAIN, CALL_LEVELS, CALL_MIGHT_WORK, CALL_STEP,
    P_CN, P_FREE, P_Q, P_QN, R_FA0, R_FA1, R_FA2, R_FA3, R_FAULT, R_NSESS,
    R_SEQ, RHDR, S_ARITY, S_EV, S_EVN, S_QKIND, S_QN, S_QPOS, S_QSTATE, S_QVALS, S_SCRIPT,
    S_VALS, T_REAL,
)
from serq.semantics.lower import DIST, bits2f, f2bits, initial_attrs, lower, weights
from serq.semantics.rowstate import RowState
from serq.semantics.state import CacheEntry, Hold, Pool, Session, State

KIND = {"arrive": A_ARRIVE, "turn": A_TURN, "iterate": A_ITERATE}
_new = tuple.__new__  # a NamedTuple made without its Python-level constructor
_hold, _entry = partial(_new, Hold), partial(_new, CacheEntry)  # from a tuple of the record's fields


_ENTRY = None
NO_ROWS = np.zeros((0, 1), np.int64)  # the kernel entry's rows for every operation but an expansion
TICK = (1 << 12) - 1  # a loop over sessions calls `tick` every 4,096 of them (a small workload: never)


def _kernel():
    """The kernel's one entry point, `call(K, w, (op, a1, ..., a6), buf, rows)`
    (serq/semantics/kernel/call.py)."""
    global _ENTRY
    if _ENTRY is None:
        from serq.semantics.kernel.call import call

        _ENTRY = call
    return _ENTRY


class Engine:
    def __init__(self, program: ir.Program, ties: str = "all"):
        self.low = lower(program, ties)  # once per program
        self.program = program
        self.limits = None  # explorer.runtime.limits.Limits: checked each time a step restarts
        self._draws: dict = {}  # (program, pc) of a draw or choose: its type, real parameters, listed values
        self._fo = np.zeros(5, np.int64)  # an @step expression's fault: code and arguments
        n = sum(line.count for line in program.workload)
        spawns = any(st.kind == "spawn" for sp in program.sessions for st in sp.states)
        self._evmul = 1
        self._set_cap(max(n + (8 if spawns else 0), 1))
        # per program and pc: the stage a run state runs on (-1 otherwise)
        npc = max(len(sp.states) for sp in program.sessions) if program.sessions else 1
        self.run_stage_table = np.full((max(len(program.sessions), 1), npc), -1, np.int64)
        for pi, sp in enumerate(program.sessions):
            for pc, st in enumerate(sp.states):
                if st.kind == "run":
                    self.run_stage_table[pi, pc] = self.low.stage_ix[st.stage]
        self.workload = []
        for line in program.workload:
            pi = self.low.prog_ix[line.program]
            for i in range(line.count):
                if i & TICK == TICK:
                    tick()  # a workload of a million sessions: cut by the limits of a check that builds it
                self.workload.append((pi, initial_attrs(self.low, pi, line.args)))

    def _set_cap(self, cap: int) -> None:
        # the new arrays first: a MemoryError leaves the engine as it was
        pk = np.zeros(2 + max(self.low.NP, 1) + max(self.low.NST, 1), np.int64)
        L, ws = self.low.table(cap, max(256, 16 * cap) * self._evmul)
        w = np.zeros(ws, np.int64)
        from serq.semantics.kernel.abi import H_PB, H_PW, H_SF, H_W

        self.cap, self._pk, self.K, self.w = cap, pk, L, w
        self._loaded, self._row0 = None, None
        self._in_w = None  # the RowState whose row w holds, unchanged
        self.SF, self.PB, self.PW, self.W = int(L[H_SF]), int(L[H_PB]), int(L[H_PW]), int(L[H_W])
        self.o = {k: int(L[k]) for k in (S_SCRIPT, S_QPOS, S_ARITY, S_EVN, S_EV)}

    # ------------------------------------------------------------ rows
    def load(self, state) -> None:
        """Write a state tuple into the working row (the last one loaded is
        kept as a copy: expanding one state runs many steps from it)."""
        if state is self._loaded and self._row0 is not None:
            self.w[: self.W] = self._row0
            self._in_w = None
            return
        if isinstance(state, RowState):
            if state is self._in_w:
                return  # the row is in w already (the simulator's last step)
            if state.cap == self.cap:
                self.w[: self.W] = np.frombuffer(state.row, np.int64)
                self._loaded = None
                self._in_w = state
                return
            state = state.tuple()
        sessions, pools, seq, fault = state
        while len(sessions) > self.cap:
            self._set_cap(self.cap * 2)
        row = [0] * self.W
        row[R_NSESS] = len(sessions)
        row[R_SEQ] = seq
        row[R_FAULT] = 0 if fault is None else FT_EXTERNAL
        for sid, ss in enumerate(sessions):
            if sid & TICK == TICK:
                tick()
            self.enc_session(row, sid, ss)
        for p, pool in enumerate(pools):
            self.enc_pool(row, p, pool)
        self._row0 = np.array(row, np.int64)
        self._loaded = state
        self._in_w = None
        self.w[: self.W] = self._row0

    def enc_session(self, row, sid: int, s) -> None:
        """Write a session tuple into row (a list or an array)."""
        (prog, pc, attrs, rd, rt, holds, parent, live, arr, adm, lp, stuck) = s
        b = RHDR + sid * self.SF
        lp0, lp1 = (-1, -1) if lp == -1 else lp
        row[b: b + F_ATTR] = (prog, pc, rd, rt, parent, live, arr, adm, lp0, lp1, stuck, len(holds))
        t = self.low.types[prog]
        for i, v in enumerate(attrs):
            row[b + F_ATTR + i] = f2bits(v) if t[i] == T_REAL else int(v)
        hb = b + F_ATTR + self.low.NA
        for j, h in enumerate(holds):
            row[hb + HW * j: hb + HW * (j + 1)] = h

    def enc_pool(self, row, p: int, pool) -> None:
        free, cache, queue = pool
        cap = self.cap
        b = self.PB + p * self.PW
        row[b + P_FREE] = 0 if free is None else free
        row[b + P_QN] = len(queue)
        row[b + P_Q: b + P_Q + cap] = tuple(queue) + (-1,) * (cap - len(queue))
        row[b + P_CN] = len(cache)
        c = b + P_Q + cap
        flat = [x for e in cache for x in e]
        n = CW * (cap + len(self.program.prefixes))  # one entry per session or shared prefix
        row[c: c + n] = flat + [0] * (n - len(flat))  # a shorter cache: cleared

    def dec_session(self, w, sid: int, b: int | None = None):
        """A session tuple from row w (a list); `b`: where its record starts
        in w (default: where it is in a whole row)."""
        if b is None:
            b = RHDR + sid * self.SF
        prog = w[b + F_PROG]
        t = self.low.types[prog]
        attrs = tuple(words.value(t[i], w[b + F_ATTR + i]) for i in range(len(t)))
        hb = b + F_ATTR + self.low.NA
        holds = tuple(map(_hold, zip(*[iter(w[hb: hb + HW * w[b + F_NH]])] * HW)))  # all at C speed
        lp = -1 if w[b + F_LP0] == -1 else (w[b + F_LP0], w[b + F_LP1])
        return _new(Session, (prog, w[b + F_PC], attrs, w[b + F_RD], w[b + F_RT], holds, w[b + F_PARENT],
                              w[b + F_LIVE], w[b + F_ARR], w[b + F_ADM], lp, w[b + F_STUCK]))

    def dec_pool(self, w, p: int, base: int | None = None):
        """A pool tuple from row w (a list); `base`: where the pools start in w."""
        b = (self.PB if base is None else base) + p * self.PW
        c = b + P_Q + self.cap
        cache = tuple(map(_entry, zip(*[iter(w[c: c + CW * w[b + P_CN]])] * CW)))  # all at C speed
        free = None if self.program.pools[p].cap is None else w[b + P_FREE]
        return _new(Pool, (free, cache, tuple(w[b + P_Q: b + P_Q + w[b + P_QN]])))

    def cached_queued(self, state) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Each pool's cached units and queue length, read from the row
        without decoding its sessions (a run's pictures sample them after
        every iteration: decoding thousands of sessions each time would
        make the run quadratic)."""
        if not (isinstance(state, RowState) and state.cap == self.cap):
            pools = state.pools
            return tuple(sum(e.units for e in p.cache) for p in pools), tuple(len(p.queue) for p in pools)
        w = np.frombuffer(state.row, np.int64)
        cached, queued = [], []
        for p in range(len(self.program.pools)):
            b = self.PB + p * self.PW
            c = b + P_Q + self.cap
            cached.append(int(w[c + CE_UNITS: c + CW * int(w[b + P_CN]): CW].sum()))
            queued.append(int(w[b + P_QN]))
        return tuple(cached), tuple(queued)

    # ------------------------------------------------------------ rows read as a whole (`check eventually`)
    def row_sessions(self, rows: np.ndarray) -> np.ndarray:
        """The number of sessions of each row of rows (a 2-D int array)."""
        return rows[:, R_NSESS]

    def queued_mask(self, rows: np.ndarray) -> np.ndarray:
        """Per row, the mask (uint64, bit = session id < 64) of the
        sessions in some pool's queue."""
        cap = self.cap
        out = np.zeros(rows.shape[0], np.uint64)
        slots = np.arange(cap)
        for p in range(len(self.program.pools)):
            b = self.PB + p * self.PW
            q = rows[:, b + P_Q: b + P_Q + cap]
            live = slots[None, :] < rows[:, b + P_QN][:, None]
            bits = np.where(live, np.left_shift(np.uint64(1), np.where(live, q, 0).astype(np.uint64)), np.uint64(0))
            out |= np.bitwise_or.reduce(bits, axis=1) if cap else out
        return out

    def busy_mask(self, rows: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """Per row, the mask of the sessions whose program state `rest`
        (a table [program, state] of booleans) does not mark."""
        n = rows[:, R_NSESS]
        out = np.zeros(rows.shape[0], np.uint64)
        for sid in range(int(n.max()) if n.shape[0] else 0):
            b = RHDR + sid * self.SF
            busy = (sid < n) & ~rest[np.clip(rows[:, b + F_PROG], 0, rest.shape[0] - 1),
                                     np.clip(rows[:, b + F_PC], 0, rest.shape[1] - 1)]
            out |= np.where(busy, np.uint64(1) << np.uint64(sid), np.uint64(0))
        return out

    def state(self, fault=None):
        """The working row as a state tuple."""
        w = self.w[: self.W].tolist()
        sessions = [self.dec_session(w, sid) for sid in range(w[R_NSESS])]
        pools = [self.dec_pool(w, p) for p in range(len(self.program.pools))]
        return _new(State, (tuple(sessions), tuple(pools), w[R_SEQ], fault))

    # ------------------------------------------------------------ a step
    def run(self, state, base, oracle, now: int = 0, want_events: bool = True, packed: bool = False):
        """One step: (successor state or None, events). `oracle` is None
        (first answers), a script (a list: the explorer's enumeration; its
        arities are left in `self.arity`), or an object with draw/tie.
        `packed`: the successor as a RowState (decoded only when read)."""
        kind = KIND[base[0]]
        subj = base[1]
        call = _kernel()
        script: list[int] = list(oracle) if isinstance(oracle, (list, tuple)) else []
        ask = oracle is not None and not isinstance(oracle, (list, tuple))
        while True:
            if self.limits is not None:  # a step restarted many times (draws, growth) keeps the limits
                self.limits.check()
            self.load(state)
            self._in_w = None  # the step writes the row
            K, w, o = self.K, self.w, self.o
            if script:
                w[o[S_SCRIPT]: o[S_SCRIPT] + len(script)] = script
            # one compiled entry for both (the packed summary is left unread when not asked for)
            ok = call(K, w, (CALL_STEP, kind, subj, now, 1 if ask else 0, 1 if want_events else 0, len(script)),
                      self._pk, NO_ROWS)
            halt = w[R_HALT]
            if halt == HALT_ASK:
                script.append(self._answer(oracle))
                continue
            if halt == HALT_CAP:
                self._set_cap(self.cap * 2)
                continue
            if halt in (HALT_EVFULL, HALT_ULOG):
                self._evmul *= 4
                self._set_cap(self.cap)
                continue
            break
        nq = int(w[o[S_QPOS]])
        self.arity = w[o[S_ARITY]: o[S_ARITY] + nq].tolist() if nq else []
        evs = []
        if want_events:
            n = int(w[o[S_EVN]])
            rec = w[o[S_EV]: o[S_EV] + EVW * n].reshape(n, EVW)
            evs = events.decode(self.low, rec, self._prog_of)
        if not ok:
            return None, evs
        code = int(w[R_FAULT])
        fault = None
        if code and code != FT_EXTERNAL:
            fault = self._fault(code)
            evs.append(events.fault(*fault))
        if packed:
            pk = self._pk.tolist()
            NP = self.low.NP
            rs = RowState(self, w[: self.W].tobytes(), self.cap, 0, pk[1])
            rs.levels = tuple(pk[2: 2 + NP])
            rs.works = pk[2 + NP: 2 + NP + self.low.NST]
            if code == FT_EXTERNAL:
                rs._t = self.state(state.fault)
            self._in_w = rs
            return rs, evs
        return self.state(fault if fault is not None else state.fault), evs

    def decode(self, rs: "RowState"):
        """A packed state as the state tuple."""
        if rs.cap != self.cap:  # made before the capacity grew: decode with its own layout
            names = ("cap", "_pk", "K", "w", "_loaded", "_row0", "_in_w", "SF", "PB", "PW", "W", "o")
            kept = [getattr(self, n) for n in names]  # the working arrays, the working row in them, kept whole
            self._set_cap(rs.cap)
            try:
                return self.decode(rs)
            finally:
                for n, v in zip(names, kept):
                    setattr(self, n, v)
        # the working row is put back as it was: a caller may read a state (its
        # `fault`, say) between a step and reading the step's successor from w
        saved, in_w, loaded = self.w[: self.W].copy(), self._in_w, self._loaded
        self.w[: self.W] = np.frombuffer(rs.row, np.int64)
        try:
            code = int(self.w[R_FAULT])
            return self.state(self._fault(code) if code else None)
        finally:
            self.w[: self.W] = saved
            self._in_w, self._loaded = in_w, loaded

    def might_work(self, state, si: int) -> bool:
        if isinstance(state, RowState) and state.works is not None:
            return bool(state.works[si])
        self.load(state)
        return bool(_kernel()(self.K, self.w, (CALL_MIGHT_WORK, si, 0, 0, 0, 0, 0), self._fo, NO_ROWS))

    def levels(self, state) -> tuple[int, ...]:
        """Units allocated per pool."""
        if isinstance(state, RowState) and state.levels is not None:
            return state.levels
        self.load(state)
        out = np.zeros(max(self.low.NP, 1), np.int64)
        _kernel()(self.K, self.w, (CALL_LEVELS, 0, 0, 0, 0, 0, 0), out, NO_ROWS)
        return tuple(out[: self.low.NP].tolist())

    def evictable(self, state) -> tuple[int, ...]:
        """Each pool's evictable cached units in a state: those no hold uses
        (a shared prefix's blocks are pinned while a hold uses them)."""
        call = _kernel()
        self.load(state)
        return tuple(int(call(self.K, self.w, (CALL_EVICTABLE, p, 0, 0, 0, 0, 0), self._fo, NO_ROWS))
                     for p in range(len(self.program.pools)))

    def explain_admission(self, state, sid: int, si: int, now: int = 0):
        """Why the waiting hold of session sid is or is not admitted, by the
        admission's own evaluation (stage si's budget; -1: event driven):
        (admit_if, items, fault). admit_if is None (no `admit if`) or its
        truth; items are (pool, reuse, need, take, obtainable) in units,
        need and take in whole blocks, obtainable None for an infinite pool;
        fault is the message of a header that cannot be evaluated, else None."""
        self.load(state)
        out = np.zeros(2 + 5 * max(self.low.NP, 1), np.int64)
        _kernel()(self.K, self.w, (CALL_EXPLAIN, sid, si, now, 0, 0, 0), out, NO_ROWS)
        fault = self._fault(int(self.w[R_FAULT]))[1] if self.w[R_HALT] == HALT_FAULT else None
        self._in_w = None  # the scratch and perhaps the fault slots were written: load again
        items = []
        for i in range(int(out[0])):
            p, reuse, need, take, obt = (int(x) for x in out[2 + 5 * i: 7 + 5 * i])
            items.append((p, reuse, need, take, None if obt < 0 else obt))
        return (None if out[1] < 0 else bool(out[1])), items, fault

    def pc_of_state(self, state, sid: int) -> tuple[int, int]:
        if isinstance(state, RowState) and state.cap == self.cap:
            b = RHDR + sid * self.SF
            v = np.frombuffer(state.row, np.int64, 2, 8 * (b + F_PROG))
            return int(v[0]), int(v[1])
        s = state.sessions[sid]
        return s.prog, s.pc

    def prog_of_state(self, state, sid: int) -> int:
        if isinstance(state, RowState) and state.cap == self.cap:
            return int(np.frombuffer(state.row, np.int64, 1, 8 * (RHDR + sid * self.SF + F_PROG))[0])
        return state.sessions[sid].prog

    def _prog_of(self, sid: int) -> int:
        return int(self.w[RHDR + sid * self.SF + F_PROG])

    def _answer(self, oracle) -> int:
        K, w = self.K, self.w
        n = int(w[K[S_QN]])
        if w[K[S_QKIND]] == 1:
            return int(oracle.tie(n))
        prog, pc = int(w[K[S_QSTATE]]), int(w[K[S_QSTATE] + 1])
        st = self.program.sessions[prog].states[pc]
        info = self._draws.get((prog, pc))
        if info is None:  # what the IR says of this draw, read once
            t = self.low.types[prog][self.low.slots[prog][st.attr]]
            draw = st.kind == "draw" and st.dist is not None
            reals = tuple(self.low.is_real(prm, prog) for prm in st.dist.params) if draw else ()
            listed = None
            if draw and st.dist.name == "weights" and st.domain.values:
                listed = [const_eval(v) for v in st.domain.values]  # constants (validated)
            info = self._draws[(prog, pc)] = (t, reals, listed)
        t, reals, listed = info
        raw = w[K[S_QVALS]: K[S_QVALS] + n].tolist()
        values = [words.value(t, v) for v in raw]
        params = []
        if st.kind == "draw":
            if st.dist is not None:
                for i, real in enumerate(reals):
                    v = int(w[K[S_VALS] + n + i])
                    params.append(bits2f(v) if real else v)
            listed = None if listed is None else list(listed)
            ws = weights(DIST[st.dist.name] if st.dist else 0, params, values, listed)
        else:
            listed = None
            ws = [1.0] * n
        query = getattr(oracle, "query", None)
        if query is not None:  # the asking statement and its parameters as evaluated (serq/check/prob.py)
            query(st, values, params, listed)
        return int(oracle.draw(values, ws))

    def _fault(self, code: int, args=None) -> tuple[str, str]:
        """(kind, message) of a fault code, its arguments `args` or the row's."""
        w = self.w
        a, b, c, d = args or (int(w[R_FA0]), int(w[R_FA1]), int(w[R_FA2]), int(w[R_FA3]))
        names = [sp.name for sp in self.program.sessions]

        def label(sid):
            return f"{names[self._prog_of(sid)]}#{sid + 1}"

        def pc_of(sid):
            bb = RHDR + sid * self.SF
            return int(w[bb + F_PROG]), int(w[bb + F_PC])

        def levels(p):
            st = self.state()
            alloc = sum(h.own for s in st.sessions for h in s.holds if h.pool == p)
            pool = st.pools[p]
            return alloc, sum(e.units for e in pool.cache), pool.free

        def describe():  # the step's action, from a conservation fault's arguments
            if b == A_ITERATE:
                return f"iterate {self.program.stages[c].name}"
            return f"{'arrive' if b == A_ARRIVE else 'turn'} {label(c)}"

        return words.fault(self.low, code, a, b, c, d, label=label, pc_of=pc_of, pool_levels=levels,
                           describe=describe)

    # ------------------------------------------------------------ expressions
    def invariants(self, state) -> list[tuple[str, str]]:
        out = []
        for i, c in enumerate(self.low.invariants):
            v, fault = self._check_expr(state, i)
            line = c.at[0] if c.at else "?"
            if fault is not None:
                out.append(("invariant", f"invariant at line {line} cannot be evaluated: {fault}"))
            elif not v:
                out.append(("invariant", f"invariant at line {line} is violated{self._breaker(state, i)}"))
        return out

    def _breaker(self, state, i: int, some: bool = False) -> str:
        """For a `forall` invariant, the session that breaks it (the first
        present, by the kernel's evaluator): ` by chat#2`; for an `exists`
        (the i-th `sometimes` when `some`), the one that meets it; empty
        otherwise."""
        code = (self.low.some_find if some else self.low.inv_find)[i]
        if code < 0 or (not some and self.low.invariants[i].e.q != "forall"):
            return ""
        self.load(state)
        sid = int(_kernel()(self.K, self.w, (CALL_EVAL_AT, code, 0, -1, 0, 0, 0), self._fo, NO_ROWS))
        if sid < 0 or self.w[R_HALT] == HALT_FAULT:
            return ""
        return f" by {self.program.sessions[self._prog_of(sid)].name}#{sid + 1}"

    def sometimes(self, state, i: int) -> tuple[bool, str | None]:
        """Whether the i-th `check sometimes` condition holds in `state`
        (False when it cannot be evaluated), and the words of the fault
        met evaluating it (None when none): the kernel's evaluator, as for
        an invariant."""
        v, fault = self._check_expr(state, len(self.low.invariants) + i)
        return bool(v) and fault is None, fault

    def met_by(self, state, i: int) -> str:
        """The session that meets the i-th `sometimes` condition when it is
        an `exists` (` by chat#2`), else empty."""
        c = self.low.sometimes[i].e
        return self._breaker(state, i, some=True) if isinstance(c, ir.Quant) and c.q == "exists" else ""

    def _check_expr(self, state, slot: int):
        """(value, fault words or None) of the `check` condition at `slot`
        of the lowered table (the invariants, then the `sometimes` ones)."""
        call = _kernel()
        K, w = self.K, self.w
        code = int(K[K[H_INVO] + slot])
        self.load(state)
        v = call(K, w, (CALL_EVAL_AT, code, 0, -1, 0, 0, 0), self._fo, NO_ROWS)
        if w[R_HALT] == HALT_FAULT:
            return 0, self._fault(int(w[R_FAULT]))[1].split(" at line ")[0]
        return v, None

    def eval_stage(self, si: int, which: str, shape: dict, now: int = 0):
        """Stage si's `budget`, `chunk` or `cost` (`which`) for an iteration
        of this shape (nreq, ndec, kvb, ntok: those not given are 0), by the
        kernel's evaluator over the lowered table: its value (an int, or a
        real), None when the stage has no such clause; raises ValueError
        with the fault's words. The working row is left as it was."""
        code, real = self.low.stage_code[si][which]
        if code < 0:
            return None
        g, fo = shape.get, self._fo
        args = (CALL_EVAL_SHAPE, code, g("nreq", 0), g("ndec", 0), g("kvb", 0), g("ntok", 0), now)
        v = _kernel()(self.K, self.w, args, fo, NO_ROWS)
        if fo[0]:
            raise ValueError(self._fault(int(fo[0]), fo[1:5].tolist())[1])
        return bits2f(int(v)) if real else int(v)

    def eval_session(self, state, sid: int, code: int, real: bool, now: int = 0):
        """A session expression (a think time) against a state: its value, or
        raises ValueError with the fault's message."""
        self.load(state)
        call = _kernel()
        K, w = self.K, self.w
        v = call(K, w, (CALL_EVAL_AT, code, RHDR + sid * self.SF + F_ATTR, sid, now, 0, 0), self._fo, NO_ROWS)
        if w[R_HALT] == HALT_FAULT:
            raise ValueError(self._fault(int(w[R_FAULT]))[1])
        return bits2f(int(v)) if real else int(v)
