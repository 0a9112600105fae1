"""Turning what a search found into a Result (shared by BFS, DFS, parallel).

Each builder gets a ``chain_of(fp)`` function returning the stored
[(fingerprint, action index)] chain, so it works whether the seen-set lives in
this process or is spread over parallel workers.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from explorer.graph.cycles import find_livelock
from explorer.result import Result, Stats
from explorer.trace import extend_along, format_path, rebuild
from explorer.runtime.interrupt import signal_name
from explorer.runtime.verdict import BOUND, DEADLOCK, FAILED, INTERRUPTED, LIVELOCK, PASS, VIOLATION

ChainOf = Callable[[int], list[tuple[int, int]]]

__all__ = ["passed", "bounded", "stopped", "interrupted", "violation", "deadlock", "livelock_or_pass", "livelock_result",
           "WorkerFailed", "failed"]


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def passed(stats: Stats) -> Result:
    return Result(PASS, f"no violation in {stats.distinct} distinct states", stats=stats)


def bounded(stats: Stats, reason: str, limit: Any) -> Result:
    return Result(
        BOUND,
        f"no violation within the bound ({reason}={limit}); exploration incomplete",
        stats=stats,
        bound_reason=reason,
    )


def stopped(stats: Stats) -> Result:
    """A search its visitor stopped (explorer/visitor.py): incomplete."""
    return Result(BOUND, f"stopped by its visitor after {stats.distinct} distinct states; exploration incomplete",
                  stats=stats, bound_reason="visitor")


def interrupted(stats: Stats, exc: BaseException) -> Result:
    """A search stopped by a signal: the statistics so far, never a pass."""
    sig = signal_name(exc)
    waiting = getattr(exc, "waiting", None)  # (worker, seconds) when it came while waiting for a worker
    note = f"; worker {waiting[0]} had not answered for {waiting[1]:.1f} s" if waiting and waiting[1] >= 1 else ""
    return Result(
        INTERRUPTED,
        f"stopped by {sig} after {stats.distinct} distinct states, none of them a violation; "
        f"exploration incomplete{note}",
        stats=stats,
        bound_reason=sig,
    )


class WorkerFailed(RuntimeError):
    """A worker (a process or a thread expanding states) died, raised, or
    did not answer before a limit: `wid` says which, `cause` why (one line);
    `detail` is a traceback when there is one. `hung`: (limit
    name, value) when it was still working as that limit came."""

    def __init__(self, wid: int, cause: str, detail: str = "", hung: tuple | None = None,
                 name: str | None = None) -> None:
        self.name = name or f"worker {wid}"  # how the message names it: "search 3", "worker 1 (at KV = 5)"
        super().__init__(f"{self.name} {cause}")
        self.wid, self.cause, self.detail, self.hung = wid, cause, detail, hung


def exit_cause(exitcode: int | None) -> str:
    """`died (killed by SIGKILL)`, `died (exit code 3)` ..."""
    import signal

    if exitcode is not None and exitcode < 0:
        try:
            return f"died (killed by {signal.Signals(-exitcode).name})"
        except ValueError:
            return f"died (killed by signal {-exitcode})"
    return "died" if exitcode is None else f"died (exit code {exitcode})"


def failed(stats: Stats, exc: WorkerFailed) -> Result:
    """A worker failure: the statistics so far, never a pass. A worker
    still busy when a limit came (`hung`) gives that limit's "bound", with
    the worker named."""
    if exc.hung:
        r = bounded(stats, *exc.hung)
        r.message += f"; {exc}"
        return r
    return Result(
        FAILED,
        f"{exc}; stopped after {stats.distinct} distinct states, none of them a violation; "
        "exploration incomplete",
        stats=stats,
        bound_reason=exc.name,
    )


def violation(model: Any, chain_of: ChainOf, fp: int, kind: str, message: str, stats: Stats) -> Result:
    trace = rebuild(model, chain_of(fp))
    return Result(
        VIOLATION, str(message), kind=str(kind), trace=trace, stats=stats,
        replay_path=format_path(trace), fingerprint=fp,
    )


def deadlock(model: Any, chain_of: ChainOf, fp: int, stats: Stats) -> Result:
    trace = rebuild(model, chain_of(fp))
    diagnosis = [str(x) for x in model.describe_deadlock(trace[-1].state)]
    return Result(
        DEADLOCK,
        f"no action is applicable after {_steps(len(trace) - 1)} and the state is not done",
        trace=trace, diagnosis=diagnosis, stats=stats,
        replay_path=format_path(trace), fingerprint=fp,
    )


def livelock_or_pass(
    model: Any,
    chain_of: ChainOf,
    edges: Mapping[int, Sequence[int]],
    first_of: Callable[[Iterable[int]], int],
    stats: Stats,
) -> Result:
    found = find_livelock(edges, first_of) if edges else None
    if found is None:
        return passed(stats)
    entry, cycle = found
    return livelock_result(model, chain_of, entry, cycle, stats)


def livelock_result(model: Any, chain_of: ChainOf, entry: int, cycle: Sequence[int], stats: Stats) -> Result:
    """The lasso: the stored path to `entry`, then `cycle` (fingerprints
    after entry, ending with entry)."""
    trace = rebuild(model, chain_of(entry))
    start = len(trace) - 1
    extend_along(model, trace, cycle, progress=False)
    return Result(
        LIVELOCK,
        f"a cycle of {_steps(len(cycle))} that make no progress, reached after {_steps(start)}",
        trace=trace, lasso_start=start, stats=stats,
        replay_path=format_path(trace), fingerprint=entry,
    )
