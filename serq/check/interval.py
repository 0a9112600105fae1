"""Proven bounds on a graph with cycles (serq/check/probreport.py): the
minimum and the maximum over schedulers of a reachability probability by
interval iteration, and of an expected sum by value iteration from below
and an inductive upper bound.

The decision process. Each node's tree of edges (serq/check/probsolve.py,
`trees`) is flattened: a choice or chance node inside a step becomes a
state of its own (an *inner* state), so a state's actions are its choices
and an action is a distribution over states, each branch with the
metric's weights (amount, subjects) of the edge it ends in. A branch of
probability 0 (a drawn value of weight 0) is left out.

Probabilities (Haddad & Monmege 2014; Baier, Klein, Klüppelholz,
Wunderlich, CAV 2017). Graph-theoretically first: the states where the
maximum (minimum) is 0 -- no path to the event (some scheduler avoids it
for ever: Prob0E, Prob0A) -- and where it is 1 (Prob1E, Prob1A). The rest
are iterated, component by component in reverse topological order, from
below (0) and from above (1) at once, each value the Bellman operator's:
the lower sequence rises to the value, and the upper one falls to it
because the undecided states of the minimum hold no end component (one
would be avoidable for ever: value 0), and for the maximum each maximal
end component of them is collapsed: its states share one upper value, the
best of the actions that leave it. A component stops when every state's
interval is within `EPSILON` of what its successors outside leave, when a
sweep changes nothing, or after `MAX_SWEEPS` sweeps; at the initial state
the value lies in [lower, upper] whenever it stopped.

Expected sums (nonnegative weights: the value is the least fixed point of
the Bellman operator). Infinite values graph-theoretically: for the
maximum, a state that can reach an end component with an action that adds
to the sum (the scheduler can stay in it for ever); for the minimum, a
state from which no scheduler reaches, with probability 1, an end of the
run or an end component whose actions add nothing. The lower bound is
value iteration from 0. The upper bound U is proven by Park's lemma: any U
with F(U) <= U lies above the least fixed point. U = L + delta * T, where T
bounds the expected number of steps (T >= 1 + P T, itself checked so): for
the maximum under every scheduler, the end components (which add nothing)
collapsed as above, with the option to stay in them for ever; for the
minimum under the scheduler the lower iteration settles on (F_min(U) <=
F_sigma(U) <= U). When no such U is found, the upper bound is reported as
not proven.

Rounding. Every sum of products is rounded outwards: the computed float is
moved by 2 (k + PROB_ULPS + 3) units of 2^-53 relative (k terms, each
probability within PROB_ULPS units of the exact one, a product and an
addition per term) and one more float, down for the lower bounds and up
for the upper ones; a minimum or a maximum of floats is exact. So each
bound holds for the exact value, not only for the floats' answer.
"""

from __future__ import annotations

import math
from operator import add, mul
from dataclasses import dataclass
from typing import Any

EPSILON = 1e-9
MAX_SWEEPS = 100_000
ULP = 2.0 ** -53
PROB_ULPS = 16  # a probability as a float: an exact rational rounded once; poisson's computed weights


class _Adj:
    """What `explorer.check.sccs` reads: successors as (action, target)."""

    def __init__(self, succ):
        self.succ = succ


def _components(n, edges_of):
    from explorer.check import sccs

    return sccs(_Adj([[(0, t) for t in edges_of(s)] for s in range(n)]))


# ---------------------------------------------------------------- the flattened process


@dataclass
class Mdp:
    """States 0..nodes-1 are the graph's nodes, the rest inner states of
    their steps. `acts[s]`: the actions of s, each made by `act` from its
    branches (probability, target, amount, subjects)."""

    nodes: int
    acts: list
    owner: list

    def __len__(self):
        return len(self.acts)

    def succ(self, s):
        return {t for a in self.acts[s] for t in a[1]}

    def preds(self):
        out = [[] for _ in self.acts]
        for s, acts in enumerate(self.acts):
            for i, a in enumerate(acts):
                for t in a[1]:
                    out[t].append((s, i))
        return out


