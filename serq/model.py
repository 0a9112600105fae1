"""The one step relation (brief section 4), for the simulator and the
explorer alike.

`Model(program)` gives `initial_state()`, `actions(state)` in a
deterministic order and `step(state, action)`. Nothing else in serq decides
what a step does: the simulator picks among `actions` by time and a seeded
RNG, the explorer enumerates them.

Nondeterminism inside a step — the value a `draw` or an unkeyed `choose`
takes, which of several elements tied on an order's declared keys goes
first — is resolved through an *oracle*: the step asks `oracle.draw(...)`
or `oracle.tie(n)` and follows the answer. The simulator's oracle samples
with its RNG and breaks ties by the tie event's sequence number; the
explorer enumerates every sequence of answers (`expand`), so an action is
`(kind, subject, choices)` and each choice sequence is one successor.

State (hot path, plain tuples, see `encode`):
  (sessions, pools, seq, fault)
  session = (prog, pc, attrs, run_done, run_total, holds, parent, live,
             arrived, admitted, last_pos, stuck)
  hold    = (scope, pool, own, use, admitted)
  pool    = (free, cache, queue); cache = ((owner, units, released, tick), ...)
  (`tick`: the simulator's time of the release, for `age`; 0 in the explorer)
`seq` numbers every event; `arrived`, `admitted`, `released` are such
numbers. The explorer's canonical form replaces them by their ranks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from serq import ir
from serq.expr import EvalError, compile_expr

INF = float("inf")
MACRO_LIMIT = 100_000  # internal states one session may pass in one action
ADMIT_LIMIT = 10_000  # admissions in one action (a loop whose holds never block)
SPAWN_DEPTH = 200  # spawns nested in one action (a program spawning itself)
MAX_SESSIONS = 100_000
MAX_DOMAIN = 100_000  # values of one draw or choose

# action kinds
ARRIVE, TURN, ITERATE = "arrive", "turn", "iterate"


class Fault(Exception):
    """A run-time error of the instance (failed assert, division by zero,
    reuse beyond the cache, ...) or a broken invariant of the engine
    (conservation). Recorded in the state: such a state has no successor."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------- oracles


class FirstOracle:
    """Ties by the tie event (option 0); draws take their first value."""

    def draw(self, values, weights):
        return 0

    def tie(self, n):
        return 0


class ScriptOracle:
    """Follows a recorded choice prefix, then answers 0, recording how many
    options every question had: the explorer's enumeration device."""

    def __init__(self, script, ties_all: bool):
        self.script = script
        self.ties_all = ties_all
        self.pos = 0
        self.arity: list[int] = []

    def _ask(self, n):
        i = self.script[self.pos] if self.pos < len(self.script) else 0
        self.pos += 1
        self.arity.append(n)
        return i

    def draw(self, values, weights):
        return self._ask(len(values))

    def tie(self, n):
        return self._ask(n) if self.ties_all else 0


# ---------------------------------------------------------------- compiled program


@dataclass
class CState:
    kind: str
    next: int | None
    scope: int
    at: Any
    ir: Any
    f: dict = field(default_factory=dict)  # compiled expressions


@dataclass
class CScope:
    id: int
    parent: int | None
    reentry: int | None
    pools: tuple[int, ...]
    keep: dict  # pool index -> "full" | compiled expr


@dataclass
class CProg:
    index: int
    name: str
    slots: dict[str, int]
    attrs: tuple[ir.Attr, ...]
    states: list[CState]
    scopes: list[CScope]
    entry: int
    progress_slots: tuple[int, ...]
    params: tuple[ir.Param, ...]


@dataclass
class COrder:
    keys: tuple[tuple[Callable, bool], ...]  # (f(a, x), desc)
    tie: str
    tie_desc: bool
    implicit: bool  # ties on the keys exist (keys declared, tie implicit)


class Ctx:
    """The context `x` an expression reads: context variables and pools."""

    __slots__ = ("w", "sid", "vars")

    def __init__(self, w, sid=None, vars=None):
        self.w = w
        self.sid = sid
        self.vars = vars or {}

    def ctx(self, name):
        if name in self.vars:
            return self.vars[name]
        if name == "now":
            return self.w.now
        raise EvalError(f"`{name}` has no value here")

    def pool(self, fn, pool):
        m = self.w.m
        p = m.pool_index[pool]
        ps = self.w.pools[p]
        if fn == "cached":
            if self.sid is not None:
                return ps.cached_for(self.sid)
            return sum(e[1] for e in ps.cache)
        if fn == "allocated":
            return self.w.allocated(p)
        if fn == "free":
            f = ps.free
            return -1 if f is None else f
        if fn == "waiting":
            return len(ps.queue)
        if fn == "holders":
            return len(self.w.holders(p))
        raise EvalError(f"unknown pool function `{fn}`")


# ---------------------------------------------------------------- mutable world


class Sess:
    __slots__ = ("prog", "pc", "attrs", "run_done", "run_total", "holds", "parent", "live",
                 "arrived", "admitted", "last_pos", "stuck")

    def key(self):
        holds = self.holds
        return (self.prog, self.pc, tuple(self.attrs), self.run_done, self.run_total,
                tuple(map(tuple, holds)) if holds else (), self.parent, self.live, self.arrived,
                self.admitted, self.last_pos, self.stuck)


class PoolS:
    __slots__ = ("free", "cache", "queue")

    def cached_for(self, sid):
        for owner, units, *_ in self.cache:
            if owner == sid:
                return units
        return 0


