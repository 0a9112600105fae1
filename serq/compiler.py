"""Lark tree → IR. Structure only: constants folded, statements laid out as
an automaton, hold clauses normalised, arguments matched to parameters.
Names, types and moments are checked afterwards by `serq.validate` on the
IR itself, so a hand-edited `.ir.json` gets the same checks."""

from __future__ import annotations

import math
from typing import Any

from lark import Token, Tree

from serq import ir
from serq.diagnostics import Sink
from serq.expr import EvalError, NotConstant, const_eval
from serq.irutil import expr_names
from serq.vocab import CTX_NAMES, DIST_NAMES, FUNCS, POOL_FUNCS, SEQ_EVENTS, UNIT_NS

MAX_WORKLOAD = 1_000_000  # sessions on one workload line


def pos(node) -> tuple[int, int] | None:
    if isinstance(node, Token):
        return (node.line, node.column) if node.line is not None else None
    if isinstance(node, Tree) and not node.meta.empty:
        return (node.meta.line, node.meta.column)
    return None


MAX_INT = 2**62  # numbers of the semantics are 64-bit integers: ticks, tokens, counts


def duration_ticks(text: str) -> int:
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit):
            ticks = float(text[: -len(unit)]) * UNIT_NS[unit]
            if not ticks < MAX_INT:  # inf too
                raise OverflowError(f"the duration `{text}` is beyond 2^62 ns (about 146 years)")
            return int(round(ticks))
    raise ValueError(text)


