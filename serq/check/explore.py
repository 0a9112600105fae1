"""Exploring an instance: the library call behind `serq explore` (and the
sweep, the theorem and the browser): the engine's search over `SerqModel`,
then the point of no return of a counterexample."""

from __future__ import annotations

from explorer.check import (NoReturn, build, build_graph, check, completable, forward_no_return, point_of_no_return,
                            start)
from explorer.model import ModelFactory
from explorer.result import Result
from explorer.settings import Settings
from serq import ir
from serq.check.model import Checks
from serq.check.slo import make_model

from serq.defaults import GRAPH_LIMIT  # states the point-of-no-return graph may hold by default


def explore(program: ir.Program, *, strategy: str = "bfs", max_states: int | None = None,
            max_depth: int | None = None, time_limit: float | None = None, ties: str = "all",
            symmetry: bool = True, workers: int = 1, checks: list[str] | None = None, progress=None,
            graph_limit: int = GRAPH_LIMIT, memory_limit: int | None = None, ray: str | None = None,
            partitions: int | None = None, checkpoint: str | None = None, resume: str | None = None,
            exact: bool = False, visitor=None, reduce_ranks: bool = False, disk: str | None = None):
    """Explore an instance; returns the engine's Result. A counterexample
    gets its point of no return, computed on the whole state graph (at most
    `graph_limit` states; 0 skips it). `memory_limit`: bytes of resident
    memory (explorer/runtime/memory.py), None for no bound. With `ray` (a cluster
    address, "auto" or "local"), `partitions`, `checkpoint` or `resume` the
    BFS runs over hash partitions (explorer/strategies/partitions/driver.py): the same result,
    on a Ray cluster and/or with checkpoints; without Ray, `workers` threads
    run the partitions. `exact`: states are
    identified by their whole canonical row, not its 64-bit fingerprint
    (no collision can hide a state; one process, the sequential engine).
    `visitor`: an explorer Visitor riding on the search (the sequential
    engine, one process); one with a `bind` method is given the model
    built, before the search (`--coverage`, serq/check/coverage.py).
    `reduce_ranks`: identify states that differ only in ranks no order can
    read any more (serq/semantics/ranks.py; `--reduce ranks`). `disk`: a
    directory for the array engine's disk mode (`--disk`,
    explorer/strategies/arrays/disk.py)."""
    ch = checks_of(program, checks)
    notes: list = []  # the first stuck session, when `completes` watches them (shared by the search's models)
    factory = ModelFactory(make_model, (program,), {"ties": ties, "symmetry": symmetry, "checks": ch,
                                                      "notes": notes, "reduce_ranks": reduce_ranks})
    partitioned = ray is not None or partitions is not None or checkpoint is not None or resume is not None
    disk_at = None
    if disk is None and memory_limit and can_move_to_disk(ch, strategy, workers, exact, visitor, partitioned):
        from explorer.runtime.memory import rss

        held = rss()  # (a bound the process is past already stops the search at once: nothing to move)
        if memory_limit > held:
            disk, disk_at = default_disk_dir(), held + (memory_limit - held) // 2
    settings = Settings(strategy="partitioned" if partitioned else strategy, max_states=max_states,
                        max_depth=max_depth, time_limit=time_limit, check_deadlock=ch.deadlock,
                        check_livelock=ch.livelock, workers=workers, progress=progress, memory_limit=memory_limit,
                        partitions=partitions, ray=ray, checkpoint=checkpoint, resume=resume, exact=exact,
                        identity=model_identity(program, ties, symmetry, ch, reduce_ranks) if partitioned else None,
                        visitor=visitor, disk=disk, disk_at=disk_at)
    model = factory  # check() builds it: a model too large to build is its verdict bound (memory)
    built = exact or visitor is not None
    if built:  # its own state identities: kept for the point of no return; or the model a visitor reads
        settings = start(settings)  # building it is cut by the limits, as check() cuts it
        model = build(factory, settings)
    if isinstance(model, Result):
        result, model = model, None
    else:
        model = model[0] if built else model
        if hasattr(visitor, "bind"):
            visitor.bind(model)
        result = check(model, settings)
    if not partitioned:
        result.stats.exact = exact
    note_stuck(result, ch, notes)
    mark_no_return(program, result, ties=ties, symmetry=symmetry, checks=checks, reduce_ranks=reduce_ranks,
                   max_states=max_states,
                   time_limit=time_limit, memory_limit=memory_limit, graph_limit=graph_limit,
                   model=model if exact else None)  # exact identities are the search's own numbers
    return result


