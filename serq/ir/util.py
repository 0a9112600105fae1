"""Small helpers over the IR: comparing programs without positions, and
printing a session automaton as a readable table (docs/ir.md)."""

from __future__ import annotations

from typing import Any

from serq import ir
from serq.ir.text import expr_text  # noqa: F401  (the one printer; re-exported)


def _strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: (None if k == "at" else _strip(v)) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_strip(v) for v in x]
    return x


def same_expr(a: ir.Expr, b: ir.Expr) -> bool:
    """Equal as expressions, wherever they were written."""
    return _strip(a.model_dump(mode="json")) == _strip(b.model_dump(mode="json"))


def enclosing_pools(sp: ir.SessionProgram, scope: int) -> set[str]:
    """The pools held by `scope` and every scope around it: what a session
    at a state of that scope holds."""
    out: set[str] = set()
    sc: int | None = scope
    while sc is not None:
        out |= set(sp.scopes[sc].pools)
        sc = sp.scopes[sc].parent
    return out


def strip_positions(program: ir.Program) -> ir.Program:
    """The same program with every `at` set to None, so that two programs
    compiled from differently laid out sources compare equal."""
    return ir.Program.model_validate(_strip(program.model_dump(mode="json")))


def _domain(d: ir.Domain) -> str:
    if d.values:
        return "{" + ", ".join(expr_text(v) for v in d.values) + "}"
    return f"{expr_text(d.lo, 5)}..{expr_text(d.hi, 5)}"


def _order(o: ir.Order) -> str:
    keys = [("desc " if k.desc else "") + expr_text(k.e) for k in o.keys]
    keys.append(("desc " if o.tie.desc else "") + o.tie.event)
    return "(" + ", ".join(keys) + ")"


def state_detail(st) -> str:
    """What a state does, in words close to the source."""
    if isinstance(st, ir.SArrive):
        return ""
    if isinstance(st, ir.SSet):
        return f"{st.attr} = {expr_text(st.e)}"
    if isinstance(st, ir.SBranch):
        return f"if {expr_text(st.cond)} else -> {st.alt}"
    if isinstance(st, ir.SDraw):
        dist = ""
        if st.dist is not None:
            ps = ", ".join(expr_text(p) for p in st.dist.params)
            dist = f" ~ {st.dist.name}" + (f"({ps})" if ps else "")
        return f"{st.attr} in {_domain(st.domain)}{dist}"
    if isinstance(st, ir.SChoose):
        return f"{st.attr} in {_domain(st.domain)}" + (f" by {expr_text(st.key)}" if st.key is not None else "")
    if isinstance(st, ir.STurn):
        return f"think {expr_text(st.think)}" if st.think is not None else ""
    if isinstance(st, ir.SAcquire):
        items = []
        for it in st.hold.items:
            s = f"{it.pool} need {expr_text(it.need, 8)} take {expr_text(it.take, 8)}"
            if it.reuse is not None:
                s += f" reuse {expr_text(it.reuse, 8)}"
            items.append(s)
        out = f"opens {st.opens}: " + ", ".join(items)
        if st.hold.bindings:
            out += " at admission (" + ", ".join(f"{b.attr} = {expr_text(b.e)}" for b in st.hold.bindings) + ")"
        if st.hold.admit_if is not None:
            out += f" admit if {expr_text(st.hold.admit_if)}"
        return out
    if isinstance(st, ir.SRun):
        s = f"{st.run} {expr_text(st.amount, 8)} on {st.stage}"
        if st.growing:
            s += f" growing {st.growing}"
        if st.progress:
            s += f" progress {st.progress}"
        return s
    if isinstance(st, ir.SSpawn):
        args = ", ".join(f"{n}={expr_text(e)}" for n, e in st.args)
        return f"{st.program}({args}) x {expr_text(st.count)}"
    if isinstance(st, ir.SDrop):
        return st.pool
    if isinstance(st, ir.SAssert):
        return expr_text(st.e)
    if isinstance(st, ir.SExit):
        return f"closes {st.closes}"
    return ""


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def session_table(s: ir.SessionProgram) -> str:
    attrs = ", ".join(a.name + (" (hidden)" if a.hidden else "") for a in s.attrs)
    lines = [f"session {s.name}: entry {s.entry}; attributes: {attrs or 'none'}", ""]
    rows = []
    for i, st in enumerate(s.states):
        nxt = getattr(st, "next", None)
        rows.append([str(i), st.kind, str(st.scope), "" if nxt is None else str(nxt), state_detail(st)])
    lines += _table(["state", "kind", "scope", "next", "does"], rows)
    lines.append("")
    srows = []
    for sc in s.scopes:
        keep = ", ".join(f"{k.pool} full" if k.full else f"{k.pool} {expr_text(k.e, 8)}" for k in sc.keep)
        srows.append([str(sc.id), "" if sc.parent is None else str(sc.parent), ", ".join(sc.pools),
                      "" if sc.acquire is None else str(sc.acquire), "" if sc.reentry is None else str(sc.reentry),
                      "" if sc.exit is None else str(sc.exit), keep])
    lines += _table(["scope", "parent", "pools", "acquire", "reentry", "exit", "keep"], srows)
    return "\n".join(lines)


def automaton_table(program: ir.Program) -> str:
    """Every session program of `program` as a table of states and a table
    of scopes (the output of `tools/show_automaton.py`)."""
    return "\n\n".join(session_table(s) for s in program.sessions) + "\n"


def pool_order_text(o: ir.Order | None) -> str:
    return "none" if o is None else _order(o)


def children(e) -> tuple:
    """The direct sub-expressions of an IR expression, left to right."""
    if isinstance(e, ir.Bin):
        return (e.l, e.r)
    if isinstance(e, ir.Un):
        return (e.e,)
    if isinstance(e, ir.Cond):
        return (e.c, e.t, e.f)
    if isinstance(e, ir.Call):
        return e.args
    if isinstance(e, ir.Quant) and e.e is not None:
        return (e.e,)
    return ()


def walk_expr(e: ir.Expr | None):
    """Every sub-expression of `e` (itself first), in source order. The IR's
    one expression walker: iterative, so depth costs no stack."""
    if e is None:
        return
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def expr_names(e: ir.Expr | None) -> set[str]:
    """Attribute names an expression reads."""
    return {x.name for x in walk_expr(e) if isinstance(x, ir.Name)}
