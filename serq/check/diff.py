"""`serq diff a.sq b.sq`: two variants of one instance explored over the
same environment, and the behaviours where they part.

*The same choices.* The environment decides the arrivals (which session
arrives, and when, relative to the engine's iterations), the users'
replies at a `turn`, and the values of every `draw` and unkeyed `choose`;
the scheduler decides everything else, ties included. The two instances
are explored as a product: a joint state is a pair of states (one per
variant), and a joint step is one environment event or one engine
iteration, applied to both variants at once:

- `arrive s` -- session s arrives in both (arrivals are always in step);
- `turn s` -- s's user replies, in every variant where s waits at a turn
  (the other gets its reply by a later `turn s`: a response comes at
  different times in the two);
- `iterate S` -- stage S runs one iteration in both; a variant with no
  work for it does nothing (a zero-work iteration is a no-op).

A value drawn is matched per session, in order: the k-th value a session
draws in one variant is the k-th it draws in the other, whichever draws it
first (the product keeps, per session, the values one variant drew and
the other has yet to draw). Sessions are matched by name: the k-th
workload session is itself in both, a spawned child is its parent's n-th
child. Each variant's own choices (ties, with `--ties all`) are explored
independently; under `--ties seq` (the default) each variant is a
function of the environment, so a joint path is exactly one environment
and its two runs.

A variant *fails* on a joint path by a selected property (its own `check`
lines, or `--check`): a deadlock, a violation (an invariant, an assert, a
run-time error, stuck when checked), or a livelock (a cycle of its own
non-progress steps); after a violation it makes no move (its behaviour
ended there). A *difference* is a joint path on which one variant fails
while the other completes (every session done). The report gives, for
each direction, the shortest: a dead end, or a lasso whose stem and cycle
are shortest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from serq import ir
from serq.check.diffmatch import env_attrs, take_or_queue
from serq.check.model import Checks, SerqModel
from serq.semantics.model import ARRIVE, ITERATE, TURN

SIDES = ("a", "b")
_ORDER = {ARRIVE: 0, TURN: 1, ITERATE: 2}
EXIT_DIFFER = 19  # serq.cli.exits: "differ"


class DState(NamedTuple):
    """A joint state: per variant its state (a packed row), the names of
    its sessions (by id), the failure that stopped it (None: it runs);
    the values drawn by one variant and not yet by the other; the metric's
    accumulators (`--worst`; None otherwise)."""

    s: tuple
    names: tuple
    fail: tuple
    log: tuple
    acc: Any = None


class Move(NamedTuple):
    """One successor of one variant: its action, state, events, session
    names after it, the environment's values drawn in it ((name, (attr,
    value)), ...) and the violation that stops the variant there, if any."""

    action: Any
    state: Any
    events: list
    names: tuple
    draws: tuple
    fail: tuple | None


class Side:
    """One variant: its model (no symmetry reduction: a session keeps its id
    along a path) and the attributes the environment decides."""

    def __init__(self, program: ir.Program, ties: str, checks: Checks):
        self.program = program
        self.sm = SerqModel(program, ties=ties, symmetry=False, checks=checks)
        self.m = self.sm.m
        self.checks = checks
        self.env = env_attrs(program)
        self.prog_names = [sp.name for sp in program.sessions]
        self.stage_names = [s.name for s in program.stages]
        self._succ: dict = {}

    def succ(self, rs) -> list:
        """(action, successor) pairs: the explorer's enumeration, kept for
        the states seen last (a joint search reads each several times)."""
        got = self._succ.get(rs.fp)
        if got is None:
            if len(self._succ) >= 4096:
                self._succ.clear()
            got = self._succ[rs.fp] = self.sm.rows.expand(rs)
        return got

    def events(self, rs, action) -> list:
        """The step's events, its successor left packed."""
        return self.m.engine.run(rs, (action[0], action[1]), list(action[2]), 0, True, True)[1]

    def prog_of(self, rs, sid: int) -> str:
        return self.prog_names[self.m.engine.prog_of_state(rs, sid)]

    def status(self, rs, fail) -> str:
        """`violation` (stopped by one), `done`, `deadlock` (or `stopped` when
        deadlock is not checked), `running`."""
        if fail is not None:
            return "violation"
        if self.sm.is_done(rs):
            return "done"
        if not self.succ(rs):
            return "deadlock" if self.checks.deadlock else "stopped"
        return "running"


def _log(log: dict, x: int, name, item) -> bool:
    """Record that variant x drew `item` for session `name`: the other
    variant's next value, if it is ahead, must be the same."""
    other = take_or_queue(log, x, name, item)
    return other is None or other[0] == item


