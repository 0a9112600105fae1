"""`serq explore`: exhaustive exploration of a small finite instance.

Its flags and their checks; the command itself is serq/cli/explore_run.py,
imported only when it runs (the parser is built by every command and
`--help`, which load no engine)."""

from __future__ import annotations

from serq.cli.exits import add_parser
from serq.cli.flags import check_limits, later, memory_limit
from serq.defaults import COVERAGE_KINDS, GRAPH_LIMIT, SEARCH_CHECKS
from serq.diagnostics import Diagnostic, SerqError, flag_error


def register(sub) -> None:
    e = add_parser(sub, "explore", help="explore every interleaving of a small instance",
                       description="Explore every arrival order, tie and drawn value of a small finite "
                                   "instance; report deadlocks, livelocks, stuck sessions and violated "
                                   "invariants with the shortest counterexample and its point of no return "
                                   "(the step after which no continuation completes); with --worst, the "
                                   "worst case of a metric over every behaviour.")
    e.add_argument("instance", help="a .sq file or an .ir.json file")
    e.add_argument("--strategy", choices=("bfs", "dfs"), default="bfs",
                   help="bfs (default) finds shortest counterexamples")
    e.add_argument("--max-states", type=int, metavar="N", help="stop after N distinct states")
    e.add_argument("--max-depth", type=int, metavar="N", help="do not go deeper than N steps")
    e.add_argument("--time-limit", type=float, metavar="SEC", help="stop after SEC seconds of wall-clock time")
    e.add_argument("--memory", metavar="SIZE",
                   help="stop (verdict bound) when this process and its workers hold more than SIZE of "
                        "memory: 512M, 4G (a unit is required); default: four fifths of the memory "
                        "available at the start")
    e.add_argument("--disk", metavar="DIR",
                   help="keep the search's trace (each state's fingerprint and parent) and its large BFS levels "
                        "in files under DIR (removed at the end), and only the fingerprints in memory: about 10 "
                        "bytes a state instead of 20, for runs past the memory; the same states, verdicts and "
                        "shortest counterexamples; the edges of the livelock check and of `check eventually` on disk too; "
                        "one worker")
    e.add_argument("--ties", choices=("all", "seq"), default="all",
                   help="all: explore every order of elements tied on declared keys (default); "
                        "seq: break ties by the tie event as the simulator does")
    e.add_argument("--no-symmetry", action="store_true",
                   help="do not identify states that differ by a permutation of like sessions")
    e.add_argument("--reduce", choices=("ranks",), metavar="ranks",
                   help="ranks: identify states that differ only in arrival and admission ranks that no order "
                        "can read any more (an exact reduction; docs/explorer.md, \"Reducing ranks\"); "
                        "a counterexample is replayed with the same flag")
    e.add_argument("--check", action="append", choices=SEARCH_CHECKS, metavar="PROPERTY",
                   help="check this property instead of the instance's `check` lines "
                        "(deadlock, livelock, stuck, invariant, completes: the first, second and fourth; "
                        "sometimes: the instance's `check sometimes` lines; or an SLO: ttft<=N, latency<=N, preemptions<=N, recomputed<=N, queue(POOL)<=N); "
                        "repeatable")
    e.add_argument("--workers", type=int, default=1, metavar="N", help="worker threads: each expands chunks of a level, and up to 8 of "
                        "them (a power of two) look up the successors whose fingerprints fall to them, with one "
                        "worker's verdict, counts and trace; with --partitions K, each owns partitions of the "
                        "state table (default 1)")
    e.add_argument("--exact", action="store_true",
                   help="identify states by their whole canonical row instead of its 64-bit fingerprint, so "
                        "that no fingerprint collision can hide a state (one process, slower, more memory: "
                        "for small runs)")
    e.add_argument("--graph-limit", type=int, default=GRAPH_LIMIT, metavar="N",
                   help="states the point-of-no-return analysis of a counterexample may store (the whole "
                        "graph) or visit (past it, forward searches from the trace's states) "
                        f"(default {GRAPH_LIMIT}; 0 skips it)")
    e.add_argument("--worst", metavar="METRIC",
                   help="the worst case of METRIC over every behaviour, with its witness trace: "
                        "ttft, latency (iterations from a request's arrival to its first token, to its end), "
                        "ttft-time, latency-time (the same weighted by the stages' cost), preemptions, "
                        "recomputed (per session), iterations, time (a whole run), queue[:POOL], peak[:POOL] "
                        "(the largest in one state); docs/explorer.md")
    e.add_argument("--coverage", action="store_true",
                   help="after the verdict, how many explored transitions had each kind of event (admission, "
                        "admission-blocked, preemption-prefill, preemption-decode, self-preemption, cache-hit, "
                        "eviction, requeue, spawn, join ...); warns (W520) on a pass that never preempted or "
                        "evicted where a pool could; one process")
    e.add_argument("--witness", action="append", choices=COVERAGE_KINDS + ("all",), metavar="KIND",
                   help="with --coverage (implied): a shortest trace whose last step has an event of KIND "
                        "(or every kind: all); repeatable")
    e.add_argument("--probability", action="append", metavar="EVENT",
                   help="the probability of EVENT under the declared draws (`~ geometric(0.3)`...), for the best "
                        "and the worst scheduler of arrivals, iterations and ties: stuck, deadlock, violation (a "
                        "failed check, the per-request SLOs included), or METRIC>=N with a metric of --worst (preemptions>=2), or A|B (either); repeatable; "
                        "docs/explorer.md")
    e.add_argument("--expected", metavar="METRIC",
                   help="the expected value of a path metric of --worst (ttft, latency, preemptions, ...) under "
                        "the declared draws, for the best and the worst scheduler, with its worst case; on a graph "
                        "with cycles each answer is a proven interval (interval iteration)")
    e.add_argument("--replay", metavar="PATH", help="replay a path such as 0/2/1 and print its trace")
    e.add_argument("--json", action="store_true", help="print the result as JSON")
    e.add_argument("--html", metavar="FILE",
                   help="also write the counterexample (or the replayed run) as a timeline page")
    e.add_argument("--no-timing", action="store_true", help="omit times from the stats line (byte-stable output)")
    e.add_argument("--theorem", action="store_true",
                   help="check the completion theorem's hypotheses first, then explore")
    add_cluster_flags(e)
    e.add_argument("-q", "--quiet", action="store_true", help="no live progress display on the terminal")
    e.add_argument("--progress", action="store_true",
                   help="when stderr is not a terminal, print a progress line to it about once a second")
    e.set_defaults(func=later("serq.cli.explore_run", "cmd_explore"))


