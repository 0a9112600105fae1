"""`serq sweep`'s report, as text and JSON (serq/check/sweep.py runs it).

One constant: a row per value (the verdict, the states, each worst case,
whether it meets the requirement, the message), the boundary, and the
counterexample just on its failing side. Two or three constants: one grid
per value of the third (rows: the first constant's values, columns: the
second's) -- the verdicts, each metric's worst case, and with `--require`
whether the cell meets it; the last of these grids ends each row with its
boundary. Then the monotonicity check, the Pareto frontier, and what the
requirement decides.
"""

from __future__ import annotations

from serq.check.sweep import CellWorst, Row, Sweep, exit_code


def head_lines(sw: Sweep) -> list[str]:
    """What a cell is judged by, when more than its verdict."""
    out = []
    if sw.metrics:
        out.append("worst case per cell (over every behaviour, as serq explore --worst): " + ", ".join(sw.metrics))
    if sw.requirement is not None:
        out.append(f"requirement: {sw.requirement.words}")
    return out


def warning_lines(sw: Sweep, unit: str) -> list[str]:
    """The instance's warnings at the values evaluated, each once (its
    place in the instance and its words; the JSON has the notes too), with
    the values it holds at (those of every value: `at every ...`)."""
    from serq.diagnostics import printable

    seen: dict[str, list] = {}
    for r in sw.rows:
        for d in r.warnings:
            where = f" at line {d.line}:{d.col}" if d.line >= 1 else ""
            seen.setdefault(f"warning[{d.code}]{where}: {printable(d.message)}", []).append(r.value)
    out = []
    for words, values in seen.items():
        cells = ["; ".join(" ".join(f"{a.name}={x}" for a, x in zip(sw.axes, v)) if isinstance(v, tuple) else str(v)
                 for v in values)]
        at = f"every {unit[:-1]}" if len(values) == len(sw.rows) else ", ".join(cells)
        out.append(f"{words} (at {at})")
    return out


def tail_lines(sw: Sweep, unit: str = "values") -> list[str]:
    out = warning_lines(sw, unit)
    if sw.requirement is not None:
        n = len(sw.rows)
        und = f", undecided at {sw.unknown}" if sw.unknown else ""
        out.append(f"requirement met at {sw.met} of the {n} {unit} evaluated{und} (exit {exit_code(sw)})")
    if sw.interrupted:
        out.append(f"interrupted by {sw.interrupted}: the {unit} above are those finished before it; "
                   "the sweep is incomplete")
    if sw.failed:
        out.append(f"failed: {sw.failed}; the other workers were stopped; the {unit} above are those "
                   "finished before it; the sweep is incomplete")
    return out


def render_text(sw: Sweep, with_timing: bool = True) -> str:
    from explorer.report import render_text as render_result

    if len(sw.axes) > 1:
        return render_grid(sw)
    n = sw.hi - sw.lo + 1
    how = "every value" if sw.mode == "all" else f"{len(sw.rows)} by bisection"
    out = [f"sweep {sw.name} over {sw.lo}..{sw.hi} ({n} value{'s' if n != 1 else ''}, {how})"] + head_lines(sw)
    w0 = max([len(sw.name)] + [len(str(r.value)) for r in sw.rows])  # no row: interrupted before the first
    w1 = max([len("verdict")] + [len(r.label) for r in sw.rows])
    extra = [(f"worst {m}", lambda r, m=m: r.worst[m].short if m in r.worst else "-") for m in sw.metrics]
    if sw.requirement is not None:
        extra.append(("required", lambda r: {"pass": "yes", "fail": "no"}.get(r.outcome, "?")))
    head = "".join(f"  {h:>{max(len(h), 5)}}" for h, _ in extra)
    out.append(f"{sw.name:>{w0}}  {'verdict':<{w1}}  {'states':>8}{head}  message")
    for r in sw.rows:
        cols = "".join(f"  {f(r):>{max(len(h), 5)}}" for h, f in extra)
        out.append(f"{r.value:>{w0}}  {r.label:<{w1}}  {r.states:>8}{cols}  {r.message}".rstrip())
    out.append(sw.note)
    out.extend(tail_lines(sw))
    if sw.counterexample is not None:
        out.append(f"\nthe counterexample at {sw.name} = {sw.last_fail}:")
        out.append(render_result(sw.counterexample, with_timing=with_timing).rstrip("\n"))
    return "\n".join(out) + "\n"


from serq.formats import SWEEP as FORMAT, VERSIONS  # noqa: E402

VERSION = VERSIONS[FORMAT]


def worst_json(w: CellWorst) -> dict:
    return {"value": w.value, "unbounded": w.value is None and w.error is None, "complete": w.complete,
            "bound_reason": w.bound_reason, "text": w.text, "error": w.error}


