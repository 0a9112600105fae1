"""What is at stake on each step of a trace, and the arrows between lanes.

Read from the trace's events and state as data (serq/check/tracedata.py:
`event_data`, `session_data`, `blocked_data`), so the page says what
`--json` says; nothing here re-reads the program.

`step_stakes` gives a step's consequences in words: who is preempted
(and what it loses), who must queue again for a pool on its way, whose cached units
are evicted or dropped, a fault. `final_stakes` adds the end of the
trace: for a deadlock, what each waiting hold needs against what it can
obtain ("needs 2 blocks of kv, 1 obtainable"), who cannot grow, who waits
at a join; for a livelock, that the cycle repeats. `no_return_stake` is
the words on the point of no return. `step_arrows` gives a step's spawn
(parent → child) and join (child → parent) arrows, `wait_arrows` the
deadlock's wait-for cycle (waiter → waited-for).
"""

from __future__ import annotations

from serq.check.tracedata import event_data, session_data

# the events a step's stakes and arrows read (the others are progress, drawn by the lanes)
_READ = frozenset(("arrive", "turn", "preempt", "release", "stuck", "queued", "admit", "evict", "drop", "fault", "spawn", "joined"))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def step_data_events(sm, state, events) -> list[dict]:
    """The events of a step that the stakes and arrows read, as data
    (`state`: the state after the step)."""
    return [event_data(sm, state, e) for e in events if e.kind in _READ]


def step_stakes(evs: list[dict]) -> list[dict]:
    """A step's consequences: `{"kind", "session", "text"}` each, in the
    order of its events. `evs`: `step_data_events` of the step."""
    out: list[dict] = []
    released = {(e["session"], e["pool"]): e["units"] for e in evs if e["kind"] == "release"}
    # a session that queues as it arrives, replies or is spawned waits as every request does: not a stake
    moved = {e["session"] for e in evs if e["kind"] in ("preempt", "admit", "arrive", "turn")}
    moved |= {e["child"] for e in evs if e["kind"] == "spawn"}
    for e in evs:
        k, s = e["kind"], e.get("session")
        if k == "preempt":
            why = "its own growth" if e["why"] == "self" else e["why"]
            lost = released.get((s, e["pool"]))
            loses = f", loses {_plural(lost, 'unit')} of {e['pool']}" if lost else ""
            out.append({"kind": "preempt", "session": s, "text": f"{s} preempted ({why}){loses}"})
        elif k == "stuck":
            out.append({"kind": "stuck", "session": s,
                        "text": f"{s} stuck: preempted again at the same point ({e['pool']})"})
        elif k == "queued" and s not in moved:
            out.append({"kind": "wait", "session": s, "text": f"{s} waits for {e['pool']}"})
        elif k in ("evict", "drop"):
            owner = e.get("owner") or (f"prefix {e['prefix']}" if e.get("prefix") else "a finished session")
            if k == "drop":
                owner = s
            verb = "evicted" if k == "evict" else "dropped"
            out.append({"kind": k, "session": owner,
                        "text": f"{owner}: {_plural(e['units'], 'cached unit')} of {e['pool']} {verb}"})
        elif k == "fault":
            out.append({"kind": "fault", "session": None, "text": f"fault ({e['what']}): {e['message']}"})
    return out


def no_return_stake(initial: bool) -> dict:
    text = "from the start, no run completes" if initial else "point of no return: from here no run completes"
    return {"kind": "no-return", "session": None, "text": text}


def final_stakes(result, b: dict | None) -> list[dict]:
    """What the last step leaves at stake: a deadlock's blocked sessions
    (`b`: its `blocked_data`), a livelock's return."""
    out: list[dict] = []
    if b is not None:
        for w in b["waiting"]:
            s = w["session"]
            if w["behind"]:
                out.append({"kind": "blocked", "session": s, "text": f"{s} waits behind {w['behind']}"})
            if w["admit_if"]:
                out.append({"kind": "blocked", "session": s, "text": f"{s}: admit if {w['admit_if']} is false"})
            for p in w["pools"]:
                if p["short"] and not w["behind"]:
                    bl = p["blocks"]
                    out.append({"kind": "blocked", "session": s,
                                "text": f"{s} needs {_plural(bl['needs'], 'block')} of {p['pool']}, "
                                        f"{bl['obtainable']} obtainable"})
        for g in b["growers"]:
            s = g["session"]
            out.append({"kind": "blocked", "session": s,
                        "text": f"{s} cannot grow {g['pool']}: {g['free'] + g['evictable']} units obtainable, "
                                f"a block is {g['block']}"})
        for e in b["wait_for_cycle"] or []:
            if e["via"] == "join":
                out.append({"kind": "blocked", "session": e["waiter"],
                            "text": f"{e['waiter']} waits at join for {e['waits_for']}"})
        out.append({"kind": "deadlock", "session": None, "text": "nothing can move: deadlock"})
    elif result.verdict == "livelock" and result.lasso_start is not None:
        out.append({"kind": "livelock", "session": None,
                    "text": f"back to step {result.lasso_start}: the cycle repeats forever"})
    return out


def step_arrows(sm, state, evs: list[dict], k: int) -> list[dict]:
    """A step's spawn (parent → child) and join (each child → its parent)
    arrows: `{"kind", "step", "from", "to", "title"}`."""
    out: list[dict] = []
    for e in evs:
        if e["kind"] == "spawn":
            out.append({"kind": "spawn", "step": k, "from": e["session"], "to": e["child"],
                        "title": f"{e['session']} spawns {e['child']}"})
        elif e["kind"] == "joined":
            parent = e["session"]
            for sid in range(len(state.sessions)):
                d = session_data(sm, state, sid)
                if d["parent"] == parent:
                    out.append({"kind": "join", "step": k, "from": d["session"], "to": parent,
                                "title": f"{parent} joins {d['session']}"})
    return out


def wait_arrows(b: dict, k: int) -> list[dict]:
    """The deadlock's wait-for cycle (`b`: its `blocked_data`) at its last
    step `k`: one arrow per edge, waiter → the session it waits for."""
    cycle = b["wait_for_cycle"] or []
    return [{"kind": "wait", "step": k, "from": e["waiter"], "to": e["waits_for"],
             "title": f"{e['waiter']} waits for {e['waits_for']} "
                      f"({'its child' if e['via'] == 'join' else 'which holds ' + e['via']})"}
            for e in cycle]
