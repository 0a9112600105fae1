"""Brute force for `serq explore --worst`: every metric as the maximum over
every path of the model, enumerated one by one from the initial state.

Independent of serq/check/worst.py and of the graph analysis: it reads only the
model's transitions, its events and its states, and follows each path as a
reader of docs/explorer.md would count it:

* a request starts when its session arrives, leaves a `turn` (its user's
  reply) or is spawned; it ends when its session reaches `turn` or `end`;
  `ttft` stops counting at its first token (the end of a prefill run, or a
  decode token), `latency` at its end; an iteration counts for every
  request under way when it starts (so the one that gives the first token
  counts); a session waiting at `turn` has no request under way;
* `preemptions`, `recomputed` per session over its whole run;
* `iterations`, `time` over the whole run; `queue`, `peak` per state;
* an iteration that faults is not done: it counts for nothing.

Each metric only grows along a path, so its maximum over complete paths is
its maximum over all prefixes. A path may visit a state at most `visits`
times: with 1 it is a simple path (every path of an acyclic graph); more
let a path go round a cycle.
"""

from __future__ import annotations

from serq.semantics.model import ITERATE, Model

METRIC_NAMES = ("ttft", "ttft-time", "latency", "latency-time", "preemptions", "recomputed",
                "iterations", "time", "queue", "peak")


def first_token(e) -> bool:
    return (e.kind == "run_done" and e.phase == "prefill") or (e.kind == "serve" and e.phase == "decode")


class Run:
    """What one path has counted so far (copied at every step)."""

    __slots__ = ("req", "pre", "redo", "iters", "ticks", "best")

    def __init__(self):
        self.req: dict[int, list] = {}  # sid -> [lat iters, lat ticks, ft open, ft iters, ft ticks]
        self.pre: dict[int, int] = {}
        self.redo: dict[int, list] = {}  # sid -> [position, high water, recomputed]
        self.iters = self.ticks = 0
        self.best = dict.fromkeys(METRIC_NAMES, 0)

    def copy(self) -> Run:
        r = Run.__new__(Run)
        r.req = {k: list(v) for k, v in self.req.items()}
        r.pre = dict(self.pre)
        r.redo = {k: list(v) for k, v in self.redo.items()}
        r.iters, r.ticks, r.best = self.iters, self.ticks, dict(self.best)
        return r

    def key(self) -> tuple:
        """What the rest of a path counts from here depends on: two paths
        to one state with equal keys count the same from there on."""
        return (tuple(sorted((k, tuple(v)) for k, v in self.req.items())), tuple(sorted(self.pre.items())),
                tuple(sorted((k, tuple(v)) for k, v in self.redo.items())), self.iters, self.ticks)

    def up(self, metric: str, v: int) -> None:
        if v > self.best[metric]:
            self.best[metric] = v

    def step(self, m: Model, caps, action, events, nxt) -> Run:
        r = self.copy()
        shapes = [e for e in events if e.kind == "iterate"]
        assert len(shapes) == (action[0] == ITERATE) or events[0].kind == "fault", events
        if shapes:  # a step that faults did no iteration: its only event is the fault
            ticks = m.cost(shapes[0].stage, shapes[0].shape)
            r.iters += 1
            r.ticks += ticks
            r.up("iterations", r.iters)
            r.up("time", r.ticks)
            for q in r.req.values():
                q[0] += 1
                q[1] += ticks
                r.up("latency", q[0])
                r.up("latency-time", q[1])
                if q[2]:
                    q[3] += 1
                    q[4] += ticks
                    r.up("ttft", q[3])
                    r.up("ttft-time", q[4])
        hits: dict[int, int] = {}
        preempted = set()
        for e in events:
            t = e.kind
            if t in ("arrive", "turn"):
                r.req[e.sid] = [0, 0, True, 0, 0]
            elif t == "spawn":
                r.req[e.child] = [0, 0, True, 0, 0]
            elif t in ("at_turn", "end"):
                r.req.pop(e.sid, None)
            elif first_token(e) and e.sid in r.req:
                r.req[e.sid][2] = False
            if t == "preempt":
                preempted.add(e.sid)
                r.pre[e.sid] = r.pre.get(e.sid, 0) + 1
                r.up("preemptions", r.pre[e.sid])
                r.redo.setdefault(e.sid, [0, 0, 0])[0] = 0
            elif t == "hit":
                hits[e.sid] = hits.get(e.sid, 0) + e.units
            elif t == "admit":
                r.redo.setdefault(e.sid, [0, 0, 0])[0] = hits.get(e.sid, 0)
            elif t == "serve" and e.pool is not None:  # a growing run's tokens
                d = r.redo.setdefault(e.sid, [0, 0, 0])
                lo, hi = d[0], d[0] + e.n
                d[2] += max(0, min(hi, d[1]) - lo)
                d[0], d[1] = hi, max(d[1], hi)
                r.up("recomputed", d[2])
            elif t in ("release", "at_turn", "end") and e.sid not in preempted and e.sid in r.redo:
                r.redo[e.sid][:2] = [0, 0]
        r.see(nxt, caps)
        return r

    def see(self, state, caps) -> None:
        for pool, cap in zip(state.pools, caps):
            self.up("queue", len(pool.queue))
            if cap is not None:
                self.up("peak", cap - pool.free - sum(c.units for c in pool.cache))