def common_json(sw: Sweep) -> dict:
    req = sw.requirement
    return {"format": FORMAT, "version": VERSION,
            "consts": [{"name": a.name, "lo": a.lo, "hi": a.hi} for a in sw.axes],
            "metrics": list(sw.metrics),
            "requirement": None if req is None else {"text": req.words, "clauses": [c.text for c in req.clauses]},
            "met": sw.met if req is not None else None, "quantifier": sw.quantifier, "exit_code": exit_code(sw)}


def cell_json(r: Row) -> dict:
    from serq.formats import warnings_data

    out = {"verdict": r.verdict, "kind": r.kind, "message": r.message, "exit_code": r.exit_code, "states": r.states,
           "warnings": warnings_data(r.warnings)}
    if r.worst:
        out["worst"] = {m: worst_json(w) for m, w in r.worst.items()}
    if r.req is not None:
        out["outcome"] = r.outcome
    return out


def result_json(sw: Sweep, with_timing: bool = True) -> dict:
    """The counterexample at the boundary, as `serq explore --json` gives it (format serq-explore)."""
    from serq.check.tracedata import explore_json, model_for

    spec = sw.counterexample_model
    if spec is None:  # a sweep made by hand, without its instance: the trace in words only
        from explorer.report import render_json as words_json
        from serq.formats import EXPLORE, stamp

        return stamp(EXPLORE, words_json(sw.counterexample, with_timing=with_timing))
    return explore_json(lambda: model_for(**spec), sw.counterexample, with_timing=with_timing)


def render_json(sw: Sweep, with_timing: bool = True) -> dict:
    if len(sw.axes) > 1:
        return {**common_json(sw), **grid_json(sw)}
    return {
        **common_json(sw),
        "const": sw.name, "lo": sw.lo, "hi": sw.hi, "mode": sw.mode,
        "rows": [{"value": r.value, **cell_json(r)} for r in sw.rows],
        "monotone": sw.monotone, "last_fail": sw.last_fail, "first_pass": sw.first_pass, "note": sw.note,
        "interrupted": sw.interrupted,
        "failed": sw.failed,
        "counterexample": (None if sw.counterexample is None else
                           {"value": sw.last_fail, "result": result_json(sw, with_timing=with_timing)}),
    }


# ---------------------------------------------------------------- two or three constants

LETTER = {"pass": "P", "deadlock": "D", "livelock": "L", "violation": "V", "bound": "B", "error": "E",
          "interrupted": "B"}
VERDICT_KEY = "P pass, D deadlock, L livelock, V violation, B bound, E error, . not evaluated"
OUTCOME = {"pass": "+", "fail": "-", None: "?"}


def cell_words(sw: Sweep, cell: tuple) -> str:
    return "(" + ", ".join(f"{a.name}={v}" for a, v in zip(sw.axes, cell)) + ")"


def _more(sw: Sweep, axis: int, sign: int) -> str:
    return ("more " if sign > 0 else "less ") + sw.axes[axis].name


def boundary_head(sw: Sweep) -> str:
    return ("smallest" if sw.mono.orient[1] > 0 else "largest") + f" passing {sw.axes[1].name}"


def boundary_text(sw: Sweep, b) -> str:
    if b.value is None:
        return "-"
    if b.exact:
        return str(b.value)
    return ("<=" if sw.mono.orient[1] > 0 else ">=") + str(b.value)


def monotony_line(sw: Sweep) -> str:
    m, n = sw.mono, len(sw.rows)
    if m.holds is None:
        outs = {r.outcome for r in sw.rows} - {None}
        what = {frozenset({"pass"}): "every cell evaluated passes", frozenset({"fail"}): "every cell evaluated fails"}
        return what.get(frozenset(outs), "no cell evaluated is decided") + ": nothing to check for monotonicity"
    if m.holds:
        dirs = [_more(sw, a, s) for a, s in enumerate(m.orient)]
        how = (f"; the bisection of each row along {sw.axes[1].name} assumed it there"
               if sw.mode == "bisect" else "")
        return (f"monotone on the {n} cells evaluated: {', '.join(dirs[:-1])} or {dirs[-1]} never turns a pass "
                f"into a fail (no passing cell has a failing cell at or above it in every constant){how}")
    if m.neither:
        parts = []
        for a, ((p1, f1), (p2, f2)) in sorted(m.neither.items()):
            x = sw.axes[a].name
            parts.append(f"not monotone in {x}: more {x} turns a pass into a fail from {cell_words(sw, p1)} to "
                         f"{cell_words(sw, f1)}, and less {x} from {cell_words(sw, p2)} to {cell_words(sw, f2)}")
        return "; ".join(parts)
    p, f = m.pairs[0]
    dirs = " and ".join(_more(sw, a, m.orient[a]) for a in range(len(sw.axes)) if p[a] != f[a])
    k = len(m.pairs)
    return (f"not monotone: {cell_words(sw, p)} passes but {cell_words(sw, f)}, with {dirs} and no constant "
            f"worse, fails ({k} such pair{'s' if k != 1 else ''} among the {n} cells evaluated)")


