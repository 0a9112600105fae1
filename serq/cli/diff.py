"""`serq diff a.sq b.sq`: flags -> `serq.check.diff.diff` -> the report."""

from __future__ import annotations

import json
import sys

from serq.defaults import ALL_CHECKS
from serq.cli.exits import add_parser
from serq.cli.flags import later


def register(sub) -> None:
    d = add_parser(
        sub, "diff", help="compare two variants of one instance over the same arrivals and drawn values",
        description="Explore two variants of one instance (lifo and fifo, a gate on and off, two watermarks, "
                    "chunk sizes, budgets ...) over the same environment: the same arrivals, users' replies "
                    "and drawn values, each variant's scheduler deciding the rest. Reports the shortest "
                    "behaviour on which one variant fails (deadlock, livelock, a violation) and the other "
                    "completes, and with --worst the behaviour on which one variant's metric exceeds the "
                    "other's by the most. The variants must have the same workload and the same draws, "
                    "unkeyed chooses and spawns in each program (E028 otherwise).")
    d.add_argument("a", help="the first variant: a .sq file or an .ir.json file")
    d.add_argument("b", help="the second variant")
    d.add_argument("--worst", metavar="METRIC",
                   help="also the largest difference of a metric between the variants, in each direction, "
                        "with its behaviour (the metrics of serq explore --worst: ttft, latency, ttft-time, "
                        "latency-time, preemptions, recomputed, iterations, time, queue[:POOL], peak[:POOL])")
    d.add_argument("--ties", choices=("seq", "all"), default="seq",
                   help="seq: each scheduler breaks ties by its tie event, as the simulator does (default: "
                        "each variant is then a function of the environment); all: every order of tied "
                        "elements, explored independently in each variant")
    d.add_argument("--check", action="append", choices=ALL_CHECKS + ("completes",), metavar="PROPERTY",
                   help="the properties a variant fails by, for both (default: each its own `check` lines); "
                        "repeatable")
    d.add_argument("--max-states", type=int, metavar="N", help="stop after N distinct joint states")
    d.add_argument("--time-limit", type=float, metavar="SEC", help="stop after SEC seconds (each search)")
    d.add_argument("--memory", metavar="SIZE", help="the memory bound, as for serq explore")
    d.add_argument("--json", action="store_true", help="print the comparison as JSON")
    d.add_argument("--html", metavar="FILE", help="also write both traces side by side as one page")
    d.set_defaults(func=later("serq.cli.diff", "cmd_diff"))


def cmd_diff(args) -> int:
    from serq.check.diff import diff, not_compared
    from serq.check.diffmatch import match
    from serq.check.diffreport import render_json, render_text
    from serq.check.worst import MetricError, parse_metric
    from serq.cli.flags import check_limits, memory_limit
    from serq.diagnostics import flag_error, render_all
    from serq.lang.load import load_path, require_sessions

    check_limits(args, "--max-states", "--time-limit")
    loaded = []
    for path in (args.a, args.b):
        one = load_path(path, explorer=True)
        require_sessions(one, path, "diff")
        one.warnings.extend(not_compared(one.program))
        if one.warnings and not args.json:
            print(render_all(one.warnings, one.source), file=sys.stderr)
        loaded.append(one)
    pa, pb = loaded[0].program, loaded[1].program
    match(pa, pb, args.a, args.b, loaded[1].source)
    if args.worst is not None:
        for p in (pa, pb):
            try:
                parse_metric(args.worst, p)
            except MetricError as e:
                raise flag_error("--worst", args.worst, "E014", str(e), e.col, e.span, e.notes) from None
    if args.html:
        from serq.view import check_target, need

        check_target(args.html, "serq diff")
        need("jinja2", "serq diff --html")
    r = diff(pa, pb, (args.a, args.b), ties=args.ties, checks=args.check, max_states=args.max_states,
             time_limit=args.time_limit, memory_limit=memory_limit(args), worst=args.worst)
    r.warnings = (tuple(loaded[0].warnings), tuple(loaded[1].warnings))  # in --json too
    if args.html:
        from serq.view import write_page
        from serq.view.diffpage import diff_page

        write_page(args.html, diff_page(r), "serq diff")
    if args.json:
        print(json.dumps(render_json(r), indent=1))
    else:
        sys.stdout.write(render_text(r))
    return r.exit_code