def brute_force(prog, visits: int = 1, max_depth: int | None = None,
                max_paths: int = 2_000_000) -> tuple[dict[str, int], bool]:
    """(the maximum of every metric over every path, whether some path met
    a state again or was cut at `max_depth` steps): paths visit a state at
    most `visits` times. A model state counts its arrivals (a `while` loop
    never meets its state again): an instance with a loop needs
    `max_depth`, and then gives a lower bound."""
    m = Model(prog)
    caps = [p.cap for p in prog.pools]
    memo: dict = {}

    def transitions(s):
        if s not in memo:
            memo[s] = m.transitions(s)
        return memo[s]

    s0 = m.initial_state()
    r0 = Run()
    r0.see(s0, caps)
    best = dict(r0.best)
    cyclic = False
    # Without a cycle, two paths that reach one state with the same counts
    # (Run.key) count the same from there on: the second is not followed
    # again (its maxima are in `best` already). With a cycle, a path's
    # future depends on the states it has visited, and every path is
    # followed (and with `max_depth`, the graph may be infinite).
    done: set | None = set() if max_depth is None and _acyclic(s0, transitions) else None
    on_path = {s0: 1}
    stack = [(s0, r0, iter(transitions(s0)))]
    paths = 0
    while stack:
        s, run, it = stack[-1]
        nxt_t = next(it, None)
        if nxt_t is None:
            stack.pop()
            on_path[s] -= 1
            paths += 1
            assert paths <= max_paths, "too many paths for a brute force"
            continue
        a, nxt, ev = nxt_t
        if max_depth is not None and len(stack) > max_depth:
            cyclic = True
            continue
        seen = on_path.get(nxt, 0)
        if seen:
            cyclic = True
            if seen >= visits:
                continue
        r = run.step(m, caps, a, ev, nxt)
        if done is not None:
            k = (nxt, r.key())
            if k in done:
                continue
            done.add(k)
        for k, v in r.best.items():
            if v > best[k]:
                best[k] = v
        on_path[nxt] = seen + 1
        stack.append((nxt, r, iter(transitions(nxt))))
    return best, cyclic


def _acyclic(s0, transitions) -> bool:
    """Whether no path from `s0` meets a state twice (an iterative
    depth-first search, colouring the states on the path)."""
    colour = {s0: 1}  # 1 on the path, 2 done
    stack = [(s0, iter(transitions(s0)))]
    while stack:
        s, it = stack[-1]
        t = next(it, None)
        if t is None:
            colour[s] = 2
            stack.pop()
            continue
        nxt = t[1]
        c = colour.get(nxt)
        if c == 1:
            return False
        if c is None:
            colour[nxt] = 1
            stack.append((nxt, iter(transitions(nxt))))
    return True


def along(prog, actions) -> dict[str, int]:
    """Every metric along one path, given by its actions from the initial
    state (e.g. a witness lasso pumped k times)."""
    m = Model(prog)
    caps = [p.cap for p in prog.pools]
    s = m.initial_state()
    run = Run()
    run.see(s, caps)
    for a in actions:
        nxt, ev = m.step_events(s, a)
        run = run.step(m, caps, a, ev, nxt)
        s = nxt
    return run.best