def act(branches) -> tuple:
    """An action: (probabilities, targets, amounts, subjects, the factor
    that rounds its sum down, the one that rounds it up)."""
    ps, ts, rs, ds = (tuple(x) for x in zip(*branches)) if branches else ((), (), (), ())
    k = 2 * len(ps) + 1  # a product and an addition per branch, its amount's addition
    return (ps, ts, rs, ds, 1.0 - _slack(k) - 4 * ULP, 1.0 + _slack(k) + 4 * ULP)


def flatten(g, tr, rewards=None) -> Mdp:
    """The graph's nodes with their trees of edges (float probabilities)
    as a decision process; `rewards[u][k]`: (amount, subjects) of edge k."""
    n = len(g)
    acts: list = [None] * n
    owner = list(range(n))

    def leaf(u, k, p):
        r, d = rewards[u][k] if rewards is not None and rewards[u] is not None else (0, 0)
        _ai, v = g.succ[u][k]
        return (p, v, r, d)

    def actions(u, tree) -> list:
        if type(tree) is int:
            return [act([leaf(u, tree, 1.0)])]
        kind, kids = tree
        if kind == "n":
            return [a for k in kids for a in actions(u, k)]
        branches = []
        for p, k in kids:
            if p > 0:
                branches.append(leaf(u, k, p) if type(k) is int else (p, inner(u, k), 0, 0))
        return [act(branches)]

    def inner(u, tree) -> int:
        i = len(acts)
        acts.append(None)
        owner.append(u)
        acts[i] = actions(u, tree)
        return i

    for u in range(n):
        acts[u] = actions(u, tr[u]) if tr[u] is not None else []
    return Mdp(n, acts, owner)


# ---------------------------------------------------------------- outward rounding


def _slack(k: int) -> float:
    return 2 * (k + PROB_ULPS + 3) * ULP


def down(x: float, k: int) -> float:
    if x <= 0:
        return 0.0
    return max(0.0, math.nextafter(x * (1.0 - _slack(k)), 0.0))


def up(x: float, k: int) -> float:
    if x <= 0 or x == math.inf:
        return x
    return math.nextafter(x * (1.0 + _slack(k)), math.inf)


TINY = 1e-290  # below, a product may lose relative precision (subnormal): bounded absolutely


def _value(a, V, reward: bool) -> float:
    """The action's sum in floats (left to right, as the error bound counts)."""
    if reward:
        return sum(map(mul, a[0], map(add, a[2], map(V.__getitem__, a[1]))))
    return sum(map(mul, a[0], map(V.__getitem__, a[1])))


def _lo(x: float, a) -> float:
    return x * a[4] if x > TINY else 0.0


def _hi(x: float, a) -> float:
    return x * a[5] if x > TINY or x <= 0 or x == math.inf else 2 * TINY


# ---------------------------------------------------------------- graph-theoretic sets


def reach_back(m: Mdp, start, preds=None, avoid=None) -> list[bool]:
    """The states with a path to `start` (not through `avoid`)."""
    preds = preds or m.preds()
    seen = list(start)
    stack = [s for s, x in enumerate(start) if x]
    while stack:
        t = stack.pop()
        for s, _i in preds[t]:
            if not seen[s] and not (avoid and avoid[s]):
                seen[s] = True
                stack.append(s)
    return seen


def prob0_min(m: Mdp, target, preds) -> list[bool]:
    """Prob0A: the states where some scheduler avoids `target` for ever
    (minimum 0): not in the least set holding the target and every state
    all of whose actions can enter the set."""
    left = [len(a) for a in m.acts]
    hit = [[False] * len(a) for a in m.acts]
    inside = list(target)
    stack = [s for s, x in enumerate(target) if x]
    while stack:
        t = stack.pop()
        for s, i in preds[t]:
            if inside[s] or hit[s][i]:
                continue
            hit[s][i] = True
            left[s] -= 1
            if left[s] == 0:
                inside[s] = True
                stack.append(s)
    return [not x for x in inside]


