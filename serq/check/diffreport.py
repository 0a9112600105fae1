"""`serq diff`'s report: words (each joint step, then what each variant did
in it: once when both did the same) and JSON (`"format": "serq-diff"`)."""

from __future__ import annotations

from serq.check.diff import SIDES, DiffResult, Witness
from serq.semantics.model import ITERATE, TURN

FORMAT, VERSION = "serq-diff", 1
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


def step_lines(r: DiffResult, trace, lasso_start: int | None = None) -> list[str]:
    out = []
    for k, step in enumerate(trace):
        if lasso_start is not None and k == lasso_start + 1:
            out.append("  -- cycle starts here --")
        if k == 0:
            out.append("  0. initial state")
            out.extend(f"       {line}" for line in r.model.sides[0].sm.format_state(step.state.s[0].tuple()))
            continue
        prev = trace[k - 1].state
        out.append(f"  {k}. {r.model.format_action(prev, step.action)}")
        moves = [side_move(r, prev, step.state, step.action, x) for x in (0, 1)]
        if moves[0] == moves[1]:
            out.append(f"       a, b: {moves[0][0]}")
            out.extend(f"            {line}" for line in moves[0][1])
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
    if r.complete:
        return (f"same: no arrivals, replies and drawn values make one variant fail where the other completes "
                f"({r.states} joint states)")
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
        out.append(f"replay: {_path(w.trace)}")
    if r.worst is not None:
        from serq.check.diffworst import worst_lines

        out.append("")
        out.extend(worst_lines(r, r.worst))
    out.append(f"joint states: {r.states} (ties {r.ties})")
    return "\n".join(out) + "\n"


def _path(trace) -> str:
    from explorer.trace import format_path

    return format_path(trace)


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
    out = {
        "format": FORMAT, "version": VERSION, "verdict": r.verdict, "exit_code": r.exit_code,
        "text": headline(r), "files": {SIDES[x]: r.files[x] for x in (0, 1)},
        "verdicts": {SIDES[x]: {"verdict": r.verdicts[x][0], "message": r.verdicts[x][1],
                                "states": r.verdicts[x][2]} for x in (0, 1)},
        "ties": r.ties, "states": r.states, "complete": r.complete, "bound_reason": r.bound_reason,
        "notes": list(r.notes),
        "differences": [{"fails": SIDES[w.fails], "completes": SIDES[1 - w.fails], "how": w.how,
                         "message": w.message, "text": witness_head(r, w), "lasso_start": w.lasso_start,
                         "diagnosis": list(w.diagnosis), "replay_path": _path(w.trace),
                         "steps": steps_json(r, w.trace)} for w in r.witnesses],
    }
    if r.worst is not None:
        from serq.check.diffworst import worst_json

        out["worst"] = worst_json(r, r.worst)
    return out
