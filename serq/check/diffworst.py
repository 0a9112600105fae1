"""`serq diff --worst METRIC`: the environment on which one variant's metric
exceeds the other's by the most.

Each variant counts the metric as `serq explore --worst` does (the same
`Counter`: its phases and what each step adds), along its own side of a
joint path, per *subject*: a request (ttft, latency and their -time
forms: a session's k-th request in one variant is its k-th in the other),
a session (preemptions, recomputed: its total over the behaviour), the
run (iterations, time: its total), or the states (queue, peak: the
largest over the behaviour). A request's value is final when its count
stops (its first token, its end); the other subjects' when the variant's
behaviour ends (every session done, a deadlock, a violation). Each value
is compared with the same subject's value in the other variant as soon as
both are final, and the joint state keeps the largest difference so far
in each direction with its subject: the worst case is the largest over the
reachable joint states, and its witness the shortest path to the first
joint state that has it. Behaviours that never end (a livelock) compare
only the requests that end.

The counts are part of the joint state, so the product is finite only
when each variant's own worst case is bounded: each variant's worst case
is computed first (serq.check.worst.find_worst), and when one is
unbounded the difference is too (the other variant, following the same
environment, stays within its bound), and the joint search is not run.
"""

from __future__ import annotations

from dataclasses import dataclass

from serq.check.diffmatch import take_or_queue
from serq.check.worst import WHOLE_RUN, Counter, parse_metric

_TERMINAL = ("done", "deadlock", "stopped", "violation")


class Accounts:
    """The metric's accumulators in a joint state:
    ((per variant: (phases, open counts, ended)), unmatched values, best)
    where open counts are ((subject, count), ...), unmatched values
    ((subject, variant, (value, ...)), ...) and best per direction
    (difference, subject, value in a, value in b) or None."""

    def __init__(self, sides, metric_text: str):
        self.metric = parse_metric(metric_text, sides[0].program)[0]
        # a pool is named: each variant's own index of it
        self.counters = tuple(Counter(self.metric, side.m, parse_metric(metric_text, side.program)[1])
                              for side in sides)

    def initial(self, dm, st):
        per = tuple((c.initial(st.s[x]), (), False) for x, c in enumerate(self.counters))
        acc = (per, (), (None, None))
        return self._state_values(st, acc)

    def _state_values(self, st, acc):
        """A state metric: each variant's largest value so far."""
        if self.metric.kind != "state":
            return acc
        per = list(acc[0])
        for x, c in enumerate(self.counters):
            phases, open_, ended = per[x]
            if ended:
                continue
            v = c.value(st.s[x])[0]
            old = dict(open_).get("states", 0)
            per[x] = (phases, (("states", max(v, old)),), ended)
        return (tuple(per), acc[1], acc[2])

    def advance(self, dm, st, nxt, pair):
        per, pending, best = list(st.acc[0]), {n: (x, v) for n, x, v in st.acc[1]}, list(st.acc[2])
        closed: list[list] = [[], []]
        for x, c in enumerate(self.counters):
            phases, open_, ended = per[x]
            if pair[x] is None or ended:
                continue
            act, rs, events = pair[x].action, pair[x].state, pair[x].events
            names = nxt.names[x]
            counts = dict(open_)
            if self.metric.kind == "path":
                for t, w, *restart in c.weights((None, phases), act, rs, events):
                    key = "run" if t == WHOLE_RUN else names[t]
                    if restart and restart[0]:
                        counts[key] = 0
                    if w:
                        counts[key] = counts.get(key, 0) + w
            new_phases = c.advance(phases, act, rs, events)
            if self.metric.per_request:  # a request whose count stopped: its value is final
                for sid, p in enumerate(phases):
                    if p == 1 and new_phases[sid] == 0:
                        closed[x].append((names[sid], counts.pop(names[sid], 0)))
            per[x] = (new_phases, tuple(sorted(counts.items())), ended)
        acc = self._state_values(nxt, (tuple(per), (), tuple(best)))
        per = list(acc[0])
        status = dm.status(nxt)
        for x in (0, 1):
            phases, open_, ended = per[x]
            if ended or status[x] not in _TERMINAL:
                continue
            counts = dict(open_)
            if self.metric.per_request:
                subjects = [s for s in counts]
            elif self.metric.per_session:
                subjects = list(nxt.names[x])
            else:
                subjects = ["run" if self.metric.kind == "path" else "states"]
            closed[x].extend((s, counts.get(s, 0)) for s in subjects)
            per[x] = (phases, (), True)
        for x in (0, 1):
            for subject, value in closed[x]:
                taken = take_or_queue(pending, x, subject, value)
                if taken is None:
                    continue
                other = taken[0]
                va, vb = (value, other) if x == 0 else (other, value)
                for d, diff in ((0, va - vb), (1, vb - va)):
                    if best[d] is None or diff > best[d][0]:
                        best[d] = (diff, subject, va, vb)
        return (tuple(per), tuple(sorted((n, x, v) for n, (x, v) in pending.items())), tuple(best))


@dataclass
class WorstDiff:
    metric: object
    alone: tuple  # each variant's own worst case (serq.check.worst.Worst)
    found: tuple  # per direction (0: a above b, 1: b above a): (difference, subject, va, vb, trace) or None
    states: int
    complete: bool
    bound_reason: str | None
