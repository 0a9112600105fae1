"""The per-request rules that `--worst` (serq/check/worst.py, `Counter`)
and the SLO checks (serq/check/slo.py, `Counts`) both count by, written
once: when a request starts and ends, what an iteration is, and how the
tokens a session computes again after a preemption are found.

A request starts when its session arrives, leaves a `turn` (its user's
reply) or is spawned, and ends at the session's next `turn` or `end`
(for a first-token metric: at its first token). An iteration is a step
with an `iterate` event (one that faults has none: it did no work)."""

from __future__ import annotations

from serq.semantics.events import first_token

STARTS = ("arrive", "turn", "spawn")


def session_of(e) -> int:
    """The session an event is about (a spawn: the child it starts)."""
    return e.child if e.kind == "spawn" else e.sid


def request_starts(events) -> list[int]:
    """The sessions whose request starts in a step."""
    return [session_of(e) for e in events if e.kind in STARTS]


def ends_request(e, first: bool) -> bool:
    """Whether `e` ends its session's request; `first`: the metric stops
    at the first token (ttft)."""
    return e.kind in ("at_turn", "end") or (first and first_token(e))


def iteration(events):
    """The step's `iterate` event, or None (no iteration was done)."""
    return next((e for e in events if e.kind == "iterate"), None)


class Recompute:
    """Recomputation along one step's events, per session: (position, high
    water) of the tokens its growing runs computed in the current hold. A
    preemption drops the position (the high water stays); a re-admission
    starts it at the units reused from the cache; a token served at or
    below the high water is computed again. A hold released normally, a
    `turn` or the end clears both."""

    def __init__(self):
        self.hits: dict[int, int] = {}
        self.preempted: set[int] = set()

    def after(self, e, pos: int, hw: int) -> tuple[int, int, int]:
        """(position, high water, tokens computed again) of e's session
        after event e."""
        t = e.kind
        if t == "hit":
            self.hits[e.sid] = self.hits.get(e.sid, 0) + e.units
        elif t == "admit":
            return self.hits.get(e.sid, 0), hw, 0
        elif t == "serve" and e.pool is not None:
            return pos + e.n, max(hw, pos + e.n), max(0, min(pos + e.n, hw) - pos)
        elif t == "preempt":
            self.preempted.add(e.sid)
            return 0, hw, 0
        elif t in ("release", "at_turn", "end") and e.sid not in self.preempted:
            return 0, 0, 0
        return pos, hw, 0
