"""`serq diff`'s report: words (each joint step, then what each variant did
in it: once when both did the same) and JSON (`"format": "serq-diff"`)."""

from __future__ import annotations

import re

from serq.check.diff import SIDES, DiffResult, Witness
from serq.formats import DIFF as FORMAT, VERSIONS
from serq.semantics.model import ITERATE, TURN

VERSION = VERSIONS[FORMAT]
_FAILS = {"deadlock": "deadlocks", "livelock": "livelocks"}


def _fails_word(how: str) -> str:
    return _FAILS.get(how, f"fails: {how}" if not how.startswith("violation") else "fails by a " + how)


def witness_head(r: DiffResult, w: Witness) -> str:
    x, y = SIDES[w.fails], SIDES[1 - w.fails]
    return f"{x} {_fails_word(w.how)} where {y} completes: {w.message}"


def side_move(r: DiffResult, prev, cur, action, x: int) -> tuple[str, list[str]]:
    """(what variant x did in a joint step, the lines of what changed)."""
    side = r.model.sides[x]
    act = action[2 + x]
    if act is None:
        if prev.fail[x] is not None:
            return "no move: its behaviour ended at its violation", []
        if action[0] == ITERATE:
            return "no move: nothing to do", []
        if action[0] == TURN:
            return f"no move: {r.model.label(prev, action[1])} does not wait at a turn", []
        return "no move", []
    text = side.sm.format_action(prev.s[x], act)
    diff = side.sm.format_diff(prev.s[x].tuple(), cur.s[x].tuple())
    if cur.fail[x] is not None and prev.fail[x] is None:
        diff = diff + [f"{cur.fail[x][0].upper()}: {cur.fail[x][1]}"]
    return text, diff


_LINE = re.compile(r"\(line (\d+)\)")


def merged(ta: str, tb: str) -> str | None:
    """One text for two that differ only in their source lines (the
    variants' files differ in comments or declarations): `(line 28; b: 23)`;
    None when they differ otherwise."""
    if ta == tb:
        return ta
    if _LINE.sub("", ta) != _LINE.sub("", tb):
        return None
    nb = iter(_LINE.findall(tb))

    def both(m):
        other = next(nb)
        return m.group(0) if other == m.group(1) else f"(line {m.group(1)}; b: {other})"

    return _LINE.sub(both, ta)


def merged_moves(ma, mb):
    """(text, lines) for both variants when they did the same, else None."""
    if len(ma[1]) != len(mb[1]):
        return None
    parts = [merged(x, y) for x, y in zip((ma[0],) + tuple(ma[1]), (mb[0],) + tuple(mb[1]))]
    return None if None in parts else (parts[0], parts[1:])


def side_path(r: DiffResult, trace, x: int) -> str:
    """Variant x's own run along a joint trace, as a replay path of
    `serq explore FILE --ties T --no-symmetry --replay PATH`."""
    side = r.model.sides[x]
    out = ["0"]
    for k in range(1, len(trace)):
        act = trace[k].action[2 + x]
        if act is not None:
            out.append(str([a for a, _ in side.succ(trace[k - 1].state.s[x])].index(act)))
    return "/".join(out)


def replay_line(r: DiffResult, trace, x: int) -> str:
    checks = "".join(f" --check {c}" for c in r.checks) if r.checks else ""
    return (f"replay {SIDES[x]}: serq explore {r.files[x]} --ties {r.ties} --no-symmetry{checks} "
            f"--replay {side_path(r, trace, x)}")


