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
explorer enumerates every sequence of answers (the kernel's `canon.expand`,
through `Rows.expand`), so an action is `(kind, subject, choices)` and each
choice sequence is one successor.

The step itself runs in the compiled kernel (`serq.semantics`), over the
table the IR is lowered to once (`semantics/lower.py`); this module reads
the IR's programs and that table for the simulator and the trace words,
and turns the kernel's rows into the state tuples below.

State (NamedTuples, `serq.semantics.state`; the kernel's row holds the same facts):
  (sessions, pools, seq, fault)
  session = (prog, pc, attrs, run_done, run_total, holds, parent, live,
             arrived, admitted, last_pos, stuck)
  hold    = (scope, pool, own, use, admitted, copies)
  pool    = (free, cache, queue); cache = ((owner, units, released, tick), ...)
  (`tick`: the simulator's time of the release, for `age`; 0 in the explorer)
`seq` numbers every event; `arrived`, `admitted`, `released` are such
numbers. The explorer's canonical form replaces them by their ranks.
"""

from __future__ import annotations

import sys

from serq.words import stuck_text

from dataclasses import dataclass
from typing import NamedTuple

from serq import ir
from serq.vocab import MAX_INT
from serq.ir.fold import EvalError
from explorer.runtime.limits import tick
from serq.semantics.engine import TICK, Engine
from serq.semantics.kernel.abi import ACQ_GATE, F_PROG, RHDR, RUN_DECODE, RUN_GROWING, RUN_PROGRESS, RUN_STAGE, TURN_THINK
from serq.semantics.rowstate import RowState
from serq.semantics.state import Pool, Session, State

# action kinds
ARRIVE, TURN, ITERATE = "arrive", "turn", "iterate"


# ---------------------------------------------------------------- oracles


class FirstOracle:
    """Ties by the tie event (option 0); draws take their first value."""

    def draw(self, values, weights):
        return 0

    def tie(self, n):
        return 0


# ---------------------------------------------------------------- programs


class RunInfo(NamedTuple):
    """A run state as the lowered table has it."""

    stage: int
    growing: int | None  # the pool the run grows
    progress: int | None  # the slot of its progress attribute
    decode: bool


@dataclass(frozen=True)
class Prog:
    """A session program as the model reads it: the IR's states (each with
    its kind, position and clauses) and the attribute slots of the lowered
    table."""

    index: int
    name: str
    slots: dict[str, int]
    attrs: tuple[ir.Attr, ...]
    states: tuple
    entry: int


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
        self.via = [[i for i, p in enumerate(program.pools) if p.admit_via == s.name] for s in program.stages]
        self.event_pools = [i for i, p in enumerate(program.pools) if p.admit_via is None]
        self.engine = Engine(program, ties)
        low = self.engine.low
        self.progs = [Prog(i, sp.name, low.slots[i], sp.attrs, sp.states, sp.entry)
                      for i, sp in enumerate(program.sessions)]
        # per program and pc, from the lowered table: a run state's stage,
        # growing pool, progress slot and phase; an acquire state's gate pool
        self.runs = [[RunInfo(r[RUN_STAGE], None if r[RUN_GROWING] < 0 else r[RUN_GROWING],
                              None if r[RUN_PROGRESS] < 0 else r[RUN_PROGRESS], bool(r[RUN_DECODE]))
                      if st.kind == "run" else None for st, r in zip(sp.states, rows)]
                     for sp, rows in zip(program.sessions, low.state_rows)]
        self.gates = [[r[ACQ_GATE] if st.kind == "acquire" else None for st, r in zip(sp.states, rows)]
                      for sp, rows in zip(program.sessions, low.state_rows)]
        self.packed = False
        self.workload = self.engine.workload  # (program, initial attributes) per session
        self._rows = None  # the kernel's enumeration of successors, made when first asked
        self._memo_key = None
        self._memo: dict = {}

    # -- states -----------------------------------------------------------
    def initial_state(self):
        sessions = []
        for i, (prog, attrs) in enumerate(self.workload):
            if i & TICK == TICK:
                tick()  # a million sessions: cut by the limits of a check that builds the model
            sessions.append(Session(prog, self.progs[prog].entry, tuple(attrs), 0, 0, (), -1, 0, 0, 0, -1, 0))
        pools = tuple(Pool(p.cap, (), ()) for p in self.pools)
        return State(tuple(sessions), pools, 0, None)

    def is_done(self, state) -> bool:
        sessions, _, _, fault = state
        return fault is None and all(self.progs[s.prog].states[s.pc].kind == "end" for s in sessions)

    def session_label(self, state, sid: int) -> str:
        e = self.engine
        if isinstance(state, RowState) and state.cap == e.cap:
            # a packed row: its program read in place, the state not decoded
            # (a simulation's trace and schedule name sessions at every step)
            prog = int.from_bytes(state.row[8 * (RHDR + sid * e.SF + F_PROG):][:8], sys.byteorder, signed=True)
        else:
            prog = state.sessions[sid].prog
        return f"{self.progs[prog].name}#{sid + 1}"

    # -- actions ----------------------------------------------------------
    def base_actions(self, state):
        """Candidate actions before choices: arrive, turn, iterate."""
        sessions, _, _, fault = state
        if fault is not None:
            return []
        out = []
        for sid, s in enumerate(sessions):
            kind = self.progs[s.prog].states[s.pc].kind
            if kind == "arrive":
                out.append((ARRIVE, sid))
        for sid, s in enumerate(sessions):
            if self.progs[s.prog].states[s.pc].kind == "turn":
                out.append((TURN, sid))
        for si in range(len(self.stages)):
            out.append((ITERATE, si))
        return out

    def successors(self, state) -> list:
        """Every (action, successor RowState) in the model's action order,
        one per sequence of oracle answers: the kernel's enumeration
        (`Rows.expand`). A zero-work iteration has none."""
        if self._rows is None:
            from serq.semantics.rows import Rows

            self._rows = Rows(self.engine, symmetry=False, keep_pos=True)
        return self._rows.expand(self._rows.pack(state))

    def transitions(self, state):
        """All (action, successor, events), deterministic order."""
        return [(a, *self.step_events(state, a)) for a, _ in self.successors(state)]

    def actions(self, state):
        return [a for a, _ in self.successors(state)]

    def step(self, state, action):
        return self.step_events(state, action)[0]

    def step_events(self, state, action):
        """(successor or None, events) of an action: the step run with the
        action's oracle answers. Memoised for the last state, so that
        `actions` followed by several steps from one state does each once."""
        if self._memo_key is not state:
            self._memo_key, self._memo = state, {}
        got = self._memo.get(action)
        if got is None:
            if action[0] not in (ARRIVE, TURN, ITERATE):
                raise ValueError(f"unknown action {action!r}")
            got = self.engine.run(state, (action[0], action[1]), list(action[2]), 0, True, False)
            self._memo[action] = got
        return got[0], list(got[1])

    def run_with(self, state, base, oracle, now: int = 0):
        """One step with a given oracle (the simulator's way): an object with
        `draw` and `tie`, a FirstOracle, or a list of answers (then 0s).
        Returns (successor or None for a zero-work iteration, events); with
        `self.packed` the successor is a RowState, decoded only when read."""
        if base[0] not in (ARRIVE, TURN, ITERATE):
            raise ValueError(f"unknown action {base!r}")
        if isinstance(oracle, FirstOracle):
            oracle = []
        return self.engine.run(state, base, oracle, now, True, self.packed)

    def think(self, state, sid: int, now: int = 0):
        """A session's think time at its turn (simulator only), evaluated by
        the kernel against the state."""
        s = state.sessions[sid]
        st = self.progs[s.prog].states[s.pc]
        code = self.engine.low.state_rows[s.prog][s.pc][TURN_THINK]
        try:
            return self.engine.eval_session(state, sid, code, True, now)
        except ValueError as e:
            raise EvalError(str(e), st.at) from None

    def cost(self, si: int, shape: dict, now: int = 0) -> int:
        """Ticks an iteration of this shape takes (simulator only), evaluated
        by the kernel; an EvalError (its message located) when it cannot be."""
        try:
            v = self.engine.eval_stage(si, "cost", shape, now)
        except ValueError as e:
            raise EvalError(str(e)) from None
        if v is None:
            return 1
        if not -MAX_INT < v < MAX_INT:  # inf and nan too
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
            if s.stuck:
                out.append(("stuck", stuck_text(f"{self.progs[s.prog].name}#{sid + 1}")))
        out.extend(self.engine.invariants(state))
        return out
