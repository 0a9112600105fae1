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

The step itself runs in the compiled kernel (`serq.semantics`); this module
keeps the instance's compiled metadata the simulator and the trace words
read, and turns the kernel's rows into the state tuples below.

State (plain tuples; the kernel's row holds the same facts):
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

from serq.words import stuck_text

from dataclasses import dataclass, field
from typing import Any, Callable

from serq import ir
from serq.vocab import MAX_INT
from serq.ir.fold import EvalError, compile_expr
from serq.semantics.engine import Engine

# action kinds
ARRIVE, TURN, ITERATE = "arrive", "turn", "iterate"


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


class _Vars:
    """The context of a cost expression: the iteration's shape and `now`."""

    def __init__(self, vars):
        self.vars = vars

    def ctx(self, name):
        if name in self.vars:
            return self.vars[name]
        raise EvalError(f"`{name}` has no value here")

    def pool(self, fn, pool):
        raise EvalError(f"`{fn}({pool})` has no value here")


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
        self.engine = Engine(program, ties)
        self.packed = False
        self.workload = self.engine.workload  # (program, initial attributes) per session
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
                if nxt[3] is not None and self.engine.question_overflow(nxt):
                    return results  # as the kernel's expansion: one faulted successor says so
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
        (successor or None for a zero-work iteration, events); with
        `self.packed` the successor is a RowState, decoded only when read."""
        events: list = []
        return self._run(state, base, oracle, events, now, self.packed), events

    def _run(self, state, base, oracle, events, now: int = 0, packed: bool = False):
        """One step through the kernel; `events` (a list or None) receives
        the step's events."""
        if base[0] not in (ARRIVE, TURN, ITERATE):
            raise ValueError(f"unknown action {base!r}")
        if isinstance(oracle, ScriptOracle):
            nxt, evs = self.engine.run(state, base, list(oracle.script), now, events is not None, packed)
            oracle.arity = list(self.engine.arity)
            oracle.pos = len(oracle.arity)
        elif isinstance(oracle, FirstOracle):
            nxt, evs = self.engine.run(state, base, [], now, events is not None, packed)
        else:
            nxt, evs = self.engine.run(state, base, oracle, now, events is not None, packed)
        if events is not None:
            events.extend(evs)
        return nxt

    def think(self, state, sid: int, now: int = 0):
        """A session's think time at its turn (simulator only), evaluated by
        the kernel against the state."""
        st = self.progs[state[0][sid][0]].states[state[0][sid][1]]
        code = self.engine.low.state_rows[state[0][sid][0]][state[0][sid][1]][3]
        try:
            return self.engine.eval_session(state, sid, code, True, now)
        except ValueError as e:
            raise EvalError(str(e), st.at) from None

    def cost(self, si: int, shape: dict, now: int = 0) -> int:
        """Ticks an iteration of this shape takes (simulator only)."""
        f = self.cost_f[si]
        if f is None:
            return 1
        v = f(None, _Vars({**shape, "now": now}))
        if not (isinstance(v, (int, float)) and -MAX_INT < v < MAX_INT):  # inf and nan too
            raise EvalError(f"the cost {v:.6g} ns is out of range (at most 2^62 ns, about 146 years)")
        return max(int(round(v)), 1)

    # -- invariants ---------------------------------------------------------
    def check_invariants(self, state) -> list[tuple[str, str]]:
        """Violations visible in a state: faults, stuck sessions, invariants."""
        out = []
        sessions, pools, _, fault = state
        if fault is not None:
            out.append(fault)
            return out
        for sid, s in enumerate(sessions):
            if s[11]:
                out.append(("stuck", stuck_text(f"{self.progs[s[0]].name}#{sid + 1}")))
        out.extend(self.engine.invariants(state))
        return out
