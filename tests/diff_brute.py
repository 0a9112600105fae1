"""A brute-force `serq diff` for tiny pairs, independent of serq/check/diff.py:
every environment (a sequence of joint events, and the values each
session draws, chosen lazily) is run on both variants with the
simulator's step function (`Model.run_with` and an oracle object), the
sessions named and the drawn values matched here, from the oracle's
questions rather than from the step's events.

For each environment prefix both variants are stepped; the search is a
breadth-first walk of (variant states, values drawn so far), identified by
the kernel's canonical fingerprint without symmetry. Returns, per variant
x, the length of the shortest environment on which x fails by a deadlock
or a violation while the other completes (None: none), and whether some
environment makes x cycle without progress while the other has completed.
"""

from __future__ import annotations

from collections import deque

from serq.check.diffmatch import env_attrs
from serq.semantics.model import ARRIVE, ITERATE, TURN, Model
from serq.semantics.rows import Rows
from serq.check.model import Checks


class Need(Exception):
    def __init__(self, name, k, values):
        super().__init__()
        self.name, self.k, self.values = name, k, values


class Variant:
    def __init__(self, program, checks):
        self.m = Model(program, ties="seq")
        self.rows = Rows(self.m.engine, symmetry=False, keep_pos=True)
        self.checks = checks
        self.env = env_attrs(program)
        self.progs = program.sessions

    def fp(self, state) -> int:
        return self.rows.pack(state).fp

    def failed(self, state) -> bool:
        if state.fault is not None:
            return True
        for kind, _msg in self.m.check_invariants(state):
            if kind == "stuck" and not self.checks.stuck:
                continue
            if kind == "invariant" and not self.checks.invariant:
                continue
            return True
        return False

    def step(self, state, base, names, sigma, counts):
        """(successor or None, names, counts) with draws answered from
        sigma[(name, k)]; raises Need for a value sigma does not fix yet."""
        engine = self.m.engine
        counts = dict(counts)
        variant = self

        class Oracle:
            def draw(self, values, weights):
                w = engine.state()
                for sid, s in enumerate(w.sessions):
                    st = variant.progs[s.prog].states[s.pc]
                    if st.kind in ("draw", "choose"):
                        break
                else:
                    raise AssertionError("no session at a draw")
                name = _name(w.sessions, names, sid)
                if (variant.progs[s.prog].name, st.attr) not in variant.env:  # a keyed choose's tie
                    return 0
                k = counts.get(name, 0)
                counts[name] = k + 1
                if (name, k) not in sigma:
                    raise Need(name, k, list(values))
                v = sigma[(name, k)]
                if v not in values:
                    raise Need(name, k, [])  # this environment does not fit: no successor
                return values.index(v)

            def tie(self, n):
                return 0

        nxt, events = self.m.run_with(state, base, Oracle())
        for e in events:
            if e.kind == "spawn":
                parent = names[e.sid]
                n = sum(1 for q in names if len(q) == len(parent) + 1 and q[:-1] == parent)
                names = names + (parent + (n,),)
        return nxt, names, tuple(sorted(counts.items())), events


def _name(sessions, names, sid):
    """A session's name, a child spawned in this very step too: its parent's
    name and its rank among the parent's children."""
    if sid < len(names):
        return names[sid]
    parent = sessions[sid].parent
    return _name(sessions, names, parent) + (sum(1 for j in range(sid) if sessions[j].parent == parent),)


def _bases(v: Variant, state, names):
    out = []
    for kind, sid in v.m.base_actions(state):
        out.append((kind, v.m.stages[sid].name if kind == ITERATE else names[sid]))
    return out


def side_moves(vs, x, node, base):
    """Successors of variant x under a joint base event: [(state, names,
    counts, sigma, events, kind)]
    or None when it cannot move (a no-op)."""
    states, names, failed, sigma, counts = node
    if failed[x]:
        return None
    v = vs[x]
    bases = v.m.base_actions(states[x])
    want = [b for b in bases if (b[0], v.m.stages[b[1]].name if b[0] == ITERATE else names[x][b[1]]) == base]
    if not want:
        return None
    out = []
    todo = [dict(sigma)]
    while todo:
        sg = todo.pop()
        try:
            nxt, nn, cc, evs = v.step(states[x], want[0], names[x], sg, counts[x])
        except Need as e:
            for val in e.values:
                todo.append({**sg, (e.name, e.k): val})
            continue
        if nxt is not None:
            out.append((nxt, nn, cc, tuple(sorted(sg.items())), evs, want[0][0]))
    return out or None