def child_names(names: tuple, events) -> tuple:
    """The names after a step: a spawned child is (its parent's name, n),
    n counting the parent's children."""
    for e in events:
        if e.kind == "spawn":
            parent = names[e.sid]
            n = sum(1 for q in names if len(q) == len(parent) + 1 and q[:-1] == parent)
            names = names + (parent + (n,),)
    return names


class DiffModel:
    """The product of two variants, as the explorer's model protocol (a
    joint action is (kind, subject, a's action or None, b's or None))."""

    capabilities = frozenset({"canonical_bytes"})

    def __init__(self, sides: tuple[Side, Side], metric=None):
        self.sides = sides
        self.metric = metric  # serq.check.diffworst.Accounts, or None
        self._key = None
        self._out: list = []

    def initial_states(self):
        s = tuple(side.sm.initial_states()[0] for side in self.sides)
        n = len(self.sides[0].m.workload)
        names = tuple((i,) for i in range(n))
        st = DState(s, (names, names), (None, None), ())
        if self.metric is not None:
            st = st._replace(acc=self.metric.initial(self, st))
        return [st]

    def _moves(self, x: int, st: DState) -> dict:
        """Variant x's moves by joint key: [Move], each computed once."""
        if st.fail[x] is not None:
            return {}
        side, names = self.sides[x], st.names[x]
        out: dict = {}
        for a, nxt in side.succ(st.s[x]):
            kind = a[0]
            key = (kind, side.stage_names[a[1]] if kind == ITERATE else names[a[1]])
            events = side.events(st.s[x], a)
            after = child_names(names, events)
            draws = tuple((after[e.sid], (e.attr, e.value)) for e in events
                          if e.kind in ("draw", "choose") and (side.prog_of(nxt, e.sid), e.attr) in side.env)
            bad = side.sm.invariants(nxt)
            out.setdefault(key, []).append(Move(a, nxt, events, after, draws, tuple(bad[0]) if bad else None))
        return out

    def joint(self, st: DState) -> list:
        if self._key is st:
            return self._out
        moves = (self._moves(0, st), self._moves(1, st))
        keys = sorted(set(moves[0]) | set(moves[1]), key=lambda k: (_ORDER[k[0]], k[1]))
        out = []
        for key in keys:
            for ma in moves[0].get(key) or [None]:
                for mb in moves[1].get(key) or [None]:
                    nxt = self._pair(st, (ma, mb))
                    if nxt is not None:
                        out.append(((key[0], key[1], ma and ma.action, mb and mb.action), nxt))
        self._key, self._out = st, out
        return out

    def _pair(self, st: DState, pair) -> DState | None:
        log = {n: (x, v) for n, x, v in st.log}
        s, names, fail = list(st.s), list(st.names), list(st.fail)
        for x, mv in enumerate(pair):
            if mv is None:
                continue
            for name, item in mv.draws:
                if not _log(log, x, name, item):
                    return None
            s[x], names[x], fail[x] = mv.state, mv.names, mv.fail
        nxt = DState(tuple(s), tuple(names), tuple(fail), tuple(sorted((n, x, v) for n, (x, v) in log.items())))
        if self.metric is not None:
            nxt = nxt._replace(acc=self.metric.advance(self, st, nxt, pair))
        return nxt

    # -- protocol ---------------------------------------------------------------
    def actions(self, st):
        return [a for a, _ in self.joint(st)]

    def step(self, st, action):
        for a, nxt in self.joint(st):
            if a == action:
                return nxt
        return None

    def canonical_bytes(self, st) -> bytes:
        a, b = st.s
        return repr((a.fp, b.fp, st.names, st.fail, st.log, st.acc)).encode()

    def is_done(self, st) -> bool:
        return "running" not in self.status(st)

    def is_progress(self, st, action, nxt) -> bool:
        """Progress when a variant's own move is progress by its own model's
        rule (SerqModel.is_progress)."""
        return any(move is not None and side.sm.is_progress(st.s[x], move, nxt.s[x])
                   for x, (side, move) in enumerate(zip(self.sides, action[2:])))

    def invariants(self, st):
        return []

    def status(self, st) -> tuple[str, str]:
        return tuple(side.status(st.s[x], st.fail[x]) for x, side in enumerate(self.sides))

    def label(self, st: DState, name) -> str:
        for x, side in enumerate(self.sides):
            if name in st.names[x]:
                return side.sm.label(st.s[x], st.names[x].index(name))
        return "?"

    def format_action(self, st, action) -> str:
        kind, subj = action[0], action[1]
        return f"iterate {subj}" if kind == ITERATE else f"{kind} {self.label(st, subj)}"

    def format_diff(self, st, nxt) -> list[str]:
        return []


# ---------------------------------------------------------------- the analysis


