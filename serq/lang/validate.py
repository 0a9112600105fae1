"""`validate(program)`: names, arity, types and moments (`serq.vocab`)
of every expression of a compiled or loaded IR program. The automaton's
structure is checked first (serq.ir.shape): nothing else can be checked,
or run, on a broken one."""

from __future__ import annotations

from serq import ir
from serq.ir.fold import EvalError, NotConstant, const_eval, const_fault
from serq.vocab import CTX_NAMES, FUNCS, POOL_FUNCS
from serq.diagnostics import Diagnostic, Sink, similar
from serq.ir.types import article, infer_type
from serq.ir.shape import shape_problems
from serq.ir.util import enclosing_pools, expr_names, walk_expr
from serq.lang.lint import lint
from serq.lang.liveness import eventually
from serq.lang.quantify import check_quantifiers
from serq.vocab import SLO_METRICS, EXPLORER_BANNED, EXPLORER_MAX_DOMAIN, MAX_INT, MAX_SESSIONS, MOMENT_TABLE_ROWS, Moment, moment


class Validator:
    def __init__(self, prog: ir.Program, theorem: bool, explorer: bool, simulate: bool = False):
        self.p = prog
        self.simulate = simulate
        self.sink = Sink(prog.source)  # a path valid from here (serq.ir.load resolves an IR file's)
        self.theorem = theorem
        self.explorer = explorer
        self.pools = {p.name: p for p in prog.pools}
        self.stages = {s.name: s for s in prog.stages}
        self.sessions = {s.name: s for s in prog.sessions}
        # Computed once for the whole program: validation stays linear in its size.
        self.attr_names = {a.name for s in prog.sessions for a in s.attrs}
        self.prog_types = {s.name: {a.name: a.type for a in s.attrs} for s in prog.sessions}  # for quantifiers
        # Pools a preemption can take back: finite, grown by some run, with a
        # victim order. A preempted session re-enters its hold and runs the
        # body again: a spawn, draw, choose or turn in it happens again.
        grown = {st.growing for sp in prog.sessions for st in sp.states if isinstance(st, ir.SRun) and st.growing}
        self.preemptible = {n for n, pl in self.pools.items()
                            if pl.cap is not None and pl.victim is not None and n in grown}

    # ---------------------------------------------------------- expressions
    def expr(self, e: ir.Expr | None, m: Moment, session: ir.SessionProgram | None = None,
             want: str | None = None, what: str = "this expression", programs=None) -> str:
        """Check names, moment and type; return the type."""
        if e is None:
            return "?"
        if isinstance(e, (ir.Num, ir.BoolLit)):  # a literal: no name, no fault
            return self._want(e, infer_type(e, {}), want, what)
        progs = [session] if session is not None else list(programs or [])
        fault = const_fault(e)
        if fault is not None:  # would crash the run or the search: an error now
            self.sink.error(fault[0] or e.at, "E401", f"cannot evaluate this constant expression: {fault[1]}")
        bound = check_quantifiers(self, e, m)  # serq.lang.quantify: quantifiers over sessions
        for x in walk_expr(e):
            at = x.at or e.at
            if isinstance(x, ir.Name):
                if m.attrs is None:
                    if id(x) in bound and bound[id(x)] is None:  # a quantifier's variable, read bare
                        continue
                    hint = [f"a quantifier's session is read through its variable: `{bound[id(x)]}.{x.name}`"
                            ] if id(x) in bound else []
                    if not progs and x.name not in self.attr_names:
                        self.sink.error(at, "E100", f"unknown name `{x.name}`", *hint)
                    else:
                        self.sink.error(at, "E302", f"`{x.name}` is a session attribute; {m.label} reads no session attribute",
                                        *hint)
                    continue
                for s in progs:
                    attr = next((a for a in s.attrs if a.name == x.name), None)
                    if attr is None:
                        hint = self._similar(x.name, [a.name for a in s.attrs] + list(CTX_NAMES))
                        where = f" of session `{s.name}`" if session is None else ""
                        self.sink.error(at, "E100", f"unknown name `{x.name}`{where}",
                                        *([f"did you mean `{hint}`?"] if hint else []))
                    elif attr.hidden and m.attrs == "visible":
                        why = [] if attr.origin == "draw" else [
                            f"`{x.name}` is hidden because a value assigned to it reads a hidden attribute"]
                        self.sink.error(at, "E301",
                                        f"`{x.name}` is hidden: {m.label} is a scheduler moment and may not read it",
                                        *why,
                                        "hidden attributes are readable at @session only: the scheduler must not peek at the answer",
                                        "declare a bound (e.g. `let max_out = 4;`) and use it instead")
            elif isinstance(x, ir.Ctx):
                if x.name not in m.ctx:
                    legal = [k for k, w in MOMENT_TABLE_ROWS if x.name in moment(k, w).ctx]
                    where = ", ".join(moment(k, w).label for k, w in MOMENT_TABLE_ROWS if x.name in moment(k, w).ctx)
                    self.sink.error(at, "E300", f"context variable `{x.name}` cannot be read at {m.label}",
                                    *([f"it is readable at {where}"] if legal else []))
                elif self.explorer and x.name in EXPLORER_BANNED:
                    self.sink.error(at, "E600", f"`{x.name}` reads the clock; the explorer has no clock and cannot treat it finitely")
            elif isinstance(x, ir.PoolRef):
                if x.pool not in self.pools:
                    hint = self._similar(x.pool, list(self.pools))
                    self.sink.error(at, "E101", f"unknown pool `{x.pool}`", *([f"did you mean `{hint}`?"] if hint else []))
                if x.fn not in m.poolfns:
                    self.sink.error(at, "E303", f"`{x.fn}({x.pool})` cannot be read at {m.label}")
            elif isinstance(x, ir.Call):
                if x.fn not in FUNCS:
                    hint = self._similar(x.fn, list(FUNCS) + list(POOL_FUNCS))
                    self.sink.error(at, "E104", f"unknown function `{x.fn}`",
                                    *([f"did you mean `{hint}`?"] if hint else []))
                else:
                    lo, hi = FUNCS[x.fn]
                    n = len(x.args)
                    if n < lo or (hi is not None and n > hi):
                        want_n = f"{lo}" if lo == hi else f"at least {lo}"
                        self.sink.error(at, "E107", f"`{x.fn}` takes {want_n} argument{'s' if lo != 1 else ''}, got {n}")
        types_by_prog = [self._types(s) for s in progs] or [{}]
        ty = "?"
        for i, types in enumerate(types_by_prog):
            ty = infer_type(e, types, (lambda at, msg: self.sink.error(at, "E200", msg)) if i == 0 else None,
                            programs=self.prog_types)
        return self._want(e, ty, want, what)

    def _want(self, e: ir.Expr, ty: str, want: str | None, what: str) -> str:
        if want and ty != "?":
            ok = ty == want or (want == "real" and ty == "int") or (want == "number" and ty in ("int", "real"))
            if not ok:
                self.sink.error(e.at, "E200", f"{what} must be {article(want)}, got {article(ty)}")
        return ty

    def _types(self, s: ir.SessionProgram) -> dict[str, str]:
        """A session program's attribute types, built once."""
        return self.prog_types.get(s.name) or {a.name: a.type for a in s.attrs}

    _similar = staticmethod(similar)

    # ---------------------------------------------------------- top level
    def run(self, shape_checked: bool = False) -> list[Diagnostic]:
        # A hand-edited `.ir.json` can break the automaton itself; nothing
        # else can be checked (or run) on a broken one.
        for path, code, msg in (() if shape_checked else shape_problems(self.p)):
            self.sink.error(self._position(path), code, msg)
        if self.sink.errors:
            return sorted(self.sink.items)
        self.prefixes: dict[str, ir.Prefix] = {}
        for pf in self.p.prefixes:  # an edited IR: each extends one before it, and is longer
            if pf.name in self.prefixes:
                self.sink.error(pf.at, "E105", f"prefix `{pf.name}` is declared twice")
            elif pf.parent is not None and pf.parent not in self.prefixes:
                self.sink.error(pf.at, "E110", f"prefix `{pf.name}` extends `{pf.parent}`, which is not declared before it")
            elif pf.length < 1 or (pf.parent is not None and pf.length <= self.prefixes[pf.parent].length):
                self.sink.error(pf.at, "E402", f"prefix `{pf.name}` must be at least one token longer than "
                                f"{'`' + pf.parent + '`' if pf.parent else 'nothing'}, got {pf.length} in all")
            else:
                self.prefixes[pf.name] = pf
        for pool in self.p.pools:
            self.pool(pool)
        for st in self.p.stages:
            self.stage(st)
        for s in self.p.sessions:
            self.session(s)
        for w in self.p.workload:
            self.call(w.program, w.args, w.at, "workload line", None, moment("const"))
            if self.explorer and isinstance(w.arrival, ir.ArriveTrace):
                pass  # the explorer ignores arrival times
        slos: dict[tuple, ir.Check] = {}
        for c in self.p.checks:
            if c.kind == "invariant":
                self.expr(c.e, moment("check"), want="bool", what="an invariant")
            elif c.kind == "sometimes":  # the same moment: it reads what an invariant reads
                self.expr(c.e, moment("check"), want="bool", what="a `sometimes` condition")
            elif c.kind == "slo":
                self.slo(c, slos)
        eventually(self.p.checks, self.sink)
        if not self.p.workload:
            self.sink.warn((1, 1), "W502", "the instance has no workload: no session will run")
        elif not any(w.count for w in self.p.workload):
            self.sink.warn(self.p.workload[0].at, "W502", "every workload line has count 0: no session will run")
        if not self.sink.errors:  # a program that does not load runs nothing its defaults could mislead
            lint(self.p, self.sink, self.simulate)
        return sorted(self.sink.items)

    def slo(self, c: ir.Check, seen: dict) -> None:
        """`check METRIC <= BOUND;`: a known metric, a pool that exists
        (`queue` only), a bound that is a non-negative integer constant or,
        for a per-request metric, an integer attribute of every program;
        each metric (and pool) bounded once; W511 where it can never fail."""
        if c.metric not in SLO_METRICS:
            hint = self._similar(c.metric or "", list(SLO_METRICS))
            self.sink.error(c.at, "E100", f"unknown metric `{c.metric}`; a check bounds {', '.join(SLO_METRICS)}",
                            *([f"did you mean `{hint}`?"] if hint else []), span=len(c.metric or " "))
            return
        if c.pool is not None and c.metric != "queue":
            self.sink.error(c.at, "E107", f"`{c.metric}` takes no pool (only `queue(POOL)` does)",
                            span=len(c.metric))
            return
        if c.pool is not None and c.pool not in self.pools:
            hint = self._similar(c.pool, list(self.pools))
            self.sink.error(c.at, "E101", f"unknown pool `{c.pool}`; the pools are {', '.join(self.pools) or 'none'}",
                            *([f"did you mean `{hint}`?"] if hint else []), span=len(c.metric))
            return
        b = c.e
        if isinstance(b, ir.Name):
            if c.metric == "queue":
                self.sink.error(b.at, "E401", f"the bound of `check queue` must be a constant; `{b.name}` is not "
                                "a constant (a per-request check may read a session attribute, a per-state one not)",
                                span=len(b.name))
                return
            for s in self.p.sessions:
                attr = next((a for a in s.attrs if a.name == b.name), None)
                if attr is None:
                    hint = self._similar(b.name, [a.name for a in s.attrs])
                    self.sink.error(b.at, "E100", f"unknown name `{b.name}` of session `{s.name}`: a bound read per "
                                    "request must be a constant or an attribute of every session program",
                                    *([f"did you mean `{hint}`?"] if hint else []), span=len(b.name))
                    return
                if attr.type != "int":
                    self.sink.error(b.at, "E200", f"the bound of `check {c.metric}` must be an integer; `{b.name}` "
                                    f"of session `{s.name}` is {article(attr.type)}", span=len(b.name))
                    return
        elif not (isinstance(b, ir.Num) and isinstance(b.v, int) and not isinstance(b.v, bool)):
            self.sink.error(b.at if b is not None else c.at, "E200",
                            f"the bound of `check {c.metric}` must be an integer constant")
            return
        elif b.v < 0:
            self.sink.error(b.at, "E402", f"the bound of `check {c.metric}` must be at least 0, got {b.v}")
            return
        key = (c.metric, c.pool)
        if key in seen:
            first = seen[key].at
            what = f"{c.metric}({c.pool})" if c.pool else c.metric
            self.sink.error(c.at, "E403", f"`check {what}` is given twice (first at line {first[0] if first else '?'}): "
                            "keep the bound meant", span=len(c.metric))
            return
        seen[key] = c
        if c.metric in ("preemptions", "recomputed") and not self.preemptible:
            self.sink.warn(c.at, "W511", f"`check {c.metric}` can never be violated: no request is ever preempted "
                           "(no run grows a finite pool that preempts)", span=len(c.metric))
        if c.metric == "queue" and isinstance(b, ir.Num) and not self._spawns():
            total = sum(w.count for w in self.p.workload)
            if b.v >= total:
                self.sink.warn(c.at, "W511", f"`check queue{'(' + c.pool + ')' if c.pool else ''} <= {b.v}` can never "
                               f"be violated: the workload starts {total} session{'s' if total != 1 else ''} and "
                               "none spawns", span=len(c.metric))

    def _spawns(self) -> bool:
        return any(isinstance(st, ir.SSpawn) for s in self.p.sessions for st in s.states)

    def _position(self, path: tuple):
        """The source position nearest to a JSON path of the program."""
        node, best = self.p, None
        for step in path:
            try:
                node = node[step] if isinstance(step, int) else getattr(node, step)
            except (AttributeError, IndexError, TypeError):
                break
            best = getattr(node, "at", None) or best
        return best

    def _users(self, pred) -> list[ir.SessionProgram]:
        return [s for s in self.p.sessions if any(pred(st) for st in s.states)]

    def pool(self, pool: ir.Pool) -> None:
        # the compiler guarantees these; an edited IR may not
        if pool.cap is not None and pool.cap < 0:
            self.sink.error(pool.at, "E402", f"pool `{pool.name}`: `cap` must be at least 0, got {pool.cap}")
        if pool.block < 1:
            self.sink.error(pool.at, "E402", f"pool `{pool.name}`: `block` must be at least 1, got {pool.block}")
        if pool.admit_via is not None and pool.admit_via not in self.stages:
            self.sink.error(pool.at, "E102", f"pool `{pool.name}` is admitted via unknown stage `{pool.admit_via}`")
        holders = self._users(lambda st: isinstance(st, ir.SAcquire) and any(i.pool == pool.name for i in st.hold.items))
        for key in pool.queue.keys:
            self.expr(key.e, moment("queue", pool.name), programs=holders, want="number", what="a queue key")
        if pool.victim is not None:
            for key in pool.victim.keys:
                self.expr(key.e, moment("victim", pool.name), programs=holders, want="number", what="a victim key")
        for key in pool.evict.keys:
            self.expr(key.e, moment("evict", pool.name), want="number", what="an evict key")
        if pool.queue.tie.event == "released":
            self.sink.error(pool.at, "E404", f"pool `{pool.name}`: a queue cannot be ordered by `released`")
        if pool.victim is not None and pool.victim.tie.event == "released":
            self.sink.error(pool.at, "E404", f"pool `{pool.name}`: a victim order cannot end with `released`")
        if pool.evict.tie.event != "released":
            self.sink.error(pool.at, "E404", f"pool `{pool.name}`: an eviction order must end with `released`")

    def stage(self, st: ir.Stage) -> None:
        runners = self._users(lambda s: isinstance(s, ir.SRun) and s.stage == st.name)
        self.expr(st.budget, moment("budget", st.name), want="int", what="a budget")
        self.expr(st.chunk, moment("chunk", st.name), want="int", what="a chunk")
        for what, e in (("budget", st.budget), ("chunk", st.chunk)):
            try:
                v = const_eval(e) if e is not None else None
            except (NotConstant, EvalError, ArithmeticError, TypeError, ValueError):
                continue  # depends on the step (checked when it runs), or E401 above
            if v is not None and v < 1:
                self.sink.error(e.at or st.at, "E402", f"stage `{st.name}`: a `{what}` below 1 serves nothing, got {v}")
        self.expr(st.cost, moment("cost", st.name), want="number", what="a cost")
        for key in st.serve.keys:
            self.expr(key.e, moment("serve", st.name), programs=runners, want="number", what="a serve key")
        if st.serve.tie.event == "released":
            self.sink.error(st.at, "E404", f"stage `{st.name}`: a serve order cannot end with `released`")

    def _in_range(self, e: ir.Expr, what: str) -> None:
        """E408 for a constant whose value a session's integer row cannot
        hold (beyond 2^62 in magnitude, or not finite)."""
        try:
            v = const_eval(e)
        except (NotConstant, EvalError, TypeError, ValueError):
            return  # reported where it is evaluated, or not a constant
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not -MAX_INT < v < MAX_INT:
            self.sink.error(e.at, "E408", f"{what} is {v:.6g}: out of range (at most 2^62 in magnitude)")

    def call(self, program: str, args, at, what: str, session, m: Moment) -> None:
        target = self.sessions.get(program)
        if target is None:
            hint = self._similar(program, list(self.sessions))
            self.sink.error(at, "E103", f"unknown session program `{program}`",
                            *([f"did you mean `{hint}`?"] if hint else []))
            for _, e in args:
                self.expr(e, m, session=session)
            return
        names = [p.name for p in target.params]
        given = set()
        for n, e in args:
            self.expr(e, m, session=session, want="number", what="an argument")
            if what == "workload line":
                self._in_range(e, f"the argument `{n}`")
            if n.startswith("#"):
                self.sink.error(e.at or at, "E107", f"too many arguments: `{program}` takes {len(names)}")
            elif n not in names:
                self.sink.error(e.at or at, "E107", f"`{program}` has no parameter `{n}`",
                                f"its parameters: {', '.join(names) or 'none'}")
            elif n in given:
                self.sink.error(e.at or at, "E107", f"parameter `{n}` is given twice")
            given.add(n)
        for p in target.params:
            if p.default is None and p.name not in given:
                self.sink.error(at, "E107", f"{what}: `{program}` needs a value for parameter `{p.name}`")

    # ---------------------------------------------------------- sessions
    def session(self, s: ir.SessionProgram) -> None:
        S = moment("session")
        types = {a.name: a.type for a in s.attrs}
        attr_names = set(types)
        for p in s.params:
            if p.default is not None:
                self.expr(p.default, moment("const"), want="number", what="a parameter default")
        held_at: dict[int, set[str]] = {}

        def held(scope_id: int) -> set[str]:
            if scope_id not in held_at:
                held_at[scope_id] = enclosing_pools(s, scope_id)
            return held_at[scope_id]

        def finite_holds(scope_id: int) -> list[str]:
            return sorted(p for p in held(scope_id) if self.pools.get(p) and self.pools[p].cap is not None)

        preemptible = self.preemptible
        for st in s.states:
            if isinstance(st, (ir.SSpawn, ir.SDraw, ir.SChoose, ir.STurn)):
                pools = sorted(held(st.scope) & preemptible)
                if pools:
                    what = {"spawn": "spawns", "draw": "draws", "choose": "chooses", "turn": "waits for a turn"}[st.kind]
                    self.sink.warn(st.at, "W504", f"this {st.kind} is inside a hold of `{pools[0]}`, which can be "
                                                  f"preempted: after a preemption the session {what} again",
                                   "a preempted session resumes at its hold and re-runs the body, attributes intact; "
                                   "move the statement before the hold if it must happen once")

        for st in s.states:
            at = st.at
            if isinstance(st, ir.SSet):
                if st.attr not in attr_names:
                    hint = self._similar(st.attr, sorted(attr_names))
                    self.sink.error(at, "E109", f"`set {st.attr}`: `{st.attr}` is not declared",
                                    *([f"did you mean `{hint}`?"] if hint else [f"declare it first with `let {st.attr} = ...;`"]))
                    self.expr(st.e, S, session=s)
                else:
                    ty = self.expr(st.e, S, session=s)
                    want = types[st.attr]
                    if ty != "?" and not (ty == want or (want == "real" and ty == "int")):
                        self.sink.error(st.e.at or at, "E200", f"`{st.attr}` is {article(want)}; cannot assign {article(ty)}")
            elif isinstance(st, ir.SBranch):
                self.expr(st.cond, S, session=s, want="bool", what="the test of `if` or `while`")
            elif isinstance(st, (ir.SDraw, ir.SChoose)):
                self.domain(st.domain, s)
                if isinstance(st, ir.SDraw) and st.dist is not None:
                    self.dist(st.dist, st.domain, s)
                if isinstance(st, ir.SChoose) and st.key is not None:
                    self.expr(st.key, S, session=s, want="number", what="a choose key")
            elif isinstance(st, ir.STurn):
                self.expr(st.think, S, session=s, want="number", what="a think time")
            elif isinstance(st, ir.SAcquire):
                self.acquire(st, s)
            elif isinstance(st, ir.SRun):
                self.expr(st.amount, S, session=s, want="int", what="a run length")
                if st.stage not in self.stages:
                    hint = self._similar(st.stage, list(self.stages))
                    self.sink.error(at, "E102", f"{st.run} on unknown stage `{st.stage}`",
                                    *([f"did you mean `{hint}`?"] if hint else []))
                if st.growing is not None:
                    if st.growing not in self.pools:
                        self.sink.error(at, "E101", f"`growing {st.growing}`: unknown pool `{st.growing}`")
                    elif st.growing not in held(st.scope):
                        self.sink.error(at, "E406", f"`growing {st.growing}`: no enclosing hold holds `{st.growing}`",
                                        f"wrap the run in `hold {st.growing} ... {{ }}`")
                if st.progress is not None:
                    a = next((x for x in s.attrs if x.name == st.progress), None)
                    if a is None:
                        self.sink.error(at, "E108", f"`progress {st.progress}`: `{st.progress}` is not an attribute of `{s.name}`",
                                        f"declare it before the hold, e.g. `let {st.progress} = 0;`")
                    elif a.type != "int" or a.origin in ("draw", "choose", "internal"):
                        self.sink.error(at, "E108", f"`progress {st.progress}`: a progress counter must be an int `let` attribute or parameter")
            elif isinstance(st, ir.SSpawn):
                self.call(st.program, st.args, at, "spawn", s, S)
                self.expr(st.count, S, session=s, want="int", what="a spawn count")
                n = _constant(st.count)
                if isinstance(n, int) and not isinstance(n, bool) and not 0 <= n <= MAX_SESSIONS:
                    self.sink.error(st.count.at or at, "E402", f"a spawn count must be from 0 to {MAX_SESSIONS:,} "
                                                               f"(the sessions a row may hold), got {n}")
            elif isinstance(st, ir.SJoin):
                fin = finite_holds(st.scope)
                if fin:
                    msg = f"`join` while holding finite pool{'s' if len(fin) > 1 else ''} {', '.join(f'`{p}`' for p in fin)}"
                    note = "children that need these units can wait forever for a parent that waits for them"
                    if self.theorem:
                        self.sink.error(at, "E500", msg + ": the completion theorem forbids it", note)
                    else:
                        self.sink.warn(at, "W500", msg + " can deadlock", note)
            elif isinstance(st, ir.SDrop):
                if st.pool not in self.pools:
                    self.sink.error(at, "E101", f"`drop {st.pool}`: unknown pool `{st.pool}`")
            elif isinstance(st, ir.SAssert):
                self.expr(st.e, S, session=s, want="bool", what="an assertion")
        for sc in s.scopes:
            for k in sc.keep:
                if k.pool not in sc.pools:
                    self.sink.error(k.at, "E406", f"`keep ({k.pool} ...)`: this hold does not hold `{k.pool}`")
                if k.e is not None:
                    self.expr(k.e, S, session=s, want="int", what="a keep amount")
        self.busy_loops(s)

    def acquire(self, st: ir.SAcquire, s: ir.SessionProgram) -> None:
        spec = st.hold
        first = spec.items[0].pool if spec.items else "?"
        A = moment("admit", first)
        for b in spec.bindings:
            self.expr(b.e, A, session=s)
        vias = set()
        for it in spec.items:
            pool = self.pools.get(it.pool)
            if pool is None:
                hint = self._similar(it.pool, list(self.pools))
                self.sink.error(it.at, "E101", f"hold on unknown pool `{it.pool}`",
                                *([f"did you mean `{hint}`?"] if hint else []))
            else:
                vias.add(pool.admit_via)
            if it.prefix is not None and it.prefix not in self.prefixes:
                hint = self._similar(it.prefix, list(self.prefixes))
                self.sink.error(it.prefix_at or it.at, "E110", f"hold on unknown prefix `{it.prefix}`",
                                *([f"did you mean `{hint}`?"] if hint else []))
            Ai = moment("admit", it.pool)
            self.expr(it.reuse, Ai, session=s, want="int", what="`reuse`")
            self.expr(it.need, Ai, session=s, want="int", what="`need`")
            if it.take != it.need:  # `reserve E` and `P E` set both to one expression: report it once
                self.expr(it.take, Ai, session=s, want="int", what="`take`")
        if len(vias) > 1:
            desc = ", ".join(f"`{i.pool}` ({'via ' + self.pools[i.pool].admit_via if self.pools[i.pool].admit_via else 'event driven'})"
                             for i in spec.items if i.pool in self.pools)
            self.sink.error(st.at, "E405", "one hold is one admission decision: its pools must be admitted the same way",
                            f"here: {desc}")
        if spec.admit_if is not None:
            self.expr(spec.admit_if, A, session=s, want="bool", what="`admit if`")
        gate = self.pools.get(first)
        for it in spec.items[1:]:
            other = self.pools.get(it.pool)
            if gate is None or other is None:
                continue
            for opt in ("queue", "hol"):
                if getattr(other, opt) != getattr(gate, opt):
                    self.sink.warn(it.at, "W503", f"pool `{it.pool}`'s `{opt}` does not apply to this hold: "
                                                  f"a hold waits in the queue of its first pool, `{first}`",
                                   f"list `{it.pool}` first, or give `{first}` the same `{opt}`")

    def domain(self, d: ir.Domain, s: ir.SessionProgram) -> None:
        S = moment("session")
        for v in d.values:
            self.expr(v, S, session=s, want="int", what="a domain value")
        self.expr(d.lo, S, session=s, want="int", what="a range bound")
        self.expr(d.hi, S, session=s, want="int", what="a range bound")
        lo, hi = _constant(d.lo), _constant(d.hi)
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            self.sink.error(d.at, "E409", f"the range {lo}..{hi} is empty: nothing to draw",
                            f"write the smaller bound first: {hi}..{lo}")
        if self.explorer and d.lo is not None and d.hi is not None:
            try:
                width = int(const_eval(d.hi)) - int(const_eval(d.lo)) + 1
            except (NotConstant, EvalError, ArithmeticError, TypeError, ValueError):
                return  # bounds read attributes (finite at every draw), or E401 above
            if width > EXPLORER_MAX_DOMAIN:
                self.sink.error(d.at, "E601", f"a domain of {width} values is too large to explore "
                                              f"(the explorer takes every value; at most {EXPLORER_MAX_DOMAIN})",
                                "narrow the domain for exploration, e.g. to its extreme and typical values")

    def dist(self, dist: ir.Dist, dom: ir.Domain, s: ir.SessionProgram) -> None:
        S = moment("session")
        for p in dist.params:
            self.expr(p, S, session=s, want="number", what="a distribution parameter")
        want = {"uniform": 0, "geometric": 1, "poisson": 1}.get(dist.name)
        self.dist_params(dist)
        if dist.name == "weights":
            # A weight belongs to a position of the domain; only constant
            # values say which positions are one value (their weights add up)
            # and a constant range how many positions there are.
            try:
                values = [const_eval(v) for v in dom.values]
                width = int(const_eval(dom.hi)) - int(const_eval(dom.lo)) + 1 if dom.lo is not None else None
            except NotConstant as nc:
                self.sink.error(nc.at or dist.at, "E107", f"`weights` needs a constant domain; {nc.what} is not a constant",
                                "values only known when drawn could coincide and leave a weight without its value")
                return
            except (EvalError, ArithmeticError, TypeError, ValueError):
                return  # reported where the domain is checked
            if width is not None and len(dist.params) != max(width, 0):
                self.sink.error(dist.at, "E107", f"`weights` needs one weight per domain value ({max(width, 0)}), got {len(dist.params)}")
            elif values and len(dist.params) != len(dom.values):
                self.sink.error(dist.at, "E107", f"`weights` needs one weight per domain value ({len(dom.values)}), got {len(dist.params)}")
            elif not dom.values and not dist.params:
                self.sink.error(dist.at, "E107", "`weights` needs one weight per domain value")
        elif want is not None and len(dist.params) != want:
            self.sink.error(dist.at, "E107", f"`{dist.name}` takes {want} parameter{'s' if want != 1 else ''}, got {len(dist.params)}")

    def dist_params(self, dist: ir.Dist) -> None:
        """Constant parameters in the range the distribution is defined on
        (E409); parameters read from attributes are checked when drawn."""
        vals = [_constant(p) for p in dist.params]
        if dist.name in ("geometric", "poisson") and len(vals) == 1:
            v, at = vals[0], dist.params[0].at or dist.at
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return
            if dist.name == "geometric" and not 0 < v <= 1:
                self.sink.error(at, "E409", f"`geometric(p)` needs a probability 0 < p <= 1, got {v}",
                                "the weight of the k-th value is p(1-p)^k")
            elif dist.name == "poisson" and not v > 0:
                self.sink.error(at, "E409", f"`poisson(λ)` needs a positive mean λ, got {v}")
        elif dist.name == "weights" and vals:
            for v, p in zip(vals, dist.params):
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                    self.sink.error(p.at or dist.at, "E409", f"a weight cannot be negative, got {v}")
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals) and sum(vals) == 0:
                self.sink.error(dist.at, "E409", "the weights are all 0: no value can be drawn")

    def busy_loops(self, s: ir.SessionProgram) -> None:
        """Warn about a cycle of internal states: a loop whose body never
        blocks runs forever inside one macro step."""
        blocking = set(ir.BLOCKING_KINDS)
        succ: dict[int, list[int]] = {}
        for i, st in enumerate(s.states):
            if st.kind in blocking:
                continue
            nxt = [st.next]
            if isinstance(st, ir.SBranch):
                nxt.append(st.alt)
            succ[i] = [n for n in nxt if n is not None and s.states[n].kind not in blocking]
        color: dict[int, int] = {}
        reported: set[int] = set()
        for root in succ:
            if root in color:
                continue
            stack = [(root, iter(succ[root]))]
            color[root] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[node] = 2
                    stack.pop()
                elif color.get(nxt) == 1:
                    head = s.states[nxt]
                    # `repeat N` counts down an internal counter nothing else
                    # can set: it always ends, so it is no busy loop
                    internal = {a.name for a in s.attrs if a.origin == "internal"}
                    counted = isinstance(head, ir.SBranch) and bool(internal & set(expr_names(head.cond)))
                    if nxt not in reported and not counted:
                        reported.add(nxt)
                        self.sink.warn(head.at, "W501", "this loop can repeat without ever blocking (no turn, hold, run, join or end in it)",
                                       "if its condition stays true the session spins forever in one step")
                elif nxt not in color:
                    color[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))


def _constant(e: ir.Expr | None):
    """The value of a constant expression, or None (not constant, or a
    fault reported where the expression is checked)."""
    if e is None:
        return None
    try:
        return const_eval(e)
    except (NotConstant, EvalError, ArithmeticError, TypeError, ValueError):
        return None


def validate(prog: ir.Program, *, theorem: bool = False, explorer: bool = False,
             shape_checked: bool = False, simulate: bool = False) -> list[Diagnostic]:
    """Every diagnostic of `prog`, sorted. `shape_checked`: the caller has
    already checked its shape (serq.ir.load does, located in the JSON).
    `simulate`: the program is about to be simulated (`serq run`, `serq
    check`), whose clock reads the stages' costs (W506)."""
    return Validator(prog, theorem, explorer, simulate).run(shape_checked)
