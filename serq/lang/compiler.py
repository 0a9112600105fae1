"""Lark tree → IR: declarations, pools, stages, the workload and checks;
constants folded; arguments matched to parameters. Expressions are built
by serq.lang.exprbuild, session bodies laid out as automata by serq.lang.automaton.
Names, types and moments are checked afterwards by `serq.lang.validate` on the
IR itself, so a hand-edited `.ir.json` gets the same checks."""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from serq import ir
from serq.lang.automaton import SessionBuilder
from serq.diagnostics import Sink
from serq.ir.fold import EvalError, NotConstant, const_eval
from serq.lang.exprbuild import ExprBuilder, number_value, pos
from serq.ir.util import walk_expr
from serq.vocab import CTX_NAMES, FAIRNESS, FUNCS, MAX_INT, MAX_WORKLOAD, SEQ_EVENTS, UNIT_NS, arity_ok


class Compiler:
    def __init__(self, file: str, sink: Sink, overrides: dict[str, int | float] | None = None):
        self.file = file
        self.sink = sink
        self.overrides = overrides or {}  # `serq sweep`: constants given a value from outside
        self.consts: dict[str, int | float] = {}
        self.signatures: dict[str, tuple[ir.Param, ...]] = {}
        self.stage_names: list[str] = []
        self.prefixes: dict[str, ir.Prefix] = {}
        self.tick: str | None = None
        self.exprs = ExprBuilder(sink, self.consts, self.prefixes)  # sees each constant and prefix once it is declared

    # ------------------------------------------------------------ expressions
    def expr(self, t) -> ir.Expr:
        return self.exprs.transform(t)

    def literal(self, tok: Token) -> int | float:
        """A number token outside an expression, checked for range (E408)."""
        try:
            return number_value(str(tok))
        except OverflowError as e:
            self.sink.error(pos(tok), "E408", str(e), span=min(len(str(tok)), 40))
            return 1

    def bare_time(self, t, what: str) -> None:
        """W505 for a time written as a plain number (nanoseconds, which is
        rarely what was meant: `every 2` is 2 ns)."""
        if isinstance(t, Tree) and t.data == "number" and float(str(t.children[0])) != 0:
            n = str(t.children[0])
            self.sink.warn(pos(t), "W505", f"`{what} {n}` is {n} ns: a time without a unit is in nanoseconds",
                           f"write the unit: `{n}s`, `{n}ms`, `{n}us`, or `{n}ns` to keep nanoseconds",
                           span=len(n))

    def const(self, t, what: str, *, integer: bool = True, minimum: int | None = None):
        e = self.expr(t)
        call = next((x for x in walk_expr(e) if isinstance(x, ir.Call) and x.fn in FUNCS
                     and not arity_ok(x.fn, len(x.args))), None)
        if call is not None:
            lo, hi = FUNCS[call.fn]
            self.sink.error(call.at or pos(t), "E107", f"`{call.fn}` takes {lo if lo == hi else f'at least {lo}'} "
                                                       f"argument{'s' if lo != 1 else ''}, got {len(call.args)}")
            return None
        try:
            v = const_eval(e)
        except NotConstant as nc:
            self.sink.error(nc.at or pos(t), "E401", f"{what} must be a constant expression; {nc.what} is not a constant")
            return None
        except EvalError as ex:
            if ex.overflow:
                self.sink.error(pos(t), "E408", f"{what}: {ex}")
            else:
                self.sink.error(pos(t), "E401", f"{what}: cannot evaluate this constant ({ex})")
            return None
        if isinstance(v, int) and not -MAX_INT < v < MAX_INT:
            self.sink.error(pos(t), "E408", f"{what}: the value is beyond 2^62")
            return None
        if integer:
            if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
                self.sink.error(pos(t), "E200", f"{what} must be an integer, got {v!r}")
                return None
            v = int(v)
        if minimum is not None and v < minimum:
            self.sink.error(pos(t), "E402", f"{what} must be at least {minimum}, got {v}")
            return None
        return v

    # ------------------------------------------------------------ orders
    def order(self, t, default_tie: ir.Tie) -> ir.Order:
        keys = []
        for k in t.children:
            desc = k.children[0] is not None
            keys.append(ir.OrderKey(e=self.expr(k.children[1]), desc=desc))
        tie = default_tie
        if keys and isinstance(keys[-1].e, ir.Ctx) and keys[-1].e.name in SEQ_EVENTS:
            last = keys.pop()
            tie = ir.Tie(event=last.e.name, desc=last.desc)
        return ir.Order(keys=tuple(keys), tie=tie)

    # ------------------------------------------------------------ top level
    def compile(self, tree: Tree) -> ir.Program:
        items = tree.children
        self.prefix_names = {str(it.children[0]) for it in items if it.data == "prefix_decl"}
        for it in items:
            if it.data == "const_decl":
                name = str(it.children[0])
                if name in self.consts or name in self.prefixes:
                    self.sink.error(pos(it.children[0]), "E105", f"constant `{name}` is declared twice")
                if name in CTX_NAMES:
                    self.sink.error(pos(it.children[0]), "E106", f"`{name}` is a context variable and cannot be a constant's name")
                if name in self.overrides:
                    v = self.overrides[name]
                else:
                    v = self.const(it.children[1], f"constant `{name}`", integer=False)
                if v is not None:
                    self.consts[name] = v
            elif it.data == "prefix_decl":
                self.prefix_decl(it)
            elif it.data == "tick_decl":
                first, second = str(it.children[0]), str(it.children[1])
                if self.tick is not None:
                    self.sink.error(pos(it), "E403", "`tick` is given twice")
                elif first == second:
                    self.sink.error(pos(it.children[1]), "E403", f"`tick {first} before {second}`: the two must differ; "
                                    "write `tick arrivals before turns` or `tick turns before arrivals`")
                else:
                    self.tick = first
            elif it.data == "stage_decl":
                self.stage_names.append(str(it.children[0]))
            elif it.data == "session_decl":
                name = str(it.children[0])
                params = self.params(it.children[1])
                if name not in self.signatures:
                    self.signatures[name] = params
        pools, stages, sessions, workload, checks = [], [], [], [], []
        seen: dict[tuple[str, str], Any] = {}
        for it in items:
            kind = it.data.removesuffix("_decl")
            if kind in ("pool", "stage", "session"):
                name = str(it.children[0])
                if (kind, name) in seen:
                    self.sink.error(pos(it.children[0]), "E105", f"{kind} `{name}` is declared twice",
                                    f"the first declaration is at line {seen[(kind, name)][0]}")
                    continue
                seen[(kind, name)] = pos(it.children[0])
            if kind == "pool":
                pools.append(self.pool(it))
            elif kind == "stage":
                stages.append(self.stage(it))
            elif kind == "session":
                sessions.append(self.session(it))
            elif kind == "workload":
                workload.extend(self.wl_line(l) for l in it.children)
            elif kind == "check":
                checks.extend(c for c in map(self.check, it.children) if c is not None)
        consts = tuple((k, int(v) if isinstance(v, bool) else v) for k, v in self.consts.items())  # numbers, as validated
        return ir.Program(source=self.file, consts=consts, pools=tuple(pools),
                          stages=tuple(stages), sessions=tuple(sessions),
                          workload=tuple(w for w in workload if w is not None), checks=tuple(checks),
                          prefixes=tuple(self.prefixes.values()), tick=self.tick or "arrivals")

    def prefix_decl(self, it) -> None:
        """`prefix NAME = E;` or `prefix NAME = PARENT + E;`, PARENT a prefix
        declared before it."""
        name, e_t = str(it.children[0]), it.children[1]
        at = pos(it.children[0])
        if name in self.consts or name in self.prefixes:
            self.sink.error(at, "E105", f"`{name}` is declared twice")
            return
        if name in CTX_NAMES:
            self.sink.error(at, "E106", f"`{name}` is a context variable and cannot be a prefix's name")
            return
        parent = None
        own_t = e_t
        if isinstance(e_t, Tree) and e_t.data == "binop" and str(e_t.children[1]) == "+" \
                and isinstance(e_t.children[0], Tree) and e_t.children[0].data == "name":
            first = str(e_t.children[0].children[0])
            if first in self.prefixes:
                parent, own_t = self.prefixes[first], e_t.children[2]
            elif first in self.prefix_names:
                self.sink.error(pos(e_t.children[0]), "E110", f"prefix `{name}` extends `{first}`, "
                                f"which is declared after it; declare `{first}` first")
                return
        own = self.const(own_t, f"prefix `{name}`" + (f" (beyond `{parent.name}`)" if parent else ""), minimum=1)
        if own is None:
            return
        total = own + (parent.length if parent else 0)
        if total >= MAX_INT:
            self.sink.error(pos(e_t), "E408", f"prefix `{name}` is too long (at most 2^62 tokens)")
            return
        self.prefixes[name] = ir.Prefix(name=name, length=total, parent=parent.name if parent else None, at=at)

    def _once(self, seen: set, opt, what: str) -> bool:
        if opt.data in seen:
            self.sink.error(pos(opt), "E403", f"`{what}` is given twice")
            return False
        seen.add(opt.data)
        return True

    def pool(self, t) -> ir.Pool:
        name = str(t.children[0])
        f: dict[str, Any] = {"name": name, "at": pos(t.children[0]),
                             "queue": ir.Order(tie=ir.Tie(event="arrived")),
                             "victim": ir.Order(tie=ir.Tie(event="admitted", desc=True)),
                             "evict": ir.Order(tie=ir.Tie(event="released"))}
        seen: set = set()
        for opt in t.children[1:]:
            word = opt.data.removeprefix("pool_")
            if not self._once(seen, opt, word):
                continue
            a = opt.children[0]
            if opt.data == "pool_cap":
                f["cap"] = self.const(a, f"`cap` of pool `{name}`", minimum=0)
            elif opt.data == "pool_block":
                v = self.const(a, f"`block` of pool `{name}`", minimum=1)
                if v is not None:
                    f["block"] = v
            elif opt.data == "pool_admit":
                f["admit_via"] = str(a)
            elif opt.data == "pool_queue":
                f["queue"] = self.order(a, ir.Tie(event="arrived"))
            elif opt.data == "pool_preempt":
                v = a.children[0]
                if isinstance(v, Token) and v.type == "LIFO":
                    f["victim"] = ir.Order(tie=ir.Tie(event="admitted", desc=True))
                elif isinstance(v, Token) and v.type == "FIFO":
                    f["victim"] = ir.Order(tie=ir.Tie(event="admitted"))
                elif isinstance(v, Token) and v.type == "NONE":
                    f["victim"] = None
                else:
                    f["victim"] = self.order(v, ir.Tie(event="admitted", desc=True))
            elif opt.data == "pool_evict":
                v = a.children[0]
                if isinstance(v, Token):
                    f["evict"] = ir.Order(tie=ir.Tie(event="released"))
                else:
                    f["evict"] = self.order(v, ir.Tie(event="released"))
            elif opt.data == "pool_requeue":
                f["requeue"] = str(a)
            elif opt.data == "pool_hol":
                f["hol"] = str(a)
            elif opt.data == "pool_copies":
                f["copies"] = str(a)
            elif opt.data == "pool_cache":
                f["cache"] = str(a)
        if f.get("cap") is None:
            f.pop("cap", None)
        return ir.Pool(**f)

    def stage(self, t) -> ir.Stage:
        name = str(t.children[0])
        f: dict[str, Any] = {"name": name, "at": pos(t.children[0]),
                             "serve": ir.Order(tie=ir.Tie(event="admitted"))}
        seen: set = set()
        for opt in t.children[1:]:
            word = opt.data.removeprefix("stage_")
            if not self._once(seen, opt, word):
                continue
            a = opt.children[0]
            if word == "serve":
                f["serve"] = self.order(a, ir.Tie(event="admitted"))
            elif word == "self_preempt":
                f["self_preempt"] = str(a)
            else:
                if word == "cost":
                    self.bare_time(a, "cost")
                f[word] = self.expr(a)
        return ir.Stage(**f)

    def params(self, t) -> tuple[ir.Param, ...]:
        if t is None:
            return ()
        out = []
        for p in t.children:
            if p is None:
                continue
            out.append(ir.Param(name=str(p.children[0]),
                                default=self.expr(p.children[1]) if p.children[1] is not None else None,
                                at=pos(p.children[0])))
        return tuple(out)

    def args(self, t, program: str, at) -> tuple[tuple[str, ir.Expr], ...]:
        """Match call arguments to the program's parameters by position or name."""
        if t is None:
            return ()
        params = self.signatures.get(program)
        out: list[tuple[str, ir.Expr]] = []
        named = False
        for i, a in enumerate(x for x in t.children if x is not None):
            if a.data == "kwarg":
                named = True
                out.append((str(a.children[0]), self.expr(a.children[1])))
            else:
                if named:
                    self.sink.error(pos(a), "E107", "a positional argument cannot follow a named one")
                    continue
                if params is None:
                    out.append((f"#{i}", self.expr(a.children[0])))
                elif i >= len(params):
                    self.sink.error(pos(a), "E107", f"too many arguments: `{program}` takes {len(params)}")
                else:
                    out.append((params[i].name, self.expr(a.children[0])))
        return tuple(out)

    def wl_line(self, t) -> ir.WorkloadLine | None:
        count_t, prog_t, args_t, arr_t = t.children
        count = self.const(count_t, "a workload count", minimum=0)
        if count is not None and count > MAX_WORKLOAD:
            self.sink.error(pos(count_t), "E402", f"a workload line of {count} sessions is more than serq runs "
                                                  f"(at most {MAX_WORKLOAD})")
            count = None
        prog = str(prog_t)
        arrival = None
        if arr_t is not None:
            if arr_t.data in ("arrive_every", "arrive_at"):
                self.bare_time(arr_t.children[0], arr_t.data.removeprefix("arrive_"))
            if arr_t.data == "arrive_every":
                v = self.const(arr_t.children[0], "an arrival period", minimum=1)
                arrival = ir.ArriveEvery(period=v) if v is not None else None
            elif arr_t.data == "arrive_at":
                v = self.const(arr_t.children[0], "an arrival time", minimum=0)
                arrival = ir.ArriveAt(time=v) if v is not None else None
            elif arr_t.data == "arrive_poisson":
                rate = self.literal(arr_t.children[0])
                unit = str(arr_t.children[1])
                if unit not in UNIT_NS:
                    self.sink.error(pos(arr_t.children[1]), "E404", f"unknown time unit `{unit}`; expected `s`, `ms`, `us` or `ns`")
                    unit = "s"
                if rate <= 0:
                    self.sink.error(pos(arr_t.children[0]), "E402", "a poisson rate must be positive")
                seed = self.literal(arr_t.children[2]) if arr_t.children[2] is not None else 0
                arrival = ir.ArrivePoisson(rate=float(rate) * UNIT_NS["s"] / UNIT_NS[unit], seed=seed)
            elif arr_t.data == "arrive_trace":
                arrival = ir.ArriveTrace(path=str(arr_t.children[0])[1:-1])
        if count is None:
            return None
        return ir.WorkloadLine(count=count, program=prog, args=self.args(args_t, prog, pos(prog_t)),
                               arrival=arrival, at=pos(prog_t))

    def check(self, t) -> ir.Check | None:
        if t.data == "check_simple":
            return ir.Check(kind=str(t.children[0]), at=pos(t.children[0]))
        if t.data == "check_slo":
            return self.slo(t)
        if t.data == "check_eventually":
            return self.eventually(t)
        kind = "sometimes" if t.data == "check_sometimes" else "invariant"
        return ir.Check(kind=kind, e=self.expr(t.children[0]), at=pos(t))

    def eventually(self, t) -> ir.Check | None:
        """`eventually GOAL [under weak|strong]`: the goal stays a name
        (checked by serq.lang.validate, on the IR); the fairness is one
        of two words."""
        goal, fair = t.children
        fairness = None
        if fair is not None:
            fairness = str(fair)
            if fairness not in FAIRNESS:
                from serq.diagnostics import did_you_mean

                self.sink.error(pos(fair), "E100", f"unknown fairness `{fairness}`; write `under weak` (the default) "
                                "or `under strong`", *did_you_mean(fairness, FAIRNESS), span=len(fairness))
                return None
        return ir.Check(kind="eventually", metric=str(goal), fairness=fairness, at=pos(goal))

    def slo(self, t) -> ir.Check | None:
        """`METRIC <= BOUND` or `queue(POOL) <= BOUND`: the metric and pool
        stay names (checked by serq.lang.validate, on the IR); the bound is
        a constant, or a bare name that is no constant (a session attribute)."""
        left, op, right = t.children
        metric = pool = None
        if isinstance(left, Tree) and left.data == "name":
            metric = str(left.children[0])
        elif (isinstance(left, Tree) and left.data == "call" and len(left.children) == 2
              and isinstance(left.children[1], Tree) and left.children[1].data == "name"):
            metric, pool = str(left.children[0]), str(left.children[1].children[0])
        if metric is None:
            self.sink.error(pos(left), "E001", "expected a metric here: `check ttft <= 4;`, `check queue(kv) <= 2;` "
                            "(ttft, latency, preemptions, recomputed, queue)")
            return None
        if str(op) != "<=":
            self.sink.error(pos(op), "E001", f"a check bounds a metric from above with `<=`, got `{op}`",
                            f"write `{metric}{'(' + pool + ')' if pool else ''} <= N`", span=len(str(op)))
            return None
        if isinstance(right, Tree) and right.data == "name" and str(right.children[0]) not in self.consts \
                and str(right.children[0]) not in self.prefixes:
            bound = ir.Name(name=str(right.children[0]), at=pos(right))
        else:
            v = self.const(right, f"the bound of `check {metric}`", minimum=0)
            if v is None:
                return None
            bound = ir.Num(v=v, at=pos(right))
        return ir.Check(kind="slo", metric=metric, pool=pool, e=bound, at=pos(left))

    # ------------------------------------------------------------ sessions
    def session(self, t) -> ir.SessionProgram:
        return SessionBuilder(self, str(t.children[0]), self.params(t.children[1]), pos(t.children[0])).build(t.children[2])