def number_value(text: str) -> int | float:
    """A number literal, checked for range where it is read (OverflowError)."""
    if "." in text:
        v = float(text)
        if not math.isfinite(v):
            raise OverflowError(f"the number `{text[:20]}{'...' if len(text) > 20 else ''}` is too large")
        return v
    if len(text.lstrip("0")) > 19 or int(text) >= MAX_INT:  # no str-to-int of thousands of digits
        raise OverflowError(f"the integer `{text[:20]}{'...' if len(text) > 20 else ''}` is too large "
                            "(at most 2^62)")
    return int(text)


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

    # ------------------------------------------------------------ expressions
    def expr(self, t) -> ir.Expr:
        at = pos(t)
        if isinstance(t, Token):  # should not happen with the grammar's aliases
            return ir.Name(name=str(t), at=at)
        d = t.data
        c = t.children
        if d in ("number", "duration"):
            try:
                v = number_value(str(c[0])) if d == "number" else duration_ticks(str(c[0]))
            except OverflowError as e:
                self.sink.error(at, "E408", str(e), span=min(len(str(c[0])), 40))
                v = 0
            return ir.Num(v=v, at=at)
        if d == "true":
            return ir.BoolLit(v=True, at=at)
        if d == "false":
            return ir.BoolLit(v=False, at=at)
        if d == "name":
            n = str(c[0])
            if n in self.consts:
                return ir.Num(v=self.consts[n], at=at)
            if n in self.prefixes:  # a prefix name is a constant: its length
                return ir.Num(v=self.prefixes[n].length, at=at)
            if n in CTX_NAMES:
                return ir.Ctx(name=n, at=at)
            return ir.Name(name=n, at=at)
        if d == "call":
            fn = str(c[0])
            args = [a for a in c[1:] if a is not None]
            if fn in POOL_FUNCS:
                if len(args) != 1 or not (isinstance(args[0], Tree) and args[0].data == "name"):
                    self.sink.error(at, "E107", f"`{fn}` takes one pool name, as in `{fn}(kv)`")
                    return ir.Num(v=0, at=at)
                return ir.PoolRef(fn=fn, pool=str(args[0].children[0]), at=at)
            return ir.Call(fn=fn, args=tuple(self.expr(a) for a in args), at=at)
        if d in ("binop", "cmp"):
            return ir.Bin(op=str(c[1]), l=self.expr(c[0]), r=self.expr(c[2]), at=at)
        if d == "and_":
            return ir.Bin(op="and", l=self.expr(c[0]), r=self.expr(c[1]), at=at)
        if d == "or_":
            return ir.Bin(op="or", l=self.expr(c[0]), r=self.expr(c[1]), at=at)
        if d == "not_":
            return ir.Un(op="not", e=self.expr(c[0]), at=at)
        if d == "neg":
            return ir.Un(op="-", e=self.expr(c[0]), at=at)
        if d == "cond":
            return ir.Cond(c=self.expr(c[0]), t=self.expr(c[1]), f=self.expr(c[2]), at=at)
        raise AssertionError(f"unknown expression node {d}")

    def const(self, t, what: str, *, integer: bool = True, minimum: int | None = None):
        e = self.expr(t)
        try:
            v = const_eval(e)
        except NotConstant as nc:
            self.sink.error(nc.at or pos(t), "E401", f"{what} must be a constant expression; {nc.what} is not a constant")
            return None
        except (EvalError, ZeroDivisionError, OverflowError, ValueError, TypeError) as ex:
            self.sink.error(pos(t), "E401", f"{what}: cannot evaluate this constant ({ex})")
            return None
        if isinstance(v, float) and not math.isfinite(v):
            self.sink.error(pos(t), "E408", f"{what}: the value overflows (beyond the largest real)")
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
                checks.extend(self.check(c) for c in it.children)
        return ir.Program(source=self.file, consts=tuple(self.consts.items()), pools=tuple(pools),
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
            if arr_t.data == "arrive_every":
                v = self.const(arr_t.children[0], "an arrival period", minimum=1)
                arrival = ir.ArriveEvery(period=v) if v is not None else None
            elif arr_t.data == "arrive_at":
                v = self.const(arr_t.children[0], "an arrival time", minimum=0)
                arrival = ir.ArriveAt(time=v) if v is not None else None
            elif arr_t.data == "arrive_poisson":
                rate = float(arr_t.children[0])
                unit = str(arr_t.children[1])
                if unit not in UNIT_NS:
                    self.sink.error(pos(arr_t.children[1]), "E404", f"unknown time unit `{unit}`; expected `s`, `ms`, `us` or `ns`")
                    unit = "s"
                if rate <= 0:
                    self.sink.error(pos(arr_t.children[0]), "E402", "a poisson rate must be positive")
                seed = int(arr_t.children[2]) if arr_t.children[2] is not None else 0
                arrival = ir.ArrivePoisson(rate=rate * UNIT_NS["s"] / UNIT_NS[unit], seed=seed)
            elif arr_t.data == "arrive_trace":
                arrival = ir.ArriveTrace(path=str(arr_t.children[0])[1:-1])
        if count is None:
            return None
        return ir.WorkloadLine(count=count, program=prog, args=self.args(args_t, prog, pos(prog_t)),
                               arrival=arrival, at=pos(prog_t))

    def check(self, t) -> ir.Check:
        if t.data == "check_simple":
            return ir.Check(kind=str(t.children[0]), at=pos(t.children[0]))
        return ir.Check(kind="invariant", e=self.expr(t.children[0]), at=pos(t))

    # ------------------------------------------------------------ sessions
    def session(self, t) -> ir.SessionProgram:
        return SessionBuilder(self, str(t.children[0]), self.params(t.children[1]), pos(t.children[0])).build(t.children[2])


class SessionBuilder:
    """Lays a session's statements out as an automaton. States are built as
    dicts with `next` patched once the follower is known."""

    def __init__(self, comp: Compiler, name: str, params: tuple[ir.Param, ...], at):
        self.c = comp
        self.sink = comp.sink
        self.name = name
        self.params = params
        self.at = at
        self.states: list[dict] = []
        self.scopes: list[dict] = [dict(id=0, parent=None, acquire=None, reentry=None, exit=None, keep=(), pools=())]
        self.attrs: dict[str, dict] = {}
        self.n_loops = 0
        for p in params:
            self.declare(p.name, "param", p.at, None)

    # attribute slots
    def declare(self, name: str, origin: str, at, e: ir.Expr | None, hidden: bool = False, typ: str | None = None):
        if name in CTX_NAMES:
            self.sink.error(at, "E106", f"`{name}` is a context variable and cannot name an attribute")
            return
        if name in self.c.consts:
            self.sink.error(at, "E106", f"`{name}` is a constant and cannot name an attribute")
            return
        if name in self.c.prefixes:
            self.sink.error(at, "E106", f"`{name}` is a prefix (a constant: its length) and cannot name an attribute")
            return
        if name in self.attrs:
            first = self.attrs[name]["at"]
            self.sink.error(at, "E105", f"`{name}` is already declared in session `{self.name}`",
                            *( [f"it was declared at line {first[0]}; use `set {name} = ...` to change it"] if first else []))
            return
        if typ is None:
            from serq.validate import infer_type

            typ = infer_type(e, {n: a["type"] for n, a in self.attrs.items()}) if e is not None else "int"
            if typ == "?":
                typ = "int"
        self.attrs[name] = dict(name=name, type=typ, hidden=hidden, origin=origin, at=at)

    def emit(self, kind: str, at, scope: int, **fields) -> int:
        self.states.append(dict(kind=kind, at=at, scope=scope, **fields))
        return len(self.states) - 1

    def patch(self, dangling, target: int) -> None:
        for idx, field in dangling:
            self.states[idx][field] = target

    def build(self, body: Tree) -> ir.SessionProgram:
        arrive = self.emit("arrive", self.at, 0, next=None)
        entry, dangling = self.block(body, 0)
        end = self.emit("end", None, 0)
        self.states[arrive]["next"] = entry if entry is not None else end
        self.patch(dangling, end)
        states = [self._state(d) for d in self.states]
        scopes = [ir.Scope(**s) for s in self.scopes]
        attrs = self._attrs(states)
        return ir.SessionProgram(name=self.name, params=self.params, attrs=attrs, states=tuple(states),
                                 scopes=tuple(scopes), entry=arrive, at=self.at)

    def _state(self, d: dict):
        cls = {"arrive": ir.SArrive, "set": ir.SSet, "branch": ir.SBranch, "draw": ir.SDraw,
               "choose": ir.SChoose, "turn": ir.STurn, "acquire": ir.SAcquire, "run": ir.SRun,
               "spawn": ir.SSpawn, "join": ir.SJoin, "drop": ir.SDrop, "assert": ir.SAssert,
               "exit": ir.SExit, "end": ir.SEnd}[d["kind"]]
        return cls(**d)

    def _attrs(self, states) -> tuple[ir.Attr, ...]:
        # Hidden spreads along explicit data flow: a slot assigned from an
        # expression that reads a hidden slot is hidden too (fixpoint).
        # Branching on a hidden value does not taint (docs/language.md).

        hidden = {n for n, a in self.attrs.items() if a["hidden"]}
        changed = True
        while changed:
            changed = False
            for s in states:
                if isinstance(s, ir.SSet) and s.attr not in hidden and s.attr in self.attrs:
                    if expr_names(s.e) & hidden:
                        hidden.add(s.attr)
                        changed = True
        return tuple(ir.Attr(**{**a, "hidden": a["name"] in hidden}) for a in self.attrs.values())

    # statements
    def block(self, t: Tree, scope: int):
        entry = None
        dangling: list = []
        for s in t.children:
            e, d = self.stmt(s, scope)
            if e is None:
                continue
            if entry is None:
                entry = e
            else:
                self.patch(dangling, e)
            dangling = d
        return entry, dangling

    def simple(self, kind, at, scope, **f):
        i = self.emit(kind, at, scope, next=None, **f)
        return i, [(i, "next")]

    def stmt(self, t: Tree, scope: int):
        d, c, at = t.data, t.children, pos(t)
        E = self.c.expr
        if d == "let_stmt":
            e = E(c[1])
            self.declare(str(c[0]), "let", pos(c[0]), e)
            return self.simple("set", at, scope, attr=str(c[0]), e=e)
        if d == "set_stmt":
            return self.simple("set", at, scope, attr=str(c[0]), e=E(c[1]))
        if d == "draw_stmt":
            name, dom, dist, hidden = c
            self.declare(str(name), "draw", pos(name), None, hidden=hidden is not None, typ="int")
            return self.simple("draw", at, scope, attr=str(name), domain=self.domain(dom), dist=self.dist(dist))
        if d == "choose_stmt":
            name, dom, key = c
            self.declare(str(name), "choose", pos(name), None, typ="int")
            return self.simple("choose", at, scope, attr=str(name), domain=self.domain(dom),
                               key=E(key) if key is not None else None)
        if d == "if_stmt":
            cond, then_b, else_b = c
            b = self.emit("branch", at, scope, cond=E(cond), next=None, alt=None)
            te, td = self.block(then_b, scope)
            dangling = list(td) if te is not None else [(b, "next")]
            if te is not None:
                self.states[b]["next"] = te
            if else_b is None:
                dangling.append((b, "alt"))
            else:
                if else_b.data == "if_stmt":
                    ee, ed = self.stmt(else_b, scope)
                else:
                    ee, ed = self.block(else_b, scope)
                if ee is not None:
                    self.states[b]["alt"] = ee
                    dangling.extend(ed)
                else:
                    dangling.append((b, "alt"))
            return b, dangling
        if d == "while_stmt":
            cond, body = c
            b = self.emit("branch", at, scope, cond=E(cond), next=None, alt=None)
            be, bd = self.block(body, scope)
            self.states[b]["next"] = be if be is not None else b
            self.patch(bd, b)
            return b, [(b, "alt")]
        if d == "repeat_stmt":
            count, body = c
            self.n_loops += 1
            # not an identifier: no attribute the user declares can share its slot
            ctr = f"repeat#{self.n_loops}"
            self.attrs[ctr] = dict(name=ctr, type="int", hidden=False, origin="internal", at=None)
            s = self.emit("set", at, scope, attr=ctr, e=E(count), next=None)
            b = self.emit("branch", at, scope, next=None, alt=None,
                          cond=ir.Bin(op=">", l=ir.Name(name=ctr), r=ir.Num(v=0)))
            dec = self.emit("set", at, scope, attr=ctr, next=None,
                            e=ir.Bin(op="-", l=ir.Name(name=ctr), r=ir.Num(v=1)))
            self.states[s]["next"] = b
            self.states[b]["next"] = dec
            be, bd = self.block(body, scope)
            self.states[dec]["next"] = be if be is not None else b
            self.patch(bd, b)
            return s, [(b, "alt")]
        if d == "turn_stmt":
            return self.simple("turn", at, scope, think=E(c[0]) if c[0] is not None else None)
        if d == "hold_stmt":
            return self.hold(t, scope)
        if d == "run_stmt":
            return self.run(t, scope)
        if d == "spawn_stmt":
            prog, args_t, times = c
            return self.simple("spawn", at, scope, program=str(prog),
                               args=self.c.args(args_t, str(prog), pos(prog)),
                               count=E(times) if times is not None else ir.Num(v=1))
        if d == "join_stmt":
            return self.simple("join", at, scope)
        if d == "drop_stmt":
            return self.simple("drop", at, scope, pool=str(c[0]))
        if d == "end_stmt":
            return self.emit("end", at, scope), []
        if d == "assert_stmt":
            return self.simple("assert", at, scope, e=E(c[0]))
        raise AssertionError(d)

    def domain(self, t) -> ir.Domain:
        if t.data == "domain_set":
            return ir.Domain(values=tuple(self.c.expr(v) for v in t.children), at=pos(t))
        return ir.Domain(lo=self.c.expr(t.children[0]), hi=self.c.expr(t.children[1]), at=pos(t))

    def dist(self, t) -> ir.Dist | None:
        if t is None:
            return None
        name = str(t.children[0])
        if name not in DIST_NAMES:
            self.sink.error(pos(t.children[0]), "E104", f"unknown distribution `{name}`; expected one of {', '.join(DIST_NAMES)}")
            return None
        params = tuple(self.c.expr(p) for p in t.children[1:] if p is not None)
        return ir.Dist(name=name, params=params, at=pos(t.children[0]))

    def run(self, t, scope):
        kind, amount, *opts = t.children
        stage = growing = progress = None
        for o in opts:
            word = o.data.removeprefix("run_")
            val = str(o.children[0])
            if word == "on":
                stage = val
            elif word == "growing":
                growing = val
            else:
                progress = val
        if stage is None:
            if len(self.c.stage_names) == 1:
                stage = self.c.stage_names[0]
            else:
                self.sink.error(pos(t), "E102",
                                f"this {kind} must say `on STAGE`: the instance declares {len(self.c.stage_names)} stages")
                stage = "?"
        return self.simple("run", pos(t), scope, run=str(kind), amount=self.c.expr(amount), stage=stage,
                           growing=growing, progress=progress)

    def hold(self, t, scope):
        at = pos(t)
        children = list(t.children)
        keep_t = children.pop() if children and (children[-1] is None or children[-1].data == "keep") else None
        body = children.pop()
        admit_if_t = children.pop()
        admission_t = children.pop()
        items_t = children
        sc = len(self.scopes)
        bindings = []
        if admission_t is not None:
            for b in admission_t.children:
                e = self.c.expr(b.children[1])
                self.declare(str(b.children[0]), "binding", pos(b.children[0]), e)
                bindings.append(ir.Binding(attr=str(b.children[0]), e=e, at=pos(b.children[0])))
        items = []
        for it in items_t:
            items.append(self.hold_item(it))
        pools = tuple(i.pool for i in items)
        for p in sorted({p for p in pools if pools.count(p) > 1}):
            self.sink.error(at, "E403", f"pool `{p}` appears twice in one hold")
        keep = []
        if keep_t is not None:
            for k in keep_t.children:
                pool = str(k.children[0])
                if k.data == "keep_full":
                    keep.append(ir.KeepItem(pool=pool, full=True, at=pos(k)))
                else:
                    keep.append(ir.KeepItem(pool=pool, e=self.c.expr(k.children[1]), at=pos(k)))
        spec = ir.HoldSpec(items=tuple(items), bindings=tuple(bindings),
                           admit_if=self.c.expr(admit_if_t.children[0]) if admit_if_t is not None else None)
        self.scopes.append(dict(id=sc, parent=scope, acquire=None, reentry=None, exit=None, keep=tuple(keep), pools=pools))
        a = self.emit("acquire", at, scope, hold=spec, opens=sc, next=None)
        be, bd = self.block(body, sc)
        x = self.emit("exit", pos(body), scope, closes=sc, next=None)
        self.states[a]["next"] = be if be is not None else x
        self.patch(bd, x)
        self.scopes[sc].update(acquire=a, reentry=a, exit=x)
        return a, [(x, "next")]

    def hold_item(self, t) -> ir.HoldItem:
        pool = str(t.children[0])
        at = pos(t.children[0])
        short = t.children[1]
        got: dict[str, ir.Expr] = {}
        prefix = None
        if short is not None:
            got["reserve"] = self.c.expr(short)
        for cl in t.children[2:]:
            word = cl.data.removeprefix("clause_")
            if word in got or (word == "prefix" and prefix is not None):
                self.sink.error(pos(cl), "E403", f"`{word}` is given twice for pool `{pool}`")
                continue
            if word == "prefix":  # a name, checked by the validator (E110)
                prefix = (str(cl.children[0]), pos(cl.children[0]))
                continue
            got[word] = self.c.expr(cl.children[0])
        if "reserve" in got and ("need" in got or "take" in got):
            self.sink.error(at, "E403", f"pool `{pool}`: `reserve` already sets need and take; give either `reserve` or `need`/`take`",
                            "`P E` is short for `P reserve E`")
        need = got.get("reserve") or got.get("need") or got.get("take") or ir.Num(v=0)
        take = got.get("reserve") or got.get("take") or need
        return ir.HoldItem(pool=pool, reuse=got.get("reuse"), need=need, take=take,
                           prefix=prefix[0] if prefix else None, prefix_at=prefix[1] if prefix else None, at=at)