def prob1_max(m: Mdp, target, zero, preds) -> list[bool]:
    """Prob1E: the states where some scheduler reaches `target` with
    probability 1 (`zero`: where the maximum is 0)."""
    keep = [not z for z in zero]
    while True:
        ok = [[all(keep[t] for t in a[1]) for a in acts] for acts in m.acts]
        got = [bool(target[s]) and keep[s] for s in range(len(m))]
        stack = [s for s, x in enumerate(got) if x]
        while stack:
            t = stack.pop()
            for s, i in preds[t]:
                if not got[s] and keep[s] and not target[s] and ok[s][i]:
                    got[s] = True
                    stack.append(s)
        if got == keep:
            return got
        keep = got


def mecs(m: Mdp, allowed, action_ok=None) -> list[tuple[list[int], dict]]:
    """The maximal end components inside `allowed` (with only the actions
    `action_ok(s, i)` allows): (states, {state: its actions inside})."""
    alive = list(allowed)
    keep = {s: [i for i, a in enumerate(m.acts[s]) if (action_ok is None or action_ok(s, i))
                and all(alive[t] for t in a[1])] for s in range(len(m)) if alive[s]}
    while True:
        for s in [s for s, ks in keep.items() if not ks]:
            del keep[s]
            alive[s] = False
        comp, _comps = _components(len(m), lambda s: [t for i in keep.get(s, ()) for t in m.acts[s][i][1]])
        changed = False
        for s in list(keep):
            ks = [i for i in keep[s] if all(alive[t] and comp[t] == comp[s] for t in m.acts[s][i][1])]
            if len(ks) != len(keep[s]):
                keep[s], changed = ks, True
        if not changed and all(keep.values()):
            break
    groups: dict = {}
    for s in keep:
        groups.setdefault(comp[s], []).append(s)
    return [(sorted(ss), {s: set(keep[s]) for s in ss}) for ss in groups.values()]


# ---------------------------------------------------------------- the iteration


@dataclass
class Bounds:
    lower: float
    upper: float | None  # None: no upper bound proven
    sweeps: int
    within: bool  # the answer's interval is within EPSILON (relative for a sum above 1) and every sweep stopped
    subjects: Any = None  # the expected subjects under the lower iteration's scheduler (not proven)
    infinite: bool = False


def components_of(m: Mdp):
    """Components of the flattened process in reverse topological order,
    each in the order its sweeps take: the nodes found last first (the
    graph numbers them breadth-first from the initial state, so a
    successor mostly comes before its predecessor), a node's inner states
    just before it."""
    comp, comps = _components(len(m), m.succ)
    owner = m.owner
    return comp, [sorted(c, key=lambda s: (-owner[s], -s)) if len(c) > 1 else c for c in comps]


def reach(m: Mdp, target, maximize: bool, order=None, preds=None) -> Bounds:
    """[lower, upper] of the best (minimum) or the worst (maximum)
    scheduler's probability of reaching `target` from node 0."""
    preds = preds or m.preds()
    comp, comps = order or components_of(m)
    n = len(m)
    tgt = [bool(target[m.owner[s]]) and s < m.nodes for s in range(n)]
    can = reach_back(m, tgt, preds, avoid=tgt)
    zero_max = [not c for c in can]
    if maximize:
        zero = zero_max
        one = prob1_max(m, tgt, zero, preds)
    else:
        zero = prob0_min(m, tgt, preds)
        one = [not x for x in reach_back(m, zero, preds, avoid=tgt)]
    L = [1.0 if one[s] or tgt[s] else 0.0 for s in range(n)]
    U = [0.0 if zero[s] and not tgt[s] else 1.0 for s in range(n)]
    maybe = [not (tgt[s] or zero[s] or one[s]) for s in range(n)]
    group, exits = {}, {}
    if maximize:  # the upper sequence: each end component of undecided states collapsed
        for states, inside in mecs(m, maybe):
            for s in states:
                group[s] = states
                exits[s] = [a for i, a in enumerate(m.acts[s]) if i not in inside[s]]
    sweeps, within = 0, True
    for members in comps:
        todo = [s for s in members if maybe[s]]
        if not todo:
            continue
        cyclic = len(members) > 1 or members[0] in m.succ(members[0])
        outside = [t for s in todo for t in m.succ(s) if comp[t] != comp[s]]
        w_in = max((U[t] - L[t] for t in outside), default=0.0)
        plain = [(s, m.acts[s], s in group) for s in todo]
        glist = list({id(group[s]): group[s] for s in todo if s in group}.values())
        gexits = [(states, [a for x in states for a in exits[x]]) for states in glist]
        k = 0
        while True:
            k += 1
            changed = False
            for s, acts, grouped in plain:
                if maximize:
                    lo = max([_lo(_value(a, L, False), a) for a in acts])
                else:
                    lo = min([_lo(_value(a, L, False), a) for a in acts])
                if lo > L[s]:
                    L[s], changed = min(lo, 1.0), True
                if grouped:
                    continue
                if maximize:
                    hi = max([_hi(_value(a, U, False), a) for a in acts])
                else:
                    hi = min([_hi(_value(a, U, False), a) for a in acts])
                if hi < U[s]:
                    U[s], changed = hi, True
            for states, outs in gexits:
                hi = min(1.0, max([_hi(_value(a, U, False), a) for a in outs], default=0.0))
                for x in states:
                    if hi < U[x]:
                        U[x], changed = hi, True
            width = max(U[s] - L[s] for s in todo)
            if not cyclic or width <= EPSILON + w_in or not changed:
                break
            if k >= MAX_SWEEPS:
                within = False
                break
        if cyclic:
            sweeps = max(sweeps, k)
        if width > EPSILON + w_in and cyclic:
            within = False
    # the answer's own width: each component stops within EPSILON of what it leaves, and widths add up along a chain
    return Bounds(L[0], U[0], sweeps, within and U[0] - L[0] <= EPSILON)


