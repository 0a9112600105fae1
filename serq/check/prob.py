"""`serq explore --probability EVENT` and `--expected METRIC`: the
declared distributions on the explorer's state graph.

The explorer gives a `draw` every value of its domain; here each value also
has the probability its distribution gives it, so the state graph is a
Markov decision process: a drawn value is chance, everything else -- which
session arrives next, which stage iterates, a `turn`'s reply, a tie on
declared keys, an unkeyed `choose` -- is the scheduler's choice. For each
question the best scheduler (the minimum) and the worst (the maximum) are
computed (serq/check/probsolve.py).

The graph is the one `--worst` builds (serq/check/worst.py): the same
model, the same metric definitions (its `Counter`: phases, weights), the
same `build_graph` call (violations do not end a behaviour). Each edge
keeps, beside the metric's weights, what its step asked the oracle: the
step is run once more with an oracle that answers as the edge did and
notes each question -- a tie (choice), an unkeyed `choose` (choice) or a
`draw` (chance, with its distribution as evaluated: `Engine._answer`).
An event `METRIC>=N` carries, per subject, the metric's count so far
(capped at N) beside the state: a product, so the graph stays finite.

Truncation: a draw's distribution is restricted to its domain and
renormalized over it -- the simulator samples in proportion to the same
weights (`semantics/lower.weights`) -- and the mass the domain leaves out
(geometric's tail, poisson's) is reported for every draw, never silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from serq import ir
from serq.check.product import OverSerq
from serq.check.requests import ends_request, request_starts
from serq.check.worst import METRICS, Counter, Metric, MetricError, parse_metric
from serq.diagnostics import did_you_mean
from serq.semantics.events import first_token as is_first_token

EVENT_WORDS = {
    "stuck": "a session is stuck (waits for an admission that can never come)",
    "deadlock": "the instance deadlocks (no step is possible and some session has not ended)",
    "violation": "a violation (a fault, a failed assert or invariant, a failed SLO check, a stuck session when "
                 "checked)",
}


@dataclass(frozen=True)
class Event:
    text: str
    kind: str  # "stuck" | "deadlock" | "violation" | "metric"
    what: str
    metric: Metric | None = None
    pool: int | None = None
    at_least: int = 0  # kind "metric": the count that makes the event
    parts: tuple = ()  # kind "any": the events of `A|B`, one of which happens


def flat(events) -> list[Event]:
    """The events, those of an `A|B` event in its place."""
    return [p for e in events for p in (e.parts if e.kind == "any" else (e,))]


def parse_event(text: str, program: ir.Program) -> Event:
    """`stuck`, `deadlock`, `violation`, or `METRIC>=N` / `METRIC>N` with a
    metric of `--worst` (`preemptions>=2`: some session is preempted twice);
    `A|B`: A or B (`stuck|deadlock`)."""
    if "|" in text:
        parts, at = [], 0
        for piece in text.split("|"):
            try:
                parts.append(parse_event(piece, program))
            except MetricError as e:
                raise MetricError(str(e), e.col + at, e.span, e.notes) from None
            at += len(piece) + 1
        return Event(text.strip(), "any", " or ".join(p.what for p in parts), parts=tuple(parts))
    t = text.strip()
    if t in EVENT_WORDS:
        return Event(t, t, EVENT_WORDS[t])
    for op in (">=", ">"):
        if op in t:
            name, _, num = t.partition(op)
            break
    else:
        raise MetricError(f"unknown event `{t}`; the events are stuck, deadlock, violation and METRIC>=N "
                          f"(a metric of --worst reaching N: preemptions>=2)", 1, max(len(text), 1),
                          did_you_mean(t, EVENT_WORDS))
    m, pool = parse_metric(name.strip(), program)
    at = len(name) + len(op) + 1
    try:
        n = int(num.strip())
    except ValueError:
        raise MetricError(f"`{num.strip()}` is not a whole number: expected {name.strip()}{op}N", at) from None
    n += op == ">"
    if n < 1:
        raise MetricError(f"`{t}` holds from the start (every count is at least 0): give N >= 1", at)
    if m.kind == "state":
        who = "some pool's"
    else:
        who = "some request's" if m.per_request else "some session's" if m.per_session else "the run's"
    what = f"{who} `{m.name}` reaches {n} ({m.what})"
    return Event(t, "metric", what, m, pool, n)


def parse_expected(text: str, program: ir.Program) -> Metric:
    m, _pool = parse_metric(text, program)
    if m.kind != "path":
        raise MetricError(f"`{m.name}` is the largest value of one state, not a sum along a run: its expectation "
                          f"is not computed; the metrics --expected takes are "
                          f"{', '.join(n for n, x in METRICS.items() if x.kind == 'path')}", 1, len(m.name))
    return m


# ---------------------------------------------------------------- what a step asks


@dataclass
class Draw:
    """One draw statement with one set of evaluated parameters."""

    program: str
    line: int
    attr: str
    dist: str  # "uniform(...)" as written with its parameters' values
    values: tuple
    probs: tuple  # normalized over the domain, one per value
    kept: Any  # the mass of the distribution the domain holds (None: defined on the domain)


class Recorder:
    """An oracle that answers as an edge did and notes each question:
    ("n", arity) a choice (a tie, an unkeyed `choose`), ("p", probs) a draw."""

    def __init__(self, owner: "Tagger", answers):
        self.owner, self.answers, self.tags, self.asked = owner, list(answers), [], None

    def _next(self) -> int:
        i = len(self.tags) - 1
        return self.answers[i] if i < len(self.answers) else 0

    def tie(self, n):
        self.tags.append(("n", n))
        return self._next()

    def query(self, st, values, params, listed):
        self.asked = (st, values, params, listed)

    def draw(self, values, ws):
        st, vals, params, listed = self.asked
        if st.kind == "draw":
            self.tags.append(("p", self.owner.probs(st, vals, params, listed)))
        else:
            self.tags.append(("n", len(values)))
        return self._next()


def exact(x):
    """A parameter as an exact rational: a real as the decimal it prints as."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