class World:
    """A state decoded for one step. `encode` freezes it back."""

    def __init__(self, m: "Model", state, oracle, events: list | None, now: int = 0):
        self.m = m
        self.oracle = oracle
        self.events = events
        self.now = now
        self.admits = 0
        self.depth = 0
        self.load(state)

    def load(self, state) -> None:
        sessions, pools, seq, fault = state
        self.seq = seq
        self.fault = fault
        self.sessions: list[Sess] = []
        for t in sessions:
            s = Sess()
            (s.prog, s.pc, attrs, s.run_done, s.run_total, holds, s.parent, s.live,
             s.arrived, s.admitted, s.last_pos, s.stuck) = t
            s.attrs = list(attrs)
            s.holds = [list(h) for h in holds]
            s.stuck = 0  # transient: marks the state right after a stuck preemption
            self.sessions.append(s)
        self.pools: list[PoolS] = []
        for free, cache, queue in pools:
            p = PoolS()
            p.free = free
            p.cache = [list(e) for e in cache]
            p.queue = list(queue)
            self.pools.append(p)

    def snapshot(self):
        return self.encode(), (len(self.events) if self.events is not None else 0)

    def restore(self, snap) -> None:
        """Undo everything since `snapshot` (a tentative admission)."""
        state, n_events = snap
        self.load(state)
        if self.events is not None:
            del self.events[n_events:]

    def encode(self):
        return (tuple(s.key() for s in self.sessions),
                tuple((p.free, tuple(tuple(e) for e in p.cache), tuple(p.queue)) for p in self.pools),
                self.seq, self.fault)

    def ev(self, *e):
        if self.events is not None:
            self.events.append(e)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    # queries
    def allocated(self, p: int) -> int:
        return sum(h[2] for s in self.sessions for h in s.holds if h[1] == p)

    def holders(self, p: int) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if any(h[1] == p for h in s.holds)]

    def hold_of(self, sid: int, p: int):
        for h in self.sessions[sid].holds:
            if h[1] == p:
                return h
        return None


# ---------------------------------------------------------------- the model


