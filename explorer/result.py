"""Result and statistics of a check."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from explorer.graph.analysis import NoReturn
from explorer.trace import Step
from explorer.runtime.verdict import Verdicted

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
    exact: bool = False  # states identified by their whole canonical form (explorer/stores/exact.py)

    @property
    def states_per_sec(self) -> float:
        return self.distinct / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def collision_probability(self) -> float:
        """An estimate of the probability that two different states shared
        a 64-bit fingerprint, so that one of them (and what only it leads
        to) was never explored; 0 with exact identities. The larger of
        TLC's two analytic estimates: n(n-1)/2^65, any two of the n
        distinct states colliding (the birthday bound), and n(m-n)/2^64,
        one of the m-n generated states found already seen being in fact
        new (TLC's "optimistic" figure)."""
        if self.exact:
            return 0.0
        n, m = self.distinct, self.generated
        return min(1.0, max(n * (n - 1) / 2**65, n * max(m - n, 0) / 2**64))

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
            d["collision_probability"] = self.collision_probability
            d["exact"] = self.exact
            d["elapsed"] = round(self.elapsed, 3)
            d["states_per_sec"] = round(self.states_per_sec, 1)
        return d


@dataclass
class Result(Verdicted):
    verdict: str  # "pass" | "deadlock" | "livelock" | "violation" | "bound" | "interrupted"
    message: str
    kind: str | None = None  # for "violation": the invariant kind ("assert", "stuck", ...)
    trace: list[Step] = field(default_factory=list)  # empty for pass/bound
    lasso_start: int | None = None  # livelock: trace index where the cycle starts (and ends)
    diagnosis: list[str] = field(default_factory=list)  # deadlock: describe_deadlock lines
    stats: Stats = field(default_factory=Stats)
    replay_path: str | None = None  # "i0/a1/.../an" for trace, None when no trace
    bound_reason: str | None = None  # bound: "max_states" | "max_depth" | "time_limit" | "memory" | "visitor"; interrupted: the signal
    fingerprint: int | None = None  # of the offending state (last trace state / lasso entry)
    no_return: NoReturn | None = None  # where the trace lost completion (analysis.point_of_no_return)
