"""The shape of an IR program: what the compiler guarantees by
construction and a hand-edited `.ir.json` may break. Each problem is
(path, code, message), the path naming the offending JSON value
(`("sessions", 0, "states", 3, "next")`), so the IR loader can point at
it in the file; `serq.lang.validate` reports the same problems at the
source position of the session for programs built in memory.

Checked: state and scope references in range; the one `arrive` state is
the entry, 0; every edge stays in its scope, enters a hold's body only
through its acquire state and leaves it only through its exit state; a
scope's pools are its hold's; names unique; each shared prefix extends
an earlier one and is longer, each hold's prefix is declared; domains either a value set
or a whole range; numbers in range where the semantics reads them
(64-bit integers below 2^62, finite reals); positions (line, column)
from 1; expressions no deeper than the source allows. One linear pass."""

from __future__ import annotations

import math

from serq import ir
from serq.ir.util import children
from serq.vocab import MAX_EXPR_DEPTH, MAX_INT, MAX_WORKLOAD

MAX_POS = 10**9  # a line or column number

Problem = tuple[tuple, str, str]  # (JSON path, code, message)


def shape_problems(prog: ir.Program) -> list[Problem]:
    out: list[Problem] = []

    def bad(path, code, msg):
        out.append((tuple(path), code, msg))

    def at(node, path):
        a = node.__dict__.get("at")
        if a is not None and not (1 <= a[0] <= MAX_POS and 1 <= a[1] <= MAX_POS):
            bad(path + ("at",), "E010", f"`at` must be a (line, column) pair from 1, got {list(a)}")

    def num_int(v, path, what, lo=0, hi=MAX_INT - 1, code_lo="E402"):
        if v is None:
            return
        if not -MAX_INT < v < MAX_INT or v > hi:
            bad(path, "E408", f"{what} {_short(v)} is out of range (at most {hi if hi < MAX_INT - 1 else '2^62'})")
        elif v < lo:
            bad(path, code_lo, f"{what} must be at least {lo}, got {v}")

    def expr(e, path):
        if e is None or _expr_ok(e):
            return
        stack = [(e, path, 1)]  # a problem: find it again, with its path
        while stack:
            x, p, depth = stack.pop()
            if depth > MAX_EXPR_DEPTH:
                bad(p, "E010", f"an expression nested more than {MAX_EXPR_DEPTH} deep")
                continue
            at(x, p)
            if isinstance(x, ir.Num):
                if isinstance(x.v, float):
                    if not math.isfinite(x.v):
                        bad(p + ("v",), "E408", "a number must be finite")
                elif not -MAX_INT < x.v < MAX_INT:
                    bad(p + ("v",), "E408", f"the integer {_short(x.v)} is out of range (at most 2^62)")
            fields = {ir.Bin: ("l", "r"), ir.Un: ("e",), ir.Cond: ("c", "t", "f"), ir.Quant: ("e",)}.get(type(x))
            if fields:
                stack.extend((c, p + (f,), depth + 1) for f, c in zip(fields, children(x)))
            elif isinstance(x, ir.Call):
                stack.extend((c, p + ("args", i), depth + 1) for i, c in enumerate(x.args))

    def order(o, path):
        if o is not None:
            for i, k in enumerate(o.keys):
                expr(k.e, path + ("keys", i, "e"))

    def unique(items, path, kind):
        seen = set()
        for i, x in enumerate(items):
            if x.name in seen:
                bad(path + (i, "name"), "E105", f"{kind} `{x.name}` is declared twice")
            seen.add(x.name)

    for i, (name, v) in enumerate(prog.consts):
        if isinstance(v, float) and not math.isfinite(v) or isinstance(v, int) and not -MAX_INT < v < MAX_INT:
            bad(("consts", i, 1), "E408", f"constant `{name}` is out of range")
    unique(prog.pools, ("pools",), "pool")
    unique(prog.stages, ("stages",), "stage")
    unique(prog.sessions, ("sessions",), "session")
    for i, p in enumerate(prog.pools):
        path = ("pools", i)
        at(p, path)
        num_int(p.cap, path + ("cap",), f"pool `{p.name}`: `cap`")
        num_int(p.block, path + ("block",), f"pool `{p.name}`: `block`", lo=1)
        for f in ("queue", "victim", "evict"):
            order(getattr(p, f), path + (f,))
    for i, s in enumerate(prog.stages):
        path = ("stages", i)
        at(s, path)
        for f in ("budget", "chunk", "cost"):
            expr(getattr(s, f), path + (f,))
        order(s.serve, path + ("serve",))
    for i, s in enumerate(prog.sessions):
        _session(s, ("sessions", i), bad, at, expr)
    for i, w in enumerate(prog.workload):
        path = ("workload", i)
        at(w, path)
        num_int(w.count, path + ("count",), "a workload count", hi=MAX_WORKLOAD)
        for j, (_, e) in enumerate(w.args):
            expr(e, path + ("args", j, 1))
        a = w.arrival
        if isinstance(a, ir.ArriveEvery):
            num_int(a.period, path + ("arrival", "period"), "an arrival period", lo=1)
        elif isinstance(a, ir.ArriveAt):
            num_int(a.time, path + ("arrival", "time"), "an arrival time")
        elif isinstance(a, ir.ArrivePoisson):
            if not (math.isfinite(a.rate) and a.rate > 0):
                bad(path + ("arrival", "rate"), "E402", f"a poisson rate must be a positive number, got {a.rate}")
            num_int(a.seed, path + ("arrival", "seed"), "a seed")
    for i, c in enumerate(prog.checks):
        at(c, ("checks", i))
        expr(c.e, ("checks", i, "e"))
    return out