class Tagger:
    """The questions of each step, and every draw met (for the report)."""

    def __init__(self, m):
        self.m = m
        self.draws: dict[tuple, Draw] = {}
        self.rational = True  # every probability met is an exact rational
        self._state, self._known = None, {}  # the state whose edges come, and its questions by prefix

    def tags(self, state, action) -> tuple:
        """The questions an action's step asked, in order. The question
        after a prefix of answers is the same for every edge that shares
        the prefix: an edge whose prefixes are known from a sibling (the
        same state, the same base) is not run again."""
        ch = tuple(action[2])
        if not ch:
            return ()
        if state is not self._state:
            self._state, self._known = state, {}
        base = (action[0], action[1])
        known = self._known
        got = [known.get((base, ch[:i])) for i in range(len(ch))]
        if None in got:
            rec = Recorder(self, ch)
            self.m.engine.run(state, base, rec, 0, False, False)
            got = rec.tags
            for i, t in enumerate(got):
                known[(base, ch[:i])] = t
        return tuple(got)

    def probs(self, st, values, params, listed) -> tuple:
        from serq.semantics.lower import DIST, weights

        key = (id(st), tuple(values), tuple(params))
        d = self.draws.get(key)
        if d is None:
            name = st.dist.name if st.dist is not None else "uniform"
            ws = weights(DIST[name], params, values, listed, num=exact)
            if any(isinstance(w, float) for w in ws):
                self.rational = False
                ws = [float(w) for w in ws]
            total = sum(ws)
            if not total > 0:  # validated (E409) when constant; a computed parameter may still do it
                raise MetricError(f"the draw of `{st.attr}` at line {st.at[0] if st.at else 0} has no probability "
                                  f"mass on its domain {list(values)} ({name}{tuple(params)!r})")
            probs = tuple(w / total for w in ws)
            kept = total if name in ("geometric", "poisson") else None
            prog = next(sp.name for sp in self.m.program.sessions if any(s is st for s in sp.states))
            shown = name + (f"({', '.join(_num(p) for p in params)})" if params else "")
            d = Draw(prog, st.at[0] if st.at else 0, st.attr, shown, tuple(values), probs, kept)
            self.draws[key] = d
        return d.probs