def check_flags(args) -> None:
    """Every flag value and combination, before any work: a located
    E012/E013 (exit 2) for the first that is wrong."""
    check_limits(args, "--max-states", "--max-depth", "--time-limit", "--workers", "--graph-limit")
    memory_limit(args)  # a bad --memory
    if args.replay is not None and not args.replay.strip():
        raise flag_error("--replay", args.replay, "E013", "empty replay path: expected action indices such as 0/2/1")
    check_cluster_flags(args)
    if args.workers > 1 and args.strategy == "dfs":
        raise flag_error("--workers", str(args.workers), "E012", "--workers > 1 explores by BFS only; "
                         "drop --strategy dfs or --workers")
    if args.exact and args.workers > 1:
        raise flag_error("--workers", str(args.workers), "E012", "--exact explores in one process; "
                         "drop --workers or --exact")
    if args.exact and cluster_kwargs(args):
        raise flag_error("--exact", "--exact", "E012", "--exact explores in one process; drop --ray, "
                         "--partitions, --checkpoint and --resume, or --exact")
    if args.worst is not None and (args.theorem or args.replay):
        other = "--theorem" if args.theorem else "--replay"
        raise SerqError([Diagnostic(0, 0, "E012", f"--worst cannot be combined with {other}", file="serq explore")])
    if args.witness:
        args.coverage = True
    if args.coverage and (args.workers > 1 or cluster_kwargs(args)):
        flag = "--workers" if args.workers > 1 else next(f"--{k}" for k, v in cluster_kwargs(args).items() if v)
        value = str(args.workers) if args.workers > 1 else str(cluster_kwargs(args)[flag[2:]])
        raise flag_error(flag, value, "E012", f"--coverage counts the transitions of the one-process search; "
                         f"drop {flag} or --coverage")
    prob = "--probability" if args.probability else "--expected" if args.expected is not None else None
    if prob and (args.worst is not None or args.theorem or args.replay):
        other = "--worst" if args.worst is not None else "--theorem" if args.theorem else "--replay"
        raise SerqError([Diagnostic(0, 0, "E012", f"{prob} cannot be combined with {other} (each builds its own "
                                    f"graph; --expected METRIC reports the worst case too)", file="serq explore")])
    if prob and args.coverage:
        flag = "--witness" if args.witness else "--coverage"
        raise SerqError([Diagnostic(0, 0, "E012", f"{prob} cannot be combined with {flag}: {prob} builds its own "
                                    "graph and explores nothing to count; run them apart", file="serq explore")])
    if prob and args.html:
        raise flag_error("--html", args.html, "E012", f"--html cannot be honoured with {prob}: there is no trace "
                         "to draw (the answers are numbers); drop --html")
    from serq.cli.explore_flags import refuse_disk, refuse_unhonoured

    refuse_unhonoured(args)
    refuse_disk(args)


