"""`serq diff`: whether two instances are variants of one instance, so that
their behaviours can be paired on the same environment.

Two instances match when their environments are the same: the same
workload (line by line: the program, the count, the arguments), and, for
every program the workload starts or a session spawns, the same
environment statements in the same order -- each `draw` and each unkeyed
`choose` (its attribute and its domain) and each `spawn` (the program and
the count). Everything else may differ: pools, stages and their policies,
hold headers (`reserve`, `take 0`, `admit if`), runs, chunk sizes, budgets,
constants that only these read. The first difference is a located error
(E028) in the second file, with a note pointing at the first file.
"""

from __future__ import annotations

from serq import ir
from serq.diagnostics import Diagnostic, SerqError
from serq.ir.text import expr_text


def _domain(d: ir.Domain) -> str:
    if d.values:
        return "{" + ", ".join(expr_text(v) for v in d.values) + "}"
    return f"{expr_text(d.lo)}..{expr_text(d.hi)}"


def env_statements(sp: ir.SessionProgram) -> list[tuple[str, object]]:
    """(words, position) of a program's environment statements, in order."""
    out = []
    for st in sp.states:
        if st.kind == "draw":
            out.append((f"draw {st.attr} in {_domain(st.domain)}", st.at))
        elif st.kind == "choose" and st.key is None:
            out.append((f"choose {st.attr} in {_domain(st.domain)}", st.at))
        elif st.kind == "spawn":
            args = ", ".join(f"{n}={expr_text(e)}" for n, e in st.args)
            out.append((f"spawn {st.program}({args}) x {expr_text(st.count)}", st.at))
    return out


def env_attrs(program: ir.Program) -> set[tuple[str, str]]:
    """(program, attribute) of every value the environment decides: those
    a `draw` or an unkeyed `choose` gives."""
    return {(sp.name, st.attr) for sp in program.sessions for st in sp.states
            if st.kind == "draw" or (st.kind == "choose" and st.key is None)}


def _line(w: ir.WorkloadLine) -> str:
    args = ", ".join(f"{n}={expr_text(e)}" for n, e in w.args)
    return f"{w.count} x {w.program}" + (f"({args})" if args else "")


def _programs(program: ir.Program) -> list[str]:
    """The programs the workload starts, then those they spawn, in order."""
    by = {sp.name: sp for sp in program.sessions}
    out: list[str] = []
    todo = [w.program for w in program.workload if w.count]
    while todo:
        name = todo.pop(0)
        if name in out or name not in by:
            continue
        out.append(name)
        todo.extend(st.program for st in by[name].states if st.kind == "spawn")
    return out


def match(a: ir.Program, b: ir.Program, file_a: str, file_b: str, source_b: str | None) -> None:
    """Raise E028 at the first difference between the environments of a
    and b (located in b, a note locating it in a); return when they match."""

    def fail(at_b, message: str, at_a=None, note: str | None = None):
        line, col = at_b if at_b else (0, 0)
        notes = []
        if note:
            notes.append(note)
        if at_a:
            notes.append(f"in {file_a}: line {at_a[0]}, column {at_a[1]}")
        notes.append("serq diff pairs the behaviours of two variants of one instance: the same workload, "
                     "the same draws, unkeyed chooses and spawns in each program (docs/explorer.md, serq diff)")
        raise SerqError([Diagnostic(line, col, "E028", f"cannot match {file_b} with {file_a}: {message}",
                                    file=file_b, notes=tuple(notes))], source_b)

    wa, wb = list(a.workload), list(b.workload)
    end_b = wb[-1].at if wb else None
    for i in range(max(len(wa), len(wb))):
        la = wa[i] if i < len(wa) else None
        lb = wb[i] if i < len(wb) else None
        if la is None:
            fail(lb.at, f"workload line {i + 1} `{_line(lb)}` is not in the first instance's workload")
        if lb is None:
            fail(end_b, f"the workload has no line {i + 1}: the first instance's is `{_line(la)}`", la.at)
        if _line(la) != _line(lb):
            fail(lb.at, f"workload line {i + 1} is `{_line(lb)}`, the first instance's is `{_line(la)}`", la.at)
    pa = {sp.name: sp for sp in a.sessions}
    pb = {sp.name: sp for sp in b.sessions}
    for name in _programs(a):
        if name not in pb:
            fail(end_b, f"there is no session program `{name}`", pa[name].at)
        ea, eb = env_statements(pa[name]), env_statements(pb[name])
        for k in range(max(len(ea), len(eb))):
            xa = ea[k] if k < len(ea) else None
            xb = eb[k] if k < len(eb) else None
            if xa is None:
                fail(xb[1], f"program `{name}` has `{xb[0]}` where the first instance's has no more draws, "
                     "chooses or spawns", pa[name].at)
            if xb is None:
                fail(pb[name].at, f"program `{name}` lacks `{xa[0]}` (its environment statement {k + 1})", xa[1])
            if xa[0] != xb[0]:
                fail(xb[1], f"program `{name}` has `{xb[0]}` where the first instance's has `{xa[0]}`", xa[1])


def take_or_queue(log: dict, x: int, key, item) -> tuple | None:
    """Pair variant x's next `item` under `key` with the other variant's:
    `log` maps a key to (the variant that is ahead, its items not yet
    paired). When the other variant is ahead, its oldest item is taken and
    returned as a 1-tuple; otherwise `item` is queued and None returned."""
    side, vals = log.get(key, (x, ()))
    if side == x or not vals:
        log[key] = (x, vals + (item,))
        return None
    if len(vals) > 1:
        log[key] = (side, vals[1:])
    else:
        del log[key]
    return (vals[0],)
