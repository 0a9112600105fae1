"""One frozen `Settings`: everything a check is asked to do, as
Stateright's `CheckerBuilder` carries it. `explorer.check(model,
settings)` reads it and chooses the engine (explorer/check.py); the
engines read their part of it.

What the model decides (its symmetry, its checks' names, ties) is the
model's, not a setting: the engine sees only their effect, through
`canonical`, `invariants` and the row flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

__all__ = ["Settings", "STRATEGIES", "ProgressFn"]

ProgressFn = Callable[[Any], None]  # called with a snapshot of the run's Stats

# bfs/dfs: one search over every reachable state (bfs: shortest traces);
# partitioned: bfs over hash partitions (threads, Ray actors, checkpoints);
# swarm: `searches` randomized depth-first searches, incomplete by design.
STRATEGIES = ("bfs", "dfs", "partitioned", "swarm")


@dataclass(frozen=True)
class Settings:
    strategy: str = "bfs"
    # bounds and limits: reaching one gives the verdict "bound"
    max_states: int | None = None
    max_depth: int | None = None
    time_limit: float | None = None  # seconds
    memory_limit: int | None = None  # bytes of resident memory (explorer/runtime/memory.py)
    # checks
    check_deadlock: bool = True
    check_livelock: bool = True
    # workers: processes or threads expanding (bfs), threads running the partitions (partitioned)
    workers: int = 1
    progress: ProgressFn | None = field(default=None, compare=False)
    progress_interval: float = 1.0
    # exact: states identified by their whole canonical form, not a 64-bit fingerprint (explorer/stores/exact.py)
    exact: bool = False
    # disk: the array engine's disk mode, its files in a directory of its own under this one (removed at the
    # end): about 10 bytes of RAM a state (strategies/arrays/disk.py); the livelock check's edges on disk too
    disk: str | None = None
    # disk_at: with disk, the search begins in memory and goes on in the disk mode from the first BFS level
    # that starts with more than this many bytes resident (the memory bound's choice, explorer/check.py)
    disk_at: int | None = None
    # partitioned: how many, where (a Ray address, "auto" or "local"), checkpoints
    partitions: int | None = None
    ray: str | None = None
    checkpoint: str | None = None
    resume: str | None = None
    identity: Mapping | None = None  # what the caller knows of the model: a checkpoint resumes only its own
    # swarm: how many searches, their first seed, processes running them (None: one a core)
    searches: int = 0
    seed: int = 0
    processes: int | None = None
    # hooks the search calls on each state and edge (explorer/visitor.py): the sequential engine's alone
    visitor: Any = field(default=None, compare=False)
    # when the check began (time.perf_counter()): `time_limit` and the statistics' elapsed time count
    # from there, building the model included; None: from the engine's start (set by `explorer.check`)
    started: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r} (expected one of {', '.join(STRATEGIES)})")
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        for name in ("max_states", "max_depth"):
            val = getattr(self, name)
            if val is not None and val < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.workers > 1 and self.strategy == "dfs":
            raise ValueError("parallel mode (workers > 1) supports strategy 'bfs' only")
        if self.partitions is not None and self.partitions < 1:
            raise ValueError("partitions must be >= 1")
        if self.strategy == "swarm" and self.searches < 1:
            raise ValueError("a swarm needs at least one search")
        if self.exact and (self.workers > 1 or self.strategy in ("partitioned", "swarm")):
            raise ValueError("an exact exploration runs in one process, without partitions")
        if self.strategy != "partitioned":
            extra = [n for n in ("partitions", "checkpoint", "resume") if getattr(self, n) is not None]
            if self.ray is not None and self.strategy != "swarm":
                extra.insert(0, "ray")
            if extra:
                raise ValueError(f"{extra[0]} needs the strategy 'partitioned'")
        if self.disk_at is not None and self.disk is None:
            raise ValueError("disk_at needs a directory for the disk mode (disk)")
        if self.disk is not None:
            why = self.disk_refusal()
            if why is not None:
                raise ValueError(why)
        if self.visitor is not None:
            from explorer.visitor import Visitor

            if not isinstance(self.visitor, Visitor):
                raise TypeError(f"a visitor is an explorer.visitor.Visitor, not {type(self.visitor).__name__}")
            if self.strategy not in ("bfs", "dfs") or self.workers > 1:
                raise ValueError("a visitor is called by the sequential engine alone: strategy 'bfs' or 'dfs', "
                                 f"one worker (not strategy {self.strategy!r} with {self.workers} worker"
                                 f"{'s' if self.workers > 1 else ''})")

    def disk_refusal(self) -> str | None:
        """Why the disk mode (`disk`) cannot honour the other settings;
        None when it can."""
        if self.workers > 1:
            return "the disk mode runs in one worker: drop the workers, or the disk mode"
        if self.strategy != "bfs":
            return f"the disk mode explores by BFS, not by strategy {self.strategy!r}: drop the disk mode"
        if self.exact:
            return "the disk mode stores fingerprints, not exact states: drop exact, or the disk mode"
        if self.visitor is not None:
            return "a visitor is called by the sequential engine, which has no disk mode: drop the disk mode"
        return None

    def clock(self) -> float:
        """The time.perf_counter() value the run's time counts from: `started`, or now."""
        import time

        return time.perf_counter() if self.started is None else self.started

    def but(self, **changes: Any) -> "Settings":
        """A copy with `changes`."""
        return replace(self, **changes)
