"""serq/check/interval.py against exact rationals: random small decision
processes with cycles and end components (tests/mdp_exact.py: every
memoryless deterministic scheduler's Markov chain solved over fractions),
the minimum and the maximum of a reachability probability and of an
expected sum; each proven interval must hold the exact value and be
narrow, an infinite sum must be found infinite."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from serq.check import interval as iv
from tests.mdp_exact import optimum, random_mdp


def as_mdp(acts):
    n = len(acts)
    return iv.Mdp(n, [[iv.act([(float(p), t, r, 0) for p, t, r in a]) for a in acts[s]] for s in range(n)],
                  list(range(n)))


def case(k: int):
    """Random process k: (its actions, a target state, the actions with the target made absorbing)."""
    rng = random.Random(k)
    n = rng.randrange(2, 7)
    acts = random_mdp(rng, n)
    target = [False] * n
    target[rng.randrange(1, n)] = True
    return acts, target, [[] if target[s] else a for s, a in enumerate(acts)]


@pytest.mark.parametrize("seed", range(0, 160, 8))
def test_random_processes_equal_exact_rationals(seed):
    for k in range(seed, seed + 8):
        acts, target, tacts = case(k)
        for mx in (False, True):
            exact = optimum(tacts, target, mx)
            b = iv.reach(as_mdp(tacts), target, mx)
            assert b.lower <= exact <= b.upper and b.upper - b.lower <= 1e-8 and b.within, (k, mx, exact, b)
            exact = optimum(acts, None, mx)
            b = iv.expect(as_mdp(acts), mx)
            if exact is None:
                assert b.infinite, (k, mx, b)
            else:
                assert not b.infinite and b.upper is not None, (k, mx, exact, b)
                assert b.lower <= exact <= b.upper and b.upper - b.lower <= 1e-6 * max(1, exact), (k, mx, exact, b)


def test_the_random_processes_have_what_is_tested():
    # fractional answers, end components, infinite sums: not only 0 and 1
    seen = set()
    for k in range(160):
        acts, target, tacts = case(k)
        mec = bool(iv.mecs(as_mdp(acts), [True] * len(acts)))
        for mx in (False, True):
            p = optimum(tacts, target, mx)
            e = optimum(acts, None, mx)
            seen.add(("p", mx, mec, 0 < p < 1))
            seen.add(("e", mx, mec, "inf" if e is None else e > 0))
    for mx in (False, True):
        assert ("p", mx, True, True) in seen and ("e", mx, True, "inf") in seen and ("e", mx, True, True) in seen


def test_an_end_component_the_worst_scheduler_must_leave():
    # 0 -a-> {1: 1/2, 2: 1/2}; 1 and 0 form an end component (1 -> 0, 0 -b-> 1); 2 is the target:
    # the maximum is 1 (keep trying), the minimum 0 (stay in the component); without collapsing the
    # component the upper sequence would stay at 1 for the wrong reason: here the true answer is 1
    acts = [[[(Fraction(1, 2), 1, 0), (Fraction(1, 2), 2, 0)], [(Fraction(1), 1, 0)]], [[(Fraction(1), 0, 0)]], []]
    target = [False, False, True]
    assert iv.reach(as_mdp(acts), target, True).lower == 1.0
    assert iv.reach(as_mdp(acts), target, False).upper == 0.0
    # with a sink beside the target the component's exits decide: 0 -a-> {1: 1/2, 2: 1/4, 3: 1/4}
    acts[0][0] = [(Fraction(1, 2), 1, 0), (Fraction(1, 4), 2, 0), (Fraction(1, 4), 3, 0)]
    acts.append([])
    b = iv.reach(as_mdp(acts), target + [False], True)
    assert b.lower <= 0.5 <= b.upper and b.upper - b.lower < 1e-9


def test_rounding_is_outwards():
    assert iv.down(1.0, 2) < 1.0 < iv.up(1.0, 2)
    assert iv.down(0.0, 2) == 0.0 and iv.up(math.inf, 2) == math.inf
    # 1/3 + 1/3 + 1/3 in floats, the bounds hold the exact 1
    third = 1 / 3
    s = third + third + third
    assert iv.down(s, 3) <= 1 <= iv.up(s, 3)
