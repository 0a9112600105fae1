"""`serq explore`: exhaustive exploration of a small finite instance."""

from __future__ import annotations

import json
import sys

from explorer.report import render_json, render_text
from explorer.trace import NondeterministicModel, ReplayError
from explorer.check import CheckpointError, PartitionError, RayUnavailable, WorkerLost
from explorer.runtime.verdict import EXIT_NONDETERMINISTIC, EXIT_WORKER_LOST
from serq.diagnostics import Diagnostic, SerqError, flag_error
from serq.cli.exits import add_parser
from serq.cli.flags import check_limits, memory_limit
from serq.check.model import ALL_CHECKS, Checks, SerqModel
from serq.check.explore import GRAPH_LIMIT, explore, mark_no_return, replay_verdict
from serq.lang.validate import validate


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
    e.add_argument("--ties", choices=("all", "seq"), default="all",
                   help="all: explore every order of elements tied on declared keys (default); "
                        "seq: break ties by the tie event as the simulator does")
    e.add_argument("--no-symmetry", action="store_true",
                   help="do not identify states that differ by a permutation of like sessions")
    e.add_argument("--check", action="append", choices=ALL_CHECKS + ("completes",), metavar="PROPERTY",
                   help="check this property instead of the instance's `check` lines "
                        "(deadlock, livelock, stuck, invariant, completes: the first, second and fourth); "
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
    e.set_defaults(func=cmd_explore)


def progress_display(args):
    """The live display on a terminal (stderr); None when piped or asked
    to be quiet. The final statistics line is printed either way."""
    from serq.view.progress import ExploreProgress, PlainProgress

    if args.quiet:
        return None
    if ExploreProgress.wanted() and not args.json:
        return ExploreProgress()
    return PlainProgress() if args.progress else None


def check_html_target(args) -> None:
    """Fail before a long search, not after it, when --html cannot be written."""
    if getattr(args, "html", None):
        from serq.view import check_target

        check_target(args.html, "serq explore")


def write_timeline(args, model, result) -> None:
    """`--html`: the timeline page; `model` a model, or a function making
    one (only when a page is written)."""
    if getattr(args, "html", None):
        model = model() if isinstance(model, type(lambda: None)) else model
        from serq.view import write_page
        from serq.view.timeline import timeline_page

        write_page(args.html, timeline_page(model, result, args.instance), "serq explore")


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
    from serq.cli.explore_flags import refuse_unhonoured

    refuse_unhonoured(args)


def cmd_explore(args) -> int:
    from serq.diagnostics import render_all
    from serq.lang.load import load_path, require_sessions

    check_flags(args)
    loaded = load_path(args.instance, explorer=True)
    require_sessions(loaded, args.instance, "explore")  # one state, nothing in it: never `pass`
    diags = loaded.warnings
    if args.theorem:
        # a join inside a finite hold is error E500 *and* the failed
        # hypothesis H5: reported, and the exploration still shows the
        # counterexample the hypothesis prevents
        diags = validate(loaded.program, theorem=True, explorer=True)
    if not args.replay and args.swarm is None:  # a search that stores every state: can it finish?
        from serq.check.estimate import size_warning

        diags = sorted(diags + size_warning(loaded.program, args, memory_limit(args)))
    if diags and not args.json:
        print(render_all(diags, loaded.source), file=sys.stderr)
    prog = loaded.program
    check_html_target(args)
    if args.theorem:
        return cmd_theorem(args, loaded)
    if args.replay:
        return _replay(args, prog)
    if args.worst is not None:
        return _worst(args, prog)
    display = progress_display(args)
    try:
        if args.swarm is not None:
            result = run_swarm(args, prog)
            mark_no_return(prog, result, ties=args.ties, symmetry=not args.no_symmetry, checks=args.check,
                           max_states=args.max_states, time_limit=args.time_limit, graph_limit=args.graph_limit,
                           memory_limit=memory_limit(args))
        else:
            result = explore(prog, strategy=args.strategy, max_states=args.max_states, max_depth=args.max_depth,
                             time_limit=args.time_limit, ties=args.ties, symmetry=not args.no_symmetry,
                             workers=args.workers, checks=args.check, progress=display,
                             graph_limit=args.graph_limit, memory_limit=memory_limit(args), exact=args.exact,
                             **cluster_kwargs(args))
    except WorkerLost as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_WORKER_LOST
    except (CheckpointError, PartitionError, ConnectionError, RayUnavailable) as e:
        raise cluster_error(e) from None
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    finally:
        if display is not None:
            display.close()
    write_timeline(args, lambda: SerqModel(prog, ties=args.ties, symmetry=not args.no_symmetry,
                                           checks=Checks.of_program(prog, args.check)), result)
    return print_result(result, args)


def _worst(args, prog) -> int:
    from serq.diagnostics import flag_error
    from serq.check.worst import MetricError, find_worst, render_json, render_text

    try:
        w = find_worst(prog, args.worst, ties=args.ties, symmetry=not args.no_symmetry,
                       checks=Checks.of_program(prog, args.check), max_states=args.max_states,
                       time_limit=args.time_limit, memory_limit=memory_limit(args))
    except MetricError as e:
        raise flag_error("--worst", args.worst, "E014", str(e), e.col, e.span) from None
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    if args.html:
        from serq.view import write_page
        from serq.view.timeline import worst_page

        write_page(args.html, worst_page(w, args.instance), "serq explore")
    if args.json:
        print(json.dumps(render_json(w), indent=1))
    else:
        sys.stdout.write(render_text(w))
    return w.exit_code


def print_result(result, args) -> int:
    timing = not args.no_timing
    if args.json:
        print(json.dumps(render_json(result, with_timing=timing), indent=1))
    else:
        sys.stdout.write(render_text(result, with_timing=timing))
    return result.exit_code


def _replay(args, prog) -> int:
    try:
        model, r = replay_verdict(prog, args.replay, ties=args.ties, symmetry=not args.no_symmetry,
                                  checks=args.check)
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    except ReplayError as e:
        raise SerqError([Diagnostic(0, 0, "E013", f"bad replay path `{args.replay}`: {e}", file="serq explore")]) from None
    if r.verdict != "pass":  # a counterexample: its point of no return, as the search's has
        mark_no_return(prog, r, max_states=args.max_states, time_limit=args.time_limit,
                       graph_limit=args.graph_limit, model=model, memory_limit=memory_limit(args))
    write_timeline(args, model, r)
    if args.json:
        print(json.dumps(render_json(r, with_timing=False, with_stats=False), indent=1))
    else:
        sys.stdout.write(render_text(r, with_timing=not args.no_timing, with_stats=False))
    return r.exit_code


def cmd_theorem(args, loaded) -> int:
    """`--theorem`: the hypotheses' table, then the exploration of `completes`."""
    from serq.check.theorem import check_theorem, table

    prog = loaded.program
    display = progress_display(args)
    try:
        hs, result, line, code = check_theorem(
            prog, strategy=args.strategy, max_states=args.max_states, max_depth=args.max_depth,
            time_limit=args.time_limit, ties=args.ties, symmetry=not args.no_symmetry,
            workers=args.workers, progress=display, memory_limit=memory_limit(args), exact=args.exact,
            graph_limit=args.graph_limit)
    finally:
        if display is not None:
            display.close()
    write_timeline(args, lambda: SerqModel(prog, ties=args.ties, symmetry=not args.no_symmetry,
                                           checks=Checks.of_program(prog, ["completes"])), result)
    timing = not args.no_timing
    if args.json:
        out = {"theorem": line, "exit_code": code,
               "hypotheses": [{"code": h.code, "name": h.name, "text": h.text, "holds": h.holds,
                               "witnesses": h.witnesses} for h in hs],
               "exploration": render_json(result, with_timing=timing)}
        print(json.dumps(out, indent=1))
    else:
        sys.stdout.write(line + "\n\n" + table(hs) + "\n" + render_text(result, with_timing=timing))
    return code


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
                        "violation or deadlock found; finding none is verdict inconclusive (exit 17), not a proof")
    e.add_argument("--seed", type=int, default=0, metavar="S", help="--swarm: search i uses seed S+i (default 0)")