def brute_diff(pa, pb, checks_a, checks_b, max_nodes: int = 200000):
    vs = (Variant(pa, checks_a), Variant(pb, checks_b))
    n0 = tuple((i,) for i in range(len(vs[0].m.workload)))
    init = ((vs[0].m.initial_state(), vs[1].m.initial_state()), (n0, n0), (False, False), (), ((), ()))

    def key(node):
        states, names, failed, sigma, counts = node
        return (vs[0].fp(states[0]), vs[1].fp(states[1]), names, failed, sigma, counts)

    def status(x, node):
        states, names, failed, sigma, counts = node
        v = vs[x]
        if failed[x]:
            return "violation"
        if v.m.is_done(states[x]):
            return "done"
        for b in _bases(v, states[x], names[x]):
            if side_moves(vs, x, node, b):
                return "running"
        return "deadlock"

    seen = {key(init): 0}
    nodes = [init]
    depth = [0]
    edges: list[list[tuple[int, str]]] = []
    queue = deque([0])
    while queue:
        u = queue.popleft()
        node = nodes[u]
        while len(edges) <= u:
            edges.append([])
        bases = sorted(set(_bases(vs[0], node[0][0], node[1][0])) | set(_bases(vs[1], node[0][1], node[1][1])),
                       key=lambda b: ({ARRIVE: 0, TURN: 1, ITERATE: 2}[b[0]], b[1]))
        for base in bases:
            ma, mb = side_moves(vs, 0, node, base), side_moves(vs, 1, node, base)
            if ma is None and mb is None:
                continue
            for a in ma or [None]:
                for b in mb or [None]:
                    sig = dict(node[3])
                    ok = True
                    for m in (a, b):
                        if m is not None:
                            for kk, vv in m[3]:
                                if sig.setdefault(kk, vv) != vv:
                                    ok = False
                    if not ok:
                        continue
                    states, names, failed, counts = list(node[0]), list(node[1]), list(node[2]), list(node[4])
                    for x, mv in enumerate((a, b)):
                        if mv is not None:
                            states[x], names[x], counts[x] = mv[0], mv[1], mv[2]
                            failed[x] = vs[x].failed(mv[0])
                    nxt = (tuple(states), tuple(names), tuple(failed), tuple(sorted(sig.items())), tuple(counts))
                    k = key(nxt)
                    if k not in seen:
                        seen[k] = len(nodes)
                        nodes.append(nxt)
                        depth.append(depth[u] + 1)
                        queue.append(seen[k])
                        assert len(nodes) < max_nodes, "too large for the brute force"
                    edges[u].append((seen[k], base[0]))
    st = [(status(0, n), status(1, n)) for n in nodes]
    dead = [None, None]
    live = [False, False]
    for x in (0, 1):
        y = 1 - x
        for u in range(len(nodes)):
            if st[u][x] in ("violation", "deadlock") and st[u][y] == "done":
                dead[x] = depth[u] if dead[x] is None else min(dead[x], depth[u])
        inside = {u for u in range(len(nodes)) if st[u][y] == "done" and st[u][x] == "running"}
        # a cycle in the subgraph of non-turn edges: repeatedly drop nodes without a successor in it
        succ = {u: {v for v, kind in edges[u] if v in inside and kind != TURN} for u in inside}
        changed = True
        while changed:
            changed = False
            for u in list(succ):
                if not succ[u] & succ.keys():
                    del succ[u]
                    changed = True
        live[x] = bool(succ)
    return dead, live


# ---------------------------------------------------------------- worst differences


def _first_token(e) -> bool:
    return (e.kind == "run_done" and e.phase == "prefill") or (e.kind == "serve" and e.phase == "decode")