@dataclass
class Witness:
    fails: int  # the variant that fails (0: a, 1: b)
    how: str  # deadlock | livelock | violation (KIND)
    message: str
    trace: list  # explorer Steps over DStates
    lasso_start: int | None = None
    diagnosis: list = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.trace) - 1


@dataclass
class DiffResult:
    files: tuple[str, str]
    model: DiffModel
    witnesses: list  # Witness, at most one per failing variant
    states: int
    complete: bool
    bound_reason: str | None
    verdicts: tuple  # each variant's own exploration: (verdict, message, distinct states)
    ties: str
    worst: Any = None  # serq.check.diffworst.WorstDiff
    notes: list = field(default_factory=list)
    checks: list | None = None  # --check, when given
    warnings: tuple = ((), ())  # each variant's warnings (its instance's, and W515: `not_compared`)

    @property
    def verdict(self) -> str:
        if self.witnesses:
            return "differ"
        if self.interrupted:
            return "interrupted"
        return "same" if self.complete else "bound"

    @property
    def interrupted(self) -> bool:
        """A signal stopped the joint search or --worst's."""
        signals = ("SIGINT", "SIGTERM")
        return self.bound_reason in signals or (self.worst is not None and self.worst.bound_reason in signals)

    @property
    def exit_code(self) -> int:
        from explorer.runtime.verdict import EXIT_BOUND, EXIT_INTERRUPTED, EXIT_PASS

        if self.witnesses:
            return EXIT_DIFFER
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_PASS if self.complete else EXIT_BOUND


def livelock_lasso(g, status, x: int) -> tuple[list, int] | None:
    """(path, cycle start) of the first lasso on which variant x cycles
    without progress while the other has completed, or None: the engines'
    own livelock search (`explorer.check.find_livelock`) over the joint
    graph's non-progress edges (DiffModel.is_progress) among those states, its entry the one
    stored first."""
    from explorer.check import find_livelock

    y = 1 - x
    member = {u for u in range(len(g)) if status[u][y] == "done" and status[u][x] == "running"}
    edges = {u: [v for k, (_ai, v) in enumerate(g.succ[u]) if v in member and not g.info[u][k]]
             for u in sorted(member)}
    found = find_livelock(edges, min) if edges else None
    if found is None:
        return None
    entry, cycle = found
    stem = g.path_to(entry)
    steps, u = [], entry
    for v in cycle:  # each node with the first non-progress action that reaches it, as the search scans them
        ai = next(ai for k, (ai, w) in enumerate(g.succ[u]) if w == v and not g.info[u][k])
        steps.append((v, ai))
        u = v
    return stem + steps, len(stem) - 1


def find_differences(dm: DiffModel, g) -> list[Witness]:
    from explorer.check import follow

    status = g.value
    out = []
    for x in (0, 1):
        y = 1 - x
        cands = []
        u = next((u for u in range(len(g)) if status[u][x] in ("violation", "deadlock") and status[u][y] == "done"),
                 None)
        if u is not None:
            path = g.path_to(u)
            cands.append((len(path) - 1, path, None))
        if dm.sides[x].checks.livelock:
            lasso = livelock_lasso(g, status, x)
            if lasso is not None:
                cands.append((len(lasso[0]) - 1, lasso[0], lasso[1]))
        if not cands:
            continue
        _, path, start = min(cands, key=lambda cand: cand[0])
        trace = follow(dm, path[0][1], [(g.fps[v], ai) for v, ai in path[1:]])
        last = trace[-1].state
        side = dm.sides[x]
        if start is not None:
            cyc = len(trace) - 1 - start
            how, msg, diag = "livelock", (f"a cycle of {cyc} step{'s' if cyc != 1 else ''} that make no progress, "
                                          f"reached after {start} steps"), []
        elif last.fail[x] is not None:
            how, msg, diag = f"violation ({last.fail[x][0]})", last.fail[x][1], []
        else:
            how, msg = "deadlock", f"no action is applicable after {len(trace) - 1} steps and the state is not done"
            diag = side.sm.describe_deadlock(last.s[x].tuple())
        out.append(Witness(x, how, msg, trace, start, diag))
    return out


