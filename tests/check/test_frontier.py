"""The reading of a sweep's cells (serq/check/frontier.py) against brute
force over random outcome grids: monotonicity as the existence of a
monotone outcome over the whole grid that agrees with the cells
evaluated, the Pareto frontier as the passing cells below no other, the
boundary per row as the first passing value."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from serq.check.frontier import (Monotony, boundaries, cell_at, line_pairs, monotony, pareto, rows_of,
                                 violations)

OUTCOMES = ("pass", "fail", None, "absent")  # absent: not evaluated


@st.composite
def grids(draw, small=False):
    """Up to three constants; `small`: at most 9 cells (the brute force
    enumerates every subset of the grid)."""
    n = draw(st.integers(1, 3))
    top = {1: 6, 2: 3, 3: 2} if small else {1: 8, 2: 5, 3: 3}
    sizes = [draw(st.integers(1, top[n])) for _ in range(n)]
    los = [draw(st.integers(-2, 3)) for _ in range(n)]
    values = [list(range(lo, lo + s)) for lo, s in zip(los, sizes)]
    cells = list(itertools.product(*values))
    got = draw(st.lists(st.sampled_from(OUTCOMES), min_size=len(cells), max_size=len(cells)))
    return values, {c: o for c, o in zip(cells, got) if o != "absent"}


def up_closed(sets: frozenset, full: list, orient) -> bool:
    """Every cell at or above a cell of the set (under the orientation) is in it."""
    return all(all(s * (y - x) >= 0 for x, y, s in zip(a, b, orient)) <= (b in sets)
               for a in sets for b in full)


def completions(values, orient):
    """Every monotone outcome of the whole grid: its passing cells, an up-closed set."""
    full = list(itertools.product(*values))
    for k in range(len(full) + 1):
        for sub in itertools.combinations(full, k):
            s = frozenset(sub)
            if up_closed(s, full, orient):
                yield s


def agrees(passing: frozenset, grid: dict) -> bool:
    return all((c in passing) == (o == "pass") for c, o in grid.items() if o is not None)


def brute_monotone(values, grid) -> set:
    """The orientations under which some monotone completion agrees with the grid."""
    return {o for o in itertools.product((1, -1), repeat=len(values))
            if any(agrees(s, grid) for s in completions(values, o))}


@settings(max_examples=250, deadline=None)
@given(grids(small=True))
def test_monotony_is_the_existence_of_a_monotone_completion(g):
    values, grid = g
    m = monotony(grid, len(values))
    known = {o for o in grid.values() if o is not None}
    if known != {"pass", "fail"}:
        assert m.holds is None and m.orient == (1,) * len(values)
        return
    ok = brute_monotone(values, grid)
    assert m.holds == bool(ok)
    if m.holds:
        # the one reported is the first of the orientations that work, +1 before -1
        assert m.orient == min(ok, key=lambda o: tuple(-s for s in o)) and not m.pairs
    else:
        # the pairs shown are real: a pass, and a fail at or above it
        assert m.pairs or m.neither
        for p, f in m.pairs:
            assert grid[p] == "pass" and grid[f] == "fail" and p != f
            assert all(s * (y - x) >= 0 for x, y, s in zip(p, f, m.orient))
        for a, (up, down) in m.neither.items():
            for (p, f), sign in ((up, 1), (down, -1)):
                assert grid[p] == "pass" and grid[f] == "fail"
                assert sign * (f[a] - p[a]) > 0
                assert all(x == y for i, (x, y) in enumerate(zip(p, f)) if i != a)


@settings(max_examples=300, deadline=None)
@given(grids(), st.lists(st.sampled_from((1, -1)), min_size=3, max_size=3))
def test_pareto_is_the_passing_cells_below_no_other(g, signs):
    values, grid = g
    orient = tuple(signs[:len(values)])
    passes = [c for c, o in grid.items() if o == "pass"]
    brute = sorted(c for c in passes
                   if not any(d != c and all(s * (y - x) >= 0 for x, y, s in zip(d, c, orient)) for d in passes))
    assert pareto(grid, orient) == brute
    # every passing cell is at or above a cell of the frontier
    front = pareto(grid, orient)
    assert all(any(all(s * (y - x) >= 0 for x, y, s in zip(f, c, orient)) for f in front) for c in passes)


@settings(max_examples=300, deadline=None)
@given(grids(), st.sampled_from((1, -1)))
def test_boundary_per_row_is_the_first_passing_value(g, sign):
    values, grid = g
    col = 1 if len(values) > 1 else 0
    bs = boundaries(grid, values, col, sign)
    assert [b.row for b in bs] == rows_of(values, col)
    for b in bs:
        row = {cell[col]: o for cell, o in grid.items()
               if tuple(x for i, x in enumerate(cell) if i != col) == b.row}
        passing = [v for v, o in row.items() if o == "pass"]
        want = (min(passing) if sign > 0 else max(passing)) if passing else None
        assert b.value == want
        if want is not None:
            before = want - sign
            assert b.exact == (before not in values[col] or row.get(before) == "fail")
            assert grid[cell_at(b.row, col, want)] == "pass"


def test_the_kv_block_grid_by_hand():
    # KV (rows) helps, a larger block BS (columns) hurts: the boundaries and the frontier
    P, F = "pass", "fail"
    table = {2: "FFFF", 5: "PFFF", 6: "PPPF", 8: "PPPP"}
    grid = {(kv, bs): (P if ch == "P" else F) for kv, row in table.items() for bs, ch in zip(range(1, 5), row)}
    m = monotony(grid, 2)
    assert m == Monotony((1, -1), True)
    assert pareto(grid, m.orient) == [(5, 1), (6, 3), (8, 4)]
    values = [sorted(table), [1, 2, 3, 4]]
    assert [(b.row, b.value, b.exact) for b in boundaries(grid, values, 1, -1)] == \
        [((2,), None, False), ((5,), 1, True), ((6,), 3, True), ((8,), 4, True)]
    # a pass above a fail in KV breaks it, and the pair is named
    grid[(8, 1)] = F
    m = monotony(grid, 2)
    assert m.holds is False and ((6, 1), (8, 1)) in m.pairs
    assert violations(grid, (1, -1))[0] == ((5, 1), (8, 1))
    assert line_pairs(grid, 0) == (((5, 1), (8, 1)), ((5, 1), (2, 1)))
    # and at KV = 8 a larger block now passes where a smaller one fails: BS is monotone in neither direction
    assert m.neither == {0: (((5, 1), (8, 1)), ((5, 1), (2, 1))), 1: (((5, 1), (5, 2)), ((8, 2), (8, 1)))}