def _num(x) -> str:
    return repr(x) if isinstance(x, float) else str(x)


# ---------------------------------------------------------------- the model


def subjects(metric: Metric, phases, events) -> int:
    """What a per-request or per-session mean divides by, counted in one
    step: for `ttft`, the requests that have their first token (the
    simulator's TTFT statistics are over those); for `latency`, the requests
    that end (at a `turn` or `end`); per session, the sessions spawned (the
    workload's are added once). `phases`: the counter's, before the step."""
    if metric.per_request:
        started = set(request_starts(events))
        open_ = {sid for sid, p in enumerate(phases) if p == 1} | started
        if metric.name.startswith("ttft"):
            return len({e.sid for e in events if is_first_token(e) and e.sid in open_})
        return len({e.sid for e in events if ends_request(e, False) and e.sid in open_})
    if metric.per_session:
        return sum(1 for e in events if e.kind == "spawn")
    return 0


class Edge(NamedTuple):
    """What the graph keeps of an edge: its action's base and oracle answers,
    the questions they answered, the metric's weights, and the subjects
    (requests or sessions) the step starts."""

    base: tuple
    choices: tuple
    tags: tuple
    weights: tuple
    starts: int


class ProbState(NamedTuple):
    state: Any
    phases: Any  # the counter's (serq/check/worst.py)
    counts: Any  # per subject, the event's metric so far, capped (a `METRIC>=N` event), or ()
    slo: Any = ()  # the per-request SLO counters (serq/check/slo.py, `Counts`), OVER once one failed, or ()


OVER = "over"  # a per-request SLO check has failed on the way: the counters are dropped, the state stays a violation


class ProbModel(OverSerq):
    """The explorer's model protocol over a SerqModel, a Counter (or none)
    and the capped counts of a `METRIC>=N` event."""

    capabilities = frozenset({"canonical_bytes", "format_state"})  # declared: explorer/model.py

    def __init__(self, sm, counter: Counter | None, cap_counter: Counter | None = None, cap: int = 0,
                 slo=None):
        self.sm, self.counter, self.cap_counter, self.cap = sm, counter, cap_counter, cap
        self.slo = slo  # the per-request SLO counters (`Counts`) when `violation` is asked, or None
        self.tagger = Tagger(sm.m)

    def _phases(self, counter, state):
        return counter.initial(state) if counter is not None else ()

    def initial_states(self):
        out = []
        for s in self.sm.initial_states():
            slo = self.slo.initial(len(s.sessions)) if self.slo is not None else ()
            out.append(ProbState(s, (self._phases(self.counter, s), self._phases(self.cap_counter, s)), (), slo))
        return out

    def step(self, state, action):
        nxt, events = self.sm.m.step_events(state.state, action)
        if nxt is None:
            return None
        (ph, cph), counts = state.phases, state.counts
        nph = self.counter.advance(ph, action, nxt, events) if self.counter is not None else ()
        if self.cap:  # a path metric's `METRIC>=N`
            ws = self.cap_counter.weights((state.state, cph), action, nxt, events)
            counts = self._count(counts, ws)
            cph = self.cap_counter.advance(cph, action, nxt, events)
        slo = state.slo
        if self.slo is not None and slo != OVER:  # serq check's counters, by serq/check/slo.py's rules
            slo, over = self.slo.advance(slo, nxt, events)
            slo = OVER if over is not None else slo
        return ProbState(nxt, (nph, cph), counts, slo)

    def _count(self, counts, weights) -> tuple:
        """Each subject's count, capped at the event's N; a restart (a new
        request of the session) counts from 0 again. Kept as sorted pairs."""
        c = dict(counts)
        for t, w, *restart in weights:
            if restart and restart[0]:
                c.pop(t, None)
            if w and c.get(t, 0) < self.cap:
                c[t] = min(self.cap, c.get(t, 0) + w)
        return tuple(sorted(c.items()))

    def edge_info(self, state, action, nxt):
        _, events = self.sm.m.step_events(state.state, action)
        ws = self.counter.weights((state.state, state.phases[0]), action, nxt.state, events) \
            if self.counter is not None else ()
        starts = subjects(self.counter.metric, state.phases[0], events) if self.counter is not None else 0
        return Edge(action[:2], tuple(action[2]), self.tagger.tags(state.state, action), ws, starts)

    def node_info(self, state):
        from serq.semantics.rowstate import F_STUCK

        stuck = bool(self.sm.rows.pack(state.state).flags & F_STUCK)
        reached = max((n for _t, n in state.counts), default=0)
        value = self.cap_counter.value(state.state)[0] if self.cap_counter is not None \
            and self.cap_counter.metric.kind == "state" else 0
        return stuck, reached, value

    def invariants(self, state):
        out = self.sm.invariants(state.state)
        if not out and state.slo == OVER:
            return [("slo", "a per-request SLO check failed")]
        return out

    def canonical_bytes(self, state) -> bytes:
        key = self.sm.exact_key(state.state)
        return len(key).to_bytes(8, "little") + key + repr((state.phases, state.counts, state.slo)).encode()