def check_cluster_flags(args) -> None:
    for flag, attr in (("--partitions", "partitions"), ("--swarm", "swarm")):
        v = getattr(args, attr)
        if v is not None and v < 1:
            raise flag_error(flag, str(v), "E012", f"{flag} must be at least 1, got {v}")
    given = [(f, v) for f, v in (("--swarm", args.swarm), ("--ray", args.ray), ("--partitions", args.partitions),
                                 ("--checkpoint", args.checkpoint), ("--resume", args.resume)) if v is not None]
    others = [f for f, on in (("--worst", args.worst is not None), ("--theorem", args.theorem),
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


def cluster_error(e: Exception) -> SerqError:
    """A checkpoint that does not fit (E021), a cluster that cannot be
    reached or a model the partitions cannot run (E022): input errors."""
    if isinstance(e, RayUnavailable):
        return SerqError([Diagnostic(0, 0, "E020", f"--ray needs the Python package `ray` ({e}); install serq "
                                     "with the `ray` extra: pip install 'serq[ray]'", file="serq explore")])
    if isinstance(e, CheckpointError):
        return SerqError([Diagnostic(0, 0, "E021", str(e), file="serq explore")])
    if isinstance(e, ConnectionError):
        return SerqError([Diagnostic(0, 0, "E022", f"cannot reach the Ray cluster: {e}", file="serq explore")])
    return SerqError([Diagnostic(0, 0, "E022", f"cannot explore by partitions: {e}; run without --ray, "
                                 "--partitions, --checkpoint and --resume", file="serq explore")])


def run_swarm(args, prog):
    from explorer.check import check
    from explorer.model import ModelFactory
    from explorer.settings import Settings

    ch = Checks.of_program(prog, args.check)
    factory = ModelFactory(SerqModel, (prog,), {"ties": args.ties, "symmetry": not args.no_symmetry, "checks": ch})
    return check(factory, Settings(strategy="swarm", searches=args.swarm, seed=args.seed, max_depth=args.max_depth,
                                   max_states=args.max_states, time_limit=args.time_limit, check_deadlock=ch.deadlock,
                                   ray=args.ray, memory_limit=memory_limit(args)))
