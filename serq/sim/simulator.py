"""The deterministic simulator (`serq run`, `serq check`).

The simulator never decides what a step does: `serq.semantics.model` does. It only
picks *which* action happens *when* — by time, on an event heap — and
answers the model's oracle: draws from a seeded RNG, ties by the tie event.

Time is superdense over integer ticks (ns). The heap is keyed
(tick, priority, counter) like SimPy's, so events at one tick come out in a
fixed order and a run is reproducible:

  priority 0  an iteration ends: its effects are stamped at this tick
  priority 1  arrivals (`tick arrivals before turns`, the default) or turn
              returns (`tick turns before arrivals`), in the order they
              were scheduled
  priority 2  the other kind
  then        idle stages try to start an iteration, in stage order, until
              none can: every zero-time consequence settles before time
              advances

An iteration decides at its start: the model's `iterate` is applied at the
start tick (the state changes then), its cost comes from the shape of what
it served, and the stage is busy until start + cost. What it did — tokens
served, runs done (first tokens), sessions reaching `turn` or `end`,
holds queued on completion — is stamped at the end tick. The one
approximation: another stage (or an event-driven pool) can observe the
state of an iteration before that iteration ends. With a single stage
there is no difference. docs/simulator.md states all of it.
"""

from __future__ import annotations

from serq.check.admission import grower_text, refusal, stuck_why
from serq.words import stuck_text

import time
import heapq
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from explorer.runtime import compiled
from explorer.runtime.interrupt import interrupt_of, signal_name
from explorer.runtime.limits import LimitReached, Limits, building
from explorer.runtime.memory import MemoryGuard
from serq import ir
from serq.vocab import MAX_INT
from serq.sim.coalesce import licence, plan_block
from serq.ir.fold import EvalError
from serq.check.model import Checks
from serq.semantics.events import serve
from serq.semantics.model import ARRIVE, ITERATE, TURN, Model
from serq.semantics.rowstate import F_FAULT, RowState
from serq.sim.report import Stats
from serq.sim.arrivals import arrival_times
from serq.defaults import DEFAULT_MAX_STEPS

END, ENV = 0, 1  # heap priorities within one tick (ENV: the first of arrivals and turn returns)

# why a run stopped
DONE, HORIZON, FAULT, STALLED, VIOLATION, STEP_LIMIT, NO_PROGRESS, INTERRUPTED = (
    "done", "horizon", "fault", "stalled", "violation", "step limit", "no progress", "interrupted")
TIME_LIMIT, MEMORY_LIMIT = "time limit", "memory limit"
LIMITS = (STEP_LIMIT, TIME_LIMIT, MEMORY_LIMIT)  # the run was cut: never the end of the instance
MAX_VIOLATIONS = 100  # violation messages kept (all are counted)


# ---------------------------------------------------------------- the oracle


def _faulted(state) -> bool:
    if isinstance(state, RowState):
        return bool(state.flags & F_FAULT)
    return state.fault is not None