class Model:
    """The semantics of one instance. `ties`: "all" lets the oracle resolve
    ties on declared keys, "seq" always uses the tie event."""

    def __init__(self, program: ir.Program, *, ties: str = "all"):
        self.program = program
        self.ties_all = ties == "all"
        self.pool_index = {p.name: i for i, p in enumerate(program.pools)}
        self.stage_index = {s.name: i for i, s in enumerate(program.stages)}
        self.pools = program.pools
        self.stages = program.stages
        self.blocks = [p.block for p in program.pools]
        self.caps = [p.cap for p in program.pools]
        self.progs = [self._compile_prog(i, s) for i, s in enumerate(program.sessions)]
        self.prog_index = {p.name: p.index for p in self.progs}
        self.queue_order = [self._order(p.queue, p.name) for p in program.pools]
        self.victim_order = [self._order(p.victim, p.name) if p.victim else None for p in program.pools]
        self.evict_order = [self._order(p.evict, None) for p in program.pools]
        self.serve_order = [self._order(s.serve, s.name) for s in program.stages]
        self.budget_f = [compile_expr(s.budget, {}) if s.budget is not None else None for s in program.stages]
        self.chunk_f = [compile_expr(s.chunk, {}) if s.chunk is not None else None for s in program.stages]
        self.cost_f = [compile_expr(s.cost, {}) if s.cost is not None else None for s in program.stages]
        self.via = [[i for i, p in enumerate(program.pools) if p.admit_via == s.name] for s in program.stages]
        self.event_pools = [i for i, p in enumerate(program.pools) if p.admit_via is None]
        self.invariant_f = [(c, compile_expr(c.e, {})) for c in program.checks if c.kind == "invariant"]
        self.workload = self._workload()
        self._memo_key = None
        self._memo: dict = {}

    # -- compilation ----------------------------------------------------
    def _compile_prog(self, index: int, sp: ir.SessionProgram) -> CProg:
        slots = {a.name: i for i, a in enumerate(sp.attrs)}
        C = lambda e: compile_expr(e, slots) if e is not None else None  # noqa: E731
        states = []
        for st in sp.states:
            cs = CState(st.kind, getattr(st, "next", None), st.scope, st.at, st)
            if isinstance(st, ir.SSet):
                cs.f = {"slot": slots[st.attr], "e": C(st.e)}
            elif isinstance(st, ir.SBranch):
                cs.f = {"cond": C(st.cond)}
            elif isinstance(st, (ir.SDraw, ir.SChoose)):
                d = st.domain
                cs.f = {"slot": slots[st.attr], "values": tuple(C(v) for v in d.values),
                        "lo": C(d.lo), "hi": C(d.hi)}
                if isinstance(st, ir.SDraw):
                    cs.f["dist"] = st.dist.name if st.dist else "uniform"
                    cs.f["params"] = tuple(C(p) for p in st.dist.params) if st.dist else ()
                else:
                    cs.f["key"] = C(st.key)
            elif isinstance(st, ir.STurn):
                cs.f = {"think": C(st.think)}
            elif isinstance(st, ir.SAcquire):
                h = st.hold
                cs.f = {
                    "bindings": tuple((slots[b.attr], C(b.e)) for b in h.bindings),
                    "items": tuple((self.pool_index[i.pool], C(i.reuse), C(i.need), C(i.take)) for i in h.items),
                    "admit_if": C(h.admit_if),
                    "opens": st.opens,
                    "gate": self.pool_index[h.items[0].pool],
                }
            elif isinstance(st, ir.SRun):
                cs.f = {"amount": C(st.amount), "stage": self.stage_index[st.stage],
                        "growing": self.pool_index[st.growing] if st.growing else None,
                        "progress": slots[st.progress] if st.progress else None,
                        "decode": st.run == "decode"}
            elif isinstance(st, ir.SSpawn):
                cs.f = {"program": st.program, "args": tuple((n, C(e)) for n, e in st.args), "count": C(st.count)}
            elif isinstance(st, ir.SDrop):
                cs.f = {"pool": self.pool_index[st.pool]}
            elif isinstance(st, ir.SAssert):
                cs.f = {"e": C(st.e)}
            elif isinstance(st, ir.SExit):
                cs.f = {"closes": st.closes}
            states.append(cs)
        scopes = []
        for sc in sp.scopes:
            keep = {}
            for k in sc.keep:
                keep[self.pool_index[k.pool]] = "full" if k.full else C(k.e)
            scopes.append(CScope(sc.id, sc.parent, sc.reentry, tuple(self.pool_index[p] for p in sc.pools), keep))
        progress = sorted({slots[st.progress] for st in sp.states if isinstance(st, ir.SRun) and st.progress})
        return CProg(index, sp.name, slots, sp.attrs, states, scopes, sp.entry, tuple(progress), sp.params)

    def _order(self, o: ir.Order, where) -> COrder:
        # keys read session attributes by name; sessions of different
        # programs have different slot layouts, so compile per program.
        keys = []
        for k in o.keys:
            per_prog = {}
            for p in self.progs:
                try:
                    per_prog[p.index] = compile_expr(k.e, p.slots)
                except KeyError:
                    per_prog[p.index] = None
            glob = None
            try:
                glob = compile_expr(k.e, {})
            except KeyError:
                pass
            keys.append(((per_prog, glob), k.desc))
        return COrder(tuple(keys), o.tie.event, o.tie.desc, implicit=bool(o.keys))

    def _workload(self):
        out = []
        for line in self.program.workload:
            prog = self.progs[self.prog_index[line.program]]
            for _ in range(line.count):
                out.append((prog.index, self._initial_attrs(prog, line.args, None, None)))
        return out

    def _initial_attrs(self, prog: CProg, args, parent_attrs, parent_prog) -> list:
        attrs = [False if a.type == "bool" else 0 for a in prog.attrs]
        given = dict(args)
        for p in prog.params:
            e = given.get(p.name, p.default)
            if e is None:
                continue
            if parent_prog is not None and p.name in given:
                v = compile_expr(e, parent_prog.slots)(parent_attrs, None)
            else:
                v = compile_expr(e, {})(None, None)
            attrs[prog.slots[p.name]] = v
        return attrs

    # -- states -----------------------------------------------------------
    def initial_state(self):
        sessions = []
        for prog, attrs in self.workload:
            sessions.append((prog, self.progs[prog].entry, tuple(attrs), 0, 0, (), -1, 0, 0, 0, -1, 0))
        pools = tuple((p.cap, (), ()) for p in self.pools)
        return (tuple(sessions), pools, 0, None)

    def is_done(self, state) -> bool:
        sessions, _, _, fault = state
        return fault is None and all(self.progs[s[0]].states[s[1]].kind == "end" for s in sessions)

    def session_label(self, state, sid: int) -> str:
        s = state[0][sid]
        return f"{self.progs[s[0]].name}#{sid + 1}"

    # -- actions ----------------------------------------------------------
    def base_actions(self, state):
        """Candidate actions before choices: arrive, turn, iterate."""
        sessions, _, _, fault = state
        if fault is not None:
            return []
        out = []
        for sid, s in enumerate(sessions):
            kind = self.progs[s[0]].states[s[1]].kind
            if kind == "arrive":
                out.append((ARRIVE, sid))
        for sid, s in enumerate(sessions):
            if self.progs[s[0]].states[s[1]].kind == "turn":
                out.append((TURN, sid))
        for si in range(len(self.stages)):
            out.append((ITERATE, si))
        return out

    def expand(self, state, base, oracle_factory=None):
        """Every (action, successor, events) of a base action: one per
        sequence of oracle answers. A zero-work iteration has none."""
        results = []
        script: list[int] = []
        while True:
            oracle = ScriptOracle(script, self.ties_all)
            events: list = []
            nxt = self._run(state, base, oracle, events)
            arity = oracle.arity
            used = script[: len(arity)] + [0] * (len(arity) - len(script))
            if nxt is not None:
                results.append(((base[0], base[1], tuple(used)), nxt, events))
            # odometer: advance the last question that has options left
            i = len(arity) - 1
            while i >= 0 and used[i] + 1 >= arity[i]:
                i -= 1
            if i < 0:
                return results
            script = used[:i] + [used[i] + 1]

    def transitions(self, state):
        """All (action, successor, events), deterministic order; memoised for
        the last state so `actions` followed by `step` does the work once."""
        if self._memo_key is state:
            return self._memo
        out = []
        for base in self.base_actions(state):
            out.extend(self.expand(state, base))
        self._memo_key, self._memo = state, out
        return out

    def actions(self, state):
        return [a for a, _, _ in self.transitions(state)]

    def step(self, state, action):
        for a, nxt, _ in self.transitions(state):
            if a == action:
                return nxt
        return self._run(state, (action[0], action[1]), ScriptOracle(list(action[2]), self.ties_all), None)

    def step_events(self, state, action):
        for a, nxt, ev in self.transitions(state):
            if a == action:
                return nxt, ev
        events: list = []
        nxt = self._run(state, (action[0], action[1]), ScriptOracle(list(action[2]), self.ties_all), events)
        return nxt, events

    def run_with(self, state, base, oracle, now: int = 0):
        """One step with a given oracle (the simulator's way). Returns
        (successor or None for a zero-work iteration, events)."""
        events: list = []
        return self._run(state, base, oracle, events, now), events

    def _run(self, state, base, oracle, events, now: int = 0):
        w = World(self, state, oracle, events, now)
        kind, subj = base[0], base[1]
        try:
            if kind == ARRIVE or kind == TURN:
                # a request arrives: the session leaves its arrive or turn state
                s = w.sessions[subj]
                if self.progs[s.prog].states[s.pc].kind != kind:
                    return None
                w.ev(kind, subj)
                s.arrived = w.next_seq()
                s.last_pos = -1  # a new request
                s.pc = self.progs[s.prog].states[s.pc].next
                self.advance(w, subj)
            elif kind == ITERATE:
                if not self.iterate(w, subj):
                    return None
            else:
                raise ValueError(f"unknown action {base!r}")
            self.settle(w)
            self.conservation(w, base)
        except Fault as f:
            w.fault = (f.kind, f.message)
            w.ev("fault", f.kind, f.message)
        except EvalError as e:
            where = f" at line {e.at[0]}:{e.at[1]}" if e.at else ""
            w.fault = ("error", f"{e}{where}")
            w.ev("fault", "error", w.fault[1])
        return w.encode()

    # -- the session automaton --------------------------------------------
    def advance(self, w: World, sid: int) -> None:
        """Run internal states until the session blocks (a macro step)."""
        s = w.sessions[sid]
        prog = self.progs[s.prog]
        for _ in range(MACRO_LIMIT):
            st = prog.states[s.pc]
            k = st.kind
            x = Ctx(w, sid)
            if k == "set":
                s.attrs[st.f["slot"]] = st.f["e"](s.attrs, x)
                s.pc = st.next
            elif k == "branch":
                s.pc = st.next if st.f["cond"](s.attrs, x) else st.ir.alt
            elif k == "draw" or k == "choose":
                values = self.domain(st, s.attrs, x)
                if not values:
                    raise Fault("error", f"{prog.name}#{sid + 1}: empty domain for `{st.ir.attr}` at line {st.at[0]}" if st.at else "empty domain")
                if k == "draw":
                    weights = self.weights(st, values, s.attrs, x)
                    i = w.oracle.draw(values, weights) if len(values) > 1 else 0
                else:
                    i = self.choose_index(w, st, values, s, sid)
                s.attrs[st.f["slot"]] = values[i]
                w.ev(k, sid, st.ir.attr, values[i])
                s.pc = st.next
            elif k == "turn":
                w.ev("at_turn", sid)
                return
            elif k == "acquire":
                self.enqueue(w, sid, st.f["gate"])
                return
            elif k == "run":
                total = st.f["amount"](s.attrs, x)
                if not isinstance(total, int):
                    total = math.ceil(total)
                if total <= 0:  # a zero-work run is a no-op
                    s.pc = st.next
                    continue
                s.run_done, s.run_total = 0, total
                return
            elif k == "spawn":
                self.spawn(w, sid, st)
                s.pc = st.next
            elif k == "join":
                if s.live > 0:
                    return
                s.pc = st.next
            elif k == "drop":
                self.drop(w, sid, st.f["pool"])
                s.pc = st.next
            elif k == "assert":
                if not st.f["e"](s.attrs, x):
                    line = f" (line {st.at[0]})" if st.at else ""
                    raise Fault("assert", f"{prog.name}#{sid + 1}: assertion failed{line}")
                s.pc = st.next
            elif k == "exit":
                self.release_scope(w, sid, st.f["closes"])
                s.last_pos = -1  # the scope was completed: a new one starts afresh
                s.pc = st.next
            elif k == "end":
                self.finish(w, sid)
                return
            elif k == "arrive":
                return
            else:
                raise AssertionError(k)
        raise Fault("error", f"{prog.name}#{sid + 1}: more than {MACRO_LIMIT} internal steps without blocking (a loop that never blocks?)")

    def domain(self, st: CState, attrs, x) -> list:
        f = st.f
        if f["values"]:
            vals = [v(attrs, x) for v in f["values"]]
        else:
            lo, hi = f["lo"](attrs, x), f["hi"](attrs, x)
            if int(hi) - int(lo) + 1 > MAX_DOMAIN:
                line = f" at line {st.at[0]}" if st.at else ""
                raise Fault("error", f"`{st.ir.attr}` would range over {int(hi) - int(lo) + 1} values{line} "
                                     f"(at most {MAX_DOMAIN})")
            # a range is distinct already: skip the quadratic de-duplication
            # below (it cost ~40 ms per draw over 1..2048) [simulator fix]
            return list(range(int(lo), int(hi) + 1))
        out = []
        for v in vals:  # a set: first occurrence keeps its place
            if v not in out:
                out.append(v)
        return out

    def weights(self, st: CState, values, attrs, x) -> list[float]:
        dist = st.f["dist"]
        ps = [p(attrs, x) for p in st.f["params"]]
        if dist == "uniform":
            return [1.0] * len(values)
        if dist == "weights":
            return [float(p) for p in ps] if len(ps) == len(values) else [1.0] * len(values)
        if dist == "geometric":
            p = ps[0]
            lo = min(values)
            return [p * (1 - p) ** (v - lo) for v in values]
        if dist == "poisson":
            lam = ps[0]
            return [math.exp(-lam) * lam ** v / math.factorial(v) if v >= 0 else 0.0 for v in values]
        return [1.0] * len(values)

    def choose_index(self, w: World, st: CState, values, s: Sess, sid: int) -> int:
        key = st.f["key"]
        if key is None:
            return w.oracle.draw(values, [1.0] * len(values)) if len(values) > 1 else 0
        slot = st.f["slot"]
        keyed = []
        for i, v in enumerate(values):
            trial = list(s.attrs)
            trial[slot] = v
            keyed.append((key(trial, Ctx(w, sid)), i))
        best = min(k for k, _ in keyed)
        tied = [i for k, i in keyed if k == best]
        return tied[w.oracle.tie(len(tied))] if len(tied) > 1 else tied[0]

    def spawn(self, w: World, sid: int, st: CState) -> None:
        s = w.sessions[sid]
        parent_prog = self.progs[s.prog]
        prog = self.progs[self.prog_index[st.f["program"]]]
        n = max(int(st.f["count"](s.attrs, Ctx(w, sid))), 0)
        if len(w.sessions) + n > MAX_SESSIONS:
            raise Fault("error", f"{parent_prog.name}#{sid + 1}: spawning {n} more sessions passes {MAX_SESSIONS}")
        w.depth += 1
        if w.depth > SPAWN_DEPTH:
            raise Fault("error", f"{parent_prog.name}#{sid + 1}: spawns nest more than {SPAWN_DEPTH} deep in one step "
                                 "(a program that spawns itself before it blocks?)")
        for _ in range(n):
            attrs = [False if a.type == "bool" else 0 for a in prog.attrs]
            for name, f in st.f["args"]:
                attrs[prog.slots[name]] = f(s.attrs, Ctx(w, sid))
            for p in prog.params:
                if p.name not in dict(st.f["args"]) and p.default is not None:
                    attrs[prog.slots[p.name]] = compile_expr(p.default, {})(None, None)
            c = Sess()
            c.prog, c.pc, c.attrs = prog.index, prog.states[prog.entry].next, attrs
            c.run_done = c.run_total = 0
            c.holds, c.parent, c.live = [], sid, 0
            c.arrived, c.admitted, c.last_pos, c.stuck = w.next_seq(), 0, -1, 0
            w.sessions.append(c)
            s.live += 1
            cid = len(w.sessions) - 1
            w.ev("spawn", sid, cid)
            self.advance(w, cid)
        w.depth -= 1

    def finish(self, w: World, sid: int) -> None:
        s = w.sessions[sid]
        # `end` closes every open scope, innermost first (keep moves apply)
        while s.holds:
            self.release_scope(w, sid, s.holds[-1][0])
        s.run_done = s.run_total = 0
        w.ev("end", sid)
        if s.parent >= 0:
            p = w.sessions[s.parent]
            p.live -= 1
            if p.live == 0 and self.progs[p.prog].states[p.pc].kind == "join":
                p.pc = self.progs[p.prog].states[p.pc].next
                w.ev("joined", s.parent)
                self.advance(w, s.parent)

    # -- pools ------------------------------------------------------------
    def enqueue(self, w: World, sid: int, p: int, where: str = "order") -> None:
        """Put a waiting hold into pool p's queue: at the front or back (a
        requeue after preemption), or by the queue order. With --ties all a
        hold tied with others on the declared keys may go anywhere among them."""
        q = w.pools[p].queue
        if where == "front":
            q.insert(0, sid)
        elif where == "back":
            q.append(sid)
        else:
            order = self.queue_order[p]
            sgn = -1 if order.tie_desc else 1
            seqf = (lambda o: w.sessions[o].admitted) if order.tie == "admitted" else (lambda o: w.sessions[o].arrived)
            mine_k = self.key_of(w, order, sid)
            mine = (mine_k, sgn * seqf(sid))
            i = len(q)
            while i > 0 and (self.key_of(w, order, q[i - 1]), sgn * seqf(q[i - 1])) > mine:
                i -= 1
            if order.implicit and self.ties_all:
                lo = i
                while lo > 0 and self.key_of(w, order, q[lo - 1]) == mine_k:
                    lo -= 1
                hi = i
                while hi < len(q) and self.key_of(w, order, q[hi]) == mine_k:
                    hi += 1
                options = [i] + [j for j in range(lo, hi + 1) if j != i]
                if len(options) > 1:
                    i = options[w.oracle.tie(len(options))]
            q.insert(i, sid)
        w.ev("queued", sid, p)

    def key_of(self, w: World, order: COrder, sid: int, extra=None) -> tuple:
        s = w.sessions[sid]
        x = Ctx(w, sid, {"arrived": s.arrived, "admitted": s.admitted, **(extra or {})})
        out = []
        for (per_prog, _glob), desc in order.keys:
            f = per_prog.get(s.prog)
            v = f(s.attrs, x) if f is not None else 0
            out.append(-v if desc else v)
        return tuple(out)

    def ordered(self, w: World, order: COrder, items: list, keyf, seqf) -> list:
        """Sort items by (declared keys, tie event). With --ties all, items
        equal on the declared keys come out in an oracle-chosen order."""
        sgn = -1 if order.tie_desc else 1
        # `arrived` is unique per session: the order never falls back on
        # session ids, which the explorer's symmetry reduction permutes
        dec = sorted(items, key=lambda it: (keyf(it), sgn * seqf(it), self._arrived(w, it)))
        if not order.implicit or not self.ties_all:
            return dec
        out = []
        i = 0
        while i < len(dec):
            j = i
            k = keyf(dec[i])
            while j < len(dec) and keyf(dec[j]) == k:
                j += 1
            group = dec[i:j]
            while len(group) > 1:
                out.append(group.pop(w.oracle.tie(len(group))))
            out.extend(group)
            i = j
        return out

    def first_of(self, w: World, order: COrder, items: list, keyf, seqf):
        sgn = -1 if order.tie_desc else 1
        best = min(keyf(it) for it in items)
        tied = sorted((it for it in items if keyf(it) == best),
                      key=lambda it: (sgn * seqf(it), self._arrived(w, it)))
        if len(tied) > 1 and order.implicit:
            return tied[w.oracle.tie(len(tied))]
        return tied[0]

    @staticmethod
    def _arrived(w: World, it) -> int:
        """The last resort of every order: a session's arrival (unique); a
        cache entry is already total by its release."""
        return w.sessions[it].arrived if isinstance(it, int) else 0

    def free_block(self, w: World, p: int, protect: int | None = None) -> bool:
        """Make one block free by evicting from the cache in evict order."""
        ps = w.pools[p]
        cands = [e for e in ps.cache if e[0] != protect] if protect is not None else list(ps.cache)
        if not cands:
            return False
        order = self.evict_order[p]

        def keyf(e):
            x = Ctx(w, None, {"size": e[1], "last": e[2], "released": e[2], "age": w.now - e[3]})
            return tuple((-f(None, x) if desc else f(None, x)) for (_, f), desc in order.keys)

        victim = self.first_of(w, order, cands, keyf, lambda e: e[2])
        b = self.blocks[p]
        victim[1] -= b
        ps.free += b
        w.ev("evict", p, victim[0], b)
        if victim[1] <= 0:
            ps.cache.remove(victim)
        return True

    def cache_put(self, w: World, sid: int, p: int, units: int) -> None:
        ps = w.pools[p]
        seq = w.next_seq()
        for e in ps.cache:
            if e[0] == sid:
                e[1] += units
                e[2] = seq
                e[3] = w.now
                break
        else:
            ps.cache.append([sid, units, seq, w.now])

    def release_scope(self, w: World, sid: int, scope: int) -> None:
        """Release the holds of `scope`: the keep part to the cache under the
        session's key, the rest to free (and close inner scopes first)."""
        s = w.sessions[sid]
        prog = self.progs[s.prog]
        sc = prog.scopes[scope]
        while s.holds and s.holds[-1][0] != scope and any(h[0] == scope for h in s.holds):
            self.release_scope(w, sid, s.holds[-1][0])
        mine = [h for h in s.holds if h[0] == scope]
        for h in mine:
            _, p, own, use, _ = h
            b = self.blocks[p]
            kept = 0
            keep = sc.keep.get(p)
            if keep == "full":
                kept = (min(use, own) // b) * b
            elif keep is not None:
                v = keep(s.attrs, Ctx(w, sid))
                kept = (min(max(int(v), 0), own) // b) * b
            if kept:
                self.cache_put(w, sid, p, kept)
            if w.pools[p].free is not None:
                w.pools[p].free += own - kept
            w.ev("release", sid, p, own, kept)
        s.holds = [h for h in s.holds if h[0] != scope]

    def drop(self, w: World, sid: int, p: int) -> None:
        ps = w.pools[p]
        for e in list(ps.cache):
            if e[0] == sid:
                ps.cache.remove(e)
                if ps.free is not None:
                    ps.free += e[1]
                w.ev("drop", sid, p, e[1])

    def try_admit(self, w: World, sid: int, budget_left) -> bool:
        """Evaluate the queue head's admission header; admit if it fits."""
        s = w.sessions[sid]
        prog = self.progs[s.prog]
        st = prog.states[s.pc]
        f = st.f
        trial = list(s.attrs)
        vars = {"budget_left": budget_left if budget_left != INF else 2**62}
        x = Ctx(w, sid, vars)
        for slot, e in f["bindings"]:
            trial[slot] = e(trial, x)
        if f["admit_if"] is not None and not f["admit_if"](trial, x):
            return False
        plan = []
        for p, reuse_f, need_f, take_f in f["items"]:
            b = self.blocks[p]
            ps = w.pools[p]
            reuse = int(reuse_f(trial, x)) if reuse_f is not None else 0
            have = ps.cached_for(sid)
            if reuse < 0 or reuse > have or reuse % b:
                raise Fault("error", f"{prog.name}#{sid + 1}: reuse {reuse} of `{self.pools[p].name}` "
                                     + ("exceeds the session's cached units " + str(have) if reuse > have
                                        else "is not a whole number of blocks" if reuse % b else "is negative"))
            need = -(-max(int(math.ceil(need_f(trial, x))), 0) // b) * b
            take = -(-max(int(math.ceil(take_f(trial, x))), 0) // b) * b
            if ps.free is not None:
                obtainable = ps.free + sum(e[1] for e in ps.cache) - reuse
                if need > obtainable or take > obtainable:
                    return False
            plan.append((p, reuse, take))
        # fits: move units
        w.admits += 1
        if w.admits > ADMIT_LIMIT:
            raise Fault("error", f"{prog.name}#{sid + 1}: more than {ADMIT_LIMIT} admissions in one step "
                                 "(a loop whose holds never block?)")
        s.attrs = trial
        seq = w.next_seq()
        s.admitted = seq
        for p, reuse, take in plan:
            ps = w.pools[p]
            if reuse:
                for e in ps.cache:
                    if e[0] == sid:
                        e[1] -= reuse
                        if e[1] == 0:
                            ps.cache.remove(e)
                        break
                w.ev("hit", sid, p, reuse)
            if ps.free is not None:
                while ps.free < take:
                    if not (self.free_block(w, p, protect=sid) or self.free_block(w, p)):
                        raise Fault("conservation", f"pool `{self.pools[p].name}`: admission found fewer units than it counted")
                ps.free -= take
            s.holds.append([f["opens"], p, reuse + take, reuse, seq])
        w.pools[f["gate"]].queue.remove(sid)
        w.ev("admit", sid, tuple(p for p, _, _ in plan))
        s.pc = st.next
        return True

    def admit_pool(self, w: World, p: int, budget_left, skipped=()) -> int | None:
        """One admission from pool p's queue, or None (head-of-line rules)."""
        q = w.pools[p].queue
        for sid in list(q):
            if sid in skipped:
                continue
            if self.try_admit(w, sid, budget_left):
                return sid
            if self.pools[p].hol == "block":
                return None
        return None

    def settle(self, w: World) -> None:
        """Event-driven pools admit whenever their head fits: a zero-time
        consequence of whatever freed the units."""
        if not self.event_pools:
            return
        changed = True
        while changed:
            changed = False
            for p in self.event_pools:
                sid = self.admit_pool(w, p, INF)
                if sid is not None:
                    self.advance(w, sid)
                    changed = True

    def preempt(self, w: World, victim: int, p: int, reason: str) -> None:
        """Release every hold of the scope holding p (and inner ones); the
        victim jumps back to that scope's acquire state, attributes intact."""
        s = w.sessions[victim]
        prog = self.progs[s.prog]
        h = w.hold_of(victim, p)
        scope = h[0]
        # The position: progress counters first, then how far into the
        # program (states are laid out in text order), then the run position.
        # A later run has passed an earlier one even at position 0: a
        # session preempted in its prefill and again at its first decode
        # token has progressed (its prefill is cached).
        # The position: the progress counters, then the units the hold uses
        # (what its runs have computed, reused units included): absolute,
        # so a re-run that starts from a cached prefix is measured from 0.
        pos = (sum(s.attrs[i] for i in prog.progress_slots), h[3])
        stuck = s.last_pos != -1 and pos <= tuple(s.last_pos)
        s.last_pos = pos
        for ps in w.pools:
            if victim in ps.queue:
                ps.queue.remove(victim)
        w.ev("preempt", victim, p, reason)
        self.release_scope(w, victim, scope)
        s.pc = prog.scopes[scope].reentry
        s.run_done = s.run_total = 0
        gate = prog.states[s.pc].f["gate"]
        self.enqueue(w, victim, gate, where=self.pools[p].requeue)
        if stuck:
            s.stuck = 1
            w.ev("stuck", victim, p)

    # -- iterations -------------------------------------------------------
    def residents(self, w: World, si: int) -> list[int]:
        out = []
        for sid, s in enumerate(w.sessions):
            st = self.progs[s.prog].states[s.pc]
            if st.kind == "run" and st.f["stage"] == si and s.run_done < s.run_total:
                out.append(sid)
        return out

    def shape_vars(self, w: World, res: list[int]) -> dict:
        ndec = kvb = 0
        for sid in res:
            s = w.sessions[sid]
            st = self.progs[s.prog].states[s.pc]
            ndec += st.f["decode"]
            g = st.f["growing"]
            if g is not None:
                h = w.hold_of(sid, g)
                if h:
                    kvb += h[2] // self.blocks[g]
        return {"nreq": len(res), "ndec": ndec, "kvb": kvb}

    def grow(self, w: World, sid: int, p: int, units: int, served: dict, may_preempt: bool = True):
        """Make the session's hold on p own `units`; returns "ok", "wait"
        (it may not preempt: `preempt none`, or it is being admitted) or
        "self" (it was preempted itself)."""
        h = w.hold_of(sid, p)
        b = self.blocks[p]
        ps = w.pools[p]
        preempted = False
        if ps.free is not None and (self.victim_order[p] is None or not may_preempt):
            # all or nothing, as vLLM's allocate_slots: a grower that cannot
            # get every block it needs from free + evictable takes none
            short = -(-(units - h[2]) // b) * b
            if short > 0 and ps.free + sum(e[1] for e in ps.cache) < short:
                return "wait", False
        while h[2] < units:
            if ps.free is None:
                h[2] = -(-units // b) * b
                break
            if ps.free >= b:
                ps.free -= b
                h[2] += b
                continue
            if self.free_block(w, p):
                continue
            order = self.victim_order[p]
            if order is None:
                return "wait", preempted
            cands = w.holders(p)
            victim = self.first_of(w, order, cands,
                                   lambda c: self.key_of(w, order, c, {"admitted": w.hold_of(c, p)[4]}),
                                   lambda c: w.hold_of(c, p)[4])
            served.pop(victim, None)
            self.preempt(w, victim, p, "self" if victim == sid else f"{self.pools[p].name} full")
            preempted = True
            if victim == sid:
                return "self", True
            h = w.hold_of(sid, p)
        return "ok", preempted

    def serve_one(self, w: World, si: int, sid: int, budget_left, chunk_f, served: dict, admitting: bool = False):
        """Schedule tokens for one resident; returns (tokens, preempted, stop);
        tokens is None when a session being admitted cannot grow."""
        s = w.sessions[sid]
        st = self.progs[s.prog].states[s.pc]
        remaining = s.run_total - s.run_done
        if st.f["decode"]:
            n = 1
        else:
            n = min(remaining, budget_left)
            if chunk_f is not None:
                n = min(n, chunk_f)
        n = int(n)
        if n <= 0:
            return 0, False, False
        g = st.f["growing"]
        if g is not None:
            h = w.hold_of(sid, g)
            status, pre = self.grow(w, sid, g, h[3] + n, served, may_preempt=not admitting)
            if status == "self":
                return 0, True, True
            if status == "wait":
                return (None if admitting else 0), pre, False
            return n, pre, False
        return n, False, False

    def iterate(self, w: World, si: int) -> bool:
        """One iteration of stage si, atomically: serve, admit, complete.
        Returns False for a zero-work iteration (not an action)."""
        stage = self.stages[si]
        res = self.residents(w, si)
        shape = self.shape_vars(w, res)
        x = Ctx(w, None, shape)
        budget = self.budget_f[si](None, x) if self.budget_f[si] is not None else INF
        budget_left = budget
        order = self.serve_order[si]
        ranked = self.ordered(w, order, res, lambda sid: self.key_of(w, order, sid),
                              lambda sid: w.sessions[sid].admitted)
        served: dict[int, int] = {}
        preempted_any = False
        chunk = None
        for sid in ranked:
            if budget_left <= 0:
                break
            s = w.sessions[sid]
            if self.progs[s.prog].states[s.pc].kind != "run":
                continue  # preempted earlier in this iteration
            if self.chunk_f[si] is not None:
                chunk = self.chunk_f[si](None, Ctx(w, None, {**shape, "budget_left": budget_left}))
            n, pre, stop = self.serve_one(w, si, sid, budget_left, chunk, served)
            preempted_any |= pre
            if stop:
                break
            if n:
                served[sid] = n
            budget_left = budget - sum(served.values())
        admitted = []
        if not preempted_any and budget_left > 0:
            for p in self.via[si]:
                skipped: set[int] = set()
                while budget_left > 0:
                    # An admission is tentative until its first chunk has its
                    # blocks (from free, then evictable): like vLLM, a waiting
                    # request whose allocation fails is not admitted and never
                    # preempts anyone; it blocks the queue (or is skipped).
                    if len(w.pools[p].queue) <= len(skipped):
                        break  # nobody left to try: no snapshot to take
                    snap = w.snapshot()
                    sid = self.admit_pool(w, p, budget_left, skipped)
                    if sid is None:
                        break
                    self.advance(w, sid)
                    s = w.sessions[sid]
                    st = self.progs[s.prog].states[s.pc]
                    if st.kind == "run" and st.f["stage"] == si and s.run_done < s.run_total:
                        if self.chunk_f[si] is not None:
                            chunk = self.chunk_f[si](None, Ctx(w, None, {**shape, "budget_left": budget_left}))
                        n, _, _ = self.serve_one(w, si, sid, budget_left, chunk, served, admitting=True)
                        if n is None:
                            w.restore(snap)
                            if self.pools[p].hol == "block":
                                break
                            skipped.add(sid)
                            continue
                        if n:
                            served[sid] = n
                        budget_left = budget - sum(served.values())
                    admitted.append(sid)
        if not served and not admitted and not preempted_any:
            return False
        ntok = sum(served.values())
        ndec = sum(1 for sid in served if self.progs[w.sessions[sid].prog].states[w.sessions[sid].pc].f.get("decode"))
        w.ev("iterate", si, {"ntok": ntok, "ndec": ndec, "nreq": len(served), "kvb": self.shape_vars(w, list(served))["kvb"]})
        # completion, in serve order (admitted ones after, in admission order)
        for sid, n in served.items():
            s = w.sessions[sid]
            st = self.progs[s.prog].states[s.pc]
            s.run_done += n
            if st.f["progress"] is not None:
                s.attrs[st.f["progress"]] += n
            g = st.f["growing"]
            own = None
            if g is not None:
                h = w.hold_of(sid, g)
                h[3] += n
                own = h[2]
            w.ev("serve", sid, n, st.ir.run, s.run_done, s.run_total, g, own)
        for sid in served:
            s = w.sessions[sid]
            st = self.progs[s.prog].states[s.pc]
            if st.kind == "run" and s.run_done >= s.run_total:
                w.ev("run_done", sid, st.ir.run)
                s.run_done = s.run_total = 0
                s.pc = st.next
                self.advance(w, sid)
        return True

    def cost(self, si: int, shape: dict, now: int = 0) -> int:
        """Ticks an iteration of this shape takes (simulator only)."""
        f = self.cost_f[si]
        if f is None:
            return 1
        v = f(None, Ctx(None, None, {**shape, "now": now}))
        return max(int(round(v)), 1)

    # -- invariants ---------------------------------------------------------
    def conservation(self, w: World, base) -> None:
        for p, cap in enumerate(self.caps):
            if cap is None:
                continue
            ps = w.pools[p]
            alloc = w.allocated(p)
            cached = sum(e[1] for e in ps.cache)
            if alloc + cached + ps.free != cap or ps.free < 0:
                raise Fault("conservation",
                            f"pool `{self.pools[p].name}` after {self.describe_base(w, base)}: "
                            f"allocated {alloc} + cached {cached} + free {ps.free} != cap {cap}")

    def describe_base(self, w, base) -> str:
        kind, subj = base[0], base[1]
        if kind == ITERATE:
            return f"iterate {self.stages[subj].name}"
        return f"{kind} {self.progs[w.sessions[subj].prog].name}#{subj + 1}"

    def check_invariants(self, state) -> list[tuple[str, str]]:
        """Violations visible in a state: faults, stuck sessions, invariants."""
        out = []
        sessions, pools, _, fault = state
        if fault is not None:
            out.append(fault)
            return out
        for sid, s in enumerate(sessions):
            if s[11]:
                out.append(("stuck", f"{self.progs[s[0]].name}#{sid + 1} was preempted again without passing the position of its previous preemption"))
        if self.invariant_f:
            w = World(self, state, FirstOracle(), None)
            for c, f in self.invariant_f:
                try:
                    ok = f(None, Ctx(w))
                except EvalError as e:
                    out.append(("invariant", f"invariant at line {c.at[0] if c.at else '?'} cannot be evaluated: {e}"))
                    continue
                if not ok:
                    out.append(("invariant", f"invariant at line {c.at[0] if c.at else '?'} is violated"))
        return out
