"""`serq explore --probability EVENT` / `--expected METRIC`: flags ->
serq/check/probreport.py -> words or JSON (format serq-prob)."""

from __future__ import annotations

import sys

from serq.cli.flags import memory_limit
from serq.diagnostics import flag_error


def question(args, prog):
    """The events and the metric, each bad value a located E014."""
    from serq.check.prob import Question, flat, parse_event, parse_expected
    from serq.check.worst import MetricError

    q = Question()
    seen: dict[str, str] = {}
    for text in args.probability or ():
        try:
            ev = parse_event(text, prog)
        except MetricError as e:
            raise flag_error("--probability", text, "E014", str(e), e.col, e.span, e.notes) from None
        if ev.text in seen:
            raise flag_error("--probability", text, "E012", f"the event `{ev.text}` is given twice")
        seen[ev.text] = text
        q.events.append(ev)
    if args.expected is not None:
        try:
            q.expected = parse_expected(args.expected, prog)
        except MetricError as e:
            raise flag_error("--expected", args.expected, "E014", str(e), e.col, e.span, e.notes) from None
    thr = [e for e in flat(q.events) if e.kind == "metric"]
    if len({(e.metric.name, e.pool) for e in thr}) > 1:
        raise flag_error("--probability", thr[-1].text, "E014", "the METRIC>=N events of one exploration count "
                         "one metric (each carries its count in the state): explore once per metric")
    return q


def cmd_prob(args, prog) -> int:
    from explorer.runtime.verdict import EXIT_NONDETERMINISTIC
    from explorer.trace import NondeterministicModel
    from serq.check.probreport import analyse, render_json, render_text
    from serq.check.worst import MetricError

    q = question(args, prog)
    try:
        r = analyse(prog, q, ties=args.ties, max_states=args.max_states, time_limit=args.time_limit,
                    memory_limit=memory_limit(args))
    except MetricError as e:  # a metric that cannot be counted on this instance (a cost, a draw without mass)
        flag, value = ("--expected", args.expected) if args.expected is not None else \
            ("--probability", args.probability[0])
        raise flag_error(flag, value, "E014", str(e), e.col, e.span, e.notes) from None
    except NondeterministicModel as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NONDETERMINISTIC
    if args.json:
        from serq.formats import dumps

        sys.stdout.write(dumps(render_json(r, warnings=args.warnings)))
    else:
        sys.stdout.write(render_text(r))
    return r.exit_code
