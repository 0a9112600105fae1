"""Validating `check eventually GOAL [under weak|strong];` on the IR
(docs/language.md, "Liveness"): a known goal, each goal checked once."""

from __future__ import annotations

from serq import ir
from serq.diagnostics import Sink, did_you_mean
from serq.vocab import EVENTUALLY_GOALS


def eventually(checks, sink: Sink) -> None:
    """Errors: an unknown goal (E100, with a guess), a goal given twice
    (E403: two fairness assumptions for one goal would be a value given
    twice)."""
    seen: dict[str, ir.Check] = {}
    for c in checks:
        if c.kind != "eventually":
            continue
        goal = c.metric or ""
        if goal not in EVENTUALLY_GOALS:
            sink.error(c.at, "E100", f"unknown goal `{goal}` of `check eventually`; the goals are "
                       f"{', '.join(EVENTUALLY_GOALS)}", *did_you_mean(goal, list(EVENTUALLY_GOALS)),
                       span=len(goal) or 1)
            continue
        if goal in seen:
            first = seen[goal].at
            sink.error(c.at, "E403", f"`check eventually {goal}` is given twice (first at line "
                       f"{first[0] if first else '?'}): keep the fairness meant", span=len(goal))
            continue
        seen[goal] = c
