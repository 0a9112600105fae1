"""serq's model in the explorer: the engine's protocol over `serq.semantics.model`.

The engine (`explorer/`) knows nothing of serq; this adapter gives it the
canonical form (relative orders instead of sequence numbers, no clock,
symmetry between sessions of one program: the kernel's, `kernel/canon.py`),
the properties an instance's `check` lines select, and the words a trace is
printed in. Every successor comes from the kernel's enumeration
(`Rows.expand`): the explorer and the simulator drive the same step
function.
"""

from __future__ import annotations

from serq.check.admission import grower_text, refusals, stuck_why
from serq.words import stuck_text

from dataclasses import dataclass, replace

from serq import ir
from serq.semantics.model import ITERATE, TURN, Model
import numpy as np

from explorer import model as protocol
from explorer.model import CHECK as AR_CHECK, DONE as AR_DONE, PROGRESS as AR_PROGRESS, ArrayFallback
from serq.semantics.rows import Rows, explorer_flags
from serq.semantics.state import prefix_owner
from serq.semantics.rowstate import F_DONE, F_FAULT, F_STUCK, RowState
from serq.defaults import ALL_CHECKS
from serq.lang.quantify import reads_preempted


@dataclass(frozen=True)
class Checks:
    """The properties a search fails on. `completes` is deadlock, livelock
    and invariant (with `assert`, run-time errors and conservation, always
    checked); `stuck` is its own property. Under `completes` without
    `stuck`, stuck sessions are still watched (`watch_stuck`): the first one
    seen is noted, never a failure."""

    deadlock: bool = True
    livelock: bool = True
    stuck: bool = False
    invariant: bool = True
    watch_stuck: bool = True
    # the theorem's conclusion: a state counts as done when every session
    # left is waiting for an admission it never had (`unadmitted`)
    admitted: bool = False
    # the SLO checks (serq/check/slo.py): `queue` ones are invariants of a
    # state; per-request ones make the search carry counters (`SloModel`)
    slo: tuple = ()
    # the instance's `check sometimes` lines are searched for witnesses
    # (serq/check/sometimes.py), each by a search of its own
    sometimes: bool = False
    # `check eventually GOAL` (serq/check/liveness.py): liveness under fairness, found on the whole graph
    eventually: tuple = ()
    # a `check invariant` or `check sometimes` reads a session's `x.preempted` (serq/lang/quantify.py),
    # which is its previous preemption position: the states keep it
    preempted: bool = False

    @classmethod
    def of_program(cls, prog: ir.Program, override: list[str] | None = None) -> "Checks":
        """`check` lines select the properties; `completes` (or no line at
        all) selects deadlock, livelock and invariant, and watches stuck
        sessions; `stuck` adds the stuck check. Conservation, `assert` and
        run-time errors are always checked."""
        import serq.check.liveness as liveness
        from serq.check.slospec import parse_flag, slos_of

        named = ALL_CHECKS + ("completes", "sometimes")
        if override:
            kinds = {c if c in named else "eventually" if liveness.is_flag(c) else "slo" for c in override}
            slo = slos_of(prog, [parse_flag(c, prog) for c in override if c not in named and not liveness.is_flag(c)])
            ev = liveness.eventually_of([liveness.parse_flag(c) for c in override if liveness.is_flag(c)])
        else:
            kinds, slo = {c.kind for c in prog.checks}, slos_of(prog, prog.checks)
            ev = liveness.eventually_of(prog.checks)
        some = "sometimes" in kinds and any(c.kind == "sometimes" for c in prog.checks)
        if not kinds or "completes" in kinds:
            return cls(stuck="stuck" in kinds, slo=slo, sometimes=some, eventually=ev)
        return cls(deadlock="deadlock" in kinds, livelock="livelock" in kinds,
                   stuck="stuck" in kinds, invariant="invariant" in kinds, watch_stuck=False, slo=slo,
                   sometimes=some, eventually=ev)

    @property
    def positions(self) -> bool:
        """The states keep each session's previous preemption position
        (the stuck check reads it, and `x.preempted`): when stuck is
        checked or watched, or a check reads `x.preempted`."""
        return self.stuck or self.watch_stuck or self.preempted

    def names(self) -> list[str]:
        return ([n for n in ALL_CHECKS if getattr(self, n)] + (["watch-stuck"] if self.watch_stuck else [])
                + (["admitted"] if self.admitted else []) + [s.text for s in self.slo]
                + (["sometimes"] if self.sometimes else []) + [e.text for e in self.eventually])


