"""Toy models for the explorer tests (no serq).  Top-level classes so that
ModelFactory(cls, args) pickles for parallel workers."""

from __future__ import annotations


class Base:
    """Defaults for the optional-ish protocol methods."""

    def is_done(self, state):
        return False

    def is_progress(self, state, action, nxt):
        return True

    def invariants(self, state):
        return []

    def format_action(self, state, action):
        return str(action)

    def format_diff(self, state, nxt):
        return [f"{state!r} -> {nxt!r}"]

    def describe_deadlock(self, state):
        return [f"stuck in {state!r}"]

    def canonical(self, state):
        return state


class CounterPair(Base):
    """(x, y) with 0 <= x, y <= n; inc_x / inc_y.  (n+1)**2 states, no deadlock.
    With ``limit``: invariant x + y < limit."""

    capabilities = frozenset({"format_state"})

    def __init__(self, n, limit=None):
        self.n, self.limit = n, limit

    def initial_states(self):
        return [(0, 0)]

    def actions(self, state):
        return ["inc_x", "inc_y"]

    def step(self, state, action):
        x, y = state
        if action == "inc_x":
            return (x + 1, y) if x < self.n else None
        return (x, y + 1) if y < self.n else None

    def is_done(self, state):
        return state == (self.n, self.n)

    def invariants(self, state):
        if self.limit is not None and sum(state) >= self.limit:
            return [("invariant", f"x+y={sum(state)} reached {self.limit}")]
        return []

    def format_diff(self, state, nxt):
        names = ("x", "y")
        return [f"{names[i]}: {a} -> {b}" for i, (a, b) in enumerate(zip(state, nxt)) if a != b]

    def format_state(self, state):
        return [f"x={state[0]} y={state[1]}"]


class Spread(CounterPair):
    """CounterPair's graph with states (x, y, 200 x, 70000 y): rows whose
    values outgrow int8 from the first step and int16 once y > 0."""

    def initial_states(self):
        return [(0, 0, 0, 0)]

    def step(self, state, action):
        nxt = super().step(state[:2], action)
        return None if nxt is None else (nxt[0], nxt[1], 200 * nxt[0], 70000 * nxt[1])

    def is_done(self, state):
        return state[:2] == (self.n, self.n)

    def invariants(self, state):
        return super().invariants(state[:2])

    def format_diff(self, state, nxt):
        return super().format_diff(state[:2], nxt[:2])

    def format_state(self, state):
        return super().format_state(state[:2])


class TwoLocks(Base):
    """P0 takes A then B, P1 takes B then A, each then releases both.
    State: (pc0, pc1, holder_of_A, holder_of_B); pc 0 start, 1 holds first,
    2 holds both, 3 finished.  Deadlock after 2 steps."""

    ORDER = {0: ("A", "B"), 1: ("B", "A")}

    def initial_states(self):
        return [(0, 0, None, None)]

    def actions(self, state):
        return [0, 1]

    def _holder(self, state, lock):
        return state[2] if lock == "A" else state[3]

    def _set(self, state, lock, who):
        s = list(state)
        s[2 if lock == "A" else 3] = who
        return tuple(s)

    def step(self, state, p):
        pc = state[p]
        first, second = self.ORDER[p]
        if pc in (0, 1):
            lock = first if pc == 0 else second
            if self._holder(state, lock) is not None:
                return None
            s = list(self._set(state, lock, p))
            s[p] = pc + 1
            return tuple(s)
        if pc == 2:
            s = list(self._set(self._set(state, "A", None), "B", None))
            s[p] = 3
            return tuple(s)
        return None

    def is_done(self, state):
        return state[0] == 3 and state[1] == 3

    def format_action(self, state, p):
        pc = state[p]
        if pc == 2:
            return f"P{p} releases A and B"
        return f"P{p} takes {self.ORDER[p][pc]}"

    def describe_deadlock(self, state):
        lines = []
        for p in (0, 1):
            if state[p] in (0, 1):
                lock = self.ORDER[p][state[p]]
                lines.append(f"P{p} waits for lock {lock} held by P{self._holder(state, lock)}")
        return lines