def _session(s: ir.SessionProgram, path: tuple, bad, at, expr) -> None:
    n, k = len(s.states), len(s.scopes)
    names = [a.name for a in s.attrs]

    def mal(p, what):
        bad(p, "E407", f"session `{s.name}`: malformed automaton: {what}")

    at(s, path)
    if len(set(names)) != len(names):
        mal(path + ("attrs",), "an attribute is declared twice")
    for j, a in enumerate(s.attrs):
        at(a, path + ("attrs", j))
    for j, p in enumerate(s.params):
        at(p, path + ("params", j))
        expr(p.default, path + ("params", j, "default"))
    if s.entry != 0 or not s.states or s.states[0].kind != "arrive":
        mal(path + ("entry",), f"entry {s.entry} is not the arrive state 0" if 0 <= s.entry < n
            else f"entry {s.entry} is not a state")
    if not s.scopes or s.scopes[0].parent is not None:
        mal(path + ("scopes",), "scope 0 must be the root scope")
    scopes_ok = True
    for i, sc in enumerate(s.scopes):
        sp = path + ("scopes", i)
        if sc.id != i:
            mal(sp + ("id",), f"scope {i} has id {sc.id}")
        for f in ("acquire", "reentry", "exit"):
            v = getattr(sc, f)
            if v is not None and not 0 <= v < n:
                mal(sp + (f,), f"scope {i}: {f} {v} is not a state")
                scopes_ok = False
            elif i and v is None:
                mal(sp + (f,), f"scope {i}: a hold's scope needs its {f} state")
                scopes_ok = False
            elif not i and v is not None:
                mal(sp + (f,), f"scope 0 is the root scope: it has no {f} state")
                scopes_ok = False
        if i and (sc.parent is None or not 0 <= sc.parent < i):
            mal(sp + ("parent",), f"scope {i}: parent {sc.parent} is not an enclosing scope")
            scopes_ok = False
        for f, kind in (("acquire", "acquire"), ("reentry", "acquire"), ("exit", "exit")):
            v = getattr(sc, f)
            if i and v is not None and 0 <= v < n:
                st = s.states[v]
                if st.kind != kind or getattr(st, "opens" if kind == "acquire" else "closes", None) != i:
                    mal(sp + (f,), f"scope {i}: {f} {v} is not the {kind} state of this scope")
                    scopes_ok = False
        for j, kp in enumerate(sc.keep):
            at(kp, sp + ("keep", j))
            expr(kp.e, sp + ("keep", j, "e"))
    arrives = 0
    for i, st in enumerate(s.states):
        stp = path + ("states", i)
        d = st.__dict__  # fields without pydantic's slow path for missing ones
        at(st, stp)
        kind = d["kind"]
        if kind == "arrive":
            arrives += 1
            if i != 0:
                mal(stp + ("kind",), f"state {i}: a second arrive state")
        for f in ("next", "alt"):
            v = d.get(f)
            if v is not None and not 0 <= v < n:
                mal(stp + (f,), f"state {i}: {f} {v} is not a state")
                scopes_ok = False
        for f in ("scope", "opens", "closes"):
            v = d.get(f)
            if v is not None and not 0 <= v < k:
                mal(stp + (f,), f"state {i}: {f} {v} is not a scope")
                scopes_ok = False
        if kind in ("draw", "choose"):
            if st.attr not in names:
                mal(stp + ("attr",), f"state {i}: `{st.attr}` is not an attribute")
            dom = st.domain
            dp = stp + ("domain",)
            at(dom, dp)
            if dom.values and (dom.lo is not None or dom.hi is not None):
                mal(dp, f"state {i}: a domain is either `values` or `lo` and `hi`, not both")
            elif not dom.values and (dom.lo is None or dom.hi is None):
                mal(dp, f"state {i}: a domain needs `values` or both `lo` and `hi`")
            for j, v in enumerate(dom.values):
                expr(v, dp + ("values", j))
            expr(dom.lo, dp + ("lo",))
            expr(dom.hi, dp + ("hi",))
            if kind == "draw" and st.dist is not None:
                at(st.dist, stp + ("dist",))
                for j, p in enumerate(st.dist.params):
                    expr(p, stp + ("dist", "params", j))
            if kind == "choose":
                expr(st.key, stp + ("key",))
        elif kind == "acquire":
            if not st.hold.items:
                mal(stp + ("hold", "items"), f"state {i}: a hold without pools")
            for j, b in enumerate(st.hold.bindings):
                at(b, stp + ("hold", "bindings", j))
                if b.attr not in names:
                    mal(stp + ("hold", "bindings", j, "attr"), f"state {i}: `{b.attr}` is not an attribute")
                expr(b.e, stp + ("hold", "bindings", j, "e"))
            for j, it in enumerate(st.hold.items):
                ip = stp + ("hold", "items", j)
                at(it, ip)
                pa = it.prefix_at
                if pa is not None and not (1 <= pa[0] <= MAX_POS and 1 <= pa[1] <= MAX_POS):
                    bad(ip + ("prefix_at",), "E010", f"`prefix_at` must be a (line, column) pair from 1, got {list(pa)}")
                expr(it.reuse, ip + ("reuse",))
                expr(it.need, ip + ("need",))
                expr(it.take, ip + ("take",))
            expr(st.hold.admit_if, stp + ("hold", "admit_if"))
        else:
            for f in ("e", "cond", "think", "amount", "count"):
                e = d.get(f)
                if e is not None:
                    expr(e, stp + (f,))
            for j, (_, e) in enumerate(d.get("args", ())):
                expr(e, stp + ("args", j, 1))
    if arrives == 0 and s.states:
        mal(path + ("states",), "no arrive state")
    if scopes_ok and s.scopes and s.scopes[0].parent is None:
        _edges(s, path, mal)


