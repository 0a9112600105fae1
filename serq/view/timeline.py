"""A counterexample (or any replayed run) as a timeline page.

`timeline(sm, result)` turns a trace into plain data: one lane per session
with its phase at every step, one stacked bar per pool and step
(allocated / cached / free units), the action of every step with what it
changed, the livelock's cycle and the deadlock's wait-for cycle.
`render_timeline` lays that data out as one self-contained HTML page.
Both read the trace through the model's API only (states, `step_events`,
the words of `serq.check.model`), never the search's internals.
"""

from __future__ import annotations

from explorer.report import no_return_line
from serq import __version__
from serq.check.model import SerqModel, pool_levels, session_phase, session_text, wait_for

# the short text in a lane cell, by phase (the title says everything)
_SHORT = {"not-arrived": "", "queued": "queued", "preempted": "queued", "turn": "turn", "join": "join",
          "done": "done", "other": "", "absent": ""}

PHASES = ("not-arrived", "queued", "preempted", "prefill", "decode", "turn", "join", "done")
PHASE_WORDS = {"not-arrived": "not arrived", "queued": "queued", "preempted": "queued after a preemption",
               "prefill": "prefill", "decode": "decode", "turn": "waiting at turn", "join": "waiting at join",
               "done": "done"}


def _cell(sm: SerqModel, state, sid: int, marks: list[str]) -> dict:
    if sid >= len(state.sessions):
        return {"phase": "absent", "text": "", "title": "not spawned yet", "marks": []}
    phase = session_phase(sm, state, sid)
    s = state.sessions[sid]
    text = f"{s.run_done}/{s.run_total}" if phase in ("prefill", "decode") else _SHORT.get(phase, "")
    return {"phase": phase, "text": text, "title": session_text(sm, state, sid), "marks": marks}


def _marks(events) -> dict[int, list[str]]:
    """Per session, what happened to it in this step worth a mark."""
    out: dict[int, list[str]] = {}
    for e in events:
        k = e.kind
        mark = f"serve-{e.phase}" if k == "serve" else k if k in ("preempt", "stuck", "admit") else None
        if mark and mark not in out.setdefault(e.sid, []):
            out[e.sid].append(mark)
    return out


def timeline(sm: SerqModel, result, instance: str) -> dict:
    trace = result.trace
    m = sm.m
    last = trace[-1].state if trace else None
    n_sessions = len(last.sessions) if trace else 0
    steps = []
    lanes = [{"label": sm.label(last, sid), "cells": [], "in_cycle": False} for sid in range(n_sessions)]
    pools = []
    for p, pool in enumerate(m.pools if trace else ()):
        pools.append({"name": pool.name, "cap": m.caps[p], "block": m.blocks[p], "cells": []})
    lasso = result.lasso_start
    for k, step in enumerate(trace):
        if k == 0:
            marks: dict[int, list[str]] = {}
        else:
            _nxt, events = m.step_events(trace[k - 1].state, step.action)
            marks = _marks(events)
        in_cycle = lasso is not None and k > lasso
        steps.append({"n": k, "action": step.action_text or "initial state", "diff": list(step.diff),
                      "cycle": in_cycle, "action_index": step.action_index, "counted": None})
        for sid in range(n_sessions):
            lanes[sid]["cells"].append(_cell(sm, step.state, sid, marks.get(sid, [])))
        for p in range(len(m.pools)):
            alloc, cached, free = pool_levels(sm, step.state, p)
            queue = len(step.state.pools[p].queue)
            pools[p]["cells"].append({"alloc": alloc, "cached": cached, "free": free, "queue": queue})
    for p, pool in enumerate(pools):
        # an infinite pool's bars are scaled to the most it ever held
        scale = pool["cap"] if pool["cap"] else max([c["alloc"] + c["cached"] for c in pool["cells"]] + [1])
        for k, c in enumerate(pool["cells"]):
            c["pct"] = [_pct(c["alloc"], scale), _pct(c["cached"], scale)]
            of = f" of {pool['cap']}" if pool["cap"] else " (infinite pool)"
            free = f", free {c['free']}" if c["free"] is not None else ""
            c["title"] = (f"{pool['name']} after step {k}: allocated {c['alloc']}, cached {c['cached']}"
                          f"{free}{of}; {c['queue']} queued")
    wait_cycle = []
    if result.verdict == "deadlock":
        _lines, cycle = wait_for(sm, last)
        for a, b, why in cycle or []:
            lanes[a]["in_cycle"] = True
            reason = "its child" if why == "join" else f"which holds {why}"
            wait_cycle.append({"from": sm.label(last, a), "to": sm.label(last, b), "why": reason})
    nr = getattr(result, "no_return", None)
    no_return_step = nr.step if nr is not None and nr.status == "step" else None
    for step in steps:
        step["no_return"] = step["n"] == no_return_step
    head = f"{result.verdict} ({result.kind})" if result.kind else result.verdict
    return {
        "instance": instance,
        "verdict": result.verdict,
        "headline": f"{head}: {result.message}",
        "replay": result.replay_path,
        "lasso_start": lasso,
        "steps": steps,
        "lanes": lanes,
        "pools": pools,
        "wait_cycle": wait_cycle,
        "diagnosis": list(result.diagnosis),
        "warnings": warnings(sm.program),
        "no_return": no_return_line(result) if nr is not None else None,
        "counted": None,
    }


def warnings(prog) -> list[dict]:
    """The instance's validation warnings (W500, W504, ... that may have
    predicted the counterexample), located."""
    from serq.lang.validate import validate

    return [{"code": d.code, "where": f"line {d.line}:{d.col}" if d.line >= 1 else "",
             "message": d.message, "notes": list(d.notes)}
            for d in validate(prog, explorer=True) if not d.is_error]


def _pct(units: int, scale: int) -> str:
    # fixed decimals: the page's bytes must not depend on float printing
    return f"{100 * units / scale:.2f}" if scale else "0.00"


def timeline_values(data: dict) -> dict:
    """The values of timeline.html.j2 for the data of `timeline`."""
    return {"t": data, "phases": PHASES, "phase_words": PHASE_WORDS, "version": __version__}


def render_timeline(data: dict) -> str:
    from serq.view import environment

    return environment().get_template("timeline.html.j2").render(**timeline_values(data))


def timeline_page(sm: SerqModel, result, instance: str) -> str:
    if hasattr(sm, "slos"):  # an SLO search (serq/check/slo.py): serq's state is the first half of each
        from dataclasses import replace

        result = replace(result, trace=[replace(s, state=s.state.state) for s in result.trace])
        sm = sm.sm
    return render_timeline(timeline(sm, result, instance))


def worst_page(w, instance: str) -> str:
    """`serq explore --worst METRIC --html`: the witness of a worst case as
    a timeline, the steps where its count grew marked."""
    from dataclasses import replace

    from explorer.result import Result
    from serq.check.worst import counted_text, headline

    # the witness's states carry the metric's phases: the model's state is the first half
    trace = [replace(s, state=s.state.state) for s in w.trace]
    run = Result("worst", "", trace=trace, lasso_start=w.lasso_start, replay_path=w.replay_path)
    data = timeline(w.model, run, instance)
    data["verdict"] = "worst" if w.complete else "bound"
    data["headline"] = headline(w)
    counted = dict(w.counted)
    for step in data["steps"]:
        step["counted"] = counted.get(step["n"])
    data["counted"] = counted_text(w) if counted else None
    return render_timeline(data)