class Graph(Base):
    """Explicit graph: states are ints, action k goes to succ[state][k].

    ``done``/``bad`` are node sets, ``np_edges`` the (u, v) edges that make no
    progress, ``init`` the initial nodes in order."""

    def __init__(self, succ, init=(0,), done=(), bad=(), np_edges=()):
        self.succ = {int(k): tuple(v) for k, v in dict(succ).items()}
        self.init = tuple(init)
        self.done = frozenset(done)
        self.bad = frozenset(bad)
        self.np = frozenset(tuple(e) for e in np_edges)

    def initial_states(self):
        return list(self.init)

    def actions(self, state):
        return list(range(len(self.succ.get(state, ()))))

    def step(self, state, k):
        return self.succ[state][k]

    def is_done(self, state):
        return state in self.done

    def is_progress(self, state, action, nxt):
        return (state, nxt) not in self.np

    def invariants(self, state):
        return [("assert", f"node {state} is bad")] if state in self.bad else []

    def format_action(self, state, k):
        return f"{state} -> {self.succ[state][k]}"

    def format_diff(self, state, nxt):
        return [f"node: {state} -> {nxt}"]


def retry_loop(self_loop=False):
    """0 -start-> 1; 1 -retry-> 2 -back-> 1 (non-progress); 1 -finish-> 3 (done).
    With self_loop: 1 -spin-> 1 instead of the 1/2 cycle."""
    if self_loop:
        return Graph({0: (1,), 1: (1, 3), 3: ()}, done={3}, np_edges={(1, 1)})
    return Graph({0: (1,), 1: (2, 3), 2: (1,), 3: ()}, done={3}, np_edges={(1, 2), (2, 1)})


class Flaky(CounterPair):
    """Nondeterministic on purpose: after `budget` calls, inc_x jumps by 2.
    The search stays within the budget; the replay of the trace does not."""

    def __init__(self, n, limit, budget):
        super().__init__(n, limit)
        self.calls, self.budget = 0, budget

    def step(self, state, action):
        self.calls += 1
        nxt = super().step(state, action)
        if nxt is not None and action == "inc_x" and self.calls > self.budget:
            return (min(nxt[0] + 1, self.n), nxt[1])
        return nxt


class Unhashable(CounterPair):
    """States are lists (not hashable); canonical makes them tuples."""

    def initial_states(self):
        return [[0, 0]]

    def step(self, state, action):
        nxt = super().step(tuple(state), action)
        return None if nxt is None else list(nxt)

    def canonical(self, state):
        return tuple(state)

    def is_done(self, state):
        return tuple(state) == (self.n, self.n)


class Evented(CounterPair):
    """Has the optional step_events."""

    capabilities = CounterPair.capabilities | {"step_events"}

    def step_events(self, state, action):
        nxt = self.step(state, action)
        return nxt, ([f"{action} fired"] if nxt is not None else [])


class AsArrays:
    """Any toy with flat states of ints (or None) given the array protocol:
    a row per state, successors in action order, every state's invariants
    checked (flag CHECK). The array engine must agree with the sequential
    engine on the model itself."""

    def __init__(self, model, width):
        self.m, self.width = model, width
        self.capabilities = frozenset(getattr(model, "capabilities", ())) | {"rows", "fingerprint"}

    def __getattr__(self, name):
        return getattr(self.m, name)

    def _row(self, state):
        vals = state if isinstance(state, tuple) else (state,)
        return [-1 if v is None else int(v) for v in vals]

    def _state(self, row):
        vals = tuple(None if v == -1 else int(v) for v in row)
        return vals if self.width > 1 and isinstance(self.m.initial_states()[0], tuple) else vals[0]

    def _flags(self, state, prev=None, action=None):
        import explorer.model as A

        f = A.CHECK
        if self.m.is_done(state):
            f |= A.DONE
        if prev is not None and self.m.is_progress(prev, action, state):
            f |= A.PROGRESS
        return f

    def fingerprint(self, state):
        from explorer.fingerprint import fingerprint

        return fingerprint(self.m.canonical(state))

    def array_initial(self):
        import numpy as np

        init = self.m.initial_states()
        rows = np.array([self._row(s) for s in init], np.int64).reshape(len(init), self.width)
        return rows, np.array([self.fingerprint(s) for s in init], np.uint64), \
            np.array([self._flags(s) for s in init], np.int64)

    def array_expand(self, rows):
        import numpy as np

        out, par, act, fps, fl = [], [], [], [], []
        for j, row in enumerate(rows.tolist()):
            s = self._state(row)
            for ai, a in enumerate(self.m.actions(s)):
                n = self.m.step(s, a)
                if n is None:
                    continue
                out.append(self._row(n))
                par.append(j)
                act.append(ai)
                fps.append(self.fingerprint(n))
                fl.append(self._flags(n, s, a))
        k = len(out)
        return (np.array(out, np.int64).reshape(k, self.width), np.array(par, np.int64),
                np.array(act, np.int64), np.array(fps, np.uint64), np.array(fl, np.int64))

    def array_state(self, row):
        return self._state(row.tolist())