def _edges(s: ir.SessionProgram, path: tuple, mal) -> None:
    """Every edge stays in its scope, enters a hold's body only from its
    acquire state and leaves it only through its exit state: a session in
    a body holds what the hold took, and releases it once."""
    for i, sc in enumerate(s.scopes[1:], 1):
        acq, ex = s.states[sc.acquire], s.states[sc.exit]
        held = tuple(it.pool for it in acq.hold.items)
        if sc.pools != held:
            mal(path + ("scopes", i, "pools"), f"scope {i}: pools {', '.join(sc.pools) or 'none'} are not "
                                               f"the pools its hold takes ({', '.join(held) or 'none'})")
        if acq.scope != sc.parent:
            mal(path + ("states", sc.acquire, "scope"), f"state {sc.acquire}: the acquire of scope {i} "
                                                        f"must be in its parent scope {sc.parent}")
        if ex.scope != sc.parent:
            mal(path + ("states", sc.exit, "scope"), f"state {sc.exit}: the exit of scope {i} "
                                                     f"must be in its parent scope {sc.parent}")
    root = s.scopes[0]
    if root.pools or root.keep:
        mal(path + ("scopes", 0), "scope 0, the session's own, holds no pools and keeps nothing")
    for i, st in enumerate(s.states):
        if isinstance(st, ir.SAcquire) and s.scopes[st.opens].acquire != i:
            mal(path + ("states", i, "opens"), f"state {i}: opens scope {st.opens}, whose acquire state is "
                                               f"{s.scopes[st.opens].acquire}")
        if isinstance(st, ir.SExit) and s.scopes[st.closes].exit != i:
            mal(path + ("states", i, "closes"), f"state {i}: closes scope {st.closes}, whose exit state is "
                                                f"{s.scopes[st.closes].exit}")
        if isinstance(st, (ir.SAcquire, ir.SExit)) and (st.opens if isinstance(st, ir.SAcquire) else st.closes) == 0:
            continue  # reported: scope 0 has no acquire or exit state
        inside = st.opens if isinstance(st, ir.SAcquire) else st.scope
        for f in ("next", "alt"):
            j = _get(st, f)
            if j is None:
                continue
            to = s.states[j]
            if to.scope == inside:
                continue
            if isinstance(to, ir.SExit) and to.closes == inside:
                continue  # leaving the body through its exit
            mal(path + ("states", i, f), f"state {i}: {f} {j} jumps from scope {inside} into scope {to.scope} "
                                         "(a hold's body is entered through its acquire state and left through "
                                         "its exit state)")