class SerqModel:
    """The engine's model protocol (see explorer/model.py)."""

    capabilities = frozenset({protocol.ROWS, protocol.ROW_THREADS, protocol.LIMITS, protocol.FINGERPRINT,
                              protocol.EXACT_KEY, protocol.FORMAT_STATE, protocol.NOTES})

    def __init__(self, program: ir.Program, *, ties: str = "all", symmetry: bool = True,
                 checks: Checks | None = None, notes: list | None = None, reduce_ranks: bool = False):
        self.program = program
        # the first stuck session seen when stuck is watched, not checked:
        # a list the search's threads (and the caller) share
        self.notes = [] if notes is None else notes
        self.m = Model(program, ties=ties)
        self.checks = checks or Checks.of_program(program)
        if not self.checks.positions and any(reads_preempted(c.e) for c in program.checks):
            self.checks = replace(self.checks, preempted=True)
        self.symmetry = symmetry and not self.checks.eventually  # `check eventually` follows sessions by id
        # states are packed rows; the kernel gives successors, fingerprints
        # and flags in one call per state, and the canonical form (`exact_key`)
        # `--reduce ranks`: states that differ only in ranks no order can read are one (serq/semantics/ranks.py)
        self.reduce_ranks = reduce_ranks
        self.rows = Rows(self.m.engine, self.symmetry, keep_pos=self.checks.positions, reduce_ranks=reduce_ranks)
        self.rows.warm()  # numba's start-up here, not in the search's time
        self._queue_slos = tuple(s for s in self.checks.slo if not s.per_request)
        self._plain_invariants = not self.m.engine.low.invariants and not self._queue_slos
        # the initial state packed now, as the model is built: a workload of a million sessions
        # takes seconds, cut by the check's limits (explorer.runtime.limits.tick) before the search
        self._initial = self.rows.pack(self.m.initial_state())
        if self.checks.eventually:  # liveness under fairness (explorer/graph/fair.py): its protocol, declared
            from serq.check.liveness import Liveness

            live = Liveness(self, self.checks.eventually, lambda state, sid: session_phase(self, state, sid))
            self.capabilities = SerqModel.capabilities | {protocol.FAIR}
            self.waiting, self.array_waiting, self.fair_class = live.waiting, live.array_waiting, live.fair_class
            self.fair_strong, self.fair_words, self._fair_of = live.fair_strong, live.fair_words, live.classes
            self.fair_note = live.fair_note

    # -- protocol -----------------------------------------------------------
    def initial_states(self):
        rs = self._initial  # a new RowState each time (a caller may keep what it learns of it on it)
        fresh = RowState(self.rows, rs.row, rs.cap, rs.fp, rs.flags)
        fresh._t = rs._t
        return [fresh]

    def actions(self, state):
        return [a for a, _ in self.rows.expand(state)]

    def step(self, state, action):
        for a, nxt in self.rows.expand(state):
            if a == action:
                return nxt
        nxt = self.m.step(state.tuple() if isinstance(state, RowState) else state, action)
        return None if nxt is None else self.rows.pack(nxt)

    # -- the array protocol (explorer/model.py) -------------------------------
    def array_initial(self):
        rs = self.initial_states()[0]
        row = np.frombuffer(rs.row, np.int64).reshape(1, -1).copy()
        return row, np.array([rs.fp], np.uint64), np.array([self._aflags(rs.flags, 0)], np.int64)

    def _aflags(self, flags, turn):
        f = 0
        if flags & (F_FAULT | F_DONE):
            f |= AR_DONE
        if flags & F_FAULT or (flags & F_STUCK and self._stuck_flagged()) or not self._plain_invariants:
            f |= AR_CHECK
        if turn:
            f |= AR_PROGRESS
        return f

    def array_expand(self, rows):
        r = self.rows
        k = r.batch(rows)
        if k == -2:
            raise ArrayFallback("a spawn needs a larger row")
        # `actions` lists only the actions that have a successor: the index is the rank among them
        explorer_flags(k, r.parent, r.acts, r.flags, self._stuck_flagged(), self._plain_invariants, r.arflags, r.action)
        if self.checks.eventually:  # each edge's fairness class (serq/check/liveness.py)
            acts = r.acts[:k]
            r.arflags[:k] |= self._fair_of(acts) << protocol.FAIR_SHIFT
        if self.checks.admitted:
            for i in range(k):
                if not r.arflags[i] & AR_DONE and self.unadmitted(r.from_row(r.outs[i]).tuple()):
                    r.arflags[i] |= AR_DONE
        # views of the model's buffers: valid until the next call
        return r.outs[:k], r.parent[:k], r.action[:k], r.fps[:k], r.arflags[:k]

    def array_expander(self):
        """An `array_expand` with buffers of its own (a new engine over the
        same instance), for a thread: the kernel runs without the GIL."""
        from serq.semantics.engine import Engine

        e = Engine(self.program, "all" if self.m.ties_all else "seq")
        if e.cap != self.rows.e.cap:
            e._set_cap(self.rows.e.cap)
        twin = object.__new__(SerqModel)
        twin.__dict__.update(self.__dict__)
        twin.rows = Rows(e, self.symmetry, keep_pos=self.checks.positions, reduce_ranks=self.reduce_ranks)
        twin.rows.limits = self.rows.limits
        return twin.array_expand

    def set_limits(self, limits) -> None:
        """The engine's time and memory limits (explorer.runtime.limits.Limits),
        checked inside an expansion that outgrows its buffers."""
        self.rows.limits = limits

    def array_state(self, row):
        return self.rows.from_row(row)

    def fingerprint(self, state) -> int:
        return self.rows.pack(state).fp

    def exact_key(self, state) -> bytes:
        """The canonical row the fingerprint hashes, whole (`--exact`)."""
        r = self.rows
        rs = r.pack(state)
        r.e.load(rs)
        return r.canonical().tobytes()

    def is_done(self, state) -> bool:
        # a faulted state is terminal: its fault is reported by `invariants`
        rs = self.rows.pack(state)
        return bool(rs.flags & (F_FAULT | F_DONE)) or (self.checks.admitted and self.unadmitted(rs.tuple()))

    def unadmitted(self, state) -> bool:
        """Every session not ended waits for an admission it never had:
        queued at a hold, holding no finite pool, not queued again by a
        preemption (a preempted one was admitted); or waits at a join
        holding no finite pool (for such children). At least one such
        session, no fault. (`--theorem`: only admitted sessions must finish.)"""
        sessions, _pools, _seq, fault = state
        if fault is not None:
            return False
        caps, waiting = self.m.caps, False
        for s in sessions:
            kind = self.m.progs[s.prog].states[s.pc].kind
            if kind == "end":
                continue
            if kind not in ("acquire", "join") or any(caps[h.pool] is not None for h in s.holds):
                return False
            if kind == "acquire":
                if s.last_pos != -1:
                    return False
                waiting = True
        return waiting

    def is_progress(self, state, action, nxt) -> bool:
        # In a finite graph a cycle cannot raise any position for good, so a
        # cycle is progress only through what the user does: a `turn`.
        return action[0] == TURN

    def _stuck_flagged(self) -> bool:
        """Stuck states are handed to `invariants`: when stuck is checked,
        or watched and none is noted yet."""
        return self.checks.stuck or (self.checks.watch_stuck and not self.notes)

    def invariants(self, state, *, stuck: bool | None = None):
        """The first violation of `state` (`stuck`: whether a stuck session
        is one; default: when the stuck check is selected)."""
        stuck = self.checks.stuck if stuck is None else stuck
        rs = self.rows.pack(state)
        if self._plain_invariants and not rs.flags & (F_FAULT | F_STUCK):
            return []
        state = rs.tuple()
        out = []
        for kind, msg in self.m.check_invariants(state):
            if kind == "stuck" and not stuck:
                if self.checks.watch_stuck and not self.notes:
                    self.notes.append(msg)
                continue
            if kind == "invariant" and not self.checks.invariant:
                continue
            out.append((kind, msg))
        if not out and self._queue_slos:
            from serq.check.slospec import queue_violations

            out = queue_violations(self._queue_slos, state, [p.name for p in self.m.pools])
        return out[:1]

    # -- words --------------------------------------------------------------
    def label(self, state, sid: int) -> str:
        return self.m.session_label(state, sid)

    def format_action(self, state, action) -> str:
        nxt, events = self.m.step_events(state, action)
        return describe(self, state, nxt, action, events)

    def format_diff(self, state, nxt) -> list[str]:
        return diff_lines(self, state, nxt)

    def format_state(self, state) -> list[str]:
        return [f"{self.label(state, i)}: {session_text(self, state, i)}" for i in range(len(state.sessions))]

    def describe_deadlock(self, state) -> list[str]:
        return deadlock_lines(self, state)


