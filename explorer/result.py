"""Result and statistics of a check."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .analysis import NoReturn
from .trace import Step
from .verdict import PASS, exit_code

__all__ = ["Stats", "Result"]


@dataclass
class Stats:
    generated: int = 0  # successor computations (incl. initial states), duplicates counted
    distinct: int = 0  # distinct states stored (fingerprints)
    queue: int = 0  # states still waiting to be expanded
    max_depth: int = 0  # deepest stored state (BFS: shortest distance from an initial state)
    elapsed: float = 0.0  # wall seconds
    workers: int = 1
    strategy: str = "bfs"

    @property
    def states_per_sec(self) -> float:
        return self.distinct / self.elapsed if self.elapsed > 0 else 0.0

    def snapshot(self) -> "Stats":
        return replace(self)

    def as_dict(self, with_timing: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "generated": self.generated,
            "distinct": self.distinct,
            "queue": self.queue,
            "max_depth": self.max_depth,
            "workers": self.workers,
            "strategy": self.strategy,
        }
        if with_timing:
            d["elapsed"] = round(self.elapsed, 3)
            d["states_per_sec"] = round(self.states_per_sec, 1)
        return d


@dataclass
class Result:
    verdict: str  # "pass" | "deadlock" | "livelock" | "violation" | "bound" | "interrupted"
    message: str
    kind: str | None = None  # for "violation": the invariant kind ("assert", "stuck", ...)
    trace: list[Step] = field(default_factory=list)  # empty for pass/bound
    lasso_start: int | None = None  # livelock: trace index where the cycle starts (and ends)
    diagnosis: list[str] = field(default_factory=list)  # deadlock: describe_deadlock lines
    stats: Stats = field(default_factory=Stats)
    replay_path: str | None = None  # "i0/a1/.../an" for trace, None when no trace
    bound_reason: str | None = None  # bound: "max_states" | "max_depth" | "time_limit" | "memory"; interrupted: the signal
    fingerprint: int | None = None  # of the offending state (last trace state / lasso entry)
    no_return: NoReturn | None = None  # where the trace lost completion (analysis.point_of_no_return)

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    @property
    def ok(self) -> bool:
        return self.verdict == PASS
