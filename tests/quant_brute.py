"""Brute force for quantifiers over sessions (`forall P x: E`, `exists P
x: E`, `count(P x where E)`; docs/language.md, "Quantifiers over
sessions"): a plain breadth-first search over the simulator's step
function (`Model.transitions`: raw states, no canonical form, no
symmetry), each property a Python function of a list of session views
built here from the state's fields and the IR program, not by the
kernel's evaluator:

* a session is in a quantifier's range when its program is the one named
  and its program point is neither `arrive` (not arrived) nor `end`;
* `waiting` its point is an `acquire`, `thinking` a `turn`, `joining` a
  `join`, `prefilling`/`decoding` a `run` of that phase; `held[P]` the
  units its holds of P own;
* `preempted` is followed along each path, not read from the state: set
  by a `preempt` event of the session, cleared by its `arrive` or `turn`
  and when it leaves the hold (a release of its own not caused by a
  preemption in the same step). The search's node is the state with the
  set of sessions so marked.

`first_depths` gives, per property, the depth of the first state where
it is false (an invariant's shortest counterexample) or true (a
`sometimes` witness), None when no reachable state has it."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from serq.semantics.model import Model


def views(program, state, marked: frozenset) -> dict[str, list]:
    """The sessions present in `state`, by program name, as namespaces of
    their attributes and facts."""
    out: dict[str, list] = {sp.name: [] for sp in program.sessions}
    pools = [p.name for p in program.pools]
    for sid, s in enumerate(state.sessions):
        sp = program.sessions[s.prog]
        st = sp.states[s.pc]
        if st.kind in ("arrive", "end"):
            continue
        v = SimpleNamespace(**{a.name: s.attrs[i] for i, a in enumerate(sp.attrs)})
        v.sid = sid
        v.waiting, v.thinking, v.joining = st.kind == "acquire", st.kind == "turn", st.kind == "join"
        v.prefilling = st.kind == "run" and st.run == "prefill"
        v.decoding = st.kind == "run" and st.run == "decode"
        v.preempted = sid in marked
        v.held = {p: sum(h.own for h in s.holds if h.pool == i) for i, p in enumerate(pools)}
        out[sp.name].append(v)
    return out


def mark(marked: frozenset, events) -> frozenset:
    """The sessions preempted in their current hold after a step's events."""
    out = set(marked)
    preempted_now = set()
    for e in events:
        sid = getattr(e, "sid", None)
        if e.kind == "preempt":
            out.add(sid)
            preempted_now.add(sid)
        elif e.kind in ("arrive", "turn"):
            out.discard(sid)
        elif e.kind == "release" and sid not in preempted_now:
            out.discard(sid)
    return frozenset(out)


def first_depths(program, preds, max_states: int = 300_000):
    """Per predicate (a function of `views`' dict): (the depth of the first
    state where it is false, of the first where it is true), None when
    none; and the number of nodes searched."""
    m = Model(program)
    s0 = (m.initial_state(), frozenset())
    seen, q = {s0: 0}, deque([s0])
    false_at: list = [None] * len(preds)
    true_at: list = [None] * len(preds)
    while q:
        node = q.popleft()
        s, marked = node
        d = seen[node]
        if s.fault is not None:
            continue
        vs = views(program, s, marked)
        for i, f in enumerate(preds):
            if f(vs):
                true_at[i] = d if true_at[i] is None else true_at[i]
            else:
                false_at[i] = d if false_at[i] is None else false_at[i]
        for _a, nxt, events in m.transitions(s):
            n2 = (nxt, mark(marked, events))
            if n2 not in seen:
                seen[n2] = d + 1
                q.append(n2)
                assert len(seen) <= max_states, "too many raw states for a brute force"
    return false_at, true_at, len(seen)
