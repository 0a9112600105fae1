"""Quantifiers over sessions (`forall P x: E`, `exists P x: E`,
`count(P x where E)`, `count(P)`) and what they read (`x.NAME`,
`x.held(POOL)`): where they may stand (@check only), the program they
range over, the variable each `x.NAME` names, and the attribute or fact
it reads. Types are inferred with the rest of the expression
(`serq.ir.types.infer_type`); docs/language.md, "Quantifiers over
sessions", says what each one means."""

from __future__ import annotations

from serq import ir
from serq.diagnostics import similar
from serq.ir.types import SESSION_FACTS
from serq.ir.util import children, walk_expr
from serq.vocab import Moment

MAX_QUANT_DEPTH = 8  # quantifiers nested in one another (each takes two slots of the kernel's stack)
QUANT_FORMS = "`forall P x: ...`, `exists P x: ...` or `count(P x where ...)`"


def uses_sessions(e: ir.Expr | None) -> bool:
    """Whether `e` holds a quantifier over sessions or reads a variable's session."""
    return any(isinstance(x, (ir.Quant, ir.Of)) for x in walk_expr(e))


def reads_preempted(e: ir.Expr | None) -> bool:
    """Whether `e` reads `x.preempted` (the state must then keep each
    session's previous preemption position: serq.check.model)."""
    return any(isinstance(x, ir.Of) and x.name == "preempted" and x.pool is None for x in walk_expr(e))


def check_quantifiers(v, e: ir.Expr | None, m: Moment) -> dict[int, str | None]:
    """Report (on the validator `v`'s sink) every quantifier misplaced or
    ill-formed in `e` at moment `m`; returns, for each bare name read
    inside a quantifier's body, the variable that could read it (a hint
    for its E302; None: a variable read bare, reported here)."""
    hints: dict[int, str] = {}
    if e is None or not uses_sessions(e):
        return hints
    sink = v.sink
    stack: list = [(e, {})]
    while stack:
        x, env = stack.pop()
        at = x.at or e.at
        if isinstance(x, ir.Quant):
            if not m.sessions:
                sink.error(at, "E304", f"a quantifier over sessions cannot be used at {m.label}",
                           "quantifiers are read at @check only: in `check invariant` and `check sometimes`",
                           span=len(x.q))
                continue
            if (x.e is None) != (x.var is None) or (x.e is None and x.q != "count"):  # an edited IR
                sink.error(at, "E407", f"malformed quantifier: `{x.q}` needs a variable and a body "
                           "(only `count(P)` has neither)", span=len(x.q))
                continue
            prog = v.sessions.get(x.program)
            if prog is None:
                hint = similar(x.program, list(v.sessions))
                sink.error(at, "E103", f"unknown session program `{x.program}`: `{x.q}` ranges over the "
                           f"sessions of a program ({', '.join(f'`{n}`' for n in v.sessions) or 'none declared'})",
                           *([f"did you mean `{hint}`?"] if hint else []), span=len(x.q))
            if len(env) >= MAX_QUANT_DEPTH:
                sink.error(at, "E004", f"quantifiers nested more than {MAX_QUANT_DEPTH} deep", span=len(x.q))
                continue
            if x.var is not None and x.var in env:
                sink.error(at, "E105", f"`{x.var}` is already bound by an enclosing quantifier: name this one "
                           "otherwise", span=len(x.q))
            if x.e is not None:
                stack.append((x.e, {**env, x.var: prog}))
            continue
        if isinstance(x, ir.Of):
            _of(v, x, at, env, m)
            continue
        if isinstance(x, ir.Name) and x.name in env:
            sink.error(at, "E200", f"`{x.name}` is a session, not a value: read one of its attributes or facts, "
                       f"e.g. `{x.name}.waiting`", span=len(x.name))
            hints[id(x)] = None  # reported
        elif isinstance(x, ir.Name) and env:
            hints[id(x)] = next(reversed(env))
        stack.extend((c, env) for c in children(x))
    return hints


def _of(v, x: ir.Of, at, env: dict, m: Moment) -> None:
    sink = v.sink
    text = f"{x.var}.{x.name}" + (f"({x.pool})" if x.pool is not None else "")
    if x.var not in env:
        where = "" if m.sessions else f"; quantifiers are read at @check only, not at {m.label}"
        sink.error(at, "E100", f"unknown name `{x.var}`: `{text}` reads the session bound to `{x.var}` by an "
                   f"enclosing {QUANT_FORMS}, and there is none{where}", span=len(x.var))
        return
    prog: ir.SessionProgram | None = env[x.var]
    if prog is None:  # an unknown program, reported at its quantifier
        return
    if x.pool is not None:
        if x.name != "held":
            sink.error(at, "E104", f"`{text}`: `held(POOL)` is the only fact of a session that takes a pool",
                       span=len(text))
        elif x.pool not in v.pools:
            hint = similar(x.pool, list(v.pools))
            sink.error(at, "E101", f"unknown pool `{x.pool}`", *([f"did you mean `{hint}`?"] if hint else []),
                       span=len(text))
        return
    if x.name == "held":
        sink.error(at, "E107", f"`{text}` takes a pool: `{x.var}.held(kv)` is the units of `kv` the session holds",
                   span=len(text))
        return
    attr = next((a for a in prog.attrs if a.name == x.name), None)
    if x.name in SESSION_FACTS:
        if attr is not None:
            sink.error(at, "E403", f"`{text}` is the fact `{x.name}` of the session, and session `{prog.name}` "
                       f"also has an attribute `{x.name}`, which a quantifier cannot read: rename the attribute",
                       span=len(text))
        return
    if attr is None:
        names = [a.name for a in prog.attrs if a.origin != "internal"]
        hint = similar(x.name, names + list(SESSION_FACTS))
        sink.error(at, "E100", f"unknown name `{x.name}` of session `{prog.name}`: `{x.var}.NAME` reads one of "
                   f"its attributes ({', '.join(names) or 'it has none'}) or a fact "
                   f"({', '.join(n + ('(POOL)' if n == 'held' else '') for n in SESSION_FACTS)})",
                   *([f"did you mean `{x.var}.{hint}`?"] if hint else []), span=len(text))
