"""`serq explore --worst METRIC`: the worst case of a metric over every
behaviour of an instance, with the trace that reaches it.

A *path metric* sums, along a path, what each step's events contribute --
per subject (a session, a request) or for the whole run -- and its worst
case is the longest path of the stored graph (explorer/graph/analysis.py), or
"unbounded" when a cycle adds to it. Whether a step counts for a session
may depend on what happened before (has this request had its first token
yet?): that memory is a small *phase* per session, carried next to the
model's state (a product), so the graph stays finite. A *state metric* is
a function of one state; its worst case is the largest over the reachable
states.

Per-session metrics explore without symmetry reduction: a session keeps
its id along every path, so its counts add up along a path of the graph.

Everything is read from the step's events (`Model.step_events`) and from
the state through the accessors below, the one place that knows the
state's layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from serq import ir
from serq.check.product import OverSerq
from serq.check.requests import STARTS, Recompute, ends_request, iteration, request_starts, session_of
from serq.diagnostics import did_you_mean
from serq.ir.fold import EvalError
from serq.semantics.model import ITERATE, Model

WHOLE_RUN = -1  # the track of a metric counted for the whole run


# ---------------------------------------------------------------- state accessors


def n_sessions(state) -> int:
    return len(state.sessions)


def queue_len(state, p: int) -> int:
    return len(state.pools[p].queue)


def allocated(state, p: int, cap: int) -> int:
    pool = state.pools[p]
    return cap - pool.free - sum(e.units for e in pool.cache)


# ---------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # "iterations" | "ticks" | "preemptions" | "tokens" | "sessions" | "units"
    what: str  # words for the report
    kind: str  # "path" | "state"
    per_session: bool = False

    @property
    def per_request(self) -> bool:
        return self.name in ("ttft", "ttft-time", "latency", "latency-time")


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("ttft", "iterations", "iterations from a request's arrival to its first token", "path", True),
    Metric("ttft-time", "ticks", "cost of the iterations from a request's arrival to its first token", "path", True),
    Metric("latency", "iterations", "iterations from a request's arrival to its end (`turn` or `end`)", "path", True),
    Metric("latency-time", "ticks", "cost of the iterations from a request's arrival to its end", "path", True),
    Metric("preemptions", "preemptions", "preemptions one session suffers", "path", True),
    Metric("recomputed", "tokens", "tokens one session computes again after a preemption", "path", True),
    Metric("iterations", "iterations", "iterations of a whole run", "path"),
    Metric("time", "ticks", "cost of the iterations of a whole run", "path"),
    Metric("queue", "sessions", "sessions waiting in one pool's queue", "state"),
    Metric("peak", "units", "units of a finite pool allocated at once", "state"),
)}


class MetricError(ValueError):
    """A metric name or pool that does not exist (bad input); `col` and
    `span` locate it in the flag's value."""

    def __init__(self, message: str, col: int = 1, span: int | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.col, self.span, self.notes = col, span, notes


def parse_metric(text: str, program: ir.Program) -> tuple[Metric, int | None]:
    """`NAME` or `NAME:POOL` (queue, peak) -> (metric, pool index or None)."""
    name, _, pool = text.partition(":")
    m = METRICS.get(name)
    if m is None:
        raise MetricError(f"unknown metric `{name}`; the metrics are {', '.join(METRICS)}", 1, max(len(name), 1),
                          did_you_mean(name, METRICS))
    if not pool:
        return m, None
    at = len(name) + 2
    if m.kind != "state":
        raise MetricError(f"metric `{name}` takes no pool (only queue and peak do)", at)
    names = [p.name for p in program.pools]
    if pool not in names:
        raise MetricError(f"unknown pool `{pool}`; the pools are {', '.join(names)}", at, None,
                          did_you_mean(pool, names))
    p = names.index(pool)
    if m.name == "peak" and program.pools[p].cap is None:
        raise MetricError(f"pool `{pool}` is infinite: its peak is not bounded by a capacity", at)
    return m, p


class Counter:
    """Phases and weights of one metric on one instance."""

    def __init__(self, metric: Metric, m: Model, pool: int | None):
        self.metric = metric
        self.pool = pool
        self.caps = m.caps
        self.model = m
        self.timed = metric.unit == "ticks"

    def cost(self, stage: int, shape: dict) -> int:
        """Ticks of one iteration: the simulator's own rule (`Model.cost`; the
        explorer has no clock: an instance it explores never reads `now`)."""
        try:
            return self.model.cost(stage, shape)
        except EvalError as e:  # the metric has no value: said, never summed past
            shp = ", ".join(f"{k}={v}" for k, v in shape.items())
            raise MetricError(f"`{self.metric.name}` counts time by stage `{self.model.stages[stage].name}`'s "
                              f"cost, which cannot be evaluated for an iteration of {shp}: {e}") from None

    # -- phases: one small tuple per session ---------------------------------
    def initial(self, state) -> tuple:
        if self.metric.per_request:
            return (0,) * n_sessions(state)
        if self.metric.name == "recomputed":
            return ((0, 0),) * n_sessions(state)
        return ()

    def advance(self, phases: tuple, action, nxt, events) -> tuple:
        """The phases after a step (sessions spawned in it start idle)."""
        if not phases and not self.initial(nxt):
            return phases
        name = self.metric.name
        ph = list(phases) + [((0, 0) if name == "recomputed" else 0)] * (n_sessions(nxt) - len(phases))
        if name == "recomputed":
            return self._redo(ph, events)[0]
        first = name.startswith("ttft")
        for e in events:
            if e.kind in STARTS:
                ph[session_of(e)] = 1
            elif ends_request(e, first):
                ph[e.sid] = 0  # the request ended (or had its first token): no later step counts for it
        return tuple(ph)

    # -- weights: ((track, w), ...) for one step ------------------------------
    def weights(self, state, action, nxt, events) -> tuple:
        base, phases = state
        name = self.metric.name
        if name in ("iterations", "time"):
            w = self._iter_weight(action, events) if action[0] == ITERATE else 0
            return ((WHOLE_RUN, w),) if w else ()
        if name == "preemptions":
            out: dict[int, int] = {}
            for e in events:
                if e.kind == "preempt":
                    out[e.sid] = out.get(e.sid, 0) + 1
            return tuple(sorted(out.items()))
        if name == "recomputed":
            ph = list(phases) + [(0, 0)] * (n_sessions(nxt) - len(phases))
            return tuple(sorted(self._redo(ph, events)[1].items()))
        # ttft / latency: every iteration counts for each request under way
        # (its phase, before the step, is 1); a request that starts in the
        # step restarts its session's count, so that two requests of one
        # session are never added up (explorer/graph/analysis.py, `longest`).
        # A request starts in an arrive or turn step (no iteration), or is
        # a session spawned in the step (no phase before it): a step never
        # both counts for a session and restarts it.
        out: list[tuple] = []
        w = self._iter_weight(action, events) if action[0] == ITERATE else 0
        if w:
            out.extend((sid, w) for sid, p in enumerate(phases) if p == 1)
        out.extend((sid, 0, True) for sid in request_starts(events))
        return tuple(out)

    @staticmethod
    def _redo(ph: list, events) -> tuple[tuple, dict]:
        """Recomputation, per session (serq/check/requests.py, `Recompute`):
        the phases after the step and the tokens each session computed again."""
        redo: dict[int, int] = {}
        rc = Recompute()
        for e in events:
            if e.kind in ("hit", "admit", "serve", "preempt", "release", "at_turn", "end"):
                pos, hw, again = rc.after(e, *ph[e.sid])
                ph[e.sid] = (pos, hw)
                if again:
                    redo[e.sid] = redo.get(e.sid, 0) + again
        return tuple(ph), redo

    def _iter_weight(self, action, events) -> int:
        """What an iteration step adds: 1, or its ticks; 0 for a step
        that faults (its events are the fault alone: no iteration was
        done, it has no shape to cost)."""
        e = iteration(events)
        if e is None:
            return 0
        return self.cost(e.stage, e.shape) if self.timed else 1

    def value(self, state) -> tuple[int, int]:
        """(state metric value, the pool that has it)."""
        pools = range(len(self.caps)) if self.pool is None else [self.pool]
        best = (0, pools[0] if len(pools) else -1)
        for p in pools:
            if self.metric.name == "queue":
                v = queue_len(state, p)
            elif self.caps[p] is None:
                continue
            else:
                v = allocated(state, p, self.caps[p])
            if v > best[0]:
                best = (v, p)
        return best


class MetricState(NamedTuple):
    """A state of the metric search: the serq state and the counter's phases."""

    state: Any
    phases: Any


class MetricModel(OverSerq):
    """The explorer's model protocol over a SerqModel and a Counter: a state
    is a MetricState, an action the serq model's action."""

    capabilities = frozenset({"canonical_bytes", "format_state"})  # declared: explorer/model.py

    def __init__(self, sm, counter: Counter):
        self.sm = sm
        self.counter = counter

    def initial_states(self):
        return [MetricState(s, self.counter.initial(s)) for s in self.sm.initial_states()]

    def step(self, state, action):
        nxt, events = self.sm.m.step_events(state.state, action)
        if nxt is None:
            return None
        return MetricState(nxt, self.counter.advance(state.phases, action, nxt, events))

    def edge_info(self, state, action, nxt):
        _, events = self.sm.m.step_events(state.state, action)
        return self.counter.weights(state, action, nxt.state, events)

    def node_info(self, state):
        return self.counter.value(state.state)

    def canonical_bytes(self, state) -> bytes:
        # the kernel's canonical row of the state (whole, its length first), then the phases
        key = self.sm.exact_key(state.state)
        return len(key).to_bytes(8, "little") + key + repr(state.phases).encode()


# ---------------------------------------------------------------- the search


@dataclass
class Worst:
    metric: Metric
    value: int | None  # None: unbounded
    subject: str  # who attains it: a session, a pool, or "the run"
    trace: list  # explorer Steps
    lasso_start: int | None
    counted: list[tuple[int, int]]  # (step, amount) where the witness's count grew
    states: int
    complete: bool
    bound_reason: str | None
    model: object = None  # the SerqModel the trace's states belong to (without the phases)
    request_from: int | None = None  # per-request metrics: the step the witness's request starts at

    @property
    def replay_path(self) -> str:
        from explorer.trace import format_path

        return format_path(self.trace)

    @property
    def exit_code(self) -> int:
        from explorer.runtime.verdict import EXIT_BOUND, EXIT_INTERRUPTED, EXIT_PASS

        if self.complete:
            return EXIT_PASS
        return EXIT_INTERRUPTED if self.bound_reason in ("SIGINT", "SIGTERM") else EXIT_BOUND


def find_worst(program: ir.Program, metric_text: str, *, ties: str = "all", symmetry: bool = True,
               checks=None, max_states: int | None = None, time_limit: float | None = None,
               memory_limit: int | None = None) -> Worst:
    """The worst case of a metric over every behaviour (violations do not
    end a behaviour here; a fault does: it has no successor). The limits
    cut the state graph: the value found is then a lower bound (verdict
    bound)."""
    from explorer.check import build_graph, follow, highest, longest
    from serq.check.model import Checks, SerqModel

    metric, pool = parse_metric(metric_text, program)
    sym = symmetry and not metric.per_session
    sm = SerqModel(program, ties=ties, symmetry=sym, checks=checks or Checks.of_program(program))
    counter = Counter(metric, sm.m, pool)
    mm = MetricModel(sm, counter)
    path_metric = metric.kind == "path"
    from explorer.runtime.limits import Limits, limits_on
    from explorer.runtime.memory import MemoryGuard

    with limits_on(sm, Limits(time_limit, MemoryGuard(memory_limit))):  # inside one state's expansion too
        g = build_graph(mm, max_states=max_states, time_limit=time_limit, memory_limit=memory_limit,
                        expand_bad=True, edge_info=mm.edge_info if path_metric else None,
                        node_info=None if path_metric else mm.node_info)
    lasso = None
    if path_metric:
        best = longest(g)
        value, track, path, lasso = best.value, best.track, best.path, best.cycle_start
    else:
        (value, p), node = highest(g, key=lambda v: v[0])
        track, path = p, g.path_to(node)
    edge_data = [g.edge_info(path[k][0], g.succ[path[k][0]].index((path[k + 1][1], path[k + 1][0])))
                 for k in range(len(path) - 1)] if path_metric else None

    def same_edge(state, action, nxt, k):
        return edge_data is None or mm.edge_info(state, action, nxt) == edge_data[k]

    trace = follow(mm, path[0][1], [(g.fps[v], ai) for v, ai in path[1:]], same_edge)
    counted: list[tuple[int, int]] = []
    since = 0  # the step where the witness's request starts (0: the initial state)
    if path_metric:
        for k, info in enumerate(edge_data, start=1):
            for t, n, *restart in info:
                if t != track:
                    continue
                if restart and restart[0]:  # counted from its last restart: one request
                    counted, since = [], k
                if n:
                    counted.append((k, n))
    last = trace[-1].state.state
    if track is None and metric.per_session:
        subject = "no request" if metric.per_request else "no session"  # no edge adds to it
    elif track == WHOLE_RUN or track is None:
        subject = "the run"
    elif metric.kind == "state":
        subject = program.pools[track].name if track >= 0 else "-"
    else:
        subject = sm.label(last, track)
        if metric.per_request:
            subject += f", its request from step {since}"
    return Worst(metric, value, subject, trace, lasso, counted, len(g), g.complete, g.bound_reason, sm,
                 since if metric.per_request and track is not None else None)


def counted_text(w: Worst) -> str:
    """`counted at steps: 3, 5 (+2)`: where the witness's count grew."""
    unit_one = w.metric.unit != "ticks"
    return "counted at steps: " + ", ".join(str(k) if (unit_one and n == 1) else f"{k} (+{n})" for k, n in w.counted)


def headline(w: Worst) -> str:
    m = w.metric
    if w.value is None:
        cyc = len(w.trace) - 1 - w.lasso_start
        return (f"worst {m.name}: unbounded: a cycle of {cyc} step{'s' if cyc != 1 else ''} adds to it "
                f"every time round ({m.what}; {w.subject})")
    at_least = "" if w.complete else "at least "
    unit = m.unit[:-1] if w.value == 1 else m.unit
    head = f"worst {m.name}: {at_least}{w.value} {unit} ({m.what}"
    if m.kind == "state":
        head += f"; pool {w.subject} at step {len(w.trace) - 1})"
    else:
        head += f"; {w.subject})"
    return head


def render_text(w: Worst) -> str:
    from explorer.report import trace_lines

    out = [headline(w)]
    if w.counted:
        out.append(counted_text(w))
    out.extend(trace_lines(w.trace, w.lasso_start))
    if not w.complete:
        if w.bound_reason in ("SIGINT", "SIGTERM"):
            out.append(f"interrupted by {w.bound_reason}: the state graph was cut there: a larger value may exist")
        else:
            out.append(f"the state graph was cut at its {w.bound_reason} bound: a larger value may exist")
    out.append(f"replay: {w.replay_path}")
    out.append(f"states: {w.states}")
    return "\n".join(out) + "\n"


def render_json(w: Worst, warnings=()) -> dict:
    """`serq explore --worst METRIC --json` (format serq-worst): the
    worst case and its witness, each step with its data as in serq-explore
    (serq.check.tracedata)."""
    from explorer.fingerprint import format_fp
    from serq.check.tracedata import trace_data
    from serq.formats import WORST, stamp, warnings_data

    from types import SimpleNamespace

    # the witness's states are MetricStates: the serq state and the counter's phases
    plain = [SimpleNamespace(state=getattr(s.state, "state", s.state), action=s.action) for s in w.trace]
    data = trace_data(w.model, plain) if w.trace and w.model is not None else [{} for _ in w.trace]
    return stamp(WORST, {
        "metric": w.metric.name, "unit": w.metric.unit, "what": w.metric.what,
        "value": w.value, "unbounded": w.value is None, "subject": w.subject,
        "complete": w.complete, "bound_reason": w.bound_reason, "exit_code": w.exit_code,
        "counted": [{"step": k, "amount": n} for k, n in w.counted],
        "lasso_start": w.lasso_start, "replay_path": w.replay_path, "states": w.states,
        "request_from": w.request_from,
        "text": headline(w),
        "warnings": warnings_data(warnings),
        "trace": [{"step": s.index, "action_index": s.action_index, "action": s.action_text,
                   "diff": list(s.diff), "fingerprint": format_fp(s.fingerprint), **d}
                  for s, d in zip(w.trace, data)],
    })
