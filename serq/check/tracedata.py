"""A trace as data: what `--json` gives beside the words (docs/json.md).

For each step of a counterexample (or a replayed run, or a `--worst`
witness): the action (`move`), its events (`serq.semantics.events`, one
object each: kind, session, pool, amounts), the state after it (per
session: program point, phase, run, holds, attributes; per pool: free,
cached, queue) and what changed (`changes`: one object per field that
changed, with its values before and after). A deadlock's diagnosis as
data (`blocked`): each waiting hold with the pools it needs and can
obtain (`serq.check.admission`), the residents that cannot grow, and the
wait-for cycle. Sessions are named by their labels (`chat#1`), pools and
stages by their names. Everything is read through the model's API and
its words' functions, so the data says what the English says.
"""

from __future__ import annotations

import dataclasses

from serq.check.admission import grower_data, refusals
from serq.check.model import SerqModel, pool_levels, session_phase, wait_for
from serq.semantics.model import ITERATE, TURN
from serq.semantics.state import prefix_owner

__all__ = ["trace_data", "step_data", "event_data", "state_data", "changes", "blocked_data", "move_data"]


def _label(sm: SerqModel, state, sid: int | None) -> str | None:
    if sid is None or sid < 0 or sid >= len(state.sessions):
        return None
    return sm.label(state, sid)


def move_data(sm: SerqModel, state, action) -> dict | None:
    """The action of a step: `{"kind": "arrive" | "turn", "session": ...}`
    or `{"kind": "iterate", "stage": ...}`; None at step 0."""
    if action is None:
        return None
    kind, subj = action[0], action[1]
    if kind == ITERATE:
        return {"kind": kind, "stage": sm.m.stages[subj].name}
    return {"kind": "turn" if kind == TURN else "arrive", "session": _label(sm, state, subj)}


def event_data(sm: SerqModel, state, e) -> dict:
    """One event (a NamedTuple of serq.semantics.events) as an object:
    `kind` first, sessions by label (`session`, `child`, `owner`), pools
    and stages by name, `n` (a serve's tokens) as `tokens`. `state` is the
    state after the step (a spawned child is in it)."""
    m = sm.m
    d: dict = {"kind": e.kind}
    for k, v in e._asdict().items():
        if k == "kind":
            continue
        if k == "sid":
            d["session"] = _label(sm, state, v)
        elif k == "child":
            d["child"] = _label(sm, state, v)
        elif k == "pool":
            d["pool"] = None if v is None else m.pools[v].name
        elif k == "pools":
            d["pools"] = [m.pools[p].name for p in v]
        elif k == "stage":
            d["stage"] = m.stages[v].name
        elif k == "owner":  # a session's cache entry, or a shared prefix's
            words = prefix_owner(m.program, v) if v < 0 else None
            d["owner"] = _label(sm, state, v) if v >= 0 else None
            d["prefix"] = words.rsplit(" ", 1)[-1] if words else None
            if words and words.startswith("copies"):
                d["copies"] = True
        elif k == "n":
            d["tokens"] = v
        else:
            d[k] = v.item() if hasattr(v, "item") else v
    return d


def session_data(sm: SerqModel, state, sid: int) -> dict:
    """One session of a state: its program point (`at`: the kind of the
    program's state, `line`), `phase` (the timeline's word), the run in
    progress, holds, the queue it waits in, children, attributes, stuck."""
    m = sm.m
    s = state.sessions[sid]
    prog = m.progs[s.prog]
    st = prog.states[s.pc]
    k = st.kind
    run = None
    if k == "run":
        run = {"phase": st.run, "done": s.run_done, "total": s.run_total, "stage": st.stage}
    queue = None
    if k == "acquire":
        gate = m.gates[s.prog][s.pc]
        q = state.pools[gate].queue
        queue = {"pool": m.pools[gate].name, "position": q.index(sid) + 1 if sid in q else None}
    return {
        "session": sm.label(state, sid), "program": prog.name, "at": k, "line": st.at[0] if st.at else None,
        "phase": session_phase(sm, state, sid), "run": run, "queue": queue,
        "holds": [{"pool": m.pools[h.pool].name, "own": h.own, "use": h.use} for h in s.holds],
        "parent": _label(sm, state, s.parent), "children": s.live,
        "attrs": {a.name: v for a, v in zip(prog.attrs, s.attrs) if a.origin != "internal"},
        "stuck": bool(s.stuck),
    }


def pool_data(sm: SerqModel, state, p: int) -> dict:
    """One pool of a state: free (null: infinite), allocated and cached
    units, the cache's entries (oldest release first) and the queue."""
    m = sm.m
    alloc, cached, free = pool_levels(sm, state, p)
    cache = []
    for e in sorted(state.pools[p].cache, key=lambda e: e.released):
        words = prefix_owner(m.program, e.owner) if e.owner < 0 else None
        cache.append({"owner": _label(sm, state, e.owner) if e.owner >= 0 else None,
                      "prefix": words.rsplit(" ", 1)[-1] if words else None, "units": e.units})
    return {"pool": m.pools[p].name, "cap": m.caps[p], "free": free, "allocated": alloc, "cached": cached,
            "cache": cache, "queue": [sm.label(state, q) for q in state.pools[p].queue]}


