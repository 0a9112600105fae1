"""Brute force for `serq explore --coverage`: a plain breadth-first search
over the model's step function (its actions, its steps with their events,
states identified by the model's fingerprints, as the explorer identifies
them), each transition classified from its events as docs/explorer.md
("Event coverage") says, without serq/check/coverage.py.

A victim's phase is read from the IR program at the session's program
point; a blocked admission from the kernel's own evaluation of the
waiting hold (`Engine.explain_admission`: its `admit if`, and per pool the
units it needs against those it can obtain), not from serq's refusal
words."""

from __future__ import annotations

from collections import deque

from serq.defaults import COVERAGE_KINDS
from serq.semantics.model import ITERATE


def phase_of(program, state, sid: int) -> str | None:
    s = state.sessions[sid]
    st = program.sessions[s.prog].states[s.pc]
    return st.run if st.kind == "run" else None


def refused_by_gate(m, state, sid: int, si: int) -> bool:
    admit_if, items, fault = m.engine.explain_admission(state, sid, si)
    if fault is not None:
        return False
    return admit_if is False or any(obt is not None and max(need, take) > obt for _p, _r, need, take, obt in items)


def blocked(m, program, action, events, nxt) -> bool:
    for sid, s in enumerate(nxt.sessions):
        st = program.sessions[s.prog].states[s.pc]
        if st.kind != "acquire":
            continue
        first = st.hold.items[0].pool  # a hold waits in its first pool's queue
        pool = program.pool(first)
        p = [x.name for x in program.pools].index(first)
        si = -1
        if pool.admit_via is not None:
            si = [x.name for x in program.stages].index(pool.admit_via)
            if action[0] != ITERATE or action[1] != si or any(e.kind == "preempt" for e in events):
                continue
        queue = list(nxt.pools[p].queue)
        if pool.hol != "skip" and queue[:1] != [sid]:
            continue
        if refused_by_gate(m, nxt, sid, si):
            return True
    return False


def classify(m, program, state, action, events, nxt) -> set[str]:
    out = set()
    kinds = [e.kind for e in events]
    for i, e in enumerate(events):
        if e.kind == "preempt":
            out.add("preemption")
            if e.why == "self":
                out.add("self-preemption")
            earlier = [x.phase for x in events[:i] if x.kind == "serve" and x.sid == e.sid]
            phase = earlier[-1] if earlier else phase_of(program, state, e.sid)
            if phase is not None:
                out.add("preemption-" + phase)
        if e.kind == "queued" and any(x.kind == "preempt" and x.sid == e.sid for x in events[:i]):
            out.add("requeue")
        if e.kind == "hit" and e.units > 0:
            out.add("cache-hit")
    for kind, word in (("admit", "admission"), ("evict", "eviction"), ("spawn", "spawn"), ("joined", "join")):
        if kind in kinds:
            out.add(word)
    if blocked(m, program, action, events, nxt):
        out.add("admission-blocked")
    return out


def brute_coverage(sm) -> tuple[dict[str, int], int, dict[str, int]]:
    """(counts per kind, transitions, the shortest witness length per kind)
    over every reachable transition of `sm` (a SerqModel)."""
    m, program = sm.m, sm.program
    counts = dict.fromkeys(COVERAGE_KINDS, 0)
    shortest: dict[str, int] = {}
    seen = set()
    queue = deque()
    for s in sm.initial_states():
        fp = sm.fingerprint(s)
        if fp not in seen:
            seen.add(fp)
            queue.append((s, 0))
    transitions = 0
    while queue:
        state, depth = queue.popleft()
        plain = state.tuple() if hasattr(state, "tuple") else state
        for action in sm.actions(state):
            nxt, events = m.step_events(plain, action)
            if nxt is None:
                continue
            transitions += 1
            for k in classify(m, program, plain, action, events, nxt):
                counts[k] += 1
                shortest.setdefault(k, depth + 1)
            fp = sm.fingerprint(nxt)
            if fp not in seen:
                seen.add(fp)
                queue.append((nxt, depth + 1))
    return counts, transitions, shortest