def checks_of(program: ir.Program, checks) -> Checks:
    """`checks`: property names (None: the instance's `check` lines), or a Checks."""
    return checks if isinstance(checks, Checks) else Checks.of_program(program, checks)


def can_move_to_disk(ch: Checks, strategy: str, workers: int, exact: bool, visitor, partitioned: bool) -> bool:
    """Whether a search can go on in the disk mode when memory runs short
    (past half the memory bound, at the start of a BFS level: the array
    engine's choice, explorer/strategies/arrays/disk.py): one worker's BFS
    over fingerprints, the edges of the livelock check and of `check
    eventually` on disk too, on the instance's own rows (no per-request
    SLO product)."""
    from serq.check.slo import needs_product

    return (strategy == "bfs" and workers == 1 and not exact and visitor is None and not partitioned
            and not needs_product(ch))


def default_disk_dir() -> str:
    """Where a search that moves to the disk mode by itself writes (a
    directory of its own there, removed at its end): $SERQ_DISK, else
    /var/tmp (on disk, where /tmp may be memory), else the system's
    temporary directory."""
    import os
    import tempfile

    d = os.environ.get("SERQ_DISK")
    if d:
        return d
    return "/var/tmp" if os.path.isdir("/var/tmp") and os.access("/var/tmp", os.W_OK) else tempfile.gettempdir()


def disk_hint(result, *, workers: int = 1) -> str | None:
    """What to say of a search the memory bound stopped, which the disk
    mode could take further (`serq explore` prints it on stderr)."""
    if result.verdict != "bound" or result.bound_reason != "memory" or "moved to the disk mode" in result.message:
        return None
    how = " in one worker" if workers > 1 else ""
    return (f"note: --disk DIR{how} keeps the search's trace and large levels on disk, and about 10 bytes a state "
            "in memory instead of about 20")


def note_stuck(result, ch: Checks, notes: list) -> None:
    """`completes` without `stuck`: a stuck session seen is a note on the
    verdict line, with the way to its trace; not a failure."""
    if ch.stuck or not ch.watch_stuck or result.verdict in ("bound", "interrupted", "failed"):
        return
    if notes:
        result.message += (f"; note: a session can be stuck ({notes[0]}), which `completes` does not "
                           "check: --check stuck gives its trace")


def model_identity(program: ir.Program, ties: str, symmetry: bool, checks: Checks, reduce_ranks: bool = False) -> dict:
    """What makes two explorations the same run (a checkpoint resumes only
    its own): the instance's IR, the ties, the symmetry, the checks and
    the serq version (another version may number states differently)."""
    import hashlib

    from serq import __version__

    d = {"instance": hashlib.sha256(program.to_json().encode()).hexdigest()[:24], "ties": ties,
         "symmetry": symmetry, "checks": checks.names(), "serq": __version__}
    if reduce_ranks:  # (not written otherwise: the checkpoints of unreduced runs keep their identity)
        d["reduce"] = "ranks"
    return d


def mark_no_return(program: ir.Program, result, *, ties: str = "all", symmetry: bool = True,
                   checks: list[str] | None = None, max_states: int | None = None,
                   time_limit: float | None = None, graph_limit: int = GRAPH_LIMIT, model=None,
                   memory_limit: int | None = None, reduce_ranks: bool = False) -> None:
    """Set `result.no_return` when the result has a trace (and the limit is not 0).
    `model`: the one the search used, when its state identities are its
    own (an `Exact` model). When the whole graph is past its bound, forward
    searches from the trace's states answer (explorer/graph/forward.py), within
    the same bound; the graph is not built when the search alone stored
    more states than the bound (a swarm's count may repeat states)."""
    if not result.trace or graph_limit <= 0 or (result.kind or "").startswith("eventually"):
        return  # (a starved session's lasso: completion is not its question)
    if model is None:
        model = make_model(program, ties=ties, symmetry=symmetry, checks=checks_of(program, checks),
                           reduce_ranks=reduce_ranks)
    model = Completion(model)  # a stuck session may still finish
    limit = graph_limit if max_states is None else min(graph_limit, max_states)
    try:
        st = result.stats
        if st is not None and st.strategy != "swarm" and st.distinct > limit:
            nr = NoReturn("unknown", reason="max_states")  # the graph would be cut: straight on forward
        else:
            nr = point_of_no_return(model, result, max_states=limit, time_limit=time_limit,
                                    memory_limit=memory_limit)
        if nr.status == "unknown" and nr.reason in CUT_FLAGS:
            flags = {"max_states": f"--graph-limit {graph_limit}" if limit == graph_limit else f"--max-states {limit}",
                     "time_limit": f"--time-limit {time_limit:g}" if time_limit is not None else "--time-limit",
                     "memory": "the memory bound"}
            fwd = forward_no_return(model, [s.state for s in result.trace], max_states=limit, time_limit=time_limit,
                                    memory_limit=memory_limit)
            fwd.cut_by = flags.get(fwd.reason if fwd.status == "unknown" else nr.reason, fwd.reason)
            result.no_return = fwd
    except KeyboardInterrupt:  # the counterexample is found: keep it, without its point of no return
        result.no_return = None