# ---------------------------------------------------------------- expected sums


def _adds(a) -> bool:
    return any(r > 0 for r in a[2])


def _infinite(m: Mdp, maximize: bool, preds) -> tuple[list[bool], list[bool], list]:
    """(where the value is infinite, where it is 0 for the minimum -- an end of
    the run or an end component that adds nothing --, the end components
    the maximum collapses: (states, {state: its actions inside}))."""
    n = len(m)
    if maximize:
        comps = mecs(m, [True] * n)
        hot = [False] * n
        for states, inside in comps:
            if any(_adds(m.acts[s][i]) for s in states for i in inside[s]):
                for s in states:
                    hot[s] = True
        inf = reach_back(m, hot, preds)
        calm = [(states, inside) for states, inside in comps if not inf[states[0]]]
        return inf, [False] * n, calm
    quiet = [not m.acts[s] for s in range(n)]
    for states, _inside in mecs(m, [True] * n, lambda s, i: not _adds(m.acts[s][i])):
        for s in states:
            quiet[s] = True
    zero = [not c for c in reach_back(m, quiet, preds)]
    fin = prob1_max(m, quiet, zero, preds)
    return [not f for f in fin], quiet, []


def _sweep_lower(m, members, V, D, live, maximize):
    """One Gauss-Seidel sweep from below over `members` (the sum rounded
    down, and the subjects under the action chosen: D, or None); the
    largest relative change."""
    change = 0.0
    get = V.__getitem__
    for s in members:
        if not live[s]:
            continue
        acts = m.acts[s]
        if len(acts) == 1:
            a = acts[0]
            x = sum(map(mul, a[0], map(add, a[2], map(get, a[1]))))
            x = x * a[4] if x > TINY else 0.0
        else:
            xs = [sum(map(mul, a[0], map(add, a[2], map(get, a[1])))) for a in acts]
            xs = [x * a[4] if x > TINY else 0.0 for x, a in zip(xs, acts)]
            x = max(xs) if maximize else min(xs)
            a = acts[xs.index(x)]
        if x > V[s]:
            change = max(change, (x - V[s]) / max(x, 1.0))
            V[s] = x
        if D is not None:
            D[s] = sum(map(mul, a[0], map(add, a[3], map(D.__getitem__, a[1]))))
    return change


