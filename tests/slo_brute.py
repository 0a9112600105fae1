"""Brute force for the SLO checks (`check ttft <= N;` ...): every path of
the model, enumerated one by one from the initial state with the step
function (`Model.transitions`), each request's metrics counted along it,
and the shortest depth at which some request's count passes its bound.

Independent of serq/check/slo.py and of the explorer: it reads only the
model's transitions, events and states, and counts as docs/explorer.md
says a reader would:

* a request starts when its session arrives, leaves a `turn` (its user's
  reply) or is spawned; it ends when its session reaches `turn` or `end`;
* an iteration counts for every request under way when it starts: for its
  `latency` until the request ends, for its `ttft` until its first token
  (the end of a prefill run, or a decode token) -- the iteration that
  gives it counts;
* `preemptions`: the preemptions of a session while its request is under
  way; `recomputed`: the tokens its growing runs serve at or below the
  highest position it reached in the hold (less what it reused from the
  cache), while its request is under way;
* a count is compared with its bound when it grows: the step where it first
  passes the bound is the violation.
"""

from __future__ import annotations

from serq.semantics.model import ITERATE, Model


def first_token(e) -> bool:
    return (e.kind == "run_done" and e.phase == "prefill") or (e.kind == "serve" and e.phase == "decode")


class Req:
    __slots__ = ("lat", "ft_open", "ft", "pre", "rc")

    def __init__(self):
        self.lat, self.ft_open, self.ft, self.pre, self.rc = 0, True, 0, 0, 0

    def copy(self):
        r = Req.__new__(Req)
        r.lat, r.ft_open, r.ft, r.pre, r.rc = self.lat, self.ft_open, self.ft, self.pre, self.rc
        return r


def step(m: Model, bounds: dict, req: dict, redo: dict, action, events, nxt):
    """(req, redo, violated) after one step; `bounds`: metric -> int or
    attribute name."""
    req = {k: v.copy() for k, v in req.items()}
    redo = {k: list(v) for k, v in redo.items()}

    def bound(metric, sid):
        b = bounds[metric]
        if isinstance(b, int):
            return b
        s = nxt.sessions[sid]
        return s.attrs[[a.name for a in m.progs[s.prog].attrs].index(b)]

    bad = False

    def over(metric, sid, v):
        nonlocal bad
        if metric in bounds and v > bound(metric, sid):
            bad = True

    if action[0] == ITERATE and any(e.kind == "iterate" for e in events):
        for sid, q in req.items():
            q.lat += 1
            over("latency", sid, q.lat)
            if q.ft_open:
                q.ft += 1
                over("ttft", sid, q.ft)
    hits: dict[int, int] = {}
    preempted = set()
    for e in events:
        t = e.kind
        if t in ("arrive", "turn"):
            req[e.sid] = Req()
        elif t == "spawn":
            req[e.child] = Req()
        elif t in ("at_turn", "end"):
            req.pop(e.sid, None)
        elif first_token(e) and e.sid in req:
            req[e.sid].ft_open = False
        if t == "preempt":
            preempted.add(e.sid)
            if e.sid in req:
                req[e.sid].pre += 1
                over("preemptions", e.sid, req[e.sid].pre)
            redo.setdefault(e.sid, [0, 0])[0] = 0
        elif t == "hit":
            hits[e.sid] = hits.get(e.sid, 0) + e.units
        elif t == "admit":
            redo.setdefault(e.sid, [0, 0])[0] = hits.get(e.sid, 0)
        elif t == "serve" and e.pool is not None:
            d = redo.setdefault(e.sid, [0, 0])
            lo, hi = d[0], d[0] + e.n
            n = max(0, min(hi, d[1]) - lo)
            d[0], d[1] = hi, max(d[1], hi)
            if n and e.sid in req:
                req[e.sid].rc += n
                over("recomputed", e.sid, req[e.sid].rc)
        elif t in ("release", "at_turn", "end") and e.sid not in preempted and e.sid in redo:
            redo[e.sid] = [0, 0]
    return req, redo, bad


_MODELS: dict[int, tuple] = {}


def _model(prog) -> tuple[Model, dict]:
    """The program's model and its transitions met so far (state ->
    `Model.transitions`), kept for every brute force of the same program:
    a test asks for several bounds of one instance, and the step function
    gives a state the same transitions each time."""
    got = _MODELS.get(id(prog))
    if got is None or got[0] is not prog:  # (the program is held here: its id is not reused)
        got = _MODELS[id(prog)] = (prog, Model(prog), {})
    return got[1], got[2]


def shortest_violation(prog, bounds: dict, max_depth: int = 40, max_paths: int = 3_000_000) -> int | None:
    """The fewest steps of a path on which some request's count passes its
    bound, or None when no path of at most `max_depth` steps has one
    (every path, when the instance has none longer). Paths are cut at
    `max_depth` and, once a violation is known, at its depth."""
    m, memo = _model(prog)

    def transitions(s):
        if s not in memo:
            memo[s] = m.transitions(s)
        return memo[s]

    best = None
    s0 = m.initial_state()
    stack = [(s0, {}, {}, iter(transitions(s0)))]
    paths = 0
    while stack:
        s, req, redo, it = stack[-1]
        t = next(it, None)
        if t is None:
            stack.pop()
            paths += 1
            assert paths <= max_paths, "too many paths for a brute force"
            continue
        depth = len(stack)  # the successor's depth
        limit = max_depth if best is None else best - 1
        if depth > limit:
            continue
        a, nxt, ev = t
        req2, redo2, bad = step(m, bounds, req, redo, a, ev, nxt)
        if bad:
            best = depth
            continue
        stack.append((nxt, req2, redo2, iter(transitions(nxt))))
    return best


def violates_at(prog, bounds: dict, actions) -> int | None:
    """The first step of the path (its actions from the initial state) at
    which a count passes its bound, or None."""
    m = Model(prog)
    s, req, redo = m.initial_state(), {}, {}
    for k, a in enumerate(actions, start=1):
        nxt, ev = m.step_events(s, a)
        req, redo, bad = step(m, bounds, req, redo, a, ev, nxt)
        if bad:
            return k
        s = nxt
    return None
