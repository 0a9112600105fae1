"""Brute force for `check eventually admitted|done [under weak|strong]`:
the reachable graph enumerated state by state with the model's step
function, then fair cycles found by the definitions, without the
explorer's components search or its lasso:

* a state is told apart by its whole canonical row (`exact_key`: no
  fingerprint), the graph stored as plain dicts;
* a session *waits* (`admitted`) while it is in a pool's queue, or
  (`done`) while its program is at a state other than `arrive`, `turn`
  and `end`, read from the decoded state tuple;
* the classes: `iterate S` is S + 1, every `arrive` one class after the
  stages, a `turn` none;
* a session starves iff some reachable state where it waits has no
  successor, or some set of states where it waits that is strongly
  connected (each reaches each by a path of one or more steps inside it:
  computed from the reachability of every state, a breadth-first search
  each) is fair: weak -- every class enabled at all of its states is
  taken on an edge inside it; strong -- every class enabled at one of its
  states is taken inside it, else its states where an untaken class is
  enabled are dropped and the rest is tried again.

Quadratic: for graphs of a few thousand states."""

from __future__ import annotations

from collections import deque

REST = ("arrive", "turn", "end")


class Graph:
    def __init__(self, sm, goals: dict[str, bool]):
        """`sm`: a SerqModel without symmetry; `goals`: goal -> strong."""
        self.sm = sm
        self.ids: dict[bytes, int] = {}
        self.states: list = []
        self.edges: list[list[tuple[int, int]]] = []  # (class, target)
        nstages = len(sm.m.stages)
        init = sm.initial_states()[0]
        self._add(init)
        queue = deque([0])
        while queue:
            u = queue.popleft()
            state = self.states[u]
            out = []
            for a in sm.actions(state):
                nxt = sm.step(state, a)
                if nxt is None:
                    continue
                cls = a[1] + 1 if a[0] == "iterate" else nstages + 1 if a[0] == "arrive" else 0
                key = sm.exact_key(nxt)
                v = self.ids.get(key)
                if v is None:
                    v = self._add(nxt, key)
                    queue.append(v)
                out.append((cls, v))
            self.edges[u] = out
        self.goals = goals

    def _add(self, state, key=None) -> int:
        key = key if key is not None else self.sm.exact_key(state)
        self.ids[key] = len(self.states)
        self.states.append(state)
        self.edges.append([])
        return len(self.states) - 1

    def __len__(self) -> int:
        return len(self.states)

    def waits(self, u: int, goal: str, sid: int) -> bool:
        st = self.states[u].tuple()
        if sid >= len(st.sessions):
            return False
        if goal == "admitted":
            return any(sid in pool.queue for pool in st.pools)
        s = st.sessions[sid]
        return self.sm.m.progs[s.prog].states[s.pc].kind not in REST

    def sessions(self) -> int:
        return max(len(s.tuple().sessions) for s in self.states)


def _reach(g: Graph, inside: set[int]) -> dict[int, set[int]]:
    """u -> the states of `inside` reached from u by one step or more inside it."""
    out = {}
    for u in inside:
        seen: set[int] = set()
        queue = deque(v for _c, v in g.edges[u] if v in inside)
        while queue:
            v = queue.popleft()
            if v in seen:
                continue
            seen.add(v)
            queue.extend(w for _c, w in g.edges[v] if w in inside)
        out[u] = seen
    return out


def _enabled(g: Graph, u: int) -> set[int]:
    return {c for c, _v in g.edges[u] if c}


def fair_set(g: Graph, inside: set[int], strong: bool) -> set[int] | None:
    """A fair strongly connected set of states inside `inside`, or None."""
    while inside:
        reach = _reach(g, inside)
        comps = []
        done: set[int] = set()
        for u in sorted(inside):
            if u in done or u not in reach[u]:
                continue
            comp = {v for v in reach[u] if u in reach[v]}
            done |= comp
            comps.append(comp)
        unfair: set[int] = set()
        for comp in comps:
            taken = {c for u in comp for c, v in g.edges[u] if v in comp and c}
            ens = [_enabled(g, u) for u in comp]
            need = set().union(*ens) if strong else set.intersection(*ens)
            if need <= taken:
                return comp
            if strong:
                bad = set().union(*ens) - taken
                unfair |= {u for u in comp if not _enabled(g, u) & bad}
        if not strong:
            return None
        inside = unfair
    return None


def starved(g: Graph) -> list[tuple[str, int, str]]:
    """Every (goal, session, how) that starves: how is "end" (a state
    without successor where it waits) or "cycle"."""
    out = []
    for goal, strong in sorted(g.goals.items()):
        for sid in range(g.sessions()):
            inside = {u for u in range(len(g)) if g.waits(u, goal, sid)}
            if any(not g.edges[u] for u in inside):
                out.append((goal, sid, "end"))
            elif fair_set(g, inside, strong) is not None:
                out.append((goal, sid, "cycle"))
    return out


def lasso_is_fair(g: Graph, trace, start: int | None, goal: str, sid: int, strong: bool) -> bool:
    """The explorer's lasso, judged here: its states are states of the
    graph; the cycle returns to its start; the session waits at each of
    its states; and the cycle is fair (or, without a cycle, the last
    state has no successor and the session waits there)."""
    ids = [g.ids[g.sm.exact_key(s.state)] for s in trace]
    for a, b, st in zip(ids, ids[1:], trace[1:]):
        assert b in {v for _c, v in g.edges[a]}, "a step of the trace is no edge of the graph"
    if start is None:
        return not g.edges[ids[-1]] and g.waits(ids[-1], goal, sid)
    cyc = ids[start:]
    if cyc[0] != cyc[-1] or len(cyc) < 2:
        return False
    if not all(g.waits(u, goal, sid) for u in cyc):
        return False
    nstages = len(g.sm.m.stages)
    taken = set()
    for st in trace[start + 1:]:
        a = st.action
        c = a[1] + 1 if a[0] == "iterate" else nstages + 1 if a[0] == "arrive" else 0
        if c:
            taken.add(c)
    ens = [_enabled(g, u) for u in cyc[:-1]]
    need = set().union(*ens) if strong else set.intersection(*ens)
    return need <= taken