# ---------------------------------------------------------------- past one machine


def add_cluster_flags(e) -> None:
    """Partitions on a Ray cluster, checkpoints, swarm search (docs/explorer.md)."""
    e.add_argument("--ray", metavar="ADDRESS",
                   help="explore on a Ray cluster: auto (the cluster started on this machine with `ray start`), "
                        "HOST:PORT, or local (a private one for this run); needs the `ray` extra")
    e.add_argument("--partitions", type=int, metavar="K",
                   help="hash partitions of the state table (Ray actors with --ray; default 1, or 2 with --ray)")
    e.add_argument("--checkpoint", metavar="DIR",
                   help="write the tables and the frontier to DIR at every BFS level, to --resume after a crash")
    e.add_argument("--resume", metavar="DIR",
                   help="continue the run checkpointed in DIR (same instance and flags) to its result")
    e.add_argument("--swarm", type=int, metavar="N",
                   help="N randomized depth-first searches in parallel (processes, or Ray with --ray); the first "
                        "violation, deadlock or non-progress cycle found; a search that explores the whole state "
                        "space gives the exhaustive verdict; else finding none is verdict inconclusive (exit 17), "
                        "not a proof")
    e.add_argument("--seed", type=int, default=0, metavar="S", help="--swarm: search i uses seed S+i (default 0)")


def check_cluster_flags(args) -> None:
    for flag, attr in (("--partitions", "partitions"), ("--swarm", "swarm")):
        v = getattr(args, attr)
        if v is not None and v < 1:
            raise flag_error(flag, str(v), "E012", f"{flag} must be at least 1, got {v}")
    given = [(f, v) for f, v in (("--swarm", args.swarm), ("--ray", args.ray), ("--partitions", args.partitions),
                                 ("--checkpoint", args.checkpoint), ("--resume", args.resume)) if v is not None]
    others = [f for f, on in (("--worst", args.worst is not None), ("--theorem", args.theorem),
                              ("--probability", bool(args.probability)), ("--expected", args.expected is not None),
                              ("--replay", args.replay is not None)) if on]
    if given and others:
        flag, value = given[0]
        raise flag_error(flag, str(value), "E012", f"{flag} cannot be combined with {others[0]}")
    if args.ray is not None:
        need_ray()
    if args.swarm is not None:
        for f, on in (("--partitions", args.partitions), ("--checkpoint", args.checkpoint), ("--resume", args.resume)):
            if on is not None:
                raise flag_error(f, str(on), "E012", f"{f} is for the exhaustive search; a swarm keeps no tables")
        if args.workers > 1:
            raise flag_error("--workers", str(args.workers), "E012", "--swarm runs its own processes; drop --workers")
        return
    if given and args.strategy == "dfs":
        raise flag_error("--strategy", "dfs", "E012", "partitions and checkpoints explore by BFS only; "
                         "drop --strategy dfs")
    if args.workers > 1 and args.ray is not None:
        raise flag_error("--workers", str(args.workers), "E012",
                         "--workers cannot be combined with --ray (use --partitions K: one Ray actor each)")


def need_ray() -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise SerqError([Diagnostic(0, 0, "E020", "--ray needs the Python package `ray`; install serq with the "
                                    "`ray` extra: pip install 'serq[ray]'", file="serq explore")])


def cluster_kwargs(args) -> dict:
    if args.ray is None and args.partitions is None and not args.checkpoint and not args.resume:
        return {}
    partitions = args.partitions
    if partitions is None and args.ray is not None and not args.resume:
        partitions = 2
    return {"ray": args.ray, "partitions": partitions, "checkpoint": args.checkpoint, "resume": args.resume}