def completion_graph(model, *, max_states: int | None = None, time_limit: float | None = None,
                     memory_limit: int | None = None):
    """(graph, good): the stored graph of `model` as the point of no return
    reads it (`Completion`), and per node whether some run from it
    completes -- the analysis behind `point_of_no_return`, for every
    state (the marks of `serq ui`). A graph cut by a bound says so in
    `graph.complete`: a state it finds completable is completable, one it
    does not may not be doomed."""
    g = build_graph(Completion(model), max_states=max_states, time_limit=time_limit, memory_limit=memory_limit)
    return g, completable(g)


CUT_FLAGS = ("max_states", "time_limit", "memory")  # a graph cut by these (not by a signal) goes on forward


class Completion:
    """A model as the point of no return reads it: completion is every
    session finishing, so a stuck session is not a failure of it (it may
    still finish); faults, asserts and invariants are. Everything else is
    the model's own (its fingerprints are the search's)."""

    def __init__(self, model) -> None:
        self.model = model

    def invariants(self, state):
        return self.model.invariants(state, stuck=False)

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def replay_verdict(program: ir.Program, path: str, *, ties: str = "all", symmetry: bool = True,
                   checks: list[str] | None = None, reduce_ranks: bool = False):
    """(model, Result) of replaying `path` (such as 0/2/1), every state
    judged as the search judges it (`judge_path`): the first that fails
    ends the run, its verdict the run's, its trace cut there. Raises
    ReplayError for a path that does not apply."""
    from explorer.trace import replay

    model = make_model(program, ties=ties, symmetry=symmetry, checks=Checks.of_program(program, checks),
                       reduce_ranks=reduce_ranks)
    return model, judged(model, replay(model, path), path)


def judged(model, trace, path: str):
    """The Result of a replayed trace, judged state by state; the trace
    and its replay path end at the first state that fails."""
    from explorer.result import Result
    from explorer.trace import format_path

    end, verdict, kind, msg, start = judge_path(model, trace)
    last = len(trace) - 1
    if end < last:
        msg += (f" (at step {end} of the {last} replayed: a behaviour ends at its first failure, as in the "
                f"search; the {last - end} step(s) after it are not shown)")
        trace, path = trace[:end + 1], format_path(trace[:end + 1])
    r = Result(verdict=verdict, kind=kind, message=msg, trace=trace, replay_path=path,
               diagnosis=model.describe_deadlock(trace[-1].state) if verdict == "deadlock" else [],
               lasso_start=start)
    note_stuck(r, model.checks, model.notes)  # a stuck session on the path, not checked: noted as the search does
    return r


def judge_path(model, trace) -> tuple[int, str, str | None, str, int | None]:
    """(end, verdict, kind, message, lasso start) of a replayed trace,
    judged state by state as the search does: the first state that
    violates a property (an invariant, stuck, an assert, an error), or
    that closes a cycle without progress since its first visit when
    livelock is checked (the lasso `explore` prints), ends it with that
    verdict; else its last state is a deadlock, or it passes."""
    visits: dict[int, list[int]] = {}
    progress = [0]  # progress steps among steps 1..k
    for k, st in enumerate(trace):
        if k:
            progress.append(progress[-1] + bool(model.is_progress(trace[k - 1].state, st.action, st.state)))
        bad = model.invariants(st.state)
        if bad:
            return k, "violation", bad[0][0], bad[0][1], None
        if model.checks.livelock:
            for i in visits.get(st.fingerprint, ()):
                if progress[i] == progress[k]:
                    return (k, "livelock", None, f"replayed {k} step(s): the last {k - i} return to the state of "
                            f"step {i} without progress", i)
        visits.setdefault(st.fingerprint, []).append(k)
    if model.checks.eventually:  # a lasso (or an end) in which a session waits for ever
        from serq.check.liveness import judge_lasso

        found = judge_lasso(model, trace)
        if found is not None:
            end, kind, msg, start = found
            return end, "violation", kind, msg, start
    last = len(trace) - 1
    if not model.actions(trace[-1].state) and not model.is_done(trace[-1].state):
        return last, "deadlock", None, f"replayed {last} step(s) into a deadlock", None
    return last, "pass", None, f"replayed {last} step(s)", None
