"""`serq run` and `serq check`: flags -> `serq.sim.simulator.Simulator` (and, for
check, `serq.sim.checking.judge`) -> the report or the verdict's lines. The
exit codes are the rows of serq.cli.exits.EXITS listed for each command
in serq/cli/exits.py (and in `--help`)."""

from __future__ import annotations

import argparse
import sys

from serq.diagnostics import flag_error
from serq.cli.exits import add_parser
from serq.cli.flags import check_limits, memory_limit
from explorer.runtime.verdict import EXIT_BOUND, EXIT_INTERRUPTED, EXIT_PASS, EXIT_VIOLATION
from serq.defaults import DEFAULT_MAX_STEPS, EXPLORE_CHECKS

# the simulator (and numba's kernel under it) is imported when a command
# runs, not when the parser is built


def _duration(text: str) -> int:
    from serq.sim.arrivals import parse_duration

    try:
        t = _Ticks(parse_duration(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    t.text = text
    return t


class _Ticks(int):
    """A parsed duration that remembers its text, to quote it in a diagnostic."""
    text = ""


def _common(p) -> None:
    p.add_argument("instance", help="a .sq file or an .ir.json file")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws and of poisson arrivals (default 0)")
    p.add_argument("--horizon", type=_duration, default=None, metavar="TIME",
                   help="stop at this simulated time (e.g. 60s, 500ms; a bare number is seconds)")
    p.add_argument("--warmup", type=_duration, default=0, metavar="TIME",
                   help="leave sessions arriving before this time out of the latency statistics")
    p.add_argument("--no-coalesce", action="store_true", help="evaluate every iteration (no step coalescing)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                   help=f"stop after N actions (default {DEFAULT_MAX_STEPS})")
    p.add_argument("--time-limit", type=float, metavar="SEC",
                   help="stop (verdict bound, exit 13) after SEC seconds of wall-clock time")
    p.add_argument("--memory", metavar="SIZE",
                   help="stop (verdict bound, exit 13) when this process holds more than SIZE of memory: "
                        "512M, 4G (a unit is required); default: four fifths of the memory available at the start")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stdout is not a terminal)")


def register(sub) -> None:
    r = add_parser(sub, "run", help="simulate an instance and report latencies, queue waits, KV use")
    _common(r)
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--trace", action="store_true", help="print every action with its tick before the report")
    r.add_argument("--schedule", metavar="FILE",
                   help="also write every iteration (served, admitted, preempted, hits, finished, pool levels) "
                        "as JSON lines (docs/simulator.md)")
    r.add_argument("--html", metavar="FILE",
                   help="also write plots of the run (pool levels, queues, busy time, latencies) as a page")
    r.add_argument("--requests", metavar="FILE",
                   help="also write one row per request (arrival, admission, first token, finish, ttft, latency, "
                        "preemptions, recomputed and cached tokens) to FILE.csv, or FILE.jsonl as JSON lines "
                        "(docs/simulator.md)")
    r.set_defaults(func=cmd_run)
    c = add_parser(sub, "check", help="simulate and fail on what the instance's `check` lines select "
                                      "(as `serq explore`), asserts, conservation")
    _common(c)
    c.add_argument("--check", action="append", choices=EXPLORE_CHECKS, metavar="PROPERTY",
                   help="check this property instead of the instance's `check` lines, as `serq explore "
                        "--check` (deadlock, livelock, stuck, invariant, completes: the first, second and "
                        "fourth; or an SLO: ttft<=N, latency<=N, preemptions<=N, recomputed<=N, "
                        "queue(POOL)<=N, counted along the run simulated); repeatable")
    c.add_argument("--json", action="store_true", help="print the report as JSON as well")
    c.set_defaults(func=cmd_check)


def _simulate(args, *, check: bool, trace=None):
    from serq.check.model import Checks
    from serq.lang.load import load_path
    from serq.sim.simulator import SimConfig

    check_limits(args, "--max-steps", "--time-limit")
    check_requests(args)
    memory = memory_limit(args)  # a bad --memory, before any work
    if args.horizon is not None and args.horizon <= 0:
        # a run that simulates nothing finds nothing: never report it as ok
        raise flag_error("--horizon", getattr(args.horizon, "text", str(args.horizon)), "E012",
                         "--horizon must be a positive time (a run up to time 0 simulates nothing)")
    loaded = load_path(args.instance, simulate=True)
    if check:
        from serq.lang.load import require_sessions

        require_sessions(loaded, args.instance, "check")  # an empty run checks nothing: never `ok`
    if loaded.warnings:
        from serq.diagnostics import render_all

        print(render_all(loaded.warnings, loaded.source), file=sys.stderr)
    args.warnings = loaded.warnings  # --json has them too
    checks = Checks.of_program(loaded.program, args.check) if check else None
    cfg = SimConfig(seed=args.seed, horizon=args.horizon, warmup=args.warmup, coalesce=not args.no_coalesce,
                    stop_on_violation=check, checks=checks, max_steps=args.max_steps, trace=trace,
                    time_limit=args.time_limit, memory_limit=memory)
    from explorer.runtime.limits import LimitReached

    try:
        return _setup_and_run(loaded, cfg, args)
    except MemoryError:  # the run itself stops cleanly at one (Simulator.run): this is its setup
        raise OutOfMemory(sum(line.count for line in loaded.program.workload)) from None
    except LimitReached as e:  # building the model of a workload of many sessions, cut by a limit
        raise BuildCut(e) from None


def _setup_and_run(loaded, cfg, args):
    from serq.sim.simulator import Simulator

    sim = Simulator(loaded.program, cfg)
    if getattr(args, "html", None):
        from serq.view.simplots import attach

        attach(sim)  # the report's statistics plus the series the plots need
    if getattr(args, "requests", None):
        return _with_requests(sim, cfg, args)
    return _scheduled(sim, cfg, args)


def check_requests(args) -> None:
    """`--requests FILE`: .csv or .jsonl, before any work."""
    from serq.sim.requests import check_path

    if getattr(args, "requests", None) and check_path(args.requests) is None:
        raise flag_error("--requests", args.requests, "E012", "--requests writes FILE.csv (CSV) or FILE.jsonl "
                         "(JSON lines): name the file with one of these suffixes")


def _with_requests(sim, cfg, args):
    """The run with its requests' rows written to --requests FILE (opened
    first: an unwritable path is E017 before the run; no file is left
    when the run fails)."""
    from explorer.runtime.outfile import Output
    from serq.sim.requests import attach, check_path, csv_text, header, jsonl_text

    out = Output(args.requests)
    log = attach(sim)
    try:
        r = _scheduled(sim, cfg, args)
        rows = log.rows
        out.write(csv_text(rows) if check_path(args.requests) == "csv" else
                  jsonl_text(rows, header(r, args.instance)))
    except BaseException:
        out.abort()
        raise
    out.commit()
    return r


def _scheduled(sim, cfg, args):
    if getattr(args, "schedule", None):
        from serq.sim.schedule import open_schedule

        writer = open_schedule(args.schedule, sim)
        ok = False
        try:
            r = _run(sim, cfg, args)
            ok = True
        finally:
            writer.close(ok)
        return r
    return _run(sim, cfg, args)


class OutOfMemory(Exception):
    """A MemoryError outside the run's loop (which stops cleanly at one):
    setting the run up (its sessions' rows) or finishing its report."""

    def __init__(self, sessions: int):
        super().__init__(f"out of memory before the run started or after it ended ({sessions} sessions at "
                         "the start): no report")


class BuildCut(OutOfMemory):
    """--time-limit or --memory reached while the model of a workload of
    many sessions was being built: nothing simulated."""

    def __init__(self, e):
        Exception.__init__(self, f"stopped at the {'time limit' if e.reason == 'time_limit' else 'memory limit'} "
                                 f"({f'{e.value:g} s' if e.reason == 'time_limit' else e.value}) while the model "
                                 "was being built: nothing simulated, no report")


def _stopped_line(args, result) -> str | None:
    """stderr's line for a run cut by a signal or a limit (None otherwise)."""
    from serq.durations import span_text, time_unit
    from serq.sim.simulator import INTERRUPTED, MEMORY_LIMIT, TIME_LIMIT

    now = span_text(result.now, time_unit(result.program))
    if result.stopped == INTERRUPTED:
        return (f"{args.instance}: interrupted by {result.signal} at {now} simulated; "
                "the report covers the run so far")
    if result.stopped in (TIME_LIMIT, MEMORY_LIMIT):
        return (f"{args.instance}: stopped at the {result.stopped} ({result.limit}) at {now} simulated; "
                "the report covers the run so far")
    return None


def _run(sim, cfg, args):
    if args.no_progress or not sys.stdout.isatty():
        return sim.run()
    return _with_progress(sim, cfg)


def _with_progress(sim, cfg):
    """A transient rich progress bar on stderr — simulated time against the
    horizon, or sessions ended against sessions — that appears only once a
    run is long (the simulator's first progress call, after 2000 actions)
    and is erased at the end."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    total = cfg.horizon if cfg.horizon else max(len(sim.arrivals), 1)
    bar = None
    task = None

    def progress(now, ended, sessions):
        nonlocal bar, task
        if bar is None:
            bar = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.description}"),
                           TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            bar.start()
            task = bar.add_task("", total=total)
        done = now if cfg.horizon else ended
        bar.update(task, completed=done, description=f"t = {now / 1e9:.3f} s, {ended}/{sessions} ended")

    cfg.progress = progress
    try:
        return sim.run()
    finally:
        if bar is not None:
            bar.stop()


def _console():
    from rich.console import Console

    tty = sys.stdout.isatty()
    # not a terminal: fixed width, no colour, so the bytes do not depend on the caller
    return Console(file=sys.stdout, width=None if tty else 140, no_color=not tty, highlight=False,
                   force_terminal=tty, soft_wrap=False)


def _print_report(result, args, console, check=None) -> None:
    from serq.sim.report import build_report, render, report_json, to_json

    report = build_report(result, instance=args.instance)
    if args.json:
        sys.stdout.write(to_json(report_json(report, warnings=getattr(args, "warnings", ()), check=check)))
    else:
        render(report, console)


def _write_plots(result, args) -> None:
    from serq.sim.report import build_report
    from serq.view import write_page
    from serq.view.simplots import sim_page

    write_page(args.html, sim_page(build_report(result, instance=args.instance), result.stats), "serq run")


def cmd_run(args) -> int:
    from serq.sim.simulator import FAULT, INTERRUPTED, MEMORY_LIMIT, TIME_LIMIT

    if args.html:
        from serq.view import check_target, need

        check_target(args.html, "serq run")  # before a long run, not after it
        need("plotly", "serq run --html")
    console = _console()
    trace = None
    if args.trace:
        from serq.sim.report import trace_line

        def trace(tick, what, events, model, state):
            print(trace_line(tick, what, events, model, state))  # plain: one line per action, never wrapped

    try:
        result = _simulate(args, check=False, trace=trace)
    except OutOfMemory as e:
        print(f"{args.instance}: {e}", file=sys.stderr)
        return EXIT_BOUND
    if args.html:
        _write_plots(result, args)
    _print_report(result, args, console)
    line = _stopped_line(args, result)
    if line is not None:
        print(line, file=sys.stderr)
    if result.stopped == INTERRUPTED:
        return EXIT_INTERRUPTED
    if result.stopped in (TIME_LIMIT, MEMORY_LIMIT):
        return EXIT_BOUND
    return EXIT_VIOLATION if result.stopped == FAULT else EXIT_PASS


def cmd_check(args) -> int:
    from serq.sim.checking import judge

    try:
        result = _simulate(args, check=True)
    except OutOfMemory as e:
        print(f"{args.instance}: {e}; not a pass", file=sys.stdout if not args.json else sys.stderr)
        return EXIT_BOUND
    j = judge(result, label=args.instance, seed=args.seed, max_steps=args.max_steps)
    if args.json:
        _print_report(result, args, _console(), check=j)
    print("\n".join(j.lines), file=sys.stdout if not args.json else sys.stderr)
    return j.exit_code