def expect(m: Mdp, maximize: bool, order=None, preds=None, subjects: bool = True) -> Bounds:
    """[lower, upper] of the best (minimum) or worst (maximum) scheduler's
    expected sum from node 0; infinite when proven so. `subjects`: also
    the expected subjects under the scheduler the lower iteration settles
    on (an estimate)."""
    preds = preds or m.preds()
    comp, comps = order or components_of(m)
    n = len(m)
    inf, quiet, calm = _infinite(m, maximize, preds)
    if inf[0]:
        return Bounds(math.inf, math.inf, 0, True, math.inf, True)
    live = [not (inf[s] or quiet[s]) and bool(m.acts[s]) for s in range(n)]
    V = [math.inf if inf[s] else 0.0 for s in range(n)]
    D = [0.0] * n if subjects else None
    sweeps, within = 0, True
    for members in comps:
        if not any(live[s] for s in members):
            continue
        cyclic = len(members) > 1 or members[0] in m.succ(members[0])
        k = 0
        while True:
            k += 1
            ch = _sweep_lower(m, members, V, D, live, maximize)
            if not cyclic or ch <= 1e-13:
                break
            if k >= MAX_SWEEPS:
                within = False
                break
        if cyclic:
            sweeps = max(sweeps, k)
    upper = _certify(m, V, live, maximize, calm, comps)
    within = within and upper is not None and upper - V[0] <= EPSILON * max(1.0, abs(V[0]))  # the answer's width
    return Bounds(V[0], upper, sweeps, within, D[0] if subjects else None)


def _certify(m: Mdp, L, live, maximize: bool, calm, comps) -> float | None:
    """An upper bound at node 0 proven by Park's lemma, or None."""
    n = len(m)
    group, exits = {}, {}
    for states, inside in calm:
        for s in states:
            group[s] = states
            exits[s] = [a for i, a in enumerate(m.acts[s]) if i not in inside[s]]
    if maximize:
        choice = None
    else:  # the scheduler the lower iteration settles on
        choice = {}
        for s in range(n):
            if live[s]:
                choice[s] = min(m.acts[s], key=lambda a: _lo(_value(a, L, True), a))
    steps = _steps(m, live, group, exits, choice, comps)
    if steps is None:
        return None
    # the lower values, equal on a collapsed component (its largest)
    base = list(L)
    for states in {id(v): v for v in group.values()}.values():
        top = max(L[s] for s in states)
        for s in states:
            base[s] = top
    for delta in (1e-12, 1e-10, 1e-8, 1e-6, 1e-4):
        U = [base[s] + up(delta * steps[s], 1) if live[s] else L[s] for s in range(n)]
        U = [up(x, 1) for x in U]
        if _pre_fixpoint(m, U, live, group, exits, choice, True):
            return U[0]
    return None


def _pre_fixpoint(m, U, live, group, exits, choice, reward: bool) -> bool:
    """F(U) <= U at every live state, F rounded upwards (a steps bound:
    reward False, each step adds 1)."""
    for s in range(len(m)):
        if not live[s]:
            continue
        if choice is not None:
            acts = [choice[s]]
        elif s in group:
            acts = [a for x in group[s] for a in exits[x]]
        else:
            acts = m.acts[s]
        for a in acts:
            x = _value(a, U, True) if reward else 1.0 + _value(a, U, False)
            if _hi(x, a) > U[s]:
                return False
    return True


def _steps(m, live, group, exits, choice, comps) -> list[float] | None:
    """T with T >= 1 + P T at every live state (under `choice`, or every
    action; a collapsed component's exits), checked; None if none is found."""
    n = len(m)
    T = [0.0] * n
    for members in comps:
        todo = [s for s in members if live[s]]
        if not todo:
            continue
        for k in range(MAX_SWEEPS):
            change = 0.0
            for s in todo:
                if choice is not None:
                    acts = [choice[s]]
                elif s in group:
                    acts = [a for x in group[s] for a in exits[x]]
                else:
                    acts = m.acts[s]
                x = max((1.0 + _value(a, T, False) for a in acts), default=0.0)
                if s in group:
                    for y in group[s]:
                        if x > T[y]:
                            change = max(change, (x - T[y]) / x)
                            T[y] = x
                elif x > T[s]:
                    change = max(change, (x - T[s]) / x)
                    T[s] = x
            if change <= 1e-6:
                break
            if max(T[s] for s in todo) > 1e15:
                return None
        else:
            return None
    for grow in (1e-4, 1e-2, 0.5):
        cand = [up(t * (1 + grow) + grow, 1) for t in T]
        if _pre_fixpoint(m, cand, live, group, exits, choice, False):
            return cand
    return None
