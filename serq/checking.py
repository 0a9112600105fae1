"""`serq check`'s verdict on a simulation: the library call behind the
command (and what tests call), so that the command only prints.

    j = judge(result, label="x.sq", seed=0, max_steps=10_000)
    j.verdict, j.exit_code, j.lines

The verdict is one of explorer.verdict's: pass (ok), deadlock (the run
ended with sessions that can never move), violation (a stuck session, a
failed assert, an invariant, a conservation law, another fault), bound
(the step, time or memory limit came first: never ok), interrupted (SIGINT/SIGTERM: never
ok)."""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.verdict import BOUND, DEADLOCK, INTERRUPTED, PASS, VIOLATION, exit_code
from serq.durations import span_text, time_unit
from serq.sim import (FAULT, INTERRUPTED as SIM_INTERRUPTED, MEMORY_LIMIT, STALLED, STEP_LIMIT, TIME_LIMIT,
                      VIOLATION as SIM_VIOLATION)

__all__ = ["Judgement", "judge"]


@dataclass
class Judgement:
    verdict: str
    lines: list[str] = field(default_factory=list)  # what `serq check` prints

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    @property
    def ok(self) -> bool:
        return self.verdict == PASS


def judge(result, *, label: str, seed: int, max_steps: int) -> Judgement:
    """The verdict on a `Simulator.run()` result made with
    `stop_on_violation=True`."""
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
    if result.stopped == STALLED:
        return Judgement(DEADLOCK, [f"{label}: FAIL: deadlock: the simulation ended at {now} with "
                                    f"{len(result.stalled)} session(s) that can never move:"]
                         + [f"  {s}" for s in result.stalled])
    if result.stopped == SIM_INTERRUPTED:
        return Judgement(INTERRUPTED, [f"{label}: interrupted by {result.signal}: no violation in {now} "
                                       "simulated before it; not a pass"])
    if result.stopped == STEP_LIMIT:
        return Judgement(BOUND, [f"{label}: no violation within the step limit ({max_steps} actions, "
                                 f"{now} simulated); not a pass"])
    if result.stopped in (TIME_LIMIT, MEMORY_LIMIT):
        return Judgement(BOUND, [f"{label}: no violation before the {result.stopped} ({result.limit}, "
                                 f"{now} simulated); not a pass"])
    n = len(result.state[0])
    where = f"up to the horizon ({now})" if result.stopped == "horizon" else f"all {n} sessions ended at {now}"
    return Judgement(PASS, [f"{label}: ok: no stuck session, failed assert, invariant or conservation violation; "
                            f"{where} (seed {seed})"])
