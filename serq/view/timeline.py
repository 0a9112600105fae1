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
from serq.check.model import SerqModel, pool_levels, session_phase, session_text
from serq.check.tracedata import blocked_data
from serq.view.stakes import final_stakes, no_return_stake, step_arrows, step_data_events, step_stakes, wait_arrows

# the short text in a lane cell, by phase (the title says everything)
_SHORT = {"not-arrived": "", "queued": "queued", "preempted": "queued", "turn": "turn", "join": "join",
          "done": "done", "other": "", "absent": ""}

PHASES = ("not-arrived", "queued", "preempted", "prefill", "decode", "turn", "join", "done")
PHASE_WORDS = {"absent": "not spawned yet", "other": "elsewhere in its program", "not-arrived": "not arrived", "queued": "queued", "preempted": "queued after a preemption",
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
    arrows: list[dict] = []
    for k, step in enumerate(trace):
        if k == 0:
            marks: dict[int, list[str]] = {}
            stakes: list[dict] = []
        else:
            _nxt, events = m.step_events(trace[k - 1].state, step.action)
            marks = _marks(events)
            evs = step_data_events(sm, step.state, events)
            stakes = step_stakes(evs)
            arrows.extend(step_arrows(sm, step.state, evs, k))
        in_cycle = lasso is not None and k > lasso
        steps.append({"n": k, "action": step.action_text or "initial state", "diff": list(step.diff),
                      "cycle": in_cycle, "action_index": step.action_index, "counted": None,
                      "stakes": stakes})
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
            c["nums"] = [("free", "free " + ("∞" if c["free"] is None else str(c["free"])), False),
                         ("cached", f"cached {c['cached']}", not c["cached"]),
                         ("queue", f"queue {c['queue']}", not c["queue"])]
    wait_cycle = []
    blocked = blocked_data(sm, last) if trace and result.verdict == "deadlock" else None
    if blocked is not None:
        by_label = {lane["label"]: lane for lane in lanes}
        for e in blocked["wait_for_cycle"] or []:
            by_label[e["waiter"]]["in_cycle"] = True
            reason = "its child" if e["via"] == "join" else f"which holds {e['via']}"
            wait_cycle.append({"from": e["waiter"], "to": e["waits_for"], "why": reason})
        arrows.extend(wait_arrows(blocked, len(steps) - 1))
    if steps:
        steps[-1]["stakes"] = steps[-1]["stakes"] + final_stakes(result, blocked)
    nr = getattr(result, "no_return", None)
    no_return_step = nr.step if nr is not None and nr.status == "step" else None
    for step in steps:
        step["no_return"] = step["n"] == no_return_step
        if step["no_return"] or (step["n"] == 0 and nr is not None and nr.status == "initial"):
            step["stakes"] = [no_return_stake(step["n"] == 0)] + step["stakes"]
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
        "arrows": arrows,
        "diagnosis": list(result.diagnosis),
        "warnings": warnings(sm.program),
        "no_return": no_return_line(result) if nr is not None else None,
        "counted": None,
        # the step selected when the page opens: the point of no return, else the last
        "selected": no_return_step if no_return_step is not None else max(len(steps) - 1, 0),
    }


# the legend's words for the marks and colours a page can use, by key (a
# class of the grid, or of an arrow); `legend` keeps those the page uses
LEGEND = {
    "alloc": ("sw alloc", "", "allocated units"),
    "cached": ("sw cached", "", "cached units"),
    "free": ("sw free", "", "free units"),
    "infinite": ("sw infinite", "", "infinite pool (scaled to the most it held)"),
    "mark-preempt": ("sw mark-preempt", "", "preempted in this step"),
    "mark-stuck": ("sw mark-stuck", "", "stuck: preempted again at the same point"),
    "mark-serve-prefill": ("sw mark-serve-prefill", "", "served prefill tokens in this step"),
    "mark-serve-decode": ("sw mark-serve-decode", "", "served decode tokens in this step"),
    "mark-admit": ("sw text", "▸", "admitted in this step"),
    "stake": ("sw text st-preempt", "Aa", "at stake: the step's consequence (red: a session loses work or "
                                         "cannot move; bold: from here no run completes)"),
    "no-return": ("sw text", "⚑", "the point of no return: no continuation of this step completes"),
    "counted": ("sw counted", "", "the worst case's count grows in this step"),
    "cycle": ("sw cycle", "", "the livelock's cycle (↳ where it starts, ↺ k: it returns to step k)"),
    "in-cycle": ("sw in-cycle", "", "in the wait-for cycle"),
    "arrow-spawn": ("sw line arrow-spawn", "", "spawn: parent → child"),
    "arrow-join": ("sw line arrow-join", "", "join: child → parent"),
    "arrow-wait": ("sw line arrow-wait", "", "waits for (the deadlock's wait-for cycle)"),
    "selected": ("sw sel", "", "the selected step (click, ←/→, j/k, Home/End)"),
}


def legend(data: dict) -> list[dict]:
    """The legend of a page: every phase colour, mark, arrow and row
    style the grid of `data` uses, each once, with its words."""
    cells = [c for lane in data["lanes"] for c in lane["cells"]]
    used = {c["phase"] for c in cells}
    out = [{"key": f"phase-{ph}", "cls": f"sw phase-{ph}", "sym": "", "words": PHASE_WORDS[ph]}
           for ph in (*PHASES, "absent", "other") if ph in used]
    keys = []
    if data["pools"]:
        keys += ["alloc", "cached", "free"]
    if any(not p["cap"] for p in data["pools"]):
        keys.append("infinite")
    marks = {mk for c in cells for mk in c["marks"]}
    keys += [k for k in LEGEND if k.startswith("mark-") and k[5:] in marks]
    steps = data["steps"]
    if any(s["stakes"] for s in steps):
        keys.append("stake")
    keys += [k for k, on in (("no-return", any(s["no_return"] for s in steps)),
                             ("counted", any(s["counted"] for s in steps)),
                             ("cycle", data["lasso_start"] is not None),
                             ("in-cycle", any(lane["in_cycle"] for lane in data["lanes"]))) if on]
    kinds = {a["kind"] for a in data["arrows"]}
    keys += [f"arrow-{k}" for k in ("spawn", "join", "wait") if k in kinds]
    keys.append("selected")
    out += [{"key": k, "cls": LEGEND[k][0], "sym": LEGEND[k][1], "words": LEGEND[k][2]} for k in keys]
    return out


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
    return {"t": data, "phases": PHASES, "phase_words": PHASE_WORDS, "version": __version__,
            "legend": legend(data) if data["steps"] else []}


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