def state_data(sm: SerqModel, state) -> dict:
    return {"sessions": [session_data(sm, state, i) for i in range(len(state.sessions))],
            "pools": [pool_data(sm, state, p) for p in range(len(state.pools))],
            "fault": None if state.fault is None else {"kind": state.fault[0], "message": state.fault[1]}}


def changes(before: dict | None, after: dict) -> list[dict]:
    """What differs between two `state_data`: one object per session or
    pool field, `{"session": L, "field": F, "before": B, "after": A}`
    (`"pool"` for a pool's); a session spawned in the step has every
    field with `before` null."""
    out: list[dict] = []
    for what, key in (("sessions", "session"), ("pools", "pool")):
        old = {x[key]: x for x in before[what]} if before is not None else {}
        for x in after[what]:
            prev = old.get(x[key], {})
            out.extend({key: x[key], "field": f, "before": prev.get(f), "after": v}
                       for f, v in x.items() if f != key and prev.get(f) != v)
    if before is not None and before["fault"] != after["fault"]:
        out.append({"field": "fault", "before": before["fault"], "after": after["fault"]})
    return out


def step_data(sm: SerqModel, prev, step, prev_data: dict | None) -> dict:
    """The data of one trace step (`prev`: the step before it, None at
    step 0): move, events, state, changes."""
    data = state_data(sm, step.state)
    if prev is None:
        return {"move": None, "events": [], "state": data, "changes": []}
    _nxt, events = sm.m.step_events(prev.state, step.action)
    return {"move": move_data(sm, step.state, step.action),
            "events": [event_data(sm, step.state, e) for e in events],
            "state": data, "changes": changes(prev_data, data)}


def trace_data(sm: SerqModel, trace) -> list[dict]:
    """`step_data` of every step of a trace, in order."""
    out, prev, prev_data = [], None, None
    for step in trace:
        d = step_data(sm, prev, step, prev_data)
        out.append(d)
        prev, prev_data = step, d["state"]
    return out


def blocked_data(sm: SerqModel, state) -> dict:
    """A deadlock's diagnosis as data (the `diagnosis` lines' content):
    `waiting` (each waiting hold's refusal: the queue head it is behind,
    the `admit if` that is false, each pool's needs, obtainable units and
    holders), `growers` (residents that cannot grow), `wait_for_cycle`
    (`waiter`, `waits_for`, `via`: a pool's name or `join`; null when
    there is none)."""
    m = sm.m
    why = refusals(m, state)
    _lines, cycle = wait_for(sm, state, why)
    growers = [g for sid in range(len(state.sessions)) if sid not in why
               for g in [grower_data(m, state, sid)] if g is not None]
    return {"waiting": [why[sid].data(m, state) for sid in sorted(why)], "growers": growers,
            "wait_for_cycle": None if not cycle else [
                {"waiter": sm.label(state, a), "waits_for": sm.label(state, b), "via": via} for a, b, via in cycle]}


def model_for(program, *, ties: str = "all", symmetry: bool = True, checks=None) -> SerqModel:
    """A model over `program` to read a trace with (the words and the data
    do not depend on the checks, but the stuck events' words do)."""
    from serq.check.explore import checks_of

    return SerqModel(program, ties=ties, symmetry=symmetry, checks=checks_of(program, checks))


def explore_json(model, result, *, with_timing: bool = True, with_stats: bool = True, warnings=()) -> dict:
    """`serq explore --json` (format serq-explore): the engine's rendering
    (explorer/report.py: the verdict, the trace in words, the point of no
    return, the statistics) with each step's data (`step_data`), the
    deadlock's `blocked`, and the instance's `warnings`. `model`: a
    SerqModel, or a function making one (called only for a trace)."""
    from explorer.report import render_json
    from serq.formats import EXPLORE, stamp, warnings_data

    d = stamp(EXPLORE, render_json(result, with_timing=with_timing, with_stats=with_stats))
    d["warnings"] = warnings_data(warnings)
    d["blocked"] = None
    if result.trace:
        # a model (serq's, or the SLO search's product), or a function making one
        sm = model() if callable(model) and not isinstance(model, SerqModel) else model
        trace = result.trace
        if not isinstance(sm, SerqModel):  # the SLO search's product (serq/check/slo.py): serq's state inside
            sm, trace = sm.sm, [dataclasses.replace(s, state=s.state.state) for s in trace]
        for t, data in zip(d["trace"], trace_data(sm, trace)):
            t.update(data)
        if result.verdict == "deadlock":
            d["blocked"] = blocked_data(sm, trace[-1].state)
    return d