def step_lines(r: DiffResult, trace, lasso_start: int | None = None) -> list[str]:
    out = []
    for k, step in enumerate(trace):
        if lasso_start is not None and k == lasso_start + 1:
            out.append("  -- cycle starts here --")
        if k == 0:
            out.append("  0. initial state")
            first, _second = step.state.s
            out.extend(f"       {line}" for line in r.model.sides[0].sm.format_state(first.tuple()))
            continue
        prev = trace[k - 1].state
        out.append(f"  {k}. {r.model.format_action(prev, step.action)}")
        moves = [side_move(r, prev, step.state, step.action, x) for x in (0, 1)]
        same = merged_moves(*moves)
        if same is not None:
            out.append(f"       a, b: {same[0]}")
            out.extend(f"            {line}" for line in same[1])
            continue
        for x in (0, 1):
            out.append(f"       {SIDES[x]}: {moves[x][0]}")
            out.extend(f"            {line}" for line in moves[x][1])
    if lasso_start is not None and trace:
        out.append(f"  -- cycle returns to step {lasso_start} --")
    return out


def headline(r: DiffResult) -> str:
    if r.witnesses:
        parts = [f"{SIDES[w.fails]} {_fails_word(w.how)} where {SIDES[1 - w.fails]} completes" for w in r.witnesses]
        return f"differ: {' and '.join(parts)}, on the same arrivals, replies and drawn values"
    if r.complete and r.interrupted:  # the joint search ended; --worst's was stopped
        return (f"interrupted by {r.worst.bound_reason} during --worst: no difference in completion "
                f"({r.states} joint states)")
    if r.complete:
        both = [v for v, _m, _n in r.verdicts if v != "pass"]
        tail = f"; both fail on some environment ({both[0]}, {both[1]})" if len(both) == 2 else ""
        return (f"same: no arrivals, replies and drawn values make one variant fail where the other completes "
                f"({r.states} joint states){tail}")
    if r.bound_reason in ("SIGINT", "SIGTERM"):
        return f"interrupted by {r.bound_reason}: no difference found before it ({r.states} joint states)"
    return (f"bound: no difference within the bound ({r.bound_reason}, {r.states} joint states): "
            "not a proof that the variants agree")


def render_text(r: DiffResult) -> str:
    out = [headline(r)]
    for x in (0, 1):
        v, msg, n = r.verdicts[x]
        out.append(f"{SIDES[x]}: {r.files[x]}: {v}: {msg}")
    out.extend(f"note: {n}" for n in r.notes)
    for w in r.witnesses:
        out.append("")
        out.append(witness_head(r, w))
        out.extend(step_lines(r, w.trace, w.lasso_start))
        y = 1 - w.fails
        out.append(f"  {SIDES[y]}: done: every session ended" if w.lasso_start is None else
                   f"  {SIDES[y]}: done: every session ended before the cycle")
        out.extend(f"  {SIDES[w.fails]}: {line}" for line in w.diagnosis)
        out.extend(replay_line(r, w.trace, x) for x in (0, 1))
    if r.worst is not None:
        out.append("")
        out.extend(worst_lines(r, r.worst))
    out.append(f"joint states: {r.states} (ties {r.ties})")
    return "\n".join(out) + "\n"


def steps_json(r: DiffResult, trace) -> list[dict]:
    out = []
    for k, step in enumerate(trace):
        if k == 0:
            out.append({"step": 0, "action": "initial state"})
            continue
        prev = trace[k - 1].state
        item = {"step": k, "action": r.model.format_action(prev, step.action)}
        for x in (0, 1):
            text, lines = side_move(r, prev, step.state, step.action, x)
            item[SIDES[x]] = {"moved": step.action[2 + x] is not None, "action": text, "diff": lines}
        out.append(item)
    return out


