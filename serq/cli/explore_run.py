"""`serq explore`, the command: flags -> `serq.check.explore` (the search,
the point of no return), `serq.check.worst`, `serq.check.theorem` -> the
result's words, JSON or page. Its flags are serq/cli/explore.py."""

from __future__ import annotations

import sys

from explorer.report import render_text
from explorer.trace import NondeterministicModel, ReplayError
from explorer.check import CheckpointError, PartitionError, RayUnavailable, WorkerLost
from explorer.runtime.verdict import EXIT_NONDETERMINISTIC, EXIT_WORKER_LOST
from serq.diagnostics import Diagnostic, SerqError
from serq.cli.explore import check_flags, cluster_kwargs
from serq.cli.explore_flags import refuse_disk_checks
from serq.cli.flags import memory_limit
from serq.check.model import Checks, SerqModel
from serq.check.explore import disk_hint, explore, mark_no_return, replay_verdict
from serq.check.slo import make_model, needs_product
from serq.lang.validate import validate


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
    if diags:  # with --json too: the JSON has them as data, stderr in words
        print(render_all(diags, loaded.source), file=sys.stderr)
    args.warnings = [d for d in diags if not d.is_error]
    prog = loaded.program
    check_html_target(args)
    if args.theorem:
        return cmd_theorem(args, loaded)
    checks = Checks.of_program(prog, args.check)
    refuse_for_slo(args, checks)  # a bad `--check ttft<=x` is E012 here
    refuse_for_sometimes(args, prog, checks)
    refuse_for_liveness(args, prog, checks)
    refuse_disk_checks(args, checks)
    warn_unreduced(args, prog)
    if args.replay:
        return _replay(args, prog)
    if args.worst is not None:
        return _worst(args, prog)
    if args.probability or args.expected is not None:
        from serq.cli.prob import cmd_prob

        return cmd_prob(args, prog)
    display = progress_display(args)
    visitor = coverage_visitor(args)
    try:
        if args.swarm is not None:
            result = run_swarm(args, prog)
            mark_no_return(prog, result, ties=args.ties, symmetry=not args.no_symmetry, checks=args.check,
                           reduce_ranks=reduce_ranks(args), max_states=args.max_states, time_limit=args.time_limit, graph_limit=args.graph_limit,
                           memory_limit=memory_limit(args))
        else:
            result = explore(prog, strategy=args.strategy, max_states=args.max_states, max_depth=args.max_depth,
                             time_limit=args.time_limit, ties=args.ties, symmetry=not args.no_symmetry,
                             workers=args.workers, checks=args.check, progress=display,
                             graph_limit=args.graph_limit, memory_limit=memory_limit(args), exact=args.exact,
                             visitor=visitor, reduce_ranks=reduce_ranks(args), disk=getattr(args, "disk", None),
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
    make = lambda: make_model(prog, ties=args.ties, symmetry=not args.no_symmetry,  # noqa: E731
                              checks=Checks.of_program(prog, args.check), reduce_ranks=reduce_ranks(args))
    hint = None if args.swarm is not None or getattr(args, "disk", None) is not None or args.exact or cluster_kwargs(args) or \
        args.strategy != "bfs" else disk_hint(result, workers=args.workers)
    if hint:
        print(hint, file=sys.stderr)
    if visitor is not None:
        args.coverage_found = coverage_of(args, loaded, visitor, result)
    if checks.sometimes and result.verdict not in ("interrupted", "failed"):
        return _with_witnesses(args, prog, result, make)
    write_timeline(args, make, result)
    return print_result(result, args, make)


def warn_unreduced(args, prog) -> None:
    """`--reduce ranks` where an order key reads a sequence number reduces
    nothing: said, never a silent unreduced search."""
    from serq.semantics.ranks import seq_reader

    if reduce_ranks(args) and (reader := seq_reader(prog)) is not None:
        print(f"warning: --reduce ranks reduces nothing here: {reader} reads a sequence number (arrived, "
              "admitted, released or last), so every rank is kept", file=sys.stderr)


def reduce_ranks(args) -> bool:
    """`--reduce ranks`: the canonical form drops the ranks no order can read (serq/semantics/ranks.py)."""
    return getattr(args, "reduce", None) == "ranks"


def coverage_visitor(args):
    """`--coverage`: the visitor that counts the search's events (serq/check/coverage.py)."""
    if not getattr(args, "coverage", False):
        return None
    from serq.check.coverage import KINDS, CoverageVisitor

    kinds = args.witness or []
    return CoverageVisitor(witness=KINDS if "all" in kinds else tuple(dict.fromkeys(kinds)))


def coverage_of(args, loaded, visitor, result):
    """The search's Coverage, its witnesses rebuilt; the vacuity warnings
    (W520) printed located and added to the result's."""
    from serq.check.coverage import vacuity
    from serq.diagnostics import render_all

    cov = visitor.finish(result)
    found = vacuity(loaded.program, cov)
    if found:
        print(render_all(found, loaded.source), file=sys.stderr)
        args.warnings = args.warnings + found
    return cov

def _with_witnesses(args, prog, result, make) -> int:
    """The main search's result, then each `check sometimes` line's
    verdict and witness (serq/check/sometimes.py); the page shows the main
    search's trace, else the first witness."""
    from serq.check import sometimes

    display = progress_display(args)
    try:
        found = sometimes.search_witnesses(prog, ties=args.ties, symmetry=not args.no_symmetry,
                                           max_states=args.max_states, max_depth=args.max_depth,
                                           time_limit=args.time_limit, workers=args.workers,
                                           memory_limit=memory_limit(args), exact=args.exact, progress=display,
                                           reduce_ranks=reduce_ranks(args),
                                           **{k: v for k, v in cluster_kwargs(args).items()
                                              if k in ("ray", "partitions")})
    finally:
        if display is not None:
            display.close()
    page = result if result.trace else next((sometimes.page_result(w) for w in found if w.result.trace), result)
    write_timeline(args, make, page)
    timing = not args.no_timing
    if args.json:
        from serq.check.tracedata import explore_json
        from serq.formats import dumps

        d = explore_json(make, result, with_timing=timing, warnings=args.warnings)
        d["sometimes"] = sometimes.render_json(make, found, with_timing=timing)
        if getattr(args, "coverage_found", None) is not None:
            from serq.check.coverage import render_json as coverage_json

            d["coverage"] = coverage_json(args.coverage_found)
        sys.stdout.write(dumps(d))
    else:
        sys.stdout.write(render_text(result, with_timing=timing) + sometimes.render_text(found, with_timing=timing))
        if getattr(args, "coverage_found", None) is not None:
            from serq.check.coverage import render_text as coverage_text

            sys.stdout.write(coverage_text(args.coverage_found))
    return sometimes.exit_code(result, found)


def refuse_for_sometimes(args, prog, checks) -> None:
    """`--check sometimes` on an instance without a `sometimes` line, or
    `sometimes` lines with `--swarm` (no shortest witness, no `never`) or
    a checkpoint (one search's, not the witness searches'): E012, never
    silently unchecked."""
    from serq.diagnostics import flag_error

    if args.check and "sometimes" in args.check and not checks.sometimes:
        raise flag_error("--check", "sometimes", "E012", "the instance has no `check sometimes` line to select")
    if not checks.sometimes or args.worst is not None or args.replay:
        return
    flag = "--swarm" if args.swarm is not None else "--checkpoint" if args.checkpoint else \
        "--resume" if args.resume else None
    if flag is not None:
        raise flag_error(flag, flag, "E012", f"a `check sometimes` line is searched breadth-first for its shortest "
                         f"witness, which {flag} does not do; drop {flag}, or select the other properties with "
                         "--check")


def refuse_for_slo(args, checks) -> None:
    """A per-request SLO check is explored on serq's model with counters
    (serq/check/slo.py), a model without rows: the engines that need rows
    cannot run it (E012)."""
    if not needs_product(checks) or args.worst is not None:
        return
    from serq.cli.explore import cluster_kwargs
    from serq.diagnostics import flag_error

    flag = "--swarm" if args.swarm is not None else next(
        (f"--{k}" for k, v in cluster_kwargs(args).items() if v is not None and v is not False), None)
    if flag is not None:
        raise flag_error(flag, flag, "E012", f"a per-request SLO check ({checks.slo[0].text}) is explored over serq's "
                         f"model with the requests' counters, a model without rows, which {flag} cannot run; drop "
                         f"{flag} (--workers N explores it in parallel)")


def refuse_for_liveness(args, prog, checks) -> None:
    """`check eventually` is looked for on the whole graph by one process
    (explorer/graph/fair.py): several workers, partitions and swarms are
    refused (E012), and so is a per-request SLO check beside it (its
    product has no rows and its own states); an instance with more
    sessions than the check follows is refused (E601)."""
    if not checks.eventually or args.worst is not None:
        return
    from serq.check.liveness import size_error
    from serq.check.slo import needs_product
    from serq.diagnostics import flag_error

    ev = checks.eventually[0]
    flag = "--swarm" if args.swarm is not None else "--workers" if args.workers > 1 else next(
        (f"--{k}" for k, v in cluster_kwargs(args).items() if v is not None and v is not False), None)
    if flag is not None:
        raise flag_error(flag, flag, "E012", f"`check {ev.text}` is looked for on the whole state graph by one "
                         f"process, which {flag} does not give; drop {flag}")
    if needs_product(checks):
        raise flag_error("--check", checks.slo[0].text, "E012", f"`check {ev.text}` and a per-request SLO check "
                         f"({checks.slo[0].text}) are explored apart: select one of them (--check)")
    why = size_error(prog, checks)
    if why:
        at = next((c.at for c in prog.checks if c.kind == "eventually" and c.at), None)
        raise SerqError([Diagnostic(at[0] if at else 0, at[1] if at else 0, "E601", why,
                                    file=prog.source if at else "--check")])


def _worst(args, prog) -> int:
    from serq.diagnostics import flag_error
    from serq.check.worst import MetricError, find_worst, render_json, render_text

    try:
        w = find_worst(prog, args.worst, ties=args.ties, symmetry=not args.no_symmetry,
                       checks=Checks.of_program(prog, args.check), max_states=args.max_states,
                       time_limit=args.time_limit, memory_limit=memory_limit(args))
    except MetricError as e:
        raise flag_error("--worst", args.worst, "E014", str(e), e.col, e.span, e.notes) from None
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    if args.html:
        from serq.view import write_page
        from serq.view.timeline import worst_page

        write_page(args.html, worst_page(w, args.instance), "serq explore")
    if args.json:
        from serq.formats import dumps

        sys.stdout.write(dumps(render_json(w, warnings=args.warnings)))
    else:
        sys.stdout.write(render_text(w))
    return w.exit_code


def print_result(result, args, model) -> int:
    """The result in words or (`--json`) as data; `model`: a function
    making the model that reads the trace (called only for --json)."""
    timing = not args.no_timing
    if args.json:
        from serq.check.tracedata import explore_json
        from serq.formats import dumps

        d = explore_json(model, result, with_timing=timing, warnings=args.warnings)
        if getattr(args, "coverage_found", None) is not None:
            from serq.check.coverage import render_json

            d["coverage"] = render_json(args.coverage_found)
        sys.stdout.write(dumps(d))
    else:
        sys.stdout.write(render_text(result, with_timing=timing))
        if getattr(args, "coverage_found", None) is not None:
            from serq.check.coverage import render_text as coverage_text

            sys.stdout.write(coverage_text(args.coverage_found))
    return result.exit_code


def _replay(args, prog) -> int:
    try:
        model, r = replay_verdict(prog, args.replay, ties=args.ties, symmetry=not args.no_symmetry,
                                  checks=args.check, reduce_ranks=reduce_ranks(args))
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    except ReplayError as e:
        raise SerqError([Diagnostic(0, 0, "E013", f"bad replay path `{args.replay}`: {e}", file="serq explore")]) from None
    if r.trace and any(c.kind == "sometimes" for c in prog.checks):  # a witness replayed says so
        from serq.check.sometimes import replay_note

        r.message += replay_note(prog, model, r.trace[-1].state)
    if r.verdict != "pass":  # a counterexample: its point of no return, as the search's has
        mark_no_return(prog, r, max_states=args.max_states, time_limit=args.time_limit,
                       graph_limit=args.graph_limit, model=model, memory_limit=memory_limit(args))
    write_timeline(args, model, r)
    if args.json:
        from serq.check.tracedata import explore_json
        from serq.formats import dumps

        sys.stdout.write(dumps(explore_json(model, r, with_timing=False, with_stats=False, warnings=args.warnings)))
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
    make = lambda: SerqModel(prog, ties=args.ties, symmetry=not args.no_symmetry,  # noqa: E731
                             checks=Checks.of_program(prog, ["completes"]))
    write_timeline(args, make, result)
    timing = not args.no_timing
    if args.json:
        from serq.check.tracedata import explore_json
        from serq.formats import THEOREM, dumps, stamp, warnings_data

        out = stamp(THEOREM, {
            "theorem": line, "exit_code": code,
            "hypotheses": [{"code": h.code, "name": h.name, "text": h.text, "holds": h.holds,
                            "witnesses": h.witnesses} for h in hs],
            "warnings": warnings_data(args.warnings),
            "exploration": explore_json(make, result, with_timing=timing)})
        sys.stdout.write(dumps(out))
    else:
        sys.stdout.write(line + "\n\n" + table(hs) + "\n" + render_text(result, with_timing=timing))
    return code


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
    factory = ModelFactory(SerqModel, (prog,), {"ties": args.ties, "symmetry": not args.no_symmetry, "checks": ch,
                                                "reduce_ranks": reduce_ranks(args)})
    return check(factory, Settings(strategy="swarm", searches=args.swarm, seed=args.seed, max_depth=args.max_depth,
                                   max_states=args.max_states, time_limit=args.time_limit, check_deadlock=ch.deadlock,
                                   check_livelock=ch.livelock, ray=args.ray, memory_limit=memory_limit(args)))

