"""Exact answers on small decision processes for serq/check/interval.py:
every memoryless deterministic scheduler (one is optimal for reachability
and for an expected sum of nonnegative weights on a finite process), the
Markov chain it leaves solved as a linear system over exact rationals;
the minimum and the maximum over schedulers. No code of serq's.

A process is a list of states, each a list of actions, each a list of
branches (probability as a Fraction, target, amount)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction


def _reach_graph(succ, start):
    """States with a path to `start` in a chain given by succ lists."""
    pred = [[] for _ in succ]
    for s, ts in enumerate(succ):
        for t in ts:
            pred[t].append(s)
    seen = set(start)
    stack = list(start)
    while stack:
        t = stack.pop()
        for s in pred[t]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def _solve(rows, n, unknown):
    """x = b + A x over `unknown` by Gauss-Jordan with Fractions; rows[s] =
    (b, {t: a})."""
    idx = {s: i for i, s in enumerate(unknown)}
    k = len(unknown)
    M = [[Fraction(0)] * (k + 1) for _ in range(k)]
    for s in unknown:
        i = idx[s]
        b, coef = rows[s]
        M[i][i] += 1
        for t, a in coef.items():
            if t in idx:
                M[i][idx[t]] -= a
        M[i][k] = b
    for c in range(k):
        p = next(r for r in range(c, k) if M[r][c] != 0)
        M[c], M[p] = M[p], M[c]
        piv = M[c][c]
        M[c] = [x / piv for x in M[c]]
        for r in range(k):
            if r != c and M[r][c] != 0:
                f = M[r][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return {s: M[idx[s]][k] for s in unknown}


def chain_reach(acts, pick, target):
    n = len(acts)
    succ = [[t for p, t, _r in acts[s][pick[s]]] if acts[s] and not target[s] else [] for s in range(n)]
    can = _reach_graph(succ, [s for s in range(n) if target[s]])
    unknown = [s for s in range(n) if s in can and not target[s]]
    rows = {}
    for s in unknown:
        b, coef = Fraction(0), {}
        for p, t, _r in acts[s][pick[s]]:
            if target[t]:
                b += p
            elif t in can:
                coef[t] = coef.get(t, 0) + p
        rows[s] = (b, coef)
    x = _solve(rows, n, unknown)
    return [Fraction(1) if target[s] else x.get(s, Fraction(0)) for s in range(n)]


def chain_reward(acts, pick):
    """Expected total amount from each state (None: infinite)."""
    n = len(acts)
    succ = [[t for p, t, _r in acts[s][pick[s]]] if acts[s] else [] for s in range(n)]
    # recurrent classes: a state is recurrent iff every state it reaches reaches it back
    reach = [_reach_graph(succ, [s]) for s in range(n)]  # reach[s]: states that reach s
    fwd = [{t for t in range(n) if s in reach[t]} for s in range(n)]  # states s reaches
    rec = [bool(acts[s]) and all(s in fwd[t] for t in fwd[s]) for s in range(n)]
    hot = {s for s in range(n) if rec[s] and any(r > 0 for p, t, r in acts[s][pick[s]])}
    inf = _reach_graph(succ, hot)
    unknown = [s for s in range(n) if s not in inf and acts[s] and not rec[s]]
    rows = {}
    for s in unknown:
        b, coef = Fraction(0), {}
        for p, t, r in acts[s][pick[s]]:
            b += p * r
            if t in unknown:
                coef[t] = coef.get(t, 0) + p
        rows[s] = (b, coef)
    x = _solve(rows, n, unknown)
    return [None if s in inf else x.get(s, Fraction(0)) for s in range(n)]


def optimum(acts, target=None, maximize=False, start=0):
    """The min or max over memoryless deterministic schedulers at `start`
    (None: infinite)."""
    best = "unset"
    for pick in itertools.product(*[range(len(a)) if a else [0] for a in acts]):
        v = (chain_reach(acts, pick, target) if target is not None else chain_reward(acts, pick))[start]
        key = float("inf") if v is None else v
        if best == "unset" or (key > bk if maximize else key < bk):
            best, bk = v, key
    return best


PROBS = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 4), Fraction(2, 5), Fraction(1, 10)]


def random_mdp(rng: random.Random, n: int):
    """A small process with cycles and end components: n states, 0..2
    actions each, branches of rational probability, amounts 0..2."""
    acts = []
    for s in range(n):
        k = rng.choice([0, 1, 1, 1, 2, 2]) if s else 2
        out = []
        for _ in range(k):
            if rng.random() < 0.2:
                out.append([(Fraction(1), rng.randrange(n), rng.choice([0, 0, 1]))])
            else:
                p = rng.choice(PROBS)
                a, b = rng.randrange(n), rng.randrange(n)
                out.append([(p, a, rng.choice([0, 1, 2])), (1 - p, b, rng.choice([0, 0, 1]))])
        acts.append(out)
    return acts
