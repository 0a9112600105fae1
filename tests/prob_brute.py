"""Brute force for `serq explore --probability` / `--expected`: every
behaviour of an instance enumerated from its initial state, one path at a
time, without a state graph and without serq/check/prob*.py.

A step is asked through the engine with an oracle that answers a given
prefix and stops at the next question: the questions of one action make
a tree. At a `draw` the children are weighted by the weights the
simulator samples with (`ws`, floats, renormalized over the domain); at a
tie or an unkeyed `choose` the scheduler picks. The best (worst) scheduler
takes the minimum (maximum) of what follows, exhaustively, along every
path: no state is merged with another.

What is counted along a path, as docs/explorer.md says it:
* `A|B`: A or B; `stuck`: a state with a stuck session; `deadlock`: a state with no step
  that is not done (a fault is an end, not a deadlock);
  `preemptions>=N`: some session preempted N times; `violation`: a fault, or a
  request's count passing the bound of a per-request SLO check (`bounds`:
  metric -> bound or attribute, counted by tests/slo_brute.py's rules);
* `ttft`: each iteration adds 1 for every request still waiting for its
  first token when it starts (arrival, `turn` reply or spawn starts one; a
  decode token or a prefill's end gives it); the mean divides by the
  requests that had their first token;
* `latency`: the same up to the request's end (`turn` or `end`), divided by
  the requests that ended;
* `preemptions`: every preemption of the run, divided by its sessions;
  `iterations`: the run's iterations.
"""

from __future__ import annotations

from serq.semantics.model import Model
from tests import slo_brute


class _Asked(Exception):
    pass


class _Probe:
    def __init__(self, prefix):
        self.prefix, self.i, self.st = prefix, 0, None

    def _next(self, kind, n, ws):
        if self.i < len(self.prefix):
            self.i += 1
            return self.prefix[self.i - 1]
        raise _Asked(kind, n, ws)

    def tie(self, n):
        return self._next("choice", n, None)

    def query(self, st, values, params, listed):
        self.st = st

    def draw(self, values, ws):
        if self.st.kind == "draw":
            return self._next("chance", len(values), ws)
        return self._next("choice", len(values), None)


def step_tree(m: Model, state, base, prefix=()):
    """("leaf", nxt, events) | ("choice", [tree]) | ("chance", [(p, tree)])."""
    try:
        nxt, events = m.engine.run(state, base, _Probe(list(prefix)), 0, True, False)
    except _Asked as a:
        kind, n, ws = a.args
        kids = [step_tree(m, state, base, tuple(prefix) + (k,)) for k in range(n)]
        if kind == "choice":
            return ("choice", kids)
        total = sum(ws)
        return ("chance", [(w / total, t) for w, t in zip(ws, kids)])
    return ("leaf", nxt, list(events))


def first_token(e) -> bool:
    return (e.kind == "run_done" and e.phase == "prefill") or (e.kind == "serve" and e.phase == "decode")


class Path:
    """What a path has counted so far."""

    def __init__(self, pending=(), open_=(), pre=(), total=0, n=0):
        self.pending, self.open, self.pre = frozenset(pending), frozenset(open_), dict(pre)
        self.total, self.n = total, n

    def step(self, action_kind, events, metric):
        pending, open_, pre = set(self.pending), set(self.open), dict(self.pre)
        total, n = self.total, self.n
        if any(e.kind == "iterate" for e in events):
            if metric in ("ttft", "latency"):
                total += len(pending if metric == "ttft" else open_)
            elif metric == "iterations":
                total += 1
        if metric == "preemptions":
            total += sum(1 for e in events if e.kind == "preempt")
        for e in events:
            k = e.kind
            if k in ("arrive", "turn"):
                pending.add(e.sid)
                open_.add(e.sid)
            elif k == "spawn":
                pending.add(e.child)
                open_.add(e.child)
            elif k in ("at_turn", "end"):
                pending.discard(e.sid)
                if e.sid in open_:
                    open_.discard(e.sid)
                    n += metric == "latency"
            elif first_token(e) and e.sid in pending:
                pending.discard(e.sid)
                n += metric == "ttft"
            if k == "preempt":
                pre[e.sid] = pre.get(e.sid, 0) + 1
        return Path(pending, open_, pre, total, n)


def _done(m, state) -> bool:
    return state.fault is not None or m.is_done(state)


def probability(m: Model, event: str, maximize: bool, state=None, path=None, bounds=None,
                slo=({}, {}, False)) -> float:
    """The best or worst scheduler's probability that `event` happens;
    `bounds`: the per-request SLO checks (`violation`), `slo` what they
    counted so far (requests, recomputation, failed)."""
    state = m.initial_state() if state is None else state
    path = path or Path()
    parts = event.split("|")  # `A|B`: A or B
    if "stuck" in parts and any(s.stuck for s in state.sessions):
        return 1.0
    if "violation" in parts and (state.fault is not None or slo[2]):
        return 1.0
    for p in parts:
        if p.startswith("preemptions>=") and any(v >= int(p.split(">=")[1]) for v in path.pre.values()):
            return 1.0
    opts = []
    for base in m.base_actions(state):
        def after(nxt, evs, base=base):
            req, redo, bad = slo_brute.step(m, bounds or {}, slo[0], slo[1], base, evs, nxt)
            return probability(m, event, maximize, nxt, path.step(base[0], evs, ""), bounds, (req, redo, bad))

        v = _tree_value(m, step_tree(m, state, base), maximize, after)
        if v is not None:
            opts.append(v)
    if not opts:
        return 1.0 if "deadlock" in parts and not _done(m, state) else 0.0
    return max(opts) if maximize else min(opts)


def expected(m: Model, metric: str, maximize: bool, state=None, path=None) -> tuple[float, float]:
    """(expected sum, expected requests counted) under the best or worst
    scheduler of the sum."""
    state = m.initial_state() if state is None else state
    path = path or Path()
    opts = []
    for base in m.base_actions(state):
        v = _tree_value(m, step_tree(m, state, base), maximize,
                        lambda nxt, evs: expected(m, metric, maximize, nxt, path.step(base[0], evs, metric)))
        if v is not None:
            opts.append(v)
    if not opts:  # per session: every session of the run, the workload's and the spawned ones
        return (float(path.total), float(len(state.sessions) if metric == "preemptions" else path.n))
    key = (lambda x: x[0])
    return max(opts, key=key) if maximize else min(opts, key=key)


def _tree_value(m, t, maximize, after):
    if t[0] == "leaf":
        return None if t[1] is None else after(t[1], t[2])
    if t[0] == "choice":
        vals = [v for v in (_tree_value(m, c, maximize, after) for c in t[1]) if v is not None]
        if not vals:
            return None
        if isinstance(vals[0], tuple):
            return max(vals, key=lambda x: x[0]) if maximize else min(vals, key=lambda x: x[0])
        return max(vals) if maximize else min(vals)
    out = None
    for p, c in t[1]:
        v = _tree_value(m, c, maximize, after)
        if v is None:
            continue
        if isinstance(v, tuple):
            out = (p * v[0], p * v[1]) if out is None else (out[0] + p * v[0], out[1] + p * v[1])
        else:
            out = p * v if out is None else out + p * v
    return out


# two chats drawing a prompt ~ geometric(0.5) into a pool of 3 blocks: a preemption to weigh
PREEMPT = """
pool kv { cap 6; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; }
session chat {
  draw q in 1..3 ~ geometric(0.5);
  hold kv need 2 take 0 { prefill q growing kv; decode 2 growing kv; }
  end;
}
workload { 2 x chat; }
"""