def frontier_line(sw: Sweep) -> str:
    if not sw.frontier:
        return "Pareto frontier: none (no cell evaluated passes)"
    below = ", ".join(("less " if s > 0 else "more ") + a.name for a, s in zip(sw.axes, sw.mono.orient))
    cells = ", ".join(cell_words(sw, c) for c in sw.frontier)
    return (f"Pareto frontier: {cells} (the passing cells with no other passing cell at or below them in every "
            f"constant; below: {below})")


def _table(sw: Sweep, title: str, text, third: tuple, bounds: bool) -> list[str]:
    """One grid: rows the first constant, columns the second; `text(row)`
    the cell's text (row None: not evaluated)."""
    a0, a1 = sw.axes[0], sw.axes[1]
    by = {r.value: r for r in sw.rows}
    body = [[text(by.get((v0, v1) + third)) for v1 in a1.values] for v0 in a0.values]
    corner = f"{a0.name}\\{a1.name}"
    w0 = max(len(corner), *(len(str(v)) for v in a0.values))
    w = max(1, *(len(str(v)) for v in a1.values), *(len(t) for row in body for t in row))
    head = f"{corner:>{w0}}" + "".join(f"  {v:>{w}}" for v in a1.values)
    bmap = {b.row: b for b in sw.bounds} if bounds else {}
    if bounds:
        head += f"  {boundary_head(sw)}"
    out = [title, head]
    for v0, row in zip(a0.values, body):
        line = f"{v0:>{w0}}" + "".join(f"  {t:>{w}}" for t in row)
        if bounds:
            line += f"  {boundary_text(sw, bmap[(v0,) + third])}"
        out.append(line)
    return out


def render_grid(sw: Sweep) -> str:
    sizes = [a.hi - a.lo + 1 for a in sw.axes]
    total = 1
    for s in sizes:
        total *= s
    how = "every cell" if sw.mode == "all" else (f"{len(sw.rows)} by bisection of each row along "
                                                f"{sw.axes[1].name}")
    over = ", ".join(f"{a.name} over {a.lo}..{a.hi}" for a in sw.axes)
    out = [f"sweep {over} ({' x '.join(map(str, sizes))} = {total} cells, {how})"] + head_lines(sw)
    thirds = [(v,) for v in sw.axes[2].values] if len(sw.axes) == 3 else [()]
    for third in thirds:
        out.append("")
        if third:
            out.append(f"{sw.axes[2].name} = {third[0]}:")
        last_is_verdict = sw.requirement is None
        out += _table(sw, f"verdict ({VERDICT_KEY})", lambda r: "." if r is None else LETTER.get(r.verdict, "?"),
                      third, last_is_verdict)
        for m in sw.metrics:
            out += _table(sw, f"worst {m} (inf: unbounded, >=N: at least N, the graph was cut; . not evaluated)",
                          lambda r, m=m: "." if r is None else r.worst[m].short if m in r.worst else "-", third, False)
        if not last_is_verdict:
            out += _table(sw, "requirement (+ met, - not met, ? undecided, . not evaluated)",
                          lambda r: "." if r is None else OUTCOME[r.outcome], third, True)
    out.append("")
    out.append(monotony_line(sw))
    out.append(frontier_line(sw))
    out.extend(tail_lines(sw, "cells"))
    return "\n".join(out) + "\n"


def grid_json(sw: Sweep) -> dict:
    names = [a.name for a in sw.axes]
    at = lambda cell: dict(zip(names, cell))  # noqa: E731
    m = sw.mono
    col = names[1]
    return {
        "mode": sw.mode,
        "cells": [{"at": at(r.value), **cell_json(r)} for r in sw.rows],
        "monotone": {"holds": m.holds, "direction": {n: ("more" if s > 0 else "less") for n, s in zip(names, m.orient)},
                     "pairs": [[at(p), at(f)] for p, f in m.pairs],
                     "neither": {names[a]: [[at(p), at(f)] for p, f in prs] for a, prs in sorted(m.neither.items())},
                     "text": monotony_line(sw)},
        "boundaries": [{"row": dict(zip([n for n in names if n != col], b.row)), "const": col, "value": b.value,
                        "exact": b.exact} for b in sw.bounds],
        "frontier": [at(c) for c in sw.frontier],
        "interrupted": sw.interrupted,
        "failed": sw.failed,
    }