# ---------------------------------------------------------------- trace text


def _pool(sm: SerqModel, p: int) -> str:
    return sm.m.pools[p].name


def _victim_words(sm: SerqModel, p: int) -> str:
    pool = sm.m.pools[p]
    v = pool.victim
    if v is None:
        return "none"
    if not v.keys and v.tie.event == "admitted":
        return "lifo" if v.tie.desc else "fifo"
    return "victim order"


def describe(sm: SerqModel, state, nxt, action, events) -> str:
    m = sm.m
    kind, subj = action[0], action[1]
    lab = lambda sid: m.session_label(nxt if nxt is not None else state, sid)  # noqa: E731
    parts: list[str] = []
    head = ""
    if kind == ITERATE:
        head = f"iterate {m.stages[subj].name}"
    elif kind == TURN:
        head = f"turn {lab(subj)}: the user replies"
    else:
        head = f"arrive {lab(subj)}"
    draws = []
    for e in events:
        t = e.kind
        if t in ("draw", "choose"):
            draws.append(f"{lab(e.sid)} {t}s {e.attr}={e.value}")
        elif t == "admit":
            parts.append(f"admit {lab(e.sid)} ({', '.join(_pool(sm, p) for p in e.pools)})")
        elif t == "hit":
            parts.append(f"{lab(e.sid)} reuses {e.units} cached {_pool(sm, e.pool)}")
        elif t == "serve":
            grow = ""
            if e.pool is not None:
                b = m.blocks[e.pool]
                grow = f" ({_pool(sm, e.pool)} {_own(state, e.sid, e.pool) // b}→{e.held // b} blocks)"
            parts.append(f"{lab(e.sid)} {e.phase} {e.n} [{e.done}/{e.total}]{grow}")
        elif t == "preempt":
            why = f"{_pool(sm, e.pool)} full, {_victim_words(sm, e.pool)}"
            if e.why == "self":
                why += ", self-preemption"
            parts.append(f"preempt {lab(e.sid)} ({why})")
        elif t == "stuck" and sm.checks.positions:  # known only when the positions are kept
            parts.append(stuck_text(lab(e.sid), why=stuck_why(m, state, e, events)))
        elif t == "evict":
            if e.owner < 0:  # a shared prefix's entry
                owner = prefix_owner(m.program, e.owner)
            elif e.owner >= len(state.sessions) or _done(m, nxt, e.owner):
                owner = "a finished session"
            else:
                owner = lab(e.owner)
            parts.append(f"evict {e.units} {_pool(sm, e.pool)} cached for {owner}")
        elif t == "release":
            kept = f", {e.kept} kept cached" if e.kept else ""
            parts.append(f"{lab(e.sid)} releases {e.units} {_pool(sm, e.pool)}{kept}")
        elif t == "drop":
            parts.append(f"{lab(e.sid)} drops {e.units} cached {_pool(sm, e.pool)}")
        elif t == "spawn":
            parts.append(f"{lab(e.sid)} spawns {lab(e.child)}")
        elif t == "joined":
            parts.append(f"{lab(e.sid)} joins its children")
        elif t == "end":
            parts.append(f"{lab(e.sid)} ends")
        elif t == "at_turn":
            parts.append(f"{lab(e.sid)} waits for the user")
        elif t == "fault":
            parts.append(f"FAULT {e.what}: {e.message}")
        elif t == "queued" and kind != ITERATE:
            parts.append(f"{lab(e.sid)} queues for {_pool(sm, e.pool)}")
    if draws:
        head += " (" + ", ".join(draws) + ")"
    return head + (": " + "; ".join(parts) if parts else "")


