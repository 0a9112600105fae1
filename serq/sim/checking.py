"""`serq check`'s verdict on a simulation: the library call behind the
command (and what tests call), so that the command only prints.

    j = judge(result, label="x.sq", seed=0, max_steps=10_000)
    j.verdict, j.exit_code, j.lines

The properties are the explorer's (`serq.check.model.Checks`: the instance's
`check` lines, or `--check`): `completes` (or no line) is deadlock,
livelock and invariant; `stuck` is its own property. Asserts, evaluation
errors and conservation always fail. A property not selected never fails:
a stuck session or a stalled end is then a note after the verdict.

The verdict is one of explorer.runtime.verdict's: pass (ok), deadlock (the run
ended with sessions that can never move, when deadlock is checked),
violation (a stuck session when stuck is checked, a failed assert, an
invariant, a conservation law, another fault), bound (the step, time or
memory limit, or the no-progress watchdog, came first: never ok),
interrupted (SIGINT/SIGTERM: never ok)."""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.runtime.verdict import BOUND, DEADLOCK, INTERRUPTED, PASS, VIOLATION, Verdicted
from serq.durations import span_text, time_unit
from serq.check.model import Checks
from serq.sim.simulator import (FAULT, INTERRUPTED as SIM_INTERRUPTED, MEMORY_LIMIT, NO_PROGRESS, STALLED, STEP_LIMIT,
                      TIME_LIMIT, VIOLATION as SIM_VIOLATION)

__all__ = ["Judgement", "judge"]


@dataclass
class Judgement(Verdicted):
    verdict: str
    lines: list[str] = field(default_factory=list)  # what `serq check` prints


def judge(result, *, label: str, seed: int, max_steps: int) -> Judgement:
    """The verdict on a `Simulator.run()` result made with
    `stop_on_violation=True`, for the properties it checked
    (`result.checks`)."""
    j = _verdict(result, label=label, seed=seed, max_steps=max_steps)
    if result.stuck_note is not None:
        tick, action, words = result.stuck_note
        when = span_text(tick, time_unit(result.program))
        j.lines.append(f"{label}: note: a session was stuck at {when} (action {action}): {words}; "
                       f"stuck is not checked: `check stuck;` or --check stuck fails on it")
    return j


def checked(ch: Checks) -> str:
    """What an `ok` line found none of: the selected properties, and what
    is always checked."""
    words = (["deadlock"] if ch.deadlock else []) + (["stuck session"] if ch.stuck else []) + ["failed assert"]
    words += (["invariant"] if ch.invariant else []) + [f"`{s.text}` broken" for s in ch.slo]
    words += ["conservation violation"]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _verdict(result, *, label: str, seed: int, max_steps: int) -> Judgement:
    ch = result.checks  # the simulator's selection (SimConfig.checks or the instance's lines)
    unit = time_unit(result.program)
    when = lambda t: span_text(t, unit)  # noqa: E731  (iterations when no stage has a cost)
    if result.stopped == FAULT:
        return Judgement(VIOLATION, [f"{label}: FAIL: {kind} at {when(t)}: {msg}"
                                     for t, kind, msg in result.faults])
    if result.stopped == SIM_VIOLATION or result.violations_total:
        lines = [f"{label}: FAIL: {kind} at {when(t)}: {msg}" for t, kind, msg in result.violations]
        if result.violations_total > len(result.violations):
            lines.append(f"{label}: ... and {result.violations_total - len(result.violations)} more")
        return Judgement(VIOLATION, lines)
    now = when(result.now)
    stalled = [f"  {s}" for s in result.stalled]
    if result.stopped == STALLED and ch.deadlock:
        return Judgement(DEADLOCK, [f"{label}: FAIL: deadlock: the simulation ended at {now} with "
                                    f"{len(result.stalled)} session(s) that can never move:"] + stalled)
    if result.stopped == SIM_INTERRUPTED:
        return Judgement(INTERRUPTED, [f"{label}: interrupted by {result.signal}: no violation in {now} "
                                       "simulated before it; not a pass"])
    if result.stopped == STEP_LIMIT:
        return Judgement(BOUND, [f"{label}: no violation within the step limit ({max_steps} actions, "
                                 f"{now} simulated); not a pass"])
    if result.stopped in (TIME_LIMIT, MEMORY_LIMIT):
        return Judgement(BOUND, [f"{label}: no violation before the {result.stopped} ({result.limit}, "
                                 f"{now} simulated); not a pass"])
    if result.stopped == NO_PROGRESS:
        return Judgement(BOUND, [f"{label}: no session ended or reached a turn for {result.watchdog} iterations "
                                 f"and actions, up to {now}, while sessions were preempted without progress: a "
                                 "livelock, most likely (`serq explore` decides); not a pass"])
    if result.stopped == STALLED:
        return Judgement(PASS, [f"{label}: ok: no {checked(ch)}; the simulation ended at {now} with "
                                f"{len(result.stalled)} session(s) that can never move, and deadlock is not "
                                f"checked (seed {seed}):"] + stalled)
    n = len(result.state.sessions)
    where = f"up to the horizon ({now})" if result.stopped == "horizon" else f"all {n} sessions ended at {now}"
    return Judgement(PASS, [f"{label}: ok: no {checked(ch)}; {where} (seed {seed})"])
