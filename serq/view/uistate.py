"""What a state page of `serq ui` shows beyond the state itself: each
action's successor (what changes, in the trace's own words), whether it
was visited already on the path, whether some run can still complete from
it (the point-of-no-return analysis, serq/view/uiwork.py), and what the
last step changed.

The words are the model's (`format_action`, `format_diff`: those of
`serq explore`'s traces); a successor is the model's `step`, its identity
the search's fingerprint.
"""

from __future__ import annotations

from explorer.fingerprint import format_fp, state_fingerprint
from explorer.model import successor_with_events
from serq.check.model import pool_levels, session_text

DOOM_WORDS = {"completes": "some run from here completes", "doomed": "no run from here completes",
              "unknown": "not known (the point-of-no-return analysis has not run, or was cut)"}


def actions_view(m, trace, marks) -> list[dict]:
    """Each action of the path's last state, with its successor's preview:
    `changes` (format_diff lines), `visited` (the first step of the path
    at that state, None when new to the path), `doom` (its mark) and
    `no_return` (the step that loses every completing run: from a state
    where one completes to one where none does)."""
    state, here = trace[-1].state, trace[-1].fingerprint
    first: dict[int, int] = {}
    for s in trace:
        first.setdefault(s.fingerprint, s.index)
    now = doom_of(marks, here)
    out = []
    for i, a in enumerate(m.actions(state)):
        nxt, events = successor_with_events(m, state, a)
        view = {"index": i, "text": m.format_action(state, a), "choices": list(a[2])}
        if nxt is None:  # an action that `step` rejects: listed, never followed
            out.append({**view, "applies": False, "changes": [], "fingerprint": None, "visited": None,
                        "doom": "unknown", "no_return": False, "problem": None, "done": False})
            continue
        fp = state_fingerprint(m, nxt)
        doom = doom_of(marks, fp)
        bad = m.invariants(nxt)
        out.append({**view, "applies": True, "changes": [str(x) for x in m.format_diff(state, nxt)],
                    "fingerprint": format_fp(fp), "visited": first.get(fp), "doom": doom,
                    "no_return": now == "completes" and doom == "doomed",
                    "problem": bad[0][0] if bad else None, "done": bool(m.is_done(nxt))})
    return out


def doom_of(marks, fp: int) -> str:
    return marks.of(fp) if marks is not None else "unknown"


def path_marks(trace, marks) -> tuple[list[str], int | None]:
    """(each step's mark, the path's point of no return: the step whose
    state is the first from which no run completes, None when there is
    none or it is not known)."""
    dooms = [doom_of(marks, s.fingerprint) for s in trace]
    if marks is None:
        return dooms, None
    nr = marks.no_return([s.fingerprint for s in trace])
    return dooms, nr.step if nr.status in ("step", "initial") else None


def last_change(m, trace, sessions: list[dict], pools: list[dict]) -> dict | None:
    """What the path's last step changed: its action and its diff lines
    (the trace's), and the session rows and pool cells it changed marked
    in `sessions` and `pools` (`changed`, `before`)."""
    if len(trace) < 2:
        for row in sessions + pools:
            row["changed"], row["before"] = ([] if "queue" in row else False), None
        return None
    prev = trace[-2].state
    for sid, s in enumerate(sessions):
        before = session_text(m, prev, sid) if sid < len(prev.sessions) else None
        s["changed"] = before != s["text"]
        s["before"] = before if before is not None else "(not spawned yet)"
    for p, pool in enumerate(pools):
        alloc, cached, free = pool_levels(m, prev, p)
        was = {"allocated": alloc, "cached": cached, "free": free,
               "queue": [m.label(prev, q) for q in prev.pools[p].queue]}
        pool["changed"] = [k for k, v in was.items() if pool[k] != v]
        pool["before"] = was
    return {"step": trace[-1].index, "action": trace[-1].action_text, "lines": list(trace[-1].diff)}