def _done(m: Model, state, sid) -> bool:
    s = state.sessions[sid]
    return m.progs[s.prog].states[s.pc].kind == "end"


def _own(state, sid, p) -> int:
    if sid >= len(state.sessions):
        return 0
    for h in state.sessions[sid].holds:
        if h.pool == p:
            return h.own
    return 0


def session_text(sm: SerqModel, state, sid: int) -> str:
    m = sm.m
    s = state.sessions[sid]
    prog = m.progs[s.prog]
    st = prog.states[s.pc]
    line = f" (line {st.at[0]})" if st.at else ""
    k = st.kind
    if k == "arrive":
        where = "not arrived"
    elif k == "end":
        where = "done"
    elif k == "turn":
        where = f"waits at turn{line}"
    elif k == "acquire":
        gate = m.gates[s.prog][s.pc]
        pools = ", ".join(_pool(sm, m.pool_index[it.pool]) for it in st.hold.items)
        q = state.pools[gate].queue
        pos = q.index(sid) + 1 if sid in q else "?"
        where = f"queued for {pools} (#{pos} in {_pool(sm, gate)}'s queue){line}"
    elif k == "run":
        where = f"{st.run} {s.run_done}/{s.run_total} on {st.stage}{line}"
    elif k == "join":
        where = f"waits at join for {s.live} child{'ren' if s.live != 1 else ''}{line}"
    else:
        where = f"at {k}{line}"
    holds = ", ".join(f"{_pool(sm, h.pool)} {h.own} (uses {h.use})" for h in s.holds)
    attrs = " ".join(f"{a.name}={v}" for a, v in zip(prog.attrs, s.attrs) if a.origin != "internal")
    out = where
    if holds:
        out += f"; holds {holds}"
    if attrs and k != "arrive":
        out += f"; {attrs}"
    if s.stuck:
        out += "; STUCK"
    return out