class Tally:
    """One variant's metric along one path, counted here from the events:
    per request (name, k) its iterations until its first token (ttft) or
    its end (latency); per session its preemptions; the run's iterations."""

    def __init__(self, metric):
        self.metric = metric
        self.open: dict = {}  # name -> (k, count) of a request under way
        self.k: dict = {}  # name -> requests started
        self.values: dict = {}  # subject -> value, final
        self.total = 0
        self.pre: dict = {}

    def copy(self):
        t = Tally(self.metric)
        t.open, t.k, t.values, t.total, t.pre = dict(self.open), dict(self.k), dict(self.values), self.total, dict(self.pre)
        return t

    def step(self, kind, events, names):
        if kind == ITERATE and not any(e.kind == "fault" for e in events):
            self.total += 1
            for n in self.open:
                self.open[n] = (self.open[n][0], self.open[n][1] + 1)
        for e in events:
            if e.kind == "preempt":
                self.pre[names[e.sid]] = self.pre.get(names[e.sid], 0) + 1
            ends = _first_token(e) if self.metric == "ttft" else e.kind in ("at_turn", "end")
            if ends and names[e.sid] in self.open:
                k, c = self.open.pop(names[e.sid])
                self.values[(names[e.sid], k)] = c
            if e.kind in ("arrive", "turn", "spawn"):
                n = names[e.child] if e.kind == "spawn" else names[e.sid]
                self.k[n] = self.k.get(n, 0) + 1
                self.open[n] = (self.k[n], 0)

    def final(self, names) -> dict:
        if self.metric in ("ttft", "latency"):
            return {**self.values, **{(n, k): c for n, (k, c) in self.open.items()}}
        if self.metric == "preemptions":
            return {n: self.pre.get(n, 0) for n in names}
        return {"run": self.total}


def brute_worst(pa, pb, metric: str, max_paths: int = 500000):
    """(largest a - b, largest b - a) of `metric` (ttft, latency,
    preemptions, iterations) over every environment, compared subject by
    subject once both variants' paths have ended, by walking every joint
    path (no state merged): for tiny acyclic pairs only."""
    ch = (Checks.of_program(pa), Checks.of_program(pb))
    vs = (Variant(pa, ch[0]), Variant(pb, ch[1]))
    n0 = tuple((i,) for i in range(len(vs[0].m.workload)))
    init = ((vs[0].m.initial_state(), vs[1].m.initial_state()), (n0, n0), (False, False), (), ((), ()))
    best = [None, None]
    paths = [0]

    def walk(node, tallies, depth):
        assert depth < 80 and paths[0] < max_paths, "too large for the brute force"
        moved_any = False
        bases = sorted(set(_bases(vs[0], node[0][0], node[1][0])) | set(_bases(vs[1], node[0][1], node[1][1])),
                       key=lambda b: ({ARRIVE: 0, TURN: 1, ITERATE: 2}[b[0]], b[1]))
        for base in bases:
            ma, mb = side_moves(vs, 0, node, base), side_moves(vs, 1, node, base)
            if ma is None and mb is None:
                continue
            for a in ma or [None]:
                for b in mb or [None]:
                    sig = dict(node[3])
                    if any(sig.setdefault(kk, vv) != vv for m in (a, b) if m is not None for kk, vv in m[3]):
                        continue
                    moved_any = True
                    states, names, failed, counts = list(node[0]), list(node[1]), list(node[2]), list(node[4])
                    ts = [t.copy() for t in tallies]
                    for x, mv in enumerate((a, b)):
                        if mv is not None:
                            states[x], names[x], counts[x] = mv[0], mv[1], mv[2]
                            failed[x] = vs[x].failed(mv[0])
                            ts[x].step(mv[5], mv[4], names[x])
                    walk((tuple(states), tuple(names), tuple(failed), tuple(sorted(sig.items())), tuple(counts)),
                         ts, depth + 1)
        if not moved_any:
            paths[0] += 1
            fa, fb = tallies[0].final(node[1][0]), tallies[1].final(node[1][1])
            for subj in fa.keys() & fb.keys():
                for d, diff in ((0, fa[subj] - fb[subj]), (1, fb[subj] - fa[subj])):
                    if best[d] is None or diff > best[d]:
                        best[d] = diff

    walk(init, (Tally(metric), Tally(metric)), 0)
    return tuple(best)
