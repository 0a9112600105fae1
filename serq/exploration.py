"""Exploring an instance: the library call behind `serq explore` (and the
sweep, the theorem and the browser): the engine's search over `SerqModel`,
then the point of no return of a counterexample."""

from __future__ import annotations

from explorer.analysis import point_of_no_return
from explorer.model import ModelFactory
from explorer.search import check
from serq import ir
from serq.explore import Checks, SerqModel

GRAPH_LIMIT = 200_000  # states the point-of-no-return graph may hold by default


def explore(program: ir.Program, *, strategy: str = "bfs", max_states: int | None = None,
            max_depth: int | None = None, time_limit: float | None = None, ties: str = "all",
            symmetry: bool = True, workers: int = 1, checks: list[str] | None = None, progress=None,
            graph_limit: int = GRAPH_LIMIT, memory_limit: int | None = None, ray: str | None = None,
            partitions: int | None = None, checkpoint: str | None = None, resume: str | None = None):
    """Explore an instance; returns the engine's Result. A counterexample
    gets its point of no return, computed on the whole state graph (at most
    `graph_limit` states; 0 skips it). `memory_limit`: bytes of resident
    memory (explorer/memory.py), None for no bound. With `ray` (a cluster
    address, "auto" or "local"), `partitions`, `checkpoint` or `resume` the
    BFS runs over hash partitions (explorer/distributed.py): the same result,
    on a Ray cluster and/or with checkpoints."""
    ch = Checks.of_program(program, checks)
    factory = ModelFactory(SerqModel, (program,), {"ties": ties, "symmetry": symmetry, "checks": ch})
    if ray is not None or partitions is not None or checkpoint is not None or resume is not None:
        from explorer.distributed import partitioned_check

        result = partitioned_check(factory, partitions=partitions, ray=ray, max_states=max_states,
                                   max_depth=max_depth, time_limit=time_limit, check_deadlock=ch.deadlock,
                                   check_livelock=ch.livelock, progress=progress, memory_limit=memory_limit,
                                   checkpoint=checkpoint, resume=resume,
                                   identity=model_identity(program, ties, symmetry, ch))
    else:
        result = check(factory if workers > 1 else factory(), strategy=strategy, max_states=max_states,
                       max_depth=max_depth, time_limit=time_limit, check_deadlock=ch.deadlock,
                       check_livelock=ch.livelock, workers=workers, progress=progress, memory_limit=memory_limit)
    mark_no_return(program, result, ties=ties, symmetry=symmetry, checks=checks, max_states=max_states,
                   time_limit=time_limit, graph_limit=graph_limit)
    return result


def model_identity(program: ir.Program, ties: str, symmetry: bool, checks: Checks) -> dict:
    """What makes two explorations the same run (a checkpoint resumes only
    its own): the instance's IR, the ties, the symmetry and the checks."""
    import hashlib

    return {"instance": hashlib.sha256(program.to_json().encode()).hexdigest()[:24], "ties": ties,
            "symmetry": symmetry, "checks": checks.names()}


def mark_no_return(program: ir.Program, result, *, ties: str = "all", symmetry: bool = True,
                   checks: list[str] | None = None, max_states: int | None = None,
                   time_limit: float | None = None, graph_limit: int = GRAPH_LIMIT) -> None:
    """Set `result.no_return` when the result has a trace (and the limit is not 0)."""
    if not result.trace or graph_limit <= 0:
        return
    model = SerqModel(program, ties=ties, symmetry=symmetry, checks=Checks.of_program(program, checks))
    limit = graph_limit if max_states is None else min(graph_limit, max_states)
    try:
        point_of_no_return(model, result, max_states=limit, time_limit=time_limit)
    except KeyboardInterrupt:  # the counterexample is found: keep it, without its point of no return
        result.no_return = None