def pool_text(sm: SerqModel, state, p: int) -> str:
    free, cache, queue = state.pools[p]
    cap = sm.m.caps[p]
    parts = []
    if cap is not None:
        parts.append(f"free {free}/{cap}")
    if cache:
        def owner(o):  # a session, or a shared prefix's entry
            return (prefix_owner(sm.program, o) or "a finished session") if o < 0 else sm.label(state, o)

        parts.append("cached " + ", ".join(f"{owner(o)} {u}" for o, u, *_ in sorted(cache, key=lambda e: e.released)))
    if queue:
        parts.append("queue [" + ", ".join(sm.label(state, q) for q in queue) + "]")
    return "; ".join(parts) if parts else "empty"


def diff_lines(sm: SerqModel, state, nxt) -> list[str]:
    out = []
    for sid in range(len(nxt.sessions)):
        after = session_text(sm, nxt, sid)
        before = session_text(sm, state, sid) if sid < len(state.sessions) else None
        if after != before:
            out.append(f"{sm.label(nxt, sid)}: {after}")
    for p in range(len(nxt.pools)):
        a, b = pool_text(sm, nxt, p), pool_text(sm, state, p)
        if a != b:
            out.append(f"{_pool(sm, p)}: {a}")
    return out


def session_phase(sm: SerqModel, state, sid: int) -> str:
    """Where a session is, in one word (the lanes of a timeline):
    `not-arrived`, `queued`, `preempted` (queued again after a preemption
    of this request), `prefill`, `decode`, `turn`, `join`, `done`, or
    `other` (a state that never blocks)."""
    s = state.sessions[sid]
    st = sm.m.progs[s.prog].states[s.pc]
    k = st.kind
    if k == "arrive":
        return "not-arrived"
    if k == "end":
        return "done"
    if k == "acquire":
        # the position of the last preemption is kept until the request's
        # scope completes or it reaches a turn: set means "re-queued"
        return "preempted" if s.last_pos != -1 else "queued"
    if k == "run":
        return st.run
    if k in ("turn", "join"):
        return k
    return "other"