class RngOracle:
    """Draws sample their distribution with a seeded RNG; ties go by the tie
    event (option 0), the simulator's fixed rule."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def draw(self, values, weights) -> int:
        total = float(sum(weights))
        if not total > 0:  # all weights zero (or NaN): uniform
            return int(self.rng.random() * len(values)) % len(values)
        u = self.rng.random() * total
        acc = 0.0
        for i, w in enumerate(weights):
            acc += w
            if u < acc:
                return i
        # u landed on the rounding slack at the top: the last value with weight
        return max(i for i, w in enumerate(weights) if w > 0)

    def tie(self, n) -> int:
        return 0


# ---------------------------------------------------------------- configuration and result


@dataclass
class SimConfig:
    seed: int = 0
    horizon: int | None = None  # ticks: no event after it, no iteration ending after it
    warmup: int = 0  # ticks: sessions arriving before it are left out of latency stats
    coalesce: bool = True
    stop_on_violation: bool = False  # `serq check`: stop at the first violation
    # the properties `serq check` fails on (None: the instance's `check` lines), as the explorer's
    checks: Checks | None = None
    max_steps: int = DEFAULT_MAX_STEPS  # actions applied (a coalesced block counts its iterations)
    time_limit: float | None = None  # seconds of wall-clock time from the start of run()
    memory_limit: int | None = None  # bytes of resident memory (explorer/runtime/memory.py)
    progress: Callable[[int, int, int], None] | None = None  # (now, ended, sessions)
    trace: Callable | None = None  # (tick, what, events, model, state) per action taken
    # the schedule (serq/sim/schedule.py): (stage, tick, events, state after) per iteration taken,
    # (block, tick, state before) per coalesced block
    iteration: Callable | None = None
    block: Callable | None = None


@dataclass
class SimResult:
    program: ir.Program
    config: SimConfig
    state: tuple
    now: int  # simulated time, ticks
    stopped: str
    stats: Stats
    faults: list[tuple[int, str, str]] = field(default_factory=list)  # (tick, kind, message)
    violations: list[tuple[int, str, str]] = field(default_factory=list)  # stuck / invariant, the first 100
    violations_total: int = 0
    stalled: list[str] = field(default_factory=list)  # sessions left waiting forever
    licence: list[tuple[bool, str]] = field(default_factory=list)
    signal: str | None = None  # stopped "interrupted": by which signal (SIGINT, SIGTERM)
    limit: str | None = None  # stopped at a time or memory limit: the limit in words ("2.0 s", "512MiB")
    checks: Checks | None = None  # the properties checked (config.checks, or the instance's)
    stuck_note: tuple[int, int, str] | None = None  # check, stuck not checked: the first (tick, action, words)
    watchdog: int = 0  # iterations and actions without progress that stop the run ("no progress")


# ---------------------------------------------------------------- the simulator


RESERVE = 16 << 20  # bytes kept back during a run for its report at a MemoryError


class Simulator:
    def __init__(self, program: ir.Program, config: SimConfig | None = None, base_dir: Path | None = None):
        self.program = program
        self.cfg = config or SimConfig()
        # the kernel's compiled code is loaded (or, cold, compiled) before the clock starts, as `serq explore`
        # does: a time limit counts the run, not numba's cache
        import serq.semantics.entries  # noqa: F401 (registers the kernel's table)
        from explorer.runtime import compiled

        compiled.load(("step",))
        # the run's limits count from here: building the model of a workload of many sessions is cut by them
        # (LimitReached, raised to the caller: nothing simulated; explorer/runtime/limits.py, `building`)
        self._t0 = time.perf_counter()
        with building(Limits(self.cfg.time_limit, MemoryGuard(self.cfg.memory_limit), self._t0)):
            self.m = Model(program, ties="seq")
        self.m.packed = True  # one row between steps, decoded only when read
        self.rng = random.Random(self.cfg.seed)
        self.oracle = RngOracle(self.rng)
        self.arrivals = arrival_times(program, self.cfg.seed, base_dir)
        self.licence = licence(program)
        m = self.m
        self.stats = Stats(program, m, self.cfg.warmup)
        self.checks = self.cfg.checks or Checks.of_program(program)
        # `serq check`: the per-request SLO checks, counted along the run as
        # the explorer counts them (serq/check/slo.py); every iteration is
        # a step of its own, so no block is coalesced
        self.slo = None
        if self.cfg.stop_on_violation and any(s.per_request for s in self.checks.slo):
            from serq.check.slo import Counts

            self.slo = Counts(self.checks.slo, m.progs)
            self.licence = [(False, "an SLO check counts every iteration")] * len(m.stages)

    # -- helpers ------------------------------------------------------------
    def _push(self, tick: int, prio: int, kind: str, payload) -> None:
        self._count += 1
        heapq.heappush(self.heap, (tick, prio, self._count, kind, payload))

    def _levels(self, state) -> tuple[int, ...]:
        return self.m.engine.levels(state)

    def _might_work(self, state, si: int) -> bool:
        """False only if an iteration of si would certainly be zero-work (no
        resident, empty via queues): saves a step for nothing."""
        return self.m.engine.might_work(state, si)

    def _think(self, state, sid: int, now: int) -> int | None:
        e = self.m.engine
        prog, pc = e.pc_of_state(state, sid)
        st = self.m.progs[prog].states[pc]
        if st.kind != "turn":
            return None  # no longer waiting at this turn (preempted meanwhile)
        if st.think is None:
            return 0
        v = self.m.think(state, sid, now)
        return max(int(round(v)), 0)

    # -- running ---------------------------------------------------------------
    def run(self) -> SimResult:
        m, cfg, stats = self.m, self.cfg, self.stats
        # the kernel's entry points, before the first step (explorer/runtime/compiled.py, the use "step"): a
        # simulation calls none of the explorer's own compiled functions
        compiled.load(("step",))
        self._limits = Limits(cfg.time_limit, MemoryGuard(cfg.memory_limit), self._t0)
        with building(self._limits):  # a workload of many sessions: LimitReached to the caller, nothing simulated
            self.state = m.initial_state()
        self.heap: list = []
        self._count = 0
        self.busy = [False] * len(m.stages)
        self.pending: list[list] = [[] for _ in m.stages]  # effects stamped at the iteration end
        self.pending_cost = [0] * len(m.stages)
        self.pending_block: list = [None] * len(m.stages)  # (start tick, coalesced block) in flight
        self.turn_gen: dict[int, int] = {}
        self.steps = 0
        self.faults: list = []
        self.violations: list = []
        self.violations_total = 0
        self._violation_seen: set = set()
        self.stuck_note = None
        self._whole = None
        self.slo_counts = None if self.slo is None else self.slo.initial(len(self.state.sessions))
        # the no-progress watchdog: iterations and actions since a session last
        # ended or reached a turn (a block counts its k iterations)
        self._since_progress = 0
        self._watchdog = max(10_000, 10 * len(self.arrivals))
        self.now = 0
        self.signal = None
        self.limit = None
        m.engine.limits = self._limits  # inside one step too: a spawn of many, a step of many draws
        stopped = None
        # `tick arrivals before turns` (default) or `tick turns before arrivals`
        self._arrive_prio = ENV if self.program.tick == "arrivals" else ENV + 1
        self._turn_prio = ENV + 1 if self.program.tick == "arrivals" else ENV
        for sid, t in enumerate(self.arrivals):
            self._push(t, self._arrive_prio, ARRIVE, sid)
        stats.level(0, self._levels(self.state))
        horizon = cfg.horizon
        last_report = 0
        # address space kept back for the report when the run stops at a MemoryError (it decodes the last
        # state, as large as the memory allowed): released then (allocated, never written: no resident memory)
        import numpy as np

        reserve = [np.empty(RESERVE, np.uint8)]
        try:
            while self.heap and stopped is None:
                tick = self.heap[0][0]
                if horizon is not None and tick > horizon:
                    stopped = HORIZON
                    break
                self.now = tick
                while self.heap and self.heap[0][0] == tick and stopped is None:
                    _, _, _, kind, payload = heapq.heappop(self.heap)
                    if kind == "end":
                        self.busy[payload] = False
                        effects, self.pending[payload] = self.pending[payload], []
                        stats.busy(payload, self.pending_cost[payload])
                        self.pending_cost[payload] = 0
                        if self.pending_block[payload] is not None:
                            stats.block_end(payload, *self.pending_block[payload])
                            self.pending_block[payload] = None
                        self._effects(tick, effects)
                    elif kind == ARRIVE:
                        stopped = self._apply((ARRIVE, payload), tick)
                    elif kind == TURN:
                        sid, gen = payload
                        if self.turn_gen.get(sid) == gen:
                            stopped = self._apply((TURN, sid), tick)
                if stopped is None:
                    stopped = self._starts(tick)
                if cfg.progress is not None and self.steps - last_report >= 2000:
                    last_report = self.steps
                    cfg.progress(self.now, stats.ended_total, len(self.state.sessions))
        except _Stop as s:
            stopped = s.why
        except LimitReached as e:  # inside a step: the step under way is not in the report
            stopped = self._reached(e)
        except (KeyboardInterrupt, SystemError) as e:
            e = interrupt_of(e)
            # SIGINT/SIGTERM (explorer/runtime/interrupt.py): report the run so far. The
            # action under way when the signal came may be counted in part.
            stopped, self.signal = INTERRUPTED, signal_name(e)
        except MemoryError:
            # the state or the statistics could not grow: the run so far, as
            # at the memory limit (the action under way is not in it)
            stopped, self.limit = MEMORY_LIMIT, "MemoryError"
            reserve.clear()  # (room for the report of the run so far: its last state decoded)
        finally:
            m.engine.limits = None
        if stopped is None:
            stopped = DONE
        if stopped == HORIZON:
            self.now = horizon
        # a run stopped early: what a block in flight did by now (the effects
        # of a single iteration in flight are not in the report, as its end
        # is after the stop; docs/simulator.md, Stopping)
        for si, pb in enumerate(self.pending_block):
            if pb is not None:
                stats.block_end(si, *pb, upto=self.now)
        stalled = []
        if stopped == DONE and not m.is_done(self.state) and self.state.fault is None:
            stalled = self._stalled()
            if stalled:
                stopped = STALLED
        stats.finish(self.now, self.state)
        return SimResult(self.program, cfg, self.state, self.now, stopped, stats, self.faults,
                         self.violations, self.violations_total, stalled, self.licence, self.signal,
                         self.limit, self.checks, self.stuck_note, self._watchdog)

    def _starts(self, tick: int) -> str | None:
        """Idle stages start iterations, in stage order, until none can."""
        m = self.m
        changed = True
        while changed:
            changed = False
            for si in range(len(m.stages)):
                if self.busy[si] or not self._might_work(self.state, si):
                    continue
                r = self._start(si, tick)
                if r is True:
                    changed = True
                elif isinstance(r, str):
                    return r
        return None

    def _start(self, si: int, tick: int):
        """Try to start an iteration of stage si at tick: True if one started,
        False if none (zero work, or it would end after the horizon), or a
        stop reason."""
        m, cfg = self.m, self.cfg
        if cfg.coalesce and self.licence[si][0] and self._others_quiet(si):
            t_next = self.heap[0][0] if self.heap else None
            # a block counts its iterations against --max-steps, and leaves
            # the last step to an action of its own (which stops the run)
            left = cfg.max_steps - self.steps - 1
            blk = None if left < 2 else plan_block(m, self.state, si, tick, t_next, cfg.horizon, self._levels,
                                                    most=left)
            if blk is not None:
                return self._apply_block(blk, tick)
        rng_state = self.rng.getstate() if cfg.horizon is not None else None
        nxt, events = m.run_with(self.state, (ITERATE, si), self.oracle, now=tick)
        if nxt is None:
            return False
        # split: decisions (before the "iterate" event) at the start, effects at the end
        cut = next((i for i, e in enumerate(events) if e.kind == "iterate"), None)
        if cut is None:  # a fault before the iteration took shape
            return self._commit(nxt, events, tick)
        shape = events[cut].shape
        try:
            cost = m.cost(si, shape, tick)
        except EvalError as e:
            where = f" at line {e.at[0]}:{e.at[1]}" if e.at else ""
            self.faults.append((tick, "error", f"cost of stage `{m.stages[si].name}`: {e}{where}"))
            return FAULT
        end = tick + cost
        if end >= MAX_INT:
            self.faults.append((tick, "error", f"cost of stage `{m.stages[si].name}`: the iteration would end at "
                                               f"{end} ns, past 2^62 ns (about 146 years)"))
            return FAULT
        if cfg.horizon is not None and end > cfg.horizon:
            self.rng.setstate(rng_state)  # not taken: as if never tried
            return False
        self.busy[si] = True
        self.pending[si] = events[cut:]
        self.pending_cost[si] = cost  # counted at the end, with the effects
        self._progress(events)
        self._push(end, END, "end", si)
        if cfg.trace is not None:
            cfg.trace(tick, f"iterate {m.stages[si].name} until {end / 1e6:.6f} ms", events, m, nxt)
        if cfg.iteration is not None:
            cfg.iteration(si, tick, events, nxt)
        self._whole = events  # the SLO checks count the step's effects too (`_commit`)
        return self._commit(nxt, events[:cut], tick) or True

    def _others_quiet(self, si: int) -> bool:
        """No other stage can start during a block of si: each is busy (its
        end is on the heap, which bounds the block) or has nothing to do."""
        for sj in range(len(self.m.stages)):
            if sj != si and not self.busy[sj] and self._might_work(self.state, sj):
                return False
        return True

    def _apply_block(self, blk, tick: int):
        over = self._over()
        if over is not None:
            return over
        self.steps += blk.k  # within --max-steps: the block was planned for what is left
        si = blk.stage
        self._since_progress += blk.k
        t = self.stats.block_levels(tick, blk.costs, blk.levels)
        self.stats.block_start(blk)
        self.pending_block[si] = (tick, blk)
        if self.cfg.trace is not None:
            self.cfg.trace(tick, f"{blk.k} iterations of {self.m.stages[si].name} coalesced, until {t / 1e6:.6f} ms",
                           [serve(sid, n * blk.k, "decode" if d else "prefill") for sid, n, d in blk.served],
                           self.m, blk.state)
        if self.cfg.block is not None:
            self.cfg.block(blk, tick, self.state)
        self.state = blk.state
        self.busy[si] = True
        self._push(t, END, "end", si)
        return True

    def _apply(self, base, tick: int) -> str | None:
        nxt, events = self.m.run_with(self.state, base, self.oracle, now=tick)
        if nxt is None:
            return None
        self._progress(events)
        if self.cfg.trace is not None:
            self.cfg.trace(tick, f"{base[0]} {self.m.session_label(nxt, base[1])}", events, self.m, nxt)
        return self._commit(nxt, events, tick)

    def _commit(self, nxt, events, tick: int) -> str | None:
        """Take a successor: its decisions stamped at `tick`, then checks
        (an iteration's SLO counts read its effects too, `_whole`, as the
        explorer counts them, in the step that decides them)."""
        whole, self._whole = self._whole, None
        self.steps += 1
        before, self.state = self.state, nxt
        self.stats.level(tick, self._levels(nxt))
        self._effects(tick, events, before)
        if _faulted(nxt):
            self.faults.append((tick, nxt.fault[0], nxt.fault[1]))
            return FAULT
        if self.slo is not None:
            self.slo_counts, over = self.slo.advance(self.slo_counts, nxt, events if whole is None else whole)
            if over is not None:
                self._violate(tick, *self.slo.message(over, lambda sid: self.m.session_label(nxt, sid)))
        for kind, msg in self._queue_slos(nxt):
            self._violate(tick, kind, msg)
        if self.m.engine.low.invariants and (self.checks.invariant or not self.cfg.stop_on_violation):
            for kind, msg in self.m.check_invariants(nxt):
                if kind == "invariant" and msg not in self._violation_seen:
                    self._violation_seen.add(msg)  # each invariant once, at its first violation
                    self._violate(tick, kind, msg)
        if self.cfg.stop_on_violation and self.violations_total:
            return VIOLATION
        if self.steps >= self.cfg.max_steps:
            return STEP_LIMIT
        return self._over()

    def _queue_slos(self, state) -> list:
        """`check queue(P) <= K` on a state, when `serq check` checks it."""
        if not self.cfg.stop_on_violation or not self.checks.slo:
            return []
        from serq.check.slospec import queue_violations

        return queue_violations(self.checks.slo, state, [p.name for p in self.m.pools])

    def _over(self) -> str | None:
        """The wall-clock and memory limits (explorer/runtime/limits.py, as the
        explorer's), checked after every action (the memory at most every
        0.2 s)."""
        try:
            self._limits.check()
        except LimitReached as e:
            return self._reached(e)
        return None

    def _reached(self, e: LimitReached) -> str:
        if e.reason == "time_limit":
            self.limit = f"{e.value:g} s"
            return TIME_LIMIT
        self.limit = e.value  # in MiB, as the explorer says it
        return MEMORY_LIMIT

    def _violate(self, tick: int, kind: str, msg: str) -> None:
        self.violations_total += 1
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append((tick, kind, msg))

    def _progress(self, events, iterations: int = 1) -> None:
        """The watchdog's clock: reset when a session ends or reaches a turn."""
        self._since_progress += iterations
        for e in events:
            if e.kind == "end" or e.kind == "at_turn":
                self._since_progress = 0
                return

    def _effects(self, tick: int, events, before=None) -> None:
        """Stamp events at tick; schedule the turn returns they imply.
        `before`: the state the events' step started from, if known."""
        self.stats.events(tick, events, self.state)
        for e in events:
            k = e.kind
            if k == "at_turn":
                sid = e.sid
                think = self._think(self.state, sid, tick)
                if think is not None:
                    gen = self.turn_gen.get(sid, 0) + 1
                    self.turn_gen[sid] = gen
                    self._push(tick + think, self._turn_prio, TURN, (sid, gen))
            elif k == "stuck":
                why = stuck_why(self.m, before, e, events) if before is not None else None
                words = stuck_text(self.m.session_label(self.state, e.sid), self.m.pools[e.pool].name, why)
                if self.cfg.stop_on_violation and not self.checks.stuck:
                    # `serq check` when stuck is not selected: the first one is a note
                    self.stuck_note = self.stuck_note or (tick, self.steps, words)
                else:
                    self._violate(tick, "stuck", words)
                    if self.cfg.stop_on_violation:
                        raise _Stop(VIOLATION)
                if self._since_progress >= self._watchdog:
                    # sessions keep being preempted without progress and none has
                    # ended or reached a turn for a long while: a livelock, most
                    # likely. Checked only here, at a stuck event (never inside a
                    # coalesced block), so coalescing cannot move the stop.
                    raise _Stop(NO_PROGRESS)

    def _stalled(self) -> list[str]:
        """Sessions that can never move: nothing is scheduled and no stage
        can start. Each with what it waits for."""
        m, st = self.m, self.state
        out = []
        for sid, s in enumerate(st.sessions):
            cs = m.progs[s.prog].states[s.pc]
            if cs.kind == "end":
                continue
            label = m.session_label(st, sid)
            if cs.kind == "acquire":
                p = m.gates[s.prog][s.pc]
                q = st.pools[p].queue
                pos = q.index(sid) + 1 if sid in q else "?"
                out.append(f"{label} waits in the queue of `{m.pools[p].name}` (position {pos} of {len(q)}) "
                           f"and {refusal(m, st, sid, self.now).why}")
            elif cs.kind == "run":
                grow = grower_text(m, st, sid)
                out.append(f"{label} waits to be served by `{cs.stage}` "
                           f"({cs.run}, {s.run_done} of {s.run_total} tokens done)" + (f": {grow}" if grow else ""))
            elif cs.kind == "join":
                out.append(f"{label} waits at `join` for {s.live} child session(s)")
            else:
                out.append(f"{label} waits at `{cs.kind}`")
        return out


class _Stop(Exception):
    def __init__(self, why: str):
        self.why = why


def simulate(program: ir.Program, **kw) -> SimResult:
    """Run a program to completion (or the horizon); keywords are SimConfig's."""
    base_dir = kw.pop("base_dir", None)
    return Simulator(program, SimConfig(**kw), base_dir).run()
