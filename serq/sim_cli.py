"""`serq run` and `serq check`: thin wrappers around `serq.sim.simulate`.

run:   simulate and print the report (rich tables, or `--json`). Exit 0,
       or 12 if the run stopped on a fault (a failed `assert`, an
       evaluation error, a broken conservation law).
check: simulate and judge. Exit 0 (pass), 12 (a stuck session, a failed
       `assert`, an `invariant` violation, a conservation violation or
       another fault), 10 (the run ended with sessions that can never move:
       a deadlock the simulation walked into), 13 (the step limit was hit
       before the run ended: no violation within the bound).
Both: 16 when SIGINT (Ctrl-C) or SIGTERM stopped the run (run: the report
of the run so far, `stopped: interrupted`; check: never ok).
Bad input exits 2 (serq.cli prints the diagnostics).
"""

from __future__ import annotations

import argparse
import sys

from serq.diagnostics import flag_error
from serq.exits import add_parser
from serq.flags import check_limits
from serq.sim import (DEFAULT_MAX_STEPS, FAULT, INTERRUPTED, STALLED, STEP_LIMIT, VIOLATION, SimConfig,
                      Simulator, parse_duration)

EXIT_PASS, EXIT_DEADLOCK, EXIT_VIOLATION, EXIT_BOUND, EXIT_INTERRUPTED = 0, 10, 12, 13, 16


def _duration(text: str) -> int:
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
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stdout is not a terminal)")


def register(sub) -> None:
    r = add_parser(sub, "run", help="simulate an instance and report latencies, queue waits, KV use")
    _common(r)
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--trace", action="store_true", help="print every action with its tick before the report")
    r.add_argument("--html", metavar="FILE",
                   help="also write plots of the run (pool levels, queues, busy time, latencies) as a page")
    r.set_defaults(func=cmd_run)
    c = add_parser(sub, "check", help="simulate and fail on stuck sessions, asserts, invariants, conservation")
    _common(c)
    c.add_argument("--json", action="store_true", help="print the report as JSON as well")
    c.set_defaults(func=cmd_check)


def _simulate(args, *, check: bool, trace=None):
    from serq.load import load_path

    check_limits(args, "--max-steps")
    if args.horizon is not None and args.horizon <= 0:
        # a run that simulates nothing finds nothing: never report it as ok
        raise flag_error("--horizon", getattr(args.horizon, "text", str(args.horizon)), "E012",
                         "--horizon must be a positive time (a run up to time 0 simulates nothing)")
    loaded = load_path(args.instance)
    if loaded.warnings:
        from serq.diagnostics import render_all

        print(render_all(loaded.warnings, loaded.source), file=sys.stderr)
    cfg = SimConfig(seed=args.seed, horizon=args.horizon, warmup=args.warmup, coalesce=not args.no_coalesce,
                    stop_on_violation=check, max_steps=args.max_steps, trace=trace)
    sim = Simulator(loaded.program, cfg)
    if getattr(args, "html", None):
        from serq.view.simplots import attach

        attach(sim)  # the report's statistics plus the series the plots need
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


def _print_report(result, args, console) -> None:
    from serq.report import build_report, render, to_json

    report = build_report(result, instance=args.instance)
    if args.json:
        sys.stdout.write(to_json(report))
    else:
        render(report, console)


def _write_plots(result, args) -> None:
    from serq.report import build_report
    from serq.view import write_page
    from serq.view.simplots import sim_page

    write_page(args.html, sim_page(build_report(result, instance=args.instance), result.stats), "serq run")


def cmd_run(args) -> int:
    if args.html:
        from serq.view import check_target, need

        check_target(args.html, "serq run")  # before a long run, not after it
        need("plotly", "serq run --html")
    console = _console()
    trace = None
    if args.trace:
        from serq.report import trace_line

        def trace(tick, what, events, model, state):
            print(trace_line(tick, what, events, model, state))  # plain: one line per action, never wrapped

    result = _simulate(args, check=False, trace=trace)
    if args.html:
        _write_plots(result, args)
    _print_report(result, args, console)
    if result.stopped == INTERRUPTED:
        print(f"{args.instance}: interrupted by {result.signal} at {result.now / 1e9:.6f} s simulated; "
              "the report covers the run so far", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_VIOLATION if result.stopped == FAULT else EXIT_PASS


def cmd_check(args) -> int:
    result = _simulate(args, check=True)
    console = _console()
    if args.json:
        _print_report(result, args, console)
    out = sys.stdout if not args.json else sys.stderr
    label = args.instance
    if result.stopped == FAULT:
        for t, kind, msg in result.faults:
            print(f"{label}: FAIL: {kind} at {t / 1e9:.6f} s: {msg}", file=out)
        return EXIT_VIOLATION
    if result.stopped == VIOLATION or result.violations_total:
        for t, kind, msg in result.violations:
            print(f"{label}: FAIL: {kind} at {t / 1e9:.6f} s: {msg}", file=out)
        if result.violations_total > len(result.violations):
            print(f"{label}: ... and {result.violations_total - len(result.violations)} more", file=out)
        return EXIT_VIOLATION
    if result.stopped == STALLED:
        print(f"{label}: FAIL: deadlock: the simulation ended at {result.now / 1e9:.6f} s with "
              f"{len(result.stalled)} session(s) that can never move:", file=out)
        for s in result.stalled:
            print(f"  {s}", file=out)
        return EXIT_DEADLOCK
    if result.stopped == INTERRUPTED:
        print(f"{label}: interrupted by {result.signal}: no violation in {result.now / 1e9:.6f} s simulated "
              "before it; not a pass", file=out)
        return EXIT_INTERRUPTED
    if result.stopped == STEP_LIMIT:
        print(f"{label}: no violation within the step limit ({args.max_steps} actions, "
              f"{result.now / 1e9:.6f} s simulated); not a pass", file=out)
        return EXIT_BOUND
    n = len(result.state[0])
    where = f"up to the horizon ({result.now / 1e9:.6f} s)" if result.stopped == "horizon" else \
        f"all {n} sessions ended at {result.now / 1e9:.6f} s"
    print(f"{label}: ok: no stuck session, failed assert, invariant or conservation violation; {where} "
          f"(seed {args.seed})", file=out)
    return EXIT_PASS