_INNER = (ir.Bin, ir.Un, ir.Cond, ir.Call, ir.Quant)


def _expr_ok(e) -> bool:
    """No problem in `e`: the fast pass, without paths."""
    stack = [(e, 1)]
    while stack:
        x, depth = stack.pop()
        if depth > MAX_EXPR_DEPTH:
            return False
        a = x.__dict__["at"]
        if a is not None and not (1 <= a[0] <= MAX_POS and 1 <= a[1] <= MAX_POS):
            return False
        if isinstance(x, _INNER):
            stack.extend((c, depth + 1) for c in children(x))
        elif isinstance(x, ir.Num):
            v = x.v
            if isinstance(v, float):
                if not math.isfinite(v):
                    return False
            elif not -MAX_INT < v < MAX_INT:
                return False
    return True


def _get(node, name: str):
    """A field of a model, or None if it has none (without pydantic's slow
    path for a missing attribute)."""
    return node.__dict__.get(name)


def _short(v) -> str:
    t = str(v)
    return t if len(t) <= 22 else t[:20] + "..."


def prefix_problems(prog: ir.Program) -> list[Problem]:
    """The shared prefixes of an IR file, at the offending value: each
    extends one declared before it and is longer; a hold names a declared
    one. (For a program built in memory the validator says the same at
    the source position.)"""
    out: list[Problem] = []

    def bad(path, code, msg):
        out.append((tuple(path), code, msg))

    prefixes: dict[str, int] = {}
    for i, pf in enumerate(prog.prefixes):
        path = ("prefixes", i)
        if pf.at is not None and not (1 <= pf.at[0] <= MAX_POS and 1 <= pf.at[1] <= MAX_POS):
            bad(path + ("at",), "E010", f"`at` must be a (line, column) pair from 1, got {list(pf.at)}")
        if pf.name in prefixes:
            bad(path + ("name",), "E105", f"prefix `{pf.name}` is declared twice")
        elif pf.parent is not None and pf.parent not in prefixes:
            bad(path + ("parent",), "E110", f"prefix `{pf.name}` extends `{pf.parent}`, which is not declared before it")
        elif not -MAX_INT < pf.length < MAX_INT:
            bad(path + ("length",), "E408", f"prefix `{pf.name}`: `length` {_short(pf.length)} is out of range (at most 2^62)")
        elif pf.length <= prefixes.get(pf.parent, 0):
            bad(path + ("length",), "E402", f"prefix `{pf.name}` must be at least one token longer than "
                f"{'`' + pf.parent + '`' if pf.parent else 'nothing'}, got {pf.length} in all")
        else:
            prefixes[pf.name] = pf.length
    for i, s in enumerate(prog.sessions):
        for k, st in enumerate(s.states):
            hold = getattr(st, "hold", None)
            for j, it in enumerate(hold.items if hold is not None else ()):
                if it.prefix is not None and it.prefix not in prefixes:
                    bad(("sessions", i, "states", k, "hold", "items", j, "prefix"), "E110",
                        f"hold on unknown prefix `{it.prefix}`")
    return out