# ---------------------------------------------------------------- the question


@dataclass
class Question:
    """The events and the expected metric of one exploration."""

    events: list[Event] = field(default_factory=list)
    expected: Metric | None = None

    def counters(self, m) -> tuple[Counter | None, Counter | None, int]:
        """(the expected metric's counter, the events' metric counter, the cap)."""
        thr = [e for e in flat(self.events) if e.kind == "metric"]
        metrics = {(e.metric.name, e.pool) for e in thr}
        if len(metrics) > 1:
            raise MetricError("the METRIC>=N events of one exploration count one metric (each carries its count "
                              "in the state); explore once per metric")
        cap_counter, cap = None, 0
        if thr:
            e = thr[0]
            cap_counter = Counter(e.metric, m, e.pool)
            cap = max(x.at_least for x in thr) if e.metric.kind == "path" else 0
        exp = Counter(self.expected, m, None) if self.expected is not None else None
        return exp, cap_counter, cap


def build(program: ir.Program, question: Question, *, ties: str = "all", max_states: int | None = None,
          time_limit: float | None = None, memory_limit: int | None = None):
    """(the ProbModel, its stored graph): the graph `--worst` builds, its
    edges with their questions, its nodes with (stuck, event count reached,
    state metric value)."""
    from dataclasses import replace

    from explorer.check import build_graph
    from explorer.runtime.limits import Limits, limits_on
    from explorer.runtime.memory import MemoryGuard
    from serq.check.model import Checks, SerqModel
    from serq.check.slo import Counts, needs_product

    checks = Checks.of_program(program)
    if not checks.positions:  # the stuck flag needs the positions
        checks = replace(checks, watch_stuck=True)
    sm = SerqModel(program, ties=ties, symmetry=False, checks=checks)
    exp, cap_counter, cap = question.counters(sm.m)
    slo = None
    if needs_product(checks) and any(e.kind == "violation" for e in flat(question.events)):
        slo = Counts(checks.slo, sm.m.progs)
    pm = ProbModel(sm, exp, cap_counter, cap, slo)
    with limits_on(sm, Limits(time_limit, MemoryGuard(memory_limit))):
        g = build_graph(pm, max_states=max_states, time_limit=time_limit, memory_limit=memory_limit,
                        expand_bad=True, edge_info=pm.edge_info, node_info=pm.node_info)
    return pm, g


def targets(g, event: Event) -> list[bool]:
    """The nodes where the event has happened."""
    if event.kind == "any":
        return [any(x) for x in zip(*(targets(g, p) for p in event.parts))]
    if event.kind == "stuck":
        return [v[0] for v in g.value]
    if event.kind == "deadlock":
        return [not out and not d for out, d in zip(g.succ, g.done)]
    if event.kind == "violation":
        return list(g.bad)
    if event.metric.kind == "state":
        return [v[2] >= event.at_least for v in g.value]
    return [v[1] >= event.at_least for v in g.value]