def pool_levels(sm: SerqModel, state, p: int) -> tuple[int, int, int | None]:
    """(allocated, cached, free) units of pool p; free is None for an
    infinite pool. On a finite pool the three add up to its cap."""
    alloc = sum(h.own for s in state.sessions for h in s.holds if h.pool == p)
    pool = state.pools[p]
    return alloc, sum(e.units for e in pool.cache), pool.free


def wait_for(sm: SerqModel, state, why: dict | None = None) -> tuple[list[str], list[tuple[int, int, str]] | None]:
    """The unfinished sessions' lines and the wait-for cycle, if any, as
    (waiter, waited-for, pool name or "join") edges: a waiting hold waits
    for the holders of the pools it is short of (`why`: the refusals of
    serq.check.admission, computed when not given)."""
    m = sm.m
    sessions = state.sessions
    out = []
    waits: dict[int, list[tuple[int, str]]] = {}
    why = refusals(m, state) if why is None else why
    for sid, s in enumerate(sessions):
        st = m.progs[s.prog].states[s.pc]
        if st.kind == "end":
            continue
        out.append(f"{sm.label(state, sid)}: {session_text(sm, state, sid)}")
        if st.kind == "acquire":
            for p in why[sid].short:
                for other, o in enumerate(sessions):
                    if other != sid and any(h.pool == p for h in o.holds):
                        waits.setdefault(sid, []).append((other, f"{_pool(sm, p)}"))
        elif st.kind == "join":
            for other, o in enumerate(sessions):
                if o.parent == sid and not _done(m, state, other):
                    waits.setdefault(sid, []).append((other, "join"))
    return out, _find_cycle(waits)


def deadlock_lines(sm: SerqModel, state) -> list[str]:
    """Who holds what, why each waiting hold is not admitted (or a
    resident cannot grow), and the wait-for cycle."""
    why = refusals(sm.m, state)
    out, cycle = wait_for(sm, state, why)
    for p in range(len(state.pools)):
        out.append(f"{_pool(sm, p)}: {pool_text(sm, state, p)}")
    for sid in range(len(state.sessions)):
        out.extend(why[sid].lines if sid in why else filter(None, [grower_text(sm.m, state, sid)]))
    if cycle:
        steps = []
        for a, b, why in cycle:
            steps.append(f"{sm.label(state, a)} waits for {sm.label(state, b)} ({'its child' if why == 'join' else 'which holds ' + why})")
        out.append("wait-for cycle: " + "; ".join(steps))
    else:
        out.append("no wait-for cycle: no session can move to free a unit")
    return out


def _find_cycle(waits):
    for start in sorted(waits):
        path = []
        seen = {}

        def dfs(u):
            if u in seen:
                return path[seen[u]:] if seen[u] >= 0 else None
            seen[u] = len(path)
            for v, why in waits.get(u, []):
                path.append((u, v, why))
                found = dfs(v)
                if found:
                    return found
                path.pop()
            seen[u] = -1
            return None

        cyc = dfs(start)
        if cyc:
            # the edges from the repeated node on
            first = cyc[-1][1]
            for i, (a, _, _) in enumerate(cyc):
                if a == first:
                    return cyc[i:]
            return cyc
    return None