def diff(pa: ir.Program, pb: ir.Program, files: tuple[str, str], *, ties: str = "seq",
         checks: list[str] | None = None, max_states: int | None = None, time_limit: float | None = None,
         memory_limit: int | None = None, worst: str | None = None) -> DiffResult:
    """Explore the product of two matched variants (serq.check.diffmatch.match
    first) and find the shortest behaviours where one fails and the other
    completes; with `worst`, the environment where one variant's metric
    exceeds the other's by the most."""
    from explorer.check import build_graph
    from explorer.runtime.limits import Limits, limits_on
    from explorer.runtime.memory import MemoryGuard
    from serq.check.explore import explore

    sides = tuple(Side(p, ties, Checks.of_program(p, checks)) for p in (pa, pb))
    verdicts = []
    for p in (pa, pb):
        r = explore(p, ties=ties, checks=checks, max_states=max_states, time_limit=time_limit, graph_limit=0,
                    memory_limit=memory_limit)
        verdicts.append((r.verdict if r.kind is None else f"{r.verdict} ({r.kind})", r.message, r.stats.distinct))
        if r.verdict == "interrupted":  # a signal: no product search after it
            sig = "SIGTERM" if "SIGTERM" in r.message else "SIGINT"
            verdicts.append(verdicts[-1])
            res = DiffResult(files, DiffModel(sides), [], 0, False, sig, tuple(verdicts[:2]), ties, checks=checks)
            if worst is not None:
                res.notes.append(f"--worst {worst}: not computed, the run was interrupted by {sig}")
            return res
    dm = DiffModel(sides)
    limits = Limits(time_limit, MemoryGuard(memory_limit))
    with limits_on(sides[0].sm, limits), limits_on(sides[1].sm, limits):
        g = build_graph(dm, max_states=max_states, time_limit=time_limit, memory_limit=memory_limit,
                        expand_bad=True, edge_info=dm.is_progress, node_info=dm.status)
    # a difference found in a graph cut by a bound is real (its states and edges are), perhaps not the shortest
    wit = find_differences(dm, g)
    res = DiffResult(files, dm, wit, len(g), g.complete, g.bound_reason, tuple(verdicts), ties, checks=checks)
    if ties == "all":
        res.notes.append("--ties all: each variant's ties are explored independently, so a difference may come "
                         "from one variant's own ties, not from its policy")
    if worst is not None and g.bound_reason in ("SIGINT", "SIGTERM"):
        res.notes.append(f"--worst {worst}: not computed, the run was interrupted by {g.bound_reason}")
    elif worst is not None:
        res.worst = worst_diff(sides, worst, max_states=max_states, time_limit=time_limit,
                               memory_limit=memory_limit)
    return res


def worst_diff(sides, metric_text: str, *, max_states=None, time_limit=None, memory_limit=None) -> WorstDiff:
    from explorer.check import build_graph, follow, highest
    from explorer.runtime.limits import Limits, limits_on
    from explorer.runtime.memory import MemoryGuard
    from serq.check.diffworst import Accounts, WorstDiff
    from serq.check.worst import find_worst

    alone = []
    acc = Accounts(sides, metric_text)
    for s in sides:
        alone.append(find_worst(s.program, metric_text, ties="all" if s.m.ties_all else "seq", checks=s.checks,
                                max_states=max_states, time_limit=time_limit, memory_limit=memory_limit))
        if alone[-1].bound_reason in ("SIGINT", "SIGTERM"):  # a signal: no further search after it
            alone.extend(alone[-1:] * (2 - len(alone)))
            return WorstDiff(acc.metric, tuple(alone), (None, None), 0, False, alone[-1].bound_reason)
    alone = tuple(alone)
    if any(w.value is None for w in alone):
        return WorstDiff(acc.metric, alone, (None, None), 0, True, None)
    dm = DiffModel(sides, acc)
    limits = Limits(time_limit, MemoryGuard(memory_limit))
    with limits_on(sides[0].sm, limits), limits_on(sides[1].sm, limits):
        g = build_graph(dm, max_states=max_states, time_limit=time_limit, memory_limit=memory_limit,
                        expand_bad=True, node_info=lambda st: st.acc[2])
    found = []
    for d in (0, 1):
        (best, node) = highest(g, key=lambda v, d=d: -10 ** 30 if v[d] is None else v[d][0])
        if best[d] is None:
            found.append(None)
            continue
        path = g.path_to(node)
        trace = follow(dm, path[0][1], [(g.fps[v], ai) for v, ai in path[1:]])
        found.append(best[d] + (trace,))
    return WorstDiff(acc.metric, alone, tuple(found), len(g), g.complete, g.bound_reason)


def not_compared(program) -> list:
    """W515 at each `check eventually` line: the joint search compares
    deadlocks, livelocks and violations on one environment, not
    starvation (each variant's own verdict, printed, has it)."""
    from serq.diagnostics import Diagnostic

    return [Diagnostic(c.at[0], c.at[1], "W515", f"serq diff does not compare `check eventually {c.metric}`: its "
                       "joint search compares deadlocks, livelocks and violations; each variant's own verdict "
                       "has it", "warning", program.source, (), len(c.metric or " "))
            for c in program.checks if c.kind == "eventually" and c.at]