def render_json(r: DiffResult) -> dict:
    from serq.formats import warnings_data

    out = {
        "format": FORMAT, "version": VERSION, "verdict": r.verdict, "exit_code": r.exit_code,
        "text": headline(r), "files": {SIDES[x]: r.files[x] for x in (0, 1)},
        "verdicts": {SIDES[x]: {"verdict": r.verdicts[x][0], "message": r.verdicts[x][1],
                                "states": r.verdicts[x][2]} for x in (0, 1)},
        "ties": r.ties, "states": r.states, "complete": r.complete, "bound_reason": r.bound_reason,
        "notes": list(r.notes),
        "warnings": {SIDES[x]: warnings_data(r.warnings[x]) for x in (0, 1)},
        "differences": [{"fails": SIDES[w.fails], "completes": SIDES[1 - w.fails], "how": w.how,
                         "message": w.message, "text": witness_head(r, w), "lasso_start": w.lasso_start,
                         "diagnosis": list(w.diagnosis),
                         "replay": {SIDES[x]: side_path(r, w.trace, x) for x in (0, 1)},
                         "steps": steps_json(r, w.trace)} for w in r.witnesses],
    }
    if r.worst is not None:
        out["worst"] = worst_json(r, r.worst)
    return out


# ---------------------------------------------------------------- --worst


def _subject(r, subject) -> str:
    if subject in ("run", "states"):
        return "the run" if subject == "run" else "the states"
    st = r.model.initial_states()[0]
    labels = r.model.label(st, subject) if subject in st.names[0] else None
    if labels:
        return labels
    return "session " + ".".join(str(i + 1) for i in subject)


def _value_word(w: WorstDiff, v) -> str:
    unit = w.metric.unit[:-1] if v in (1, -1) else w.metric.unit
    return f"{v} {unit}"


def worst_lines(r, w: WorstDiff) -> list[str]:
    from serq.check.worst import headline

    m = w.metric
    out = [f"worst {m.name} difference ({m.what}):"]
    if w.bound_reason in ("SIGINT", "SIGTERM") and not w.states:
        return out + [f"  interrupted by {w.bound_reason} while searching each variant alone: not computed"]
    for x, one in enumerate(w.alone):
        out.append(f"  {'ab'[x]} alone: {headline(one)}")
    if any(one.value is None for one in w.alone):
        which = [("ab")[x] for x, one in enumerate(w.alone) if one.value is None]
        if len(which) == 2:
            out.append("  both are unbounded: their difference is not defined")
        else:
            out.append(f"  {which[0]} above {'ab'[1 - 'ab'.index(which[0])]}: unbounded ({which[0]}'s own "
                       "cycle adds to it every time round, the other stays within its bound)")
        return out
    cut = "" if w.complete else f" (at least: the joint graph was cut at its {w.bound_reason} bound)"
    for d, f in enumerate(w.found):
        x, y = "ab"[d], "ab"[1 - d]
        if f is None:
            out.append(f"  largest {x} - {y}: none (no subject's value is final in both)")
            continue
        diff, subject, va, vb, trace = f
        out.append(f"  largest {x} - {y}: {_value_word(w, diff)}{cut}: {_subject(r, subject)} "
                   f"({m.name} {va} in a, {vb} in b)")
    for d, f in enumerate(w.found):
        if f is None or f[0] <= 0:
            continue
        out.append("")
        out.append(f"{'ab'[d]} above {'ab'[1 - d]} by {_value_word(w, f[0])}: {_subject(r, f[1])} "
                   f"({m.name} {f[2]} in a, {f[3]} in b)")
        out.extend(step_lines(r, f[4]))
    out.append(f"worst joint states: {w.states}")
    return out


def worst_json(r, w: WorstDiff) -> dict:
    from serq.check.worst import render_json

    return {
        "metric": w.metric.name, "unit": w.metric.unit, "states": w.states, "complete": w.complete,
        "bound_reason": w.bound_reason,
        "alone": {"ab"[x]: render_json(one) for x, one in enumerate(w.alone)},
        "unbounded": [("ab")[x] for x, one in enumerate(w.alone) if one.value is None and one.lasso_start is not None],
        "directions": [None if f is None else
                       {"above": "ab"[d], "below": "ab"[1 - d], "difference": f[0], "subject": _subject(r, f[1]),
                        "a": f[2], "b": f[3], "steps": steps_json(r, f[4])} for d, f in enumerate(w.found)],
    }
