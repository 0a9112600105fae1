"""A session's statements (a lark subtree) laid out as an automaton: states
where a session can block or decide, one scope per `hold`, `next`/`alt`
patched once the follower is known (docs/ir.md)."""

from __future__ import annotations

from lark import Tree

from serq import ir
from serq.lang.exprbuild import pos
from serq.ir.types import infer_type
from serq.ir.util import expr_names
from serq.vocab import CTX_NAMES, DIST_NAMES


class SessionBuilder:
    """Lays a session's statements out as an automaton. States are built as
    dicts with `next` patched once the follower is known."""

    def __init__(self, comp, name: str, params: tuple[ir.Param, ...], at):
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
            if c[0] is not None:
                self.c.bare_time(c[0], "turn think")
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
