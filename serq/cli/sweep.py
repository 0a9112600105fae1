"""`serq sweep`: flags -> `serq.check.sweep.sweep` -> the table."""

from __future__ import annotations

import sys
from pathlib import Path

from serq.diagnostics import Diagnostic, SerqError, flag_error
from serq.defaults import EXPLORE_CHECKS
from serq.cli.exits import add_parser
from serq.cli.flags import check_limits


def register(sub) -> None:
    s = add_parser(
        sub, "sweep", help="explore an instance for every value of one to three constants and find the boundary",
        description="Explore the instance once per value of a `const` (a capacity, a block size, a "
                    "workload count, a budget ...), print the verdict per value, the boundary between "
                    "passing and failing values, and the counterexample just on the failing side of it. "
                    "With two or three --vary, one cell per combination: a grid of verdicts (and worst "
                    "cases), the boundary in each row, the Pareto frontier, and a check that the verdict "
                    "is monotone. Cells run in parallel over the machine's cores.")
    s.add_argument("instance", help="a .sq file (the constants of an .ir.json are folded)")
    s.add_argument("--vary", required=True, action="append", metavar="NAME=LO..HI",
                   help="a constant and its integer range, both ends included; repeat for a second and a "
                        "third constant (rows, columns, one grid per value of the third)")
    s.add_argument("--bisect", action="store_true",
                   help="evaluate O(log n) values by bisection (exact only if the verdict is monotone) "
                        "instead of every value; with two or three constants, each row along the second")
    s.add_argument("--worst", action="append", metavar="METRIC",
                   help="also the worst case of METRIC at every cell, as serq explore --worst computes it "
                        "(ttft, latency, ttft-time, latency-time, preemptions, recomputed, iterations, time, "
                        "queue[:POOL], peak[:POOL]); repeatable")
    s.add_argument("--require", action="append", metavar="COND",
                   help="what a cell must show to pass: METRIC<=N or METRIC<N (its worst case; computed "
                        "at every cell), verdict=pass|livelock or verdict!=deadlock; repeatable (all must "
                        "hold; without a verdict clause, verdict=pass; `pass` is short for verdict=pass)")
    s.add_argument("--any", action="store_true",
                   help="exit 0 when some value evaluated passes (meets --require), 12 when every one fails, "
                        "13 when none passes but some is undecided; without --any: exit 0 when every value "
                        "passes, 12 when one fails, 13 when none fails but some is undecided")
    s.add_argument("--html", metavar="FILE", help="also write the sweep as a heat map page")
    s.add_argument("--workers", type=int, metavar="N", help="processes (default: one per core)")
    s.add_argument("--max-states", type=int, metavar="N", help="per value: stop after N distinct states")
    s.add_argument("--max-depth", type=int, metavar="N", help="per value: do not go deeper than N steps")
    s.add_argument("--time-limit", type=float, metavar="SEC", help="per value: stop after SEC seconds")
    s.add_argument("--ties", choices=("all", "seq"), default="all", help="as for serq explore")
    s.add_argument("--no-symmetry", action="store_true", help="as for serq explore")
    s.add_argument("--check", action="append", choices=EXPLORE_CHECKS, metavar="PROPERTY",
                   help="as for serq explore; repeatable")
    s.add_argument("--json", action="store_true", help="print the sweep as JSON")
    s.add_argument("--no-timing", action="store_true", help="omit times (byte-stable output)")
    s.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from serq.check.sweep import exit_code, sweep
    from serq.check.sweepreport import render_json, render_text

    path = Path(args.instance)
    if path.name.endswith(".json"):
        raise SerqError([Diagnostic(0, 0, "E016", "serq sweep needs the .sq source: an .ir.json has its "
                                    "constants folded into the program", file=str(path))])
    check_limits(args, "--max-states", "--max-depth", "--time-limit", "--workers")
    if args.max_depth is not None and (args.worst or args.require):
        by = "--worst" if args.worst else "--require"
        raise flag_error("--max-depth", str(args.max_depth), "E012", f"{by} computes a worst case over whole "
                         "behaviours, cut only by --max-states and --time-limit; drop --max-depth")
    if args.html:
        from serq.view import check_target

        check_target(args.html, "serq sweep")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}",
                                    file=str(path))]) from None
    note_sometimes(text, str(path))
    sw = sweep(text, str(path), args.vary, bisect=args.bisect, workers=args.workers,
               max_states=args.max_states, max_depth=args.max_depth, time_limit=args.time_limit,
               ties=args.ties, symmetry=not args.no_symmetry, checks=args.check, worst=args.worst,
               require=args.require)
    sw.quantifier = "some" if args.any else "every"
    if args.html:
        from serq.view import write_page
        from serq.view.heatmap import sweep_page

        write_page(args.html, sweep_page(sw, args.instance), "serq sweep")
    timing = not args.no_timing
    if args.json:
        from serq.formats import dumps

        sys.stdout.write(dumps(render_json(sw, with_timing=timing)))
    else:
        sys.stdout.write(render_text(sw, with_timing=timing))
    return exit_code(sw)


def note_sometimes(text: str, file: str) -> None:
    """A `check sometimes` line is `serq explore`'s (a search of its own
    per line): a sweep judges each value by the other properties, and says
    so on stderr rather than leave the line silently unchecked."""
    from serq.lang.load import compile_source

    try:
        prog, _ = compile_source(text, file)
    except SerqError:
        return  # the sweep reports the error itself
    lines = [c.at[0] for c in prog.checks if c.kind == "sometimes" and c.at]
    if lines:
        print(f"{file}: note: `check sometimes` (line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))}) is not "
              "searched by serq sweep, which judges each value by the other properties; serq explore searches it",
              file=sys.stderr)
